package daemon

import (
	"errors"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/mqtt"
)

// promptTemplate turns a conversation into prompt text.
type promptTemplate interface {
	Render(msgs []mqtt.ChatMessage) (string, error)
	StopStrings() []string
}

// resolveTemplate picks the chat template: the named one, else the model's.
func resolveTemplate(name string, m *inference.Model) (promptTemplate, error) {
	return nil, errors.New("chat templates: not wired yet")
}

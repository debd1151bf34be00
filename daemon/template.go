package daemon

import (
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/mqtt"
)

// promptTemplate turns a conversation into prompt text ending where the
// assistant's answer begins.
type promptTemplate interface {
	// Render formats msgs, presenting tools (when any) the family's way.
	Render(msgs []mqtt.ChatMessage, tools []mqtt.Tool) (string, error)
	StopStrings() []string
}

// chatTemplate is a promptTemplate over the inference/chat families.
type chatTemplate struct{ t chat.Template }

func (c chatTemplate) Render(msgs []mqtt.ChatMessage, tools []mqtt.Tool) (string, error) {
	cm := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	if len(tools) == 0 {
		return c.t.Render(cm, true)
	}
	ct := make([]chat.Tool, len(tools))
	for i, t := range tools {
		ct[i] = chat.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
	}
	return c.t.RenderTools(cm, ct, true)
}

func (c chatTemplate) StopStrings() []string { return c.t.StopStrings() }

// resolveTemplate picks the chat template: name (a family name or Jinja
// text) when set, else the one in the model file.
func resolveTemplate(name string, m *inference.Model) (promptTemplate, error) {
	t, err := m.ChatTemplate(name)
	if err != nil {
		return nil, err
	}
	return chatTemplate{t}, nil
}

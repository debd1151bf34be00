package daemon

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/mqtt"
)

// renderTimeout bounds one rendering of a chat template. Templates are
// probed when chosen, so a correct one renders in well under a millisecond
// to a few; the bound only stops a request from waiting on a template that
// turned out to loop on its conversation.
const renderTimeout = 5 * time.Second

// promptTemplate turns a conversation into prompt text ending where the
// assistant's answer begins.
type promptTemplate interface {
	// Render formats msgs, presenting tools (when any) the template's way.
	// The text is ready to tokenize (with the tokenizer's own BOS).
	Render(msgs []mqtt.ChatMessage, tools []mqtt.Tool) (string, error)
	StopStrings() []string
}

// chatTemplate is a promptTemplate over a chat.Format: the model's Jinja
// template, or a hand-written family.
type chatTemplate struct {
	f *chat.Format
	// now is the clock; the prompt gets its day (chat.Day), so every
	// request of a day renders the same date and shares cached prefixes.
	now func() time.Time
}

func (c chatTemplate) Render(msgs []mqtt.ChatMessage, tools []mqtt.Tool) (string, error) {
	cm := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	ct := make([]chat.Tool, len(tools))
	for i, t := range tools {
		ct[i] = chat.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
	}
	// Thinking stays off (NewInput's default): a voice pipeline must
	// neither wait for nor speak reasoning.
	in, err := chat.NewInput(cm, ct)
	if err != nil {
		return "", err
	}
	in.Now = chat.Day(c.now())
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	return c.f.Prompt(ctx, in)
}

func (c chatTemplate) StopStrings() []string { return c.f.StopStrings() }

// resolveRequestTemplate picks a request's chat_template: Jinja text or a
// family name. A file path is refused: a request must not make the daemon
// read files.
func resolveRequestTemplate(name string, m *inference.Model) (promptTemplate, error) {
	if strings.HasSuffix(name, ".jinja") && !strings.Contains(name, "{{") && !strings.Contains(name, "{%") {
		return nil, errors.New("a request's chat_template is a family name or Jinja text, not a file; set a file with model.chat_template")
	}
	return resolveTemplate(name, m)
}

// resolveTemplate picks the chat template: name (Jinja text, a .jinja
// file's path or a family name) when set, else the one in the model file.
func resolveTemplate(name string, m *inference.Model) (promptTemplate, error) {
	f, err := m.ChatFormat(name)
	if err != nil {
		return nil, err
	}
	return chatTemplate{f: f, now: time.Now}, nil
}

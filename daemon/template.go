package daemon

import (
	"time"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/mqtt"
)

// promptTemplate turns a conversation into prompt text ending where the
// assistant's answer begins.
type promptTemplate interface {
	Render(msgs []mqtt.ChatMessage) (string, error)
	StopStrings() []string
}

// chatTemplate is a promptTemplate over the inference/chat families.
type chatTemplate struct{ t chat.Template }

func (c chatTemplate) Render(msgs []mqtt.ChatMessage) (string, error) {
	cm := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	return c.t.Render(cm, true)
}

func (c chatTemplate) StopStrings() []string { return c.t.StopStrings() }

// resolveTemplate picks the chat template: name (a family name or Jinja
// text) when set, else the one in the model file (tokenizer.chat_template).
// A model without a recognised template is an error, never a guess.
func resolveTemplate(name string, m *inference.Model) (promptTemplate, error) {
	own, _ := m.File.String("tokenizer.chat_template")
	t, err := chat.Choose(name, own, "")
	if err != nil {
		return nil, err
	}
	tok := m.Tokenizer
	if id := tok.BOS(); id >= 0 {
		t.BOS = tok.Text(id)
	}
	if id := tok.EOS(); id >= 0 {
		t.EOS = tok.Text(id)
	}
	t.Date = time.Now().Format("02 Jan 2006")
	return chatTemplate{t}, nil
}

package inference

import (
	"time"

	"github.com/edgellm/edgellm/inference/chat"
)

// ChatTemplate returns the chat template to format conversations for m:
// override (a family name such as "chatml", or Jinja text) when set, else
// the template stored in the model file (tokenizer.chat_template). A model
// without a recognised template is an error (wrapping
// chat.ErrUnknownTemplate), never a guess. The template's BOS/EOS texts are
// the vocabulary's and its date is today's.
func (m *Model) ChatTemplate(override string) (chat.Template, error) {
	own, _ := m.File.String("tokenizer.chat_template")
	t, err := chat.Choose(override, own, "")
	if err != nil {
		return t, err
	}
	if tok := m.Tokenizer; tok != nil {
		if id := tok.BOS(); id >= 0 {
			t.BOS = tok.Text(id)
		}
		if id := tok.EOS(); id >= 0 {
			t.EOS = tok.Text(id)
		}
	}
	t.Date = time.Now().Format("02 Jan 2006")
	return t, nil
}

package inference

import (
	"github.com/edgellm/edgellm/inference/chat"
)

// ChatFormat returns the chat template that formats conversations for m:
// override when set (Jinja text, a .jinja file's path, or the name of a
// hand-written family, see chat.ChooseFormat), else the Jinja template
// stored in the model file (tokenizer.chat_template). A model without a
// template and no override is an error wrapping chat.ErrUnknownTemplate that
// names the options, never a guess. The format's BOS and EOS texts,
// AddsBOS and end-of-generation texts are the vocabulary's.
func (m *Model) ChatFormat(override string) (*chat.Format, error) {
	own, _ := m.File.String("tokenizer.chat_template")
	f, err := chat.ChooseFormat(override, own)
	if err != nil {
		return nil, err
	}
	if tok := m.Tokenizer; tok != nil {
		if id := tok.BOS(); id >= 0 {
			f.BOS = tok.Text(id)
		}
		if id := tok.EOS(); id >= 0 {
			f.EOS = tok.Text(id)
		}
		f.AddsBOS = tok.AddBOS()
		for _, id := range tok.EOG() {
			if s := tok.Text(id); s != "" {
				f.EOG = append(f.EOG, s)
			}
		}
	}
	return f, nil
}

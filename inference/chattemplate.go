package inference

import (
	"fmt"
	"strings"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/inference/tokenizer"
)

// ChatFormat returns the chat template that formats conversations for m:
// override when set (Jinja text, a .jinja file's path, or the name of a
// hand-written family, see chat.ChooseFormat), else the Jinja template
// stored in the model file (tokenizer.chat_template). A model without a
// template and no override is an error wrapping chat.ErrUnknownTemplate that
// names the options, never a guess. The format's BOS and EOS texts,
// AddsBOS and end-of-generation texts are the vocabulary's.
func (m *Model) ChatFormat(override string) (*chat.Format, error) {
	return chatFormat(m.File, m.Tokenizer, override)
}

// ChatFormatOf is Model.ChatFormat for the GGUF file at path, reading only
// its metadata and vocabulary (not its weights), so it also serves files
// of architectures edgellm does not run.
func ChatFormatOf(path, override string) (*chat.Format, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	return chatFormat(f, tok, override)
}

// chatFormat chooses the chat template of file f with vocabulary tok. The
// texts it keeps are copies, so the format outlives the file's mapping.
func chatFormat(f *gguf.File, tok *tokenizer.Tokenizer, override string) (*chat.Format, error) {
	own, _ := f.String("tokenizer.chat_template")
	own = strings.Clone(own)
	cf, err := chat.ChooseFormat(override, own)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return cf, nil
	}
	if id := tok.BOS(); id >= 0 {
		cf.BOS = strings.Clone(tok.Text(id))
	}
	if id := tok.EOS(); id >= 0 {
		cf.EOS = strings.Clone(tok.Text(id))
	}
	cf.AddsBOS = tok.AddBOS()
	for _, id := range tok.EOG() {
		if s := tok.Text(id); s != "" {
			cf.EOG = append(cf.EOG, strings.Clone(s))
		}
	}
	return cf, nil
}

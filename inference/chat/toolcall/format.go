package toolcall

import "github.com/edgellm/edgellm/inference/chat"

// OfFormat is the tool-call syntax a chat template teaches its model:
// detected in the Jinja source when f renders Jinja; for a hand-written
// family, Llama 3.1's JSON for llama3.1 and Hermes for the others (they
// present tools the ChatML/Hermes way); the generic JSON for no template.
func OfFormat(f *chat.Format) Syntax {
	switch {
	case f == nil:
		return JSON
	case f.Jinja != nil:
		return Detect(f.Jinja.Source())
	case f.Family.Family == chat.Llama31:
		return Llama3JSON
	case f.Family.Family == 0:
		return JSON
	}
	return Hermes
}

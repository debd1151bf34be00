package inference

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference/chat"
)

// bosChatML is a ChatML chat template that writes BOS first, as
// SmolLM2's and Llama 3's write theirs.
const bosChatML = "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
	"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

// withTemplate returns the path of a copy of testdata model name whose
// tokenizer.chat_template is src, and whose add_bos_token is addBOS.
func withTemplate(t *testing.T, name, src string, addBOS bool) string {
	return rewrite(t, name, func(e *gguf.KV) bool {
		switch e.Key {
		case "general.name": // replaced: the builder takes no new keys here
			e.Key, e.Value = "tokenizer.chat_template", src
		case "tokenizer.ggml.add_bos_token":
			e.Value = addBOS
		}
		return true
	}, nil)
}

// The model's own Jinja template renders the prompt; when the tokenizer adds
// BOS itself the BOS text the template writes first is removed, so the
// tokens start with one BOS, never two; when it does not, the template's
// BOS text becomes the one BOS token.
func TestChatFormatOneBOS(t *testing.T) {
	for _, addBOS := range []bool{true, false} {
		m, err := Load(withTemplate(t, "tiny-q8_0", bosChatML, addBOS))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		f, err := m.ChatFormat("")
		if err != nil {
			t.Fatal(err)
		}
		if f.Jinja == nil || f.BOS != "<s>" || f.EOS != "</s>" || f.AddsBOS != addBOS || f.Family.Family != chat.ChatML {
			t.Fatalf("add_bos %v: format %v BOS %q EOS %q AddsBOS %v", addBOS, f, f.BOS, f.EOS, f.AddsBOS)
		}
		in, err := chat.NewInput([]chat.Message{{Role: chat.RoleUser, Content: "hi"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rendered, err := f.Render(context.Background(), in)
		if err != nil || rendered != "<s><|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" {
			t.Fatalf("rendered %q, %v", rendered, err)
		}
		prompt, err := f.Prompt(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimPrefix(rendered, map[bool]string{true: "<s>"}[addBOS]); prompt != want {
			t.Errorf("add_bos %v: prompt %q, want %q", addBOS, prompt, want)
		}
		ids, err := m.Tokenizer.Encode(prompt, true)
		if err != nil {
			t.Fatal(err)
		}
		bos := m.Tokenizer.BOS()
		if n := strings.Count(prompt, "<s>"); len(ids) == 0 || ids[0] != bos || countID(ids, bos) != 1 || n > 1 {
			t.Errorf("add_bos %v: tokens %v have %d BOS (id %d)", addBOS, ids, countID(ids, bos), bos)
		}
		if stops := f.StopStrings(); len(stops) != 2 || stops[0] != "<|im_end|>" || stops[1] != "</s>" {
			t.Errorf("stop strings %q: want the family's and the vocabulary's EOG", stops)
		}
	}
}

// countID counts id in ids.
func countID(ids []int32, id int32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// A model without a template needs an override; the error names the ways.
func TestChatFormatNoTemplate(t *testing.T) {
	m, err := Load("../testdata/models/tiny-q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.ChatFormat("")
	if !errors.Is(err, chat.ErrUnknownTemplate) || !strings.Contains(err.Error(), "--chat-template") ||
		!strings.Contains(err.Error(), "model.chat_template") || !strings.Contains(err.Error(), "chatml") {
		t.Errorf("no template: %v", err)
	}
	f, err := m.ChatFormat("chatml")
	if err != nil || f.Jinja != nil || f.Family.Family != chat.ChatML {
		t.Fatalf("chatml: %v, %v", f, err)
	}
	if stops := f.StopStrings(); stops[0] != "<|im_end|>" || !slices.Contains(stops, "</s>") {
		t.Errorf("chatml stop strings %q: want the family's, then the vocabulary's EOG", stops)
	}
}

// ChatFormatOf reads a file's template and vocabulary without its weights;
// the texts it keeps outlive the file.
func TestChatFormatOf(t *testing.T) {
	f, err := ChatFormatOf(withTemplate(t, "tiny-q8_0", bosChatML, true), "")
	if err != nil {
		t.Fatal(err)
	}
	in, _ := chat.NewInput([]chat.Message{{Role: chat.RoleUser, Content: "hi"}}, nil)
	got, err := f.Render(context.Background(), in)
	if err != nil || got != "<s><|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" || !f.AddsBOS {
		t.Errorf("rendered %q, %v (AddsBOS %v)", got, err, f.AddsBOS)
	}
	if _, err := ChatFormatOf("../testdata/models/missing.gguf", ""); err == nil {
		t.Error("a missing file: no error")
	}
}

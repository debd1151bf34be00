package chat

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/gguf"
)

// TestDetectPublishedTemplates runs Detect on the chat templates the models
// publish (Hugging Face tokenizer_config.json, as GGUF conversion stores
// them in tokenizer.chat_template).
func TestDetectPublishedTemplates(t *testing.T) {
	cases := []struct {
		file          string
		family        Family
		defaultSystem string
	}{
		{"tinyllama-1.1b-chat-v1.0.jinja", Zephyr, ""},
		{"qwen2.5-instruct.jinja", ChatML, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."},
		{"qwen2-instruct.jinja", ChatML, "You are a helpful assistant"},
		{"smollm2-instruct.jinja", ChatML, "You are a helpful AI assistant named SmolLM, trained by Hugging Face"},
		{"openhermes-2.5-chatml.jinja", ChatML, ""},
		{"llama-2-chat.jinja", Llama2, ""},
		{"llama-3-instruct.jinja", Llama3, ""},
		{"llama-3.1-instruct.jinja", Llama31, ""},
		{"llama-3.2-instruct.jinja", Llama31, ""},
		{"phi-3-mini-4k-instruct.jinja", Phi3, ""},
		{"phi-3.5-mini-instruct.jinja", Phi3, ""},
	}
	for _, c := range cases {
		tmpl, err := Detect(readTemplate(t, c.file))
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if tmpl.Family != c.family || tmpl.DefaultSystem != c.defaultSystem {
			t.Errorf("%s: got %v, default system %q; want %v, %q", c.file, tmpl.Family, tmpl.DefaultSystem, c.family, c.defaultSystem)
		}
	}
}

// TestDetectGGUF reads tokenizer.chat_template from a real GGUF file (the
// Phi-3 vocabulary llama.cpp ships, with the original Phi-3-mini template).
func TestDetectGGUF(t *testing.T) {
	f, err := gguf.Open(filepath.Join("..", "..", "testdata", "vocab", "ggml-vocab-phi-3.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := f.String("tokenizer.chat_template")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Detect(src)
	if err != nil || tmpl.Family != Phi3 {
		t.Fatalf("got %v, %v; want phi3", tmpl.Family, err)
	}
	if got := tmpl.StopStrings(); !slices.Equal(got, []string{"<|end|>"}) {
		t.Errorf("StopStrings = %q", got)
	}
}

func TestDetectUnknown(t *testing.T) {
	cases := []struct {
		name, src, why string
	}{
		{"empty", "", "no chat template"},
		{"blank", " \n\t", "no chat template"},
		{"gemma-2", readTemplate(t, "gemma-2-it.jinja"), "no ChatML"},
		{"mistral", readTemplate(t, "mistral-7b-instruct-v0.2.jinja"), "Mistral"},
		{"phi-4", readTemplate(t, "phi-4.jinja"), "Phi-4"},
		// <|user|> turns that do not end with EOS (Falcon 3 style).
		{"falcon3-like", "{% for message in messages %}{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + '\\n' }}" +
			"{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\\n' + message['content'] + eos_token + '\\n' }}{% endif %}{% endfor %}", "no ChatML"},
		{"plain", "{{ messages[0]['content'] }}", "no ChatML"},
	}
	for _, c := range cases {
		tmpl, err := Detect(c.src)
		if !errors.Is(err, ErrUnknownTemplate) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: got %v, %v; want ErrUnknownTemplate saying %q", c.name, tmpl.Family, err, c.why)
		}
	}
}

// TestDetectZephyrEOS: a Zephyr template that writes <|endoftext|> itself
// (rather than eos_token) ends turns with it.
func TestDetectZephyrEOS(t *testing.T) {
	src := "{% for message in messages %}{{ '<|user|>\\n' + message['content'] + '<|endoftext|>' + '\\n' }}{% endfor %}{{ '<|assistant|>\\n' }}"
	tmpl, err := Detect(src)
	if err != nil || tmpl.Family != Zephyr || tmpl.EOS != "<|endoftext|>" {
		t.Fatalf("got %+v, %v", tmpl, err)
	}
	if got := tmpl.StopStrings(); !slices.Equal(got, []string{"<|endoftext|>"}) {
		t.Errorf("StopStrings = %q", got)
	}
}

func TestUnquoteJinja(t *testing.T) {
	for in, want := range map[string]string{`plain`: "plain", `a\nb`: "a\nb", `it\'s \"x\" \\ \t`: "it's \"x\" \\ \t", `end\`: `end\`} {
		if got := unquoteJinja(in); got != want {
			t.Errorf("unquoteJinja(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestByName(t *testing.T) {
	for name, want := range map[string]Family{
		"chatml": ChatML, "QWEN": ChatML, " smollm2 ": ChatML, "zephyr": Zephyr, "tinyllama": Zephyr,
		"llama2": Llama2, "llama3": Llama3, "llama3.1": Llama31, "llama3.2": Llama31, "phi3": Phi3, "phi-3.5": Phi3,
	} {
		tmpl, err := ByName(name)
		if err != nil || tmpl.Family != want {
			t.Errorf("ByName(%q) = %v, %v; want %v", name, tmpl.Family, err, want)
		}
		if tmpl.DefaultSystem != "" {
			t.Errorf("ByName(%q) has a default system prompt %q", name, tmpl.DefaultSystem)
		}
	}
	for _, name := range Names() {
		if tmpl, err := ByName(name); err != nil || tmpl.Family.String() != name {
			t.Errorf("ByName(%q) = %v, %v", name, tmpl.Family, err)
		}
	}
	_, err := ByName("gemma")
	if !errors.Is(err, ErrUnknownTemplate) || !strings.Contains(err.Error(), "chatml, zephyr, llama2, llama3, llama3.1, phi3") {
		t.Errorf("ByName(gemma): %v", err)
	}
	if s := Family(0).String(); s != "Family(0)" {
		t.Errorf("Family(0) = %q", s)
	}
}

// Detect takes a family's default system prompt from the template; ByName
// has none.
func TestDetectDefaultSystem(t *testing.T) {
	tmpl, err := Detect(readTemplate(t, "qwen2.5-instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `chatml (default system prompt "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.")`; tmpl.String() != want {
		t.Errorf("Detect(qwen2.5) = %s, want %s", tmpl, want)
	}
	if tmpl, _ := ByName("qwen"); tmpl.String() != "chatml" {
		t.Errorf("ByName(qwen) = %s, want plain chatml", tmpl)
	}
}

func TestStopStrings(t *testing.T) {
	want := map[string][]string{
		"chatml": {"<|im_end|>"}, "zephyr": {"</s>"}, "llama2": {"</s>"},
		"llama3": {"<|eot_id|>"}, "llama3.1": {"<|eot_id|>", "<|eom_id|>"}, "phi3": {"<|end|>"},
	}
	for _, name := range Names() {
		tmpl, _ := ByName(name)
		if got := tmpl.StopStrings(); !slices.Equal(got, want[name]) {
			t.Errorf("%s: StopStrings = %q, want %q", name, got, want[name])
		}
	}
	if got := (Template{}).StopStrings(); got != nil {
		t.Errorf("zero Template: StopStrings = %q", got)
	}
}

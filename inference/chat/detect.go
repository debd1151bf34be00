package chat

import (
	"fmt"
	"regexp"
	"strings"
)

// zephyrTurn matches a Zephyr user turn: '<|user|>\n' + message['content']
// followed by the end-of-sequence token. Templates that put <|user|> before
// a turn but end it otherwise (Falcon 3, GLM-Edge) are other formats.
var zephyrTurn = regexp.MustCompile(`<\|user\|>(?:\\n|\n)'\s*\+\s*message(?:\['content'\]|\["content"\]|\.content)\s*\+\s*(eos_token|'</s>'|'<\|endoftext\|>')`)

// chatMLDefaultSystem matches a ChatML system turn written out in a Jinja
// string literal: the default system prompt of Qwen and SmolLM templates.
var chatMLDefaultSystem = regexp.MustCompile(`<\|im_start\|>system(?:\\n|\n)((?:[^'"<\\]|\\.)+)<\|im_end\|>`)

// Detect recognises the family of a GGUF tokenizer.chat_template (a Jinja
// template) from markers only that family's templates contain, and returns
// the Template that renders it. An empty template, or one of no known family,
// is an error wrapping ErrUnknownTemplate that says what was not recognised;
// the caller decides on a fallback (see ChooseFormat).
func Detect(src string) (Template, error) {
	if strings.TrimSpace(src) == "" {
		return Template{}, fmt.Errorf("chat: the model has no chat template: %w", ErrUnknownTemplate)
	}
	has := func(s string) bool { return strings.Contains(src, s) }
	switch {
	case has("<|im_start|>"):
		if has("<|im_sep|>") {
			return Template{}, unknown(src, "ChatML with <|im_sep|> (Phi-4) is not supported")
		}
		t := forFamily(ChatML)
		if m := chatMLDefaultSystem.FindStringSubmatch(src); m != nil {
			t.DefaultSystem = unquoteJinja(m[1])
		}
		return t, nil
	case has("<|start_header_id|>") && has("<|end_header_id|>"):
		if has("Cutting Knowledge Date") {
			return forFamily(Llama31), nil
		}
		return forFamily(Llama3), nil
	case has("[INST]"):
		if has("<<SYS>>") {
			return forFamily(Llama2), nil
		}
		return Template{}, unknown(src, "[INST] without <<SYS>> (Mistral style) is not supported")
	case has("<|user|>") && has("<|assistant|>") && has("<|end|>"):
		return forFamily(Phi3), nil
	}
	if m := zephyrTurn.FindStringSubmatch(src); m != nil {
		t := forFamily(Zephyr)
		if m[1] == "'<|endoftext|>'" {
			t.EOS = "<|endoftext|>"
		}
		return t, nil
	}
	return Template{}, unknown(src, "no ChatML, Llama 2, Llama 3, Phi-3 or Zephyr markers")
}

// unknown returns the error for a template Detect does not recognise, with
// the reason and the template's start.
func unknown(src, why string) error {
	start := strings.Join(strings.Fields(src), " ")
	if r := []rune(start); len(r) > 80 {
		start = string(r[:80]) + "…"
	}
	return fmt.Errorf("chat: %w: %s; set a template by name (%s): %q",
		ErrUnknownTemplate, why, strings.Join(Names(), ", "), start)
}

// unquoteJinja undoes the backslash escapes of a Jinja string literal.
func unquoteJinja(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		default: // \\, \', \" and anything else: the character itself
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

package chat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Format is the chat template chosen for a model (see ChooseFormat): the
// Jinja program that renders prompts, or, where there is none, one of the
// hand-written families as a fallback.
type Format struct {
	// Origin says where the template came from, for messages: "the model's
	// tokenizer.chat_template", "file NAME", "Jinja text", "family NAME".
	Origin string
	// Jinja is the compiled template; nil when Family renders.
	Jinja *Jinja
	// Family renders when Jinja is nil. With Jinja it is the family Detect
	// recognises in the source (the zero Template if none), which gives
	// the stop strings.
	Family Template
	// BOS and EOS are the texts of the model's begin- and end-of-sequence
	// tokens (bos_token, eos_token); ChooseFormat leaves them empty.
	BOS, EOS string
	// AddsBOS says the tokenizer puts BOS in front of the prompt itself
	// (tokenizer.ggml.add_bos_token): Prompt then removes one BOS text the
	// template writes at the start, so the prompt has one BOS, not two.
	AddsBOS bool
	// EOG are the texts of the vocabulary's end-of-generation tokens, which
	// StopStrings adds to the family's.
	EOG []string
}

// ChooseFormat picks a model's chat template. override, when not empty, is
// (in this order of tests) Jinja text (it contains "{{" or "{%"), the path
// of a .jinja file, or a family name for the hand-written fallback (see
// ByName); otherwise the model's own template (its tokenizer.chat_template,
// modelTemplate) is compiled. No override and no template of the model's is
// an error wrapping ErrUnknownTemplate that names the options. The caller
// sets BOS, EOS, AddsBOS and EOG from the vocabulary.
func ChooseFormat(override, modelTemplate string) (*Format, error) {
	switch {
	case override == "":
		if strings.TrimSpace(modelTemplate) == "" {
			return nil, fmt.Errorf("chat: %w: the model has no chat template (tokenizer.chat_template); "+
				"choose one, a family name (%s) or a .jinja file, with --chat-template, model.chat_template or the request's chat_template",
				ErrUnknownTemplate, strings.Join(Names(), ", "))
		}
		return jinjaFormat("the model's tokenizer.chat_template", modelTemplate)
	case strings.Contains(override, "{{") || strings.Contains(override, "{%"):
		return jinjaFormat("Jinja text", override)
	case strings.HasSuffix(override, ".jinja"):
		return JinjaFile(override)
	}
	t, err := ByName(override)
	if err != nil {
		return nil, err
	}
	return &Format{Origin: "family " + t.Family.String(), Family: t}, nil
}

// JinjaFile returns the Format of the Jinja template in the file at path.
func JinjaFile(path string) (*Format, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chat: reading the template file: %w", err)
	}
	return jinjaFormat("file "+filepath.Base(path), string(src))
}

// jinjaFormat compiles src into a Format.
func jinjaFormat(origin, src string) (*Format, error) {
	j, err := CompileJinja(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", origin, err)
	}
	f := &Format{Origin: origin, Jinja: j}
	if t, err := Detect(src); err == nil {
		f.Family = t
	}
	return f, nil
}

// String describes the format: where it came from and its family.
func (f *Format) String() string {
	if f.Jinja != nil && f.Family.Family != 0 {
		return fmt.Sprintf("Jinja (%s, %v family)", f.Origin, f.Family.Family)
	}
	if f.Jinja != nil {
		return fmt.Sprintf("Jinja (%s)", f.Origin)
	}
	return f.Family.String()
}

// Render renders in with the template, exactly as the template writes it:
// with Jinja, in's BOS and EOS default to the Format's and the text may
// start with the BOS text; a family renders in.Messages and in.Tools as
// Template.RenderTools does (no leading BOS, no kwargs, its Llama 3.1 date
// from in.Now). See Jinja.Render for ctx.
func (f *Format) Render(ctx context.Context, in Input) (string, error) {
	if in.BOS == "" {
		in.BOS = f.BOS
	}
	if in.EOS == "" {
		in.EOS = f.EOS
	}
	if f.Jinja != nil {
		return f.Jinja.Render(ctx, in)
	}
	msgs, err := ParseMessages(in.Messages)
	if err != nil {
		return "", err
	}
	tools, err := ParseTools(in.Tools)
	if err != nil {
		return "", err
	}
	t := f.Family
	t.BOS, t.EOS = in.BOS, in.EOS
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	t.Date = now.Format("02 Jan 2006")
	return t.RenderTools(msgs, tools, in.AddGenerationPrompt)
}

// Prompt is Render for tokenizing: when the tokenizer adds BOS itself
// (AddsBOS), one BOS text at the start of the rendering is removed, as
// llama.cpp does, so the tokens start with a single BOS.
func (f *Format) Prompt(ctx context.Context, in Input) (string, error) {
	text, err := f.Render(ctx, in)
	if err != nil {
		return "", err
	}
	bos := in.BOS
	if bos == "" {
		bos = f.BOS
	}
	if f.AddsBOS && bos != "" {
		text = strings.TrimPrefix(text, bos)
	}
	return text, nil
}

// StopStrings returns the texts at which generation should stop: those
// ending an assistant turn in the template's family ("<|im_end|>",
// "<|eot_id|>", …) where the family is known, and the vocabulary's
// end-of-generation tokens, each once.
func (f *Format) StopStrings() []string {
	t := f.Family
	if f.EOS != "" {
		t.EOS = f.EOS
	}
	var stops []string
	seen := map[string]bool{}
	for _, s := range append(t.StopStrings(), f.EOG...) {
		if s != "" && !seen[s] {
			seen[s] = true
			stops = append(stops, s)
		}
	}
	return stops
}

// Package chat turns a conversation into the prompt text a chat model was
// trained on.
//
// GGUF files carry the model's Hugging Face chat template, a Jinja program,
// in tokenizer.chat_template. [Jinja] renders it as transformers does, and
// [ChooseFormat] picks between it, a template given instead, and the
// hand-written families below, which stay as named fallbacks for files
// without a template; [Prober] checks a Jinja template in a child process
// before use. The package also recognises a template's family from
// distinctive markers ([Detect]), which gives the stop strings, and renders
// the families in Go ([Template.Render]). The families are the ones small
// models use:
//
//   - "chatml": <|im_start|>role\n … <|im_end|>\n (Qwen, SmolLM, Hermes).
//   - "zephyr": <|role|>\n … </s>\n (TinyLlama chat, Zephyr, StableLM Zephyr).
//   - "llama2": [INST] <<SYS>>\n…\n<</SYS>>\n\n … [/INST] (Llama 2 chat).
//   - "llama3": <|start_header_id|>role<|end_header_id|>\n\n … <|eot_id|>.
//   - "llama3.1": llama3 with the system header of Llama 3.1–3.3
//     ("Cutting Knowledge Date", "Today Date") and their tool convention.
//   - "phi3": <|role|>\n … <|end|>\n (Phi-3, Phi-3.5).
//
// A family's rendered text equals what the reference template produces
// under Hugging Face transformers (trim_blocks, lstrip_blocks), with one
// difference: a begin-of-sequence token the template writes at the very start is left out,
// as llama.cpp does, because the tokenizer adds BOS itself when the model asks
// for it (tokenizer.ggml.add_bos_token). Special-token texts elsewhere in the
// prompt (Llama 2's "</s><s>[INST]" between turns, Zephyr's "</s>") are
// written out, so the caller must tokenize the prompt with special tokens
// recognised.
//
// Tools: ChatML templates and the Llama 3.1 family have a native convention
// ([Template.RenderTools]); the other families get the ChatML/Hermes one as a
// block in the system message: the tools listed in <tools></tools>, calls
// written as <tool_call>{"name": …, "arguments": …}</tool_call> and tool
// results passed back in a user turn inside <tool_response></tool_response>.
//
// Where a family's templates differ, one is followed: phi3 renders system
// messages as Phi-3.5 and the updated Phi-3-mini do (the first Phi-3-mini
// template dropped them); chatml does not strip <think> reasoning from earlier
// assistant turns as Qwen3's template does; tool results in chatml follow
// Qwen2.5 whatever the template. Message text is inserted as it is, so text
// that spells a special token (say "<|im_end|>") becomes that token when the
// prompt is tokenized with special tokens recognised.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Roles a Message may have.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // the result of a tool call, passed back to the model
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // RoleSystem, RoleUser, RoleAssistant or RoleTool
	Content string // the text of the turn; for RoleTool, the tool's result
	// ToolCalls are the calls an assistant turn made (assistant turns only).
	ToolCalls []ToolCall
	// ToolCallID is, for RoleTool, the ID of the call this is the result of;
	// Name is the tool's name there. Only Jinja templates read them.
	ToolCallID, Name string
	// Reasoning is an earlier assistant turn's reasoning ("thinking"), for
	// templates that show or drop it. Only Jinja templates read it.
	Reasoning string
}

// ToolCall is a call of a tool by the model.
type ToolCall struct {
	ID   string // names the call, for the tool message answering it; may be empty
	Name string // the tool's name
	// Arguments is a JSON object of the call's arguments. A JSON string
	// holding an object (the OpenAI wire form) is accepted too; nil means {}.
	Arguments json.RawMessage
}

// Tool is a function the model may call.
type Tool struct {
	Name        string          // the function's name
	Description string          // what it does, for the model; may be empty
	Parameters  json.RawMessage // JSON Schema of its arguments; nil for none
}

// ErrUnknownTemplate is wrapped by the errors of Detect, ByName and ChooseFormat
// when there is no template, or it or the name is not one this package knows.
var ErrUnknownTemplate = errors.New("unknown chat template")

// ErrConversation is wrapped by Render's errors for conversations the
// template cannot express: unknown roles, misplaced system messages, turns
// out of the order the family requires, malformed tool calls.
var ErrConversation = errors.New("conversation not supported by the chat template")

// Family is a chat template family.
type Family int

// The families; the zero Family is none of them.
const (
	ChatML  Family = iota + 1 // "chatml"
	Zephyr                    // "zephyr"
	Llama2                    // "llama2"
	Llama3                    // "llama3"
	Llama31                   // "llama3.1"
	Phi3                      // "phi3"
)

// familyNames are the canonical names, indexed by Family.
var familyNames = [...]string{ChatML: "chatml", Zephyr: "zephyr", Llama2: "llama2",
	Llama3: "llama3", Llama31: "llama3.1", Phi3: "phi3"}

// aliases are other names ByName accepts.
var aliases = map[string]Family{
	"qwen": ChatML, "qwen2": ChatML, "qwen2.5": ChatML, "qwen3": ChatML,
	"smollm": ChatML, "smollm2": ChatML, "hermes": ChatML,
	"tinyllama": Zephyr,
	"llama-2":   Llama2,
	"llama-3":   Llama3,
	"llama-3.1": Llama31, "llama3.2": Llama31, "llama-3.2": Llama31,
	"llama3.3": Llama31, "llama-3.3": Llama31,
	"phi-3": Phi3, "phi3.5": Phi3, "phi-3.5": Phi3,
}

// String returns the family's canonical name, as ByName accepts it.
func (f Family) String() string {
	if f > 0 && int(f) < len(familyNames) {
		return familyNames[f]
	}
	return fmt.Sprintf("Family(%d)", int(f))
}

// Names returns the canonical family names ByName accepts (aliases aside).
func Names() []string { return append([]string(nil), familyNames[1:]...) }

// Template renders conversations in one family's format. The zero Template
// renders nothing; get one from Detect or ByName. Its fields may be
// adjusted before use.
type Template struct {
	Family Family
	// DefaultSystem is the system prompt the model's template puts in when a
	// conversation has none (Qwen2.5: "You are Qwen, created by Alibaba
	// Cloud. …", SmolLM2). Detect takes it from the template text; ByName
	// leaves it empty (no default system message).
	DefaultSystem string
	// BOS and EOS are the texts of the model's begin- and end-of-sequence
	// tokens where the family writes them inside the prompt: Llama 2 between
	// turns, Zephyr and Llama 2 at the end of turns, Phi-3 at the end of a
	// prompt without a generation prompt. Detect and ByName set the usual
	// texts ("<s>", "</s>"; Phi-3's EOS "<|endoftext|>"); callers should set
	// them from the model's vocabulary.
	BOS, EOS string
	// Date is the "Today Date" of llama3.1 system headers, like "26 Jul
	// 2024" (Go layout "02 Jan 2006"). Empty means "26 Jul 2024", the date
	// the Llama 3.1 template prints when it is given none; the Llama 3.2
	// template prints the current date, so callers that want to match it set
	// Date to time.Now().Format("02 Jan 2006").
	Date string
}

// String describes the template: its family and default system prompt.
func (t Template) String() string {
	if t.DefaultSystem != "" {
		return fmt.Sprintf("%v (default system prompt %q)", t.Family, t.DefaultSystem)
	}
	return t.Family.String()
}

// forFamily returns the Template of family f with its usual token texts.
func forFamily(f Family) Template {
	t := Template{Family: f, BOS: "<s>", EOS: "</s>"}
	if f == Phi3 {
		t.EOS = "<|endoftext|>"
	}
	return t
}

// ByName returns the template family called name: a canonical name
// ("chatml", "zephyr", "llama2", "llama3", "llama3.1", "phi3") or an alias
// such as "qwen", "smollm" or "tinyllama", in any case. The error for an
// unknown name wraps ErrUnknownTemplate and lists the known names.
func ByName(name string) (Template, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	for f, n := range familyNames {
		if n != "" && n == key {
			return forFamily(Family(f)), nil
		}
	}
	if f, ok := aliases[key]; ok {
		return forFamily(f), nil
	}
	var alias []string
	for a := range aliases {
		alias = append(alias, a)
	}
	sort.Strings(alias)
	return Template{}, fmt.Errorf("chat: %w %q (known: %s; aliases: %s)",
		ErrUnknownTemplate, name, strings.Join(Names(), ", "), strings.Join(alias, ", "))
}

// StopStrings returns the texts of the tokens that end an assistant turn in
// this family ("<|im_end|>", "<|eot_id|>", "<|end|>", or EOS), at which
// generation should stop. Generation should also stop at the vocabulary's
// end-of-generation tokens.
func (t Template) StopStrings() []string {
	switch t.Family {
	case ChatML:
		return []string{"<|im_end|>"}
	case Llama3:
		return []string{"<|eot_id|>"}
	case Llama31:
		return []string{"<|eot_id|>", "<|eom_id|>"}
	case Phi3:
		return []string{"<|end|>"}
	case Zephyr, Llama2:
		if t.EOS != "" {
			return []string{t.EOS}
		}
	}
	return nil
}

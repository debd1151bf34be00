package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/edgellm/edgellm/inference/grammar"
)

// Syntax is the way a family of models writes tool calls. The zero Syntax
// is the generic JSON fallback.
type Syntax uint8

// The syntaxes; see the package documentation for the exact form of each.
const (
	JSON          Syntax = iota // "json": {"name": …, "arguments": {…}} opening the answer
	Hermes                      // "hermes": <tool_call>{…}</tool_call> (Hermes, Qwen, Granite 4, SmolLM3)
	Llama3JSON                  // "llama3-json": {"name": …, "parameters": {…}} opening the answer (Llama 3.1–3.3)
	Mistral                     // "mistral": [TOOL_CALLS][{…, "id": …}, …] (Mistral Nemo, v3 templates)
	MistralArgs                 // "mistral-args": [TOOL_CALLS]name[ARGS]{…} (Mistral Small 3.2, Ministral 3, Magistral, Devstral)
	Granite                     // "granite": <|tool_call|>[{…}, …] (Granite 3.x)
	Phi4Mini                    // "phi4-mini": functools[{…}, …] (Phi-4-mini, FireFunction v2)
	LFM2Pythonic                // "lfm2-pythonic": <|tool_call_start|>[name(key=value, …), …]<|tool_call_end|> (LFM2, LFM2.5)
	FunctionGemma               // "functiongemma": <start_function_call>call:name{key:value,…}<end_function_call>
	numSyntaxes
)

// MaxCalls bounds the calls a constrained answer may hold.
const MaxCalls = 8

// String returns the syntax's name, as ParseSyntax accepts it.
func (s Syntax) String() string {
	switch s {
	case JSON:
		return "json"
	case Hermes:
		return "hermes"
	case Llama3JSON:
		return "llama3-json"
	case Mistral:
		return "mistral"
	case MistralArgs:
		return "mistral-args"
	case Granite:
		return "granite"
	case Phi4Mini:
		return "phi4-mini"
	case LFM2Pythonic:
		return "lfm2-pythonic"
	case FunctionGemma:
		return "functiongemma"
	}
	return fmt.Sprintf("Syntax(%d)", int(s))
}

// Syntaxes returns every syntax, the generic JSON fallback first.
func Syntaxes() []Syntax {
	all := make([]Syntax, numSyntaxes)
	for i := range all {
		all[i] = Syntax(i)
	}
	return all
}

// ParseSyntax returns the syntax called name (see Syntax.String).
func ParseSyntax(name string) (Syntax, error) {
	for _, s := range Syntaxes() {
		if s.String() == name {
			return s, nil
		}
	}
	names := make([]string, numSyntaxes)
	for i, s := range Syntaxes() {
		names[i] = s.String()
	}
	return JSON, fmt.Errorf("toolcall: unknown syntax %q (known: %s)", name, strings.Join(names, ", "))
}

// Detect returns the syntax that the chat template src (its Jinja source)
// teaches its model, from the markers the template writes; JSON when it
// has none of them.
func Detect(src string) Syntax {
	has := func(s string) bool { return strings.Contains(src, s) }
	switch {
	case has("<start_function_call>"):
		return FunctionGemma
	case has("<|tool_call_start|>"):
		return LFM2Pythonic
	case has("[TOOL_CALLS]") && has("[ARGS]"):
		return MistralArgs
	case has("[TOOL_CALLS]"):
		return Mistral
	case has("functools") || has("<|tool|>"):
		return Phi4Mini
	case has("<|tool_call|>"):
		return Granite
	case has("<tool_call>"):
		return Hermes
	case has(`"parameters"`) || has(`\"parameters\"`):
		return Llama3JSON
	}
	return JSON
}

// Trigger returns the text that begins the calls ("" when the call is a
// JSON object opening the answer: JSON, Llama3JSON).
func (s Syntax) Trigger() string {
	switch s {
	case Hermes:
		return "<tool_call>"
	case Mistral, MistralArgs:
		return "[TOOL_CALLS]"
	case Granite:
		return "<|tool_call|>"
	case Phi4Mini:
		return "functools"
	case LFM2Pythonic:
		return "<|tool_call_start|>"
	case FunctionGemma:
		return "<start_function_call>"
	}
	return ""
}

// Marks returns the fixed texts that begin and end calls in this syntax
// (none for JSON and Llama3JSON).
func (s Syntax) Marks() []string {
	var marks []string
	for _, m := range []string{s.Trigger(), s.endMark()} {
		if m != "" {
			marks = append(marks, m)
		}
	}
	return marks
}

// endMark returns the text that closes each call ("" when none does).
func (s Syntax) endMark() string {
	switch s {
	case Hermes:
		return "</tool_call>"
	case LFM2Pythonic:
		return "<|tool_call_end|>"
	case FunctionGemma:
		return "<end_function_call>"
	}
	return ""
}

// argsKey is the member of a JSON call that holds its arguments.
func (s Syntax) argsKey() string {
	if s == Llama3JSON {
		return "parameters"
	}
	return "arguments"
}

// Start returns where the constrained part of the output out begins: just
// after the trigger, or at the "{" that opens the answer for the syntaxes
// without one; -1 while no call has begun.
func (s Syntax) Start(out []byte) int {
	if t := s.Trigger(); t != "" {
		if i := bytes.Index(out, []byte(t)); i >= 0 {
			return i + len(t)
		}
		return -1
	}
	if t := bytes.TrimLeft(out, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return len(out) - len(t)
	}
	return -1
}

// Tool is a function the model may call: its name and the JSON Schema of
// its arguments (empty for any object).
type Tool = grammar.Tool

// Grammar returns the grammar of the calls of tools in this syntax: of the
// text after the trigger (see Start), or, with whole set, of a whole answer
// that is only calls (tool_choice "required"): the trigger, then the calls.
// An answer holds one to MaxCalls calls.
func (s Syntax) Grammar(tools []Tool, whole bool, opts grammar.Options) (*grammar.Grammar, error) {
	if len(tools) == 0 {
		return nil, fmt.Errorf("toolcall: no tools")
	}
	for _, t := range tools {
		if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
			return nil, fmt.Errorf("toolcall: tool %q: parameters are not valid JSON", t.Name)
		}
	}
	dialect := grammar.DialectJSON
	switch s {
	case LFM2Pythonic:
		dialect = grammar.DialectPython
	case FunctionGemma:
		dialect = grammar.DialectGemma
	}
	b := grammar.NewBuilder(dialect, opts)
	calls := s.calls(b, tools)
	if t := s.Trigger(); whole && t != "" {
		calls = b.Seq(b.Text(t), calls)
	}
	g, err := b.Build(calls)
	if err != nil {
		return nil, fmt.Errorf("toolcall: %v grammar: %w", s, err)
	}
	return g, nil
}

// calls returns the node of the calls after the trigger.
func (s Syntax) calls(b *grammar.Builder, tools []Tool) grammar.Node {
	sp := b.Space()
	list := func(item grammar.Node) grammar.Node { // [item, item, …]
		comma := b.Seq(sp, b.Text(","), sp)
		return b.Seq(sp, b.Text("["), sp, b.Repeat(item, &comma, 1, MaxCalls), sp, b.Text("]"))
	}
	switch s {
	case Hermes:
		item := b.Seq(sp, s.jsonCall(b, tools, false), sp, b.Text(s.endMark()))
		sep := b.Seq(sp, b.Text(s.Trigger()))
		return b.Repeat(item, &sep, 1, MaxCalls)
	case Mistral:
		return list(s.jsonCall(b, tools, true))
	case Granite, Phi4Mini:
		return list(s.jsonCall(b, tools, false))
	case MistralArgs:
		alts := make([]grammar.Node, len(tools))
		for i, t := range tools {
			alts[i] = b.Seq(b.Text(t.Name+"[ARGS]"), b.Value(objectSchema(t.Parameters)))
		}
		sep := b.Text(s.Trigger())
		return b.Repeat(b.AnyOf(alts...), &sep, 1, MaxCalls)
	case LFM2Pythonic:
		alts := make([]grammar.Node, len(tools))
		for i, t := range tools {
			alts[i] = b.Seq(b.Text(t.Name), b.Arguments(t.Parameters, '(', ')', '='))
		}
		comma := b.Seq(b.Text(","), sp)
		return b.Seq(b.Text("["), b.Repeat(b.AnyOf(alts...), &comma, 1, MaxCalls), b.Text("]"), b.Text(s.endMark()))
	case FunctionGemma:
		alts := make([]grammar.Node, len(tools))
		for i, t := range tools {
			alts[i] = b.Seq(b.Text("call:"+t.Name), b.Arguments(t.Parameters, '{', '}', ':'), b.Text(s.endMark()))
		}
		sep := b.Text(s.Trigger())
		return b.Repeat(b.AnyOf(alts...), &sep, 1, MaxCalls)
	}
	// JSON, Llama3JSON: objects opening the answer, one a line.
	sep := b.Seq(b.Text("\n"), sp)
	return b.Repeat(s.jsonCall(b, tools, false), &sep, 1, MaxCalls)
}

// jsonCall returns the node of a call written as a JSON object: the name
// and the arguments (under argsKey), and with withID an optional "id"
// string of at most 9 characters (Mistral's).
func (s Syntax) jsonCall(b *grammar.Builder, tools []Tool, withID bool) grammar.Node {
	alts := make([]grammar.Node, len(tools))
	for i, t := range tools {
		name, _ := json.Marshal(t.Name)
		schema := fmt.Sprintf(`{"type":"object","properties":{"name":{"const":%s},%q:%s`, name, s.argsKey(), objectSchema(t.Parameters))
		req := `"name",` + fmt.Sprintf("%q", s.argsKey())
		if withID {
			schema += `,"id":{"type":"string","maxLength":9}`
		}
		schema += `},"required":[` + req + `],"additionalProperties":false}`
		alts[i] = b.Value([]byte(schema))
	}
	return b.AnyOf(alts...)
}

// objectSchema returns the parameters schema of a tool, {"type":"object"}
// when it has none.
func objectSchema(params json.RawMessage) []byte {
	if len(bytes.TrimSpace(params)) == 0 {
		return []byte(`{"type":"object"}`)
	}
	return params
}

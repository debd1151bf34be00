package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Request bounds beyond the configurable limits, the same for every
// transport.
const (
	MaxTemperature   = 5.0  // highest temperature accepted
	MaxRepeatPenalty = 10.0 // highest repeat_penalty accepted
	MaxStop          = 16   // most stop sequences per request
	MaxStopBytes     = 256  // longest stop sequence
	// MaxDepth bounds the nesting of arrays and objects in a JSON request
	// (the request object itself is level 1), so a schema nested thousands
	// of levels deep is refused before it is decoded.
	MaxDepth = 64
	// MaxTools bounds the tools of one request.
	MaxTools = 64
	// MaxMessages bounds the messages of one conversation.
	MaxMessages = 256
	// MaxNameLen bounds a tool's name.
	MaxNameLen = 64
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`    // system, user, assistant or tool
	Content string `json:"content"` // the text of the turn
	// ToolCalls are the calls an assistant turn made, as the final answer
	// gave them ({"id","name","arguments"}) or in the OpenAI shape
	// ({"id","type":"function","function":{"name","arguments"}}).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, for a tool turn, the id of the call it answers; Name
	// is the tool's name there (optional).
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// Tool is a function the model may call, in the OpenAI shape:
// {"type":"function","function":{"name","description","parameters"}}.
type Tool struct {
	Type     string       `json:"type"`     // always "function"
	Function ToolFunction `json:"function"` // the function's description
}

// ToolFunction describes a callable function; Parameters is a JSON Schema
// object.
type ToolFunction struct {
	Name        string          `json:"name"`                  // [A-Za-z0-9_-], unique in the request
	Description string          `json:"description,omitempty"` // what it does, for the model
	Parameters  json.RawMessage `json:"parameters,omitempty"`  // JSON Schema of its arguments
}

// Tool choice modes.
const (
	ToolChoiceAuto     = "auto"     // the model decides
	ToolChoiceNone     = "none"     // never call a tool
	ToolChoiceRequired = "required" // call some tool
	ToolChoiceFunction = "function" // call the named function
)

// ToolChoice is the request's tool_choice: "auto", "none", "required", or
// {"type":"function","function":{"name":"…"}} (Mode "function").
type ToolChoice struct {
	Mode     string // ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired or ToolChoiceFunction
	Function string // the function to call, for ToolChoiceFunction
}

// UnmarshalJSON accepts the string and object forms.
func (tc *ToolChoice) UnmarshalJSON(b []byte) error {
	var mode string
	if err := json.Unmarshal(b, &mode); err == nil {
		switch mode {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
			*tc = ToolChoice{Mode: mode}
			return nil
		}
		return fmt.Errorf("tool_choice %q is not auto, none, required or a function object", mode)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
		return errors.New(`tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name":"…"}}`)
	}
	*tc = ToolChoice{Mode: ToolChoiceFunction, Function: obj.Function.Name}
	return nil
}

// MarshalJSON writes the form UnmarshalJSON reads.
func (tc ToolChoice) MarshalJSON() ([]byte, error) {
	if tc.Mode == ToolChoiceFunction {
		return json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Function}})
	}
	return json.Marshal(tc.Mode)
}

// Request is what a client asks, whatever the transport. Pointer fields are
// nil when the request leaves them to the configured defaults. Field names
// in errors (Error.Field) are the JSON names of this type.
type Request struct {
	// Prompt is a single prompt; exactly one of Prompt and Messages is set.
	Prompt string `json:"prompt,omitempty"`
	// Messages is a conversation, oldest first.
	Messages []Message `json:"messages,omitempty"`
	// System is a system prompt for Prompt (or for Messages without one).
	System string `json:"system,omitempty"`
	// Raw gives Prompt to the model as it is, without the chat template: a
	// plain text completion (OpenAI's /v1/completions, Ollama's raw
	// generate). System, if any, goes before it, separated by a blank line.
	Raw         bool     `json:"raw,omitempty"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`  // 1 … Limits.MaxTokens
	Temperature *float64 `json:"temperature,omitempty"` // 0 … MaxTemperature; 0 is greedy
	TopP        *float64 `json:"top_p,omitempty"`       // (0, 1]
	TopK        *int     `json:"top_k,omitempty"`       // 0 (off) or more
	MinP        *float64 `json:"min_p,omitempty"`       // [0, 1)
	Seed        *int64   `json:"seed,omitempty"`        // -1 (random) or a fixed seed
	// RepeatPenalty divides the logits of recently generated tokens; 1 is
	// off.
	RepeatPenalty *float64 `json:"repeat_penalty,omitempty"` // (0, MaxRepeatPenalty]
	// Stop ends generation at any of these strings (not included).
	Stop []string `json:"stop,omitempty"`
	// Stream asks for the answer's text (and reasoning) as it is generated,
	// before the final answer.
	Stream bool `json:"stream,omitempty"`
	// JSON constrains the answer to JSON; Schema (an object) to that JSON
	// Schema, and implies JSON.
	JSON   bool            `json:"json,omitempty"`   // answer with JSON
	Schema json.RawMessage `json:"schema,omitempty"` // a JSON Schema object the answer follows
	// Tools the model may call, and how it should choose.
	Tools      []Tool      `json:"tools,omitempty"`       // functions the model may call
	ToolChoice *ToolChoice `json:"tool_choice,omitempty"` // nil means auto
	// ChatTemplate overrides the configured chat template for this request.
	ChatTemplate string `json:"chat_template,omitempty"`
	// Think lets a thinking model reason before it answers (the template's
	// enable_thinking); nil takes sampling.think. The reasoning goes to
	// Answer.Reasoning and Responder.Reasoning, never into the text. When
	// it is false and the model starts reasoning anyway, the reasoning is
	// closed at once.
	Think *bool `json:"think,omitempty"`
}

// Limits bound what Validate accepts.
type Limits struct {
	// MaxTokens is the largest max_tokens (limits.max_tokens); 0 = no bound.
	MaxTokens int
}

// Validate checks the request's semantics (it does not look at how it was
// encoded) and sets JSON when a Schema is given. The error is an *Error
// with CodeBadRequest naming the field at fault.
func (r *Request) Validate(lim Limits) error {
	if err := r.validatePrompt(); err != nil {
		return err
	}
	if r.MaxTokens != nil && (*r.MaxTokens < 1 || (lim.MaxTokens > 0 && *r.MaxTokens > lim.MaxTokens)) {
		return BadField("max_tokens", "must be between 1 and %d (limits.max_tokens), got %d", lim.MaxTokens, *r.MaxTokens)
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > MaxTemperature) {
		return BadField("temperature", "must be between 0 and %g, got %g", MaxTemperature, *r.Temperature)
	}
	// The sampler works in float32: a top_p that rounds to 0 there is 0.
	if r.TopP != nil && (*r.TopP <= 0 || float32(*r.TopP) <= 0 || *r.TopP > 1) {
		return BadField("top_p", "must be in (0, 1], got %g", *r.TopP)
	}
	if r.TopK != nil && *r.TopK < 0 {
		return BadField("top_k", "must be 0 (off) or more, got %d", *r.TopK)
	}
	if r.MinP != nil && (*r.MinP < 0 || float32(*r.MinP) >= 1) {
		return BadField("min_p", "must be in [0, 1), got %g", *r.MinP)
	}
	if r.RepeatPenalty != nil && (*r.RepeatPenalty <= 0 || *r.RepeatPenalty > MaxRepeatPenalty) {
		return BadField("repeat_penalty", "must be in (0, %g] (1 turns it off), got %g", MaxRepeatPenalty, *r.RepeatPenalty)
	}
	if r.Seed != nil && *r.Seed < -1 {
		return BadField("seed", "must be -1 (random) or a non-negative integer, got %d", *r.Seed)
	}
	if len(r.Stop) > MaxStop {
		return BadField("stop", "at most %d stop sequences, got %d", MaxStop, len(r.Stop))
	}
	for i, s := range r.Stop {
		if s == "" || len(s) > MaxStopBytes {
			return BadField("stop", "stop[%d] must be 1 to %d bytes, got %d", i, MaxStopBytes, len(s))
		}
	}
	if r.Schema != nil {
		if b := bytes.TrimSpace(r.Schema); len(b) == 0 || b[0] != '{' {
			return BadField("schema", "must be a JSON Schema object, got %s", abbreviate(string(b)))
		}
		r.JSON = true
	}
	if err := r.validateTools(); err != nil {
		return err
	}
	if r.Raw {
		switch {
		case r.Messages != nil:
			return BadField("raw", "is for a prompt, not messages")
		case len(r.Tools) > 0:
			return BadField("raw", "a raw prompt has no template to present tools")
		case r.Think != nil && *r.Think:
			return BadField("raw", "a raw prompt has no template to turn thinking on")
		case r.ChatTemplate != "":
			return BadField("raw", "a raw prompt uses no chat template")
		}
	}
	if r.ChatTemplate != "" && strings.TrimSpace(r.ChatTemplate) == "" {
		return BadField("chat_template", "must not be blank")
	}
	return nil
}

func (r *Request) validatePrompt() error {
	switch {
	case r.Prompt != "" && r.Messages != nil:
		return BadField("messages", "give either prompt or messages, not both")
	case r.Prompt == "" && r.Messages == nil:
		return BadField("prompt", "missing: give prompt (a string) or messages (a conversation)")
	case r.Messages == nil:
		if strings.TrimSpace(r.Prompt) == "" {
			return BadField("prompt", "must not be blank")
		}
		return nil
	}
	if len(r.Messages) == 0 {
		return BadField("messages", "must not be empty")
	}
	if len(r.Messages) > MaxMessages {
		return BadField("messages", "at most %d messages, got %d", MaxMessages, len(r.Messages))
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem:
			if i != 0 {
				return BadField("messages", "messages[%d]: a system message must come first", i)
			}
			if r.System != "" {
				return BadField("system", "given twice: in system and in messages[0]")
			}
		case RoleUser, RoleAssistant, RoleTool:
		default:
			return BadField("messages", "messages[%d].role %q is not system, user, assistant or tool", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
			return BadField("messages", "messages[%d]: only assistant turns have tool_calls", i)
		}
		if len(m.ToolCalls) > MaxTools {
			return BadField("messages", "messages[%d]: at most %d tool_calls, got %d", i, MaxTools, len(m.ToolCalls))
		}
		for k, c := range m.ToolCalls {
			if err := ValidateName(c.Name); err != nil {
				return BadField("messages", "messages[%d].tool_calls[%d].name: %v", i, k, err)
			}
			if a := bytes.TrimSpace(c.Arguments); len(a) > 0 && a[0] != '{' && a[0] != '"' {
				return BadField("messages", "messages[%d].tool_calls[%d].arguments must be a JSON object (or a string holding one)", i, k)
			}
		}
		if (m.ToolCallID != "" || m.Name != "") && m.Role != RoleTool {
			return BadField("messages", "messages[%d]: only tool turns have tool_call_id and name", i)
		}
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role != RoleUser && last.Role != RoleTool {
		return BadField("messages", "the last message must be from user or tool, got %s", last.Role)
	}
	if strings.TrimSpace(last.Content) == "" {
		return BadField("messages", "messages[%d].content must not be blank", len(r.Messages)-1)
	}
	return nil
}

func (r *Request) validateTools() error {
	if len(r.Tools) > MaxTools {
		return BadField("tools", "at most %d tools, got %d", MaxTools, len(r.Tools))
	}
	names := map[string]bool{}
	for i, tool := range r.Tools {
		if tool.Type != "function" {
			return BadField("tools", "tools[%d].type must be \"function\", got %q", i, tool.Type)
		}
		if err := ValidateName(tool.Function.Name); err != nil {
			return BadField("tools", "tools[%d].function.name: %v", i, err)
		}
		if names[tool.Function.Name] {
			return BadField("tools", "tools[%d]: function %q defined twice", i, tool.Function.Name)
		}
		names[tool.Function.Name] = true
		if p := bytes.TrimSpace(tool.Function.Parameters); len(p) > 0 && p[0] != '{' {
			return BadField("tools", "tools[%d].function.parameters must be a JSON Schema object", i)
		}
	}
	if tc := r.ToolChoice; tc != nil {
		if len(r.Tools) == 0 && tc.Mode != ToolChoiceNone && tc.Mode != ToolChoiceAuto {
			return BadField("tool_choice", "%q needs tools", tc.Mode)
		}
		if tc.Mode == ToolChoiceFunction && !names[tc.Function] {
			return BadField("tool_choice", "names function %q, which is not in tools", tc.Function)
		}
	}
	return nil
}

// ValidateName checks a tool's name: 1 to MaxNameLen characters from
// [A-Za-z0-9_-] (what every chat template's call syntax can carry).
func ValidateName(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%q is longer than %d characters", name, MaxNameLen)
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("%q has %q at offset %d; use only letters, digits, '_' and '-'", name, r, i)
		}
	}
	return nil
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// TooDeep reports whether the arrays and objects of JSON text b nest more
// than limit levels deep. It reads brackets outside strings only and does not
// validate b.
func TooDeep(b []byte, limit int) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

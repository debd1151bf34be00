package mqtt

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Request bounds beyond the configurable limits.
const (
	MaxTemperature = 5.0 // highest temperature accepted
	MaxStop        = 16  // most stop sequences per request
	MaxStopBytes   = 256 // longest stop sequence
	// MaxDepth bounds the nesting of arrays and objects in a JSON request
	// (the request object itself is level 1), so a schema nested thousands
	// of levels deep is refused before it is decoded.
	MaxDepth = 64
	// MaxTools bounds the tools of one request.
	MaxTools = 64
	// MaxMessages bounds the messages of one conversation.
	MaxMessages = 256
)

// ChatMessage is one turn of a conversation.
type ChatMessage struct {
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

// Request is one prompt to answer. Pointer fields are nil when the request
// leaves them to the configured defaults.
type Request struct {
	// ID names the request in response topics; generated when absent.
	ID string `json:"id,omitempty"`
	// Prompt is a single prompt; exactly one of Prompt and Messages is set.
	Prompt string `json:"prompt,omitempty"`
	// Messages is a conversation, oldest first.
	Messages []ChatMessage `json:"messages,omitempty"`
	// System is a system prompt for Prompt (or for Messages without one).
	System      string   `json:"system,omitempty"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`  // 1 … limits.max_tokens
	Temperature *float64 `json:"temperature,omitempty"` // 0 … MaxTemperature; 0 is greedy
	TopP        *float64 `json:"top_p,omitempty"`       // (0, 1]
	TopK        *int     `json:"top_k,omitempty"`       // 0 (off) or more
	MinP        *float64 `json:"min_p,omitempty"`       // [0, 1)
	Seed        *int64   `json:"seed,omitempty"`        // -1 (random) or a fixed seed
	// Stop ends generation at any of these strings (not included).
	Stop []string `json:"stop,omitempty"`
	// Stream asks for chunks on Topics.Stream(ID) before the final answer.
	Stream bool `json:"stream,omitempty"`
	// ReplyTo replaces Topics.ResponseFor(ID) for the final answer.
	ReplyTo string `json:"reply_to,omitempty"`
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
	// Final.Reasoning and Topics.ReasoningStream(ID), never into the text.
	// When it is false and the model starts reasoning anyway, the reasoning
	// is closed at once.
	Think *bool `json:"think,omitempty"`

	// Plain is true when the payload was bare text rather than JSON: the
	// answer is then bare text on Topics.Response().
	Plain bool `json:"-"`
	// GeneratedID is true when the request had no (valid) id of its own.
	GeneratedID bool `json:"-"`
}

// RequestLimits bound what ParseRequest accepts.
type RequestLimits struct {
	// MaxBytes is the largest payload (limits.max_prompt_bytes).
	MaxBytes int
	// MaxTokens is the largest max_tokens (limits.max_tokens).
	MaxTokens int
	// NoReplyTo lists topics reply_to may not name: the topics the daemon
	// itself reads requests from, so an answer cannot loop back as a request.
	NoReplyTo []string
}

// RequestError is why a request was refused: Code is the error code of the
// answer, Field the JSON field at fault ("" for the payload as a whole).
type RequestError struct {
	Code  string // CodeBadRequest or CodeTooLong
	Field string // the JSON field at fault, or ""
	Msg   string // what is wrong, for the answer's error.message
}

// Error formats as "mqtt: request: field "top_p": must be …".
func (e *RequestError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("mqtt: request: field %q: %s", e.Field, e.Msg)
	}
	return "mqtt: request: " + e.Msg
}

func badField(field, format string, args ...any) *RequestError {
	return &RequestError{Code: CodeBadRequest, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// NewID returns a fresh request id: 16 random hex digits.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// ParseRequest parses a request payload. JSON (first non-space byte '{')
// is decoded strictly: unknown fields, wrong types and out-of-range values
// are errors naming the field. Any other UTF-8 text is a bare prompt (Plain).
//
// On error ParseRequest still returns a Request carrying what is needed to
// route the error answer: the payload's id and reply_to when they could be
// read and are valid (a generated id otherwise). The error is a
// *RequestError.
func ParseRequest(payload []byte, lim RequestLimits) (*Request, error) {
	if lim.MaxBytes > 0 && len(payload) > lim.MaxBytes {
		return salvage(payload, lim), &RequestError{Code: CodeTooLong,
			Msg: fmt.Sprintf("payload is %d bytes, more than the limit of %d (limits.max_prompt_bytes)", len(payload), lim.MaxBytes)}
	}
	if !utf8.Valid(payload) {
		off := invalidUTF8Offset(payload)
		return salvage(payload, lim), &RequestError{Code: CodeBadRequest,
			Msg: fmt.Sprintf("payload is not valid UTF-8 (bad byte at offset %d)", off)}
	}
	trimmed := bytes.TrimLeft(payload, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && tooDeep(trimmed, MaxDepth) {
		return salvage(payload, lim), &RequestError{Code: CodeBadRequest,
			Msg: fmt.Sprintf("JSON nested more than %d levels deep", MaxDepth)}
	}
	if len(trimmed) > 0 && trimmed[0] != '{' && json.Valid(trimmed) {
		return salvage(payload, lim), &RequestError{Code: CodeBadRequest,
			Msg: fmt.Sprintf("a JSON request must be an object, got %s; send a prompt as text or a JSON request object", jsonKind(trimmed[0]))}
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		r := &Request{ID: NewID(), GeneratedID: true, Plain: true, Prompt: string(payload)}
		if strings.TrimSpace(r.Prompt) == "" {
			return r, &RequestError{Code: CodeBadRequest, Msg: "empty payload: send a prompt as text or a JSON request"}
		}
		return r, nil
	}

	r := &Request{}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return salvage(payload, lim), decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return salvage(payload, lim), &RequestError{Code: CodeBadRequest,
			Msg: fmt.Sprintf("trailing data after the JSON object at byte %d", dec.InputOffset())}
	}
	if err := r.validate(lim); err != nil {
		routed := salvage(payload, lim)
		r.ID, r.GeneratedID, r.ReplyTo = routed.ID, routed.GeneratedID, routed.ReplyTo
		return r, err
	}
	return r, nil
}

// salvage reads id and reply_to leniently from a payload that failed, keeping
// them only when valid, so the error answer reaches the requester. It reads
// the top-level object token by token, so the fields seen before a syntax
// error (or trailing data) still count; invalid UTF-8 is read as U+FFFD.
func salvage(payload []byte, lim RequestLimits) *Request {
	fields := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		depth, key := 1, ""
		for depth > 0 && len(fields) < 2 {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if v, ok := tok.(json.Delim); ok {
				if v == '{' || v == '[' {
					depth++
				} else {
					depth--
				}
				key = ""
				continue
			}
			if depth != 1 {
				continue
			}
			if key == "" {
				key, _ = tok.(string)
				continue
			}
			if str, ok := tok.(string); ok && (key == "id" || key == "reply_to") {
				if _, seen := fields[key]; !seen {
					fields[key] = str
				}
			}
			key = ""
		}
	}
	r := &Request{}
	if id, ok := fields["id"]; ok && ValidateRequestID(id) == nil {
		r.ID = id
	} else {
		r.ID, r.GeneratedID = NewID(), true
	}
	if rt, ok := fields["reply_to"]; ok && validReplyTo(rt, lim) == nil {
		r.ReplyTo = rt
	}
	return r
}

// tooDeep reports whether the arrays and objects of JSON text b nest more
// than limit levels deep. It reads brackets outside strings only and does not
// validate b.
func tooDeep(b []byte, limit int) bool {
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

// jsonKind names the kind of JSON value that starts with byte c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// requestFields lists the JSON fields of Request, for error messages.
func requestFields() string {
	t := reflect.TypeOf(Request{})
	var names []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// decodeError turns encoding/json's errors into RequestErrors naming the
// field.
func decodeError(err error) *RequestError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &RequestError{Code: CodeBadRequest, Msg: fmt.Sprintf("invalid JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return &RequestError{Code: CodeBadRequest, Msg: fmt.Sprintf("want a JSON object, got %s", typ.Value)}
		}
		return badField(field, "want %s, got %s", jsonTypeName(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &RequestError{Code: CodeBadRequest, Msg: "invalid JSON: the payload ends in the middle of the object"}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, `json: unknown field "`); ok {
		name = strings.TrimSuffix(name, `"`)
		return badField(name, "unknown field; the fields are: %s", requestFields())
	}
	if strings.Contains(msg, "tool_choice") {
		return badField("tool_choice", "%s", strings.TrimPrefix(msg, "json: "))
	}
	return &RequestError{Code: CodeBadRequest, Msg: strings.TrimPrefix(msg, "json: ")}
}

func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// validate checks the decoded request's semantics and fills its id.
func (r *Request) validate(lim RequestLimits) error {
	if r.ID == "" {
		r.ID, r.GeneratedID = NewID(), true
	} else if err := ValidateRequestID(r.ID); err != nil {
		return badField("id", "%v", err)
	}
	if err := r.validatePrompt(); err != nil {
		return err
	}
	if r.MaxTokens != nil && (*r.MaxTokens < 1 || (lim.MaxTokens > 0 && *r.MaxTokens > lim.MaxTokens)) {
		return badField("max_tokens", "must be between 1 and %d (limits.max_tokens), got %d", lim.MaxTokens, *r.MaxTokens)
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > MaxTemperature) {
		return badField("temperature", "must be between 0 and %g, got %g", MaxTemperature, *r.Temperature)
	}
	// The sampler works in float32: a top_p that rounds to 0 there is 0.
	if r.TopP != nil && (*r.TopP <= 0 || float32(*r.TopP) <= 0 || *r.TopP > 1) {
		return badField("top_p", "must be in (0, 1], got %g", *r.TopP)
	}
	if r.TopK != nil && *r.TopK < 0 {
		return badField("top_k", "must be 0 (off) or more, got %d", *r.TopK)
	}
	if r.MinP != nil && (*r.MinP < 0 || float32(*r.MinP) >= 1) {
		return badField("min_p", "must be in [0, 1), got %g", *r.MinP)
	}
	if r.Seed != nil && *r.Seed < -1 {
		return badField("seed", "must be -1 (random) or a non-negative integer, got %d", *r.Seed)
	}
	if len(r.Stop) > MaxStop {
		return badField("stop", "at most %d stop sequences, got %d", MaxStop, len(r.Stop))
	}
	for i, s := range r.Stop {
		if s == "" || len(s) > MaxStopBytes {
			return badField("stop", "stop[%d] must be 1 to %d bytes, got %d", i, MaxStopBytes, len(s))
		}
	}
	if r.ReplyTo != "" {
		if err := validReplyTo(r.ReplyTo, lim); err != nil {
			return badField("reply_to", "%v", err)
		}
	}
	if r.Schema != nil {
		if b := bytes.TrimSpace(r.Schema); len(b) == 0 || b[0] != '{' {
			return badField("schema", "must be a JSON Schema object, got %s", abbreviate(string(b)))
		}
		r.JSON = true
	}
	if err := r.validateTools(); err != nil {
		return err
	}
	if r.ChatTemplate != "" && strings.TrimSpace(r.ChatTemplate) == "" {
		return badField("chat_template", "must not be blank")
	}
	return nil
}

func (r *Request) validatePrompt() error {
	switch {
	case r.Prompt != "" && r.Messages != nil:
		return badField("messages", "give either prompt or messages, not both")
	case r.Prompt == "" && r.Messages == nil:
		return badField("prompt", "missing: give prompt (a string) or messages (a conversation)")
	case r.Messages == nil:
		if strings.TrimSpace(r.Prompt) == "" {
			return badField("prompt", "must not be blank")
		}
		return nil
	}
	if len(r.Messages) == 0 {
		return badField("messages", "must not be empty")
	}
	if len(r.Messages) > MaxMessages {
		return badField("messages", "at most %d messages, got %d", MaxMessages, len(r.Messages))
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem:
			if i != 0 {
				return badField("messages", "messages[%d]: a system message must come first", i)
			}
			if r.System != "" {
				return badField("system", "given twice: in system and in messages[0]")
			}
		case RoleUser, RoleAssistant, RoleTool:
		default:
			return badField("messages", "messages[%d].role %q is not system, user, assistant or tool", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
			return badField("messages", "messages[%d]: only assistant turns have tool_calls", i)
		}
		if len(m.ToolCalls) > MaxTools {
			return badField("messages", "messages[%d]: at most %d tool_calls, got %d", i, MaxTools, len(m.ToolCalls))
		}
		for k, c := range m.ToolCalls {
			if err := ValidateID(c.Name); err != nil {
				return badField("messages", "messages[%d].tool_calls[%d].name: %v", i, k, err)
			}
			if a := bytes.TrimSpace(c.Arguments); len(a) > 0 && a[0] != '{' && a[0] != '"' {
				return badField("messages", "messages[%d].tool_calls[%d].arguments must be a JSON object (or a string holding one)", i, k)
			}
		}
		if (m.ToolCallID != "" || m.Name != "") && m.Role != RoleTool {
			return badField("messages", "messages[%d]: only tool turns have tool_call_id and name", i)
		}
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role != RoleUser && last.Role != RoleTool {
		return badField("messages", "the last message must be from user or tool, got %s", last.Role)
	}
	if strings.TrimSpace(last.Content) == "" {
		return badField("messages", "messages[%d].content must not be blank", len(r.Messages)-1)
	}
	return nil
}

func (r *Request) validateTools() error {
	if len(r.Tools) > MaxTools {
		return badField("tools", "at most %d tools, got %d", MaxTools, len(r.Tools))
	}
	names := map[string]bool{}
	for i, tool := range r.Tools {
		if tool.Type != "function" {
			return badField("tools", "tools[%d].type must be \"function\", got %q", i, tool.Type)
		}
		if err := ValidateID(tool.Function.Name); err != nil {
			return badField("tools", "tools[%d].function.name: %v", i, err)
		}
		if names[tool.Function.Name] {
			return badField("tools", "tools[%d]: function %q defined twice", i, tool.Function.Name)
		}
		names[tool.Function.Name] = true
		if p := bytes.TrimSpace(tool.Function.Parameters); len(p) > 0 && p[0] != '{' {
			return badField("tools", "tools[%d].function.parameters must be a JSON Schema object", i)
		}
	}
	if tc := r.ToolChoice; tc != nil {
		if len(r.Tools) == 0 && tc.Mode != ToolChoiceNone && tc.Mode != ToolChoiceAuto {
			return badField("tool_choice", "%q needs tools", tc.Mode)
		}
		if tc.Mode == ToolChoiceFunction && !names[tc.Function] {
			return badField("tool_choice", "names function %q, which is not in tools", tc.Function)
		}
	}
	return nil
}

func validReplyTo(t string, lim RequestLimits) error {
	if err := ValidatePublishTopic(t); err != nil {
		return err
	}
	for _, own := range lim.NoReplyTo {
		if t == own {
			return fmt.Errorf("%q is a topic this node reads requests from; answering there would loop", t)
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

// CancelRunning is the id that cancels whatever job is running (the Home
// Assistant cancel button sends it).
const CancelRunning = "*"

// ParseCancel parses a cancel payload: {"id":"<request id>"} (or "*" for
// the running job), or the bare id as text.
func ParseCancel(payload []byte) (string, error) {
	if !utf8.Valid(payload) {
		return "", &RequestError{Code: CodeBadRequest, Msg: "cancel payload is not valid UTF-8"}
	}
	text := strings.TrimSpace(string(payload))
	id := text
	if strings.HasPrefix(text, "{") {
		var c struct {
			ID string `json:"id"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			e := decodeError(err)
			if e.Field != "" && e.Field != "id" {
				e.Msg = `unknown field; a cancel is {"id":"<request id>"}`
			}
			return "", e
		}
		id = c.ID
	}
	if id == CancelRunning {
		return id, nil
	}
	if err := ValidateRequestID(id); err != nil {
		return "", badField("id", "%v", err)
	}
	return id, nil
}

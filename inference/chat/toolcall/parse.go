package toolcall

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
)

// Call is one tool call of an answer.
type Call struct {
	ID        string          // names the call, for the tool message answering it; unique in the answer
	Name      string          // the function called, one of the tools
	Arguments json.RawMessage // its arguments, a compact JSON object
}

// Parsed is an answer read in a syntax.
type Parsed struct {
	Content string // the free text before the calls (the whole text when there are none), trimmed
	Calls   []Call // the calls, in order; nil when the text holds none
	Rest    string // the text after the calls that is no call (trimmed; "" when the calls end the text)
}

// Parse reads the tool calls of text, a model's answer written in syntax s.
// Only calls of tools (by name) whose arguments are a JSON object count.
// Calls are read up to the first that is malformed or names no tool; text
// with none has no calls and is all content. Each call gets an id unique in
// the answer: the model's own where the syntax has one (Mistral's nine
// letters and digits), else a new one.
func (s Syntax) Parse(text string, tools []Tool) Parsed {
	content, rest, ok := s.split(text)
	if !ok {
		return Parsed{Content: strings.TrimSpace(text)}
	}
	r := &reader{s: rest, tools: tools}
	switch s {
	case Hermes:
		s.parseTagged(r)
	case Mistral, MistralArgs: // either form, whichever the text has
		r.space()
		if r.peek() == '[' {
			r.jsonList()
		} else {
			r.mistralArgs(s)
		}
	case Granite, Phi4Mini:
		r.jsonList()
	case LFM2Pythonic:
		r.pythonic(s)
	case FunctionGemma:
		r.gemma(s)
	default:
		r.jsonLines(s)
	}
	if len(r.calls) == 0 {
		return Parsed{Content: strings.TrimSpace(text)}
	}
	assignIDs(r.calls, s)
	return Parsed{Content: strings.TrimSpace(content), Calls: r.calls, Rest: strings.TrimSpace(r.s)}
}

// split cuts text at the trigger: the content before it and the text of the
// calls after it. The syntaxes without a trigger take a text that opens
// with "{" (or "[", a list of calls) as calls, with no content.
func (s Syntax) split(text string) (content, rest string, ok bool) {
	if t := s.Trigger(); t != "" {
		i := strings.Index(text, t)
		if i < 0 {
			return "", "", false
		}
		return text[:i], text[i+len(t):], true
	}
	rest = strings.TrimLeft(text, " \t\r\n")
	if rest == "" || rest[0] != '{' && rest[0] != '[' {
		return "", "", false
	}
	return "", rest, true
}

// reader reads calls from the text after a trigger.
type reader struct {
	s     string
	tools []Tool
	calls []Call
}

func (r *reader) peek() byte {
	if r.s == "" {
		return 0
	}
	return r.s[0]
}

// space skips whitespace.
func (r *reader) space() { r.s = strings.TrimLeft(r.s, " \t\r\n") }

// eat consumes lit if the text goes on with it.
func (r *reader) eat(lit string) bool {
	if strings.HasPrefix(r.s, lit) {
		r.s = r.s[len(lit):]
		return true
	}
	return false
}

// add records a call of a known tool with object arguments; false otherwise.
func (r *reader) add(name string, args json.RawMessage, id string) bool {
	if !r.known(name) {
		return false
	}
	args = bytes.TrimSpace(args)
	if len(args) > 0 && args[0] == '"' { // arguments as a JSON string holding the object
		var inner string
		if json.Unmarshal(args, &inner) != nil {
			return false
		}
		args = []byte(strings.TrimSpace(inner))
	}
	if len(args) == 0 || args[0] != '{' {
		return false
	}
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return false
	}
	r.calls = append(r.calls, Call{ID: id, Name: name, Arguments: b.Bytes()})
	return true
}

// known reports whether name is one of the tools.
func (r *reader) known(name string) bool {
	for _, t := range r.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// jsonValue reads one JSON value.
func (r *reader) jsonValue() (json.RawMessage, bool) {
	dec := json.NewDecoder(strings.NewReader(r.s))
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return nil, false
	}
	r.s = r.s[dec.InputOffset():]
	return v, true
}

// jsonCall reads a call written as a JSON object: {"name": …, "arguments":
// {…}} ("parameters" in place of "arguments", an "id", and OpenAI's
// {"function": {…}} wrapping are accepted).
func (r *reader) jsonCall() bool {
	r.space()
	if r.peek() != '{' {
		return false
	}
	v, ok := r.jsonValue()
	if !ok {
		return false
	}
	var c struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
		ID         json.RawMessage `json:"id"`
		Function   *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if json.Unmarshal(v, &c) != nil {
		return false
	}
	if c.Function != nil && c.Name == "" {
		c.Name, c.Arguments = c.Function.Name, c.Function.Arguments
	}
	args := c.Arguments
	if args == nil {
		args = c.Parameters
	}
	var id string
	_ = json.Unmarshal(c.ID, &id) // a missing or non-string id is none
	return r.add(c.Name, args, id)
}

// jsonList reads a JSON list of calls: [{…}, {…}].
func (r *reader) jsonList() {
	r.space()
	if !r.eat("[") {
		return
	}
	for r.jsonCall() {
		r.space()
		if !r.eat(",") {
			r.eat("]")
			return
		}
	}
}

// jsonLines reads calls written as JSON objects one after the other,
// separated by whitespace or a ";" (Llama 3.x), or a JSON list of them.
func (r *reader) jsonLines(s Syntax) {
	r.space()
	if r.peek() == '[' {
		r.jsonList()
		return
	}
	for r.jsonCall() {
		r.space()
		r.eat(";")
	}
}

// parseTagged reads calls each closed by the syntax's end mark and the next
// opened by its trigger (Hermes: {…}</tool_call>\n<tool_call>{…}</tool_call>).
// The last end mark may be missing (generation cut at the call's end).
func (s Syntax) parseTagged(r *reader) {
	for r.jsonCall() && r.another(s) {
	}
}

// another reads the end mark that closes a call (in the syntaxes that have
// one) and the trigger that opens the next; false when no call follows.
func (r *reader) another(s Syntax) bool {
	r.space()
	if m := s.endMark(); m != "" && !r.eat(m) {
		return false
	}
	r.space()
	return r.eat(s.Trigger())
}

// mistralArgs reads calls of the form name[ARGS]{…} (or
// name[CALL_ID]id[ARGS]{…}), each after the first opened by [TOOL_CALLS].
func (r *reader) mistralArgs(s Syntax) {
	for {
		r.space()
		i := strings.Index(r.s, "[")
		if i <= 0 {
			return
		}
		name := strings.TrimSpace(r.s[:i])
		r.s = r.s[i:]
		id := ""
		if r.eat("[CALL_ID]") {
			j := strings.Index(r.s, "[ARGS]")
			if j < 0 {
				return
			}
			id, r.s = strings.TrimSpace(r.s[:j]), r.s[j:]
		}
		if !r.eat("[ARGS]") {
			return
		}
		r.space()
		if r.peek() != '{' {
			return
		}
		args, ok := r.jsonValue()
		if !ok || !r.add(name, args, id) || !r.another(s) {
			return
		}
	}
}

// idChars are the characters of generated call ids.
const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// assignIDs gives every call an id unique among calls: Mistral's syntaxes
// keep the model's own when it is nine letters or digits (the form their
// templates require) and new ones are nine random letters and digits; the
// others get "call_" and 24 random letters and digits.
func assignIDs(calls []Call, s Syntax) {
	mistral := s == Mistral || s == MistralArgs
	seen := make(map[string]bool, len(calls))
	for i := range calls {
		id := calls[i].ID
		if !mistral || len(id) != 9 || strings.Trim(id, idChars) != "" || seen[id] {
			id = ""
		}
		for id == "" || seen[id] {
			id = newID(mistral)
		}
		seen[id] = true
		calls[i].ID = id
	}
}

// newID returns a random call id (see assignIDs).
func newID(mistral bool) string {
	n, prefix := 24, "call_"
	if mistral {
		n, prefix = 9, ""
	}
	b := make([]byte, len(prefix)+n)
	copy(b, prefix)
	for i := len(prefix); i < len(b); i++ {
		b[i] = idChars[rand.IntN(len(idChars))]
	}
	return string(b)
}

package toolcall

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of the values read from Python and
// FunctionGemma calls.
const maxDepth = 64

// pythonic reads LFM2's calls: [name(key=value, …), …] then
// <|tool_call_end|> (missing at the very end of the text), and further
// blocks opened by <|tool_call_start|>.
func (r *reader) pythonic(s Syntax) {
	for {
		r.space()
		if !r.eat("[") {
			return
		}
		for {
			r.space()
			if !r.pyCall() {
				return
			}
			r.space()
			if !r.eat(",") {
				break
			}
		}
		if !r.eat("]") || !r.another(s) {
			return
		}
	}
}

// pyCall reads name(key=value, …).
func (r *reader) pyCall() bool {
	i := strings.IndexByte(r.s, '(')
	if i <= 0 {
		return false
	}
	name := r.s[:i]
	if !isName(name) {
		return false
	}
	r.s = r.s[i+1:]
	var b strings.Builder
	ok := r.members(&b, '{', ')', '}', func() bool {
		return r.bareKey(&b, '=') && r.pyValue(&b, 0)
	})
	return ok && r.add(name, json.RawMessage(b.String()), "")
}

// pyValue reads a Python literal (JSON's true, false and null are accepted
// too) and writes it as JSON.
func (r *reader) pyValue(b *strings.Builder, depth int) bool {
	if depth >= maxDepth {
		return false
	}
	r.space()
	switch c := r.peek(); {
	case c == '"' || c == '\'':
		s, ok := r.pyString()
		if ok {
			writeJSONString(b, s)
		}
		return ok
	case c == '[' || c == '(':
		close := byte(']')
		if c == '(' {
			close = ')'
		}
		r.s = r.s[1:]
		return r.members(b, '[', close, ']', func() bool { return r.pyValue(b, depth+1) })
	case c == '{':
		r.s = r.s[1:]
		return r.members(b, '{', '}', '}', func() bool {
			key, ok := r.pyString()
			r.space()
			if !ok || !r.eat(":") {
				return false
			}
			writeJSONString(b, key)
			b.WriteByte(':')
			return r.pyValue(b, depth+1)
		})
	}
	for _, w := range [...][2]string{{"True", "true"}, {"False", "false"}, {"None", "null"},
		{"true", "true"}, {"false", "false"}, {"null", "null"}} {
		if r.eat(w[0]) {
			b.WriteString(w[1])
			return true
		}
	}
	return r.number(b)
}

// members reads the comma-separated members of a list or object up to
// the byte close (a trailing comma allowed), each with member, which writes
// it as JSON, and writes them between open and jsonClose.
func (r *reader) members(b *strings.Builder, open, close, jsonClose byte, member func() bool) bool {
	b.WriteByte(open)
	for n := 0; ; n++ {
		r.space()
		if r.peek() == close {
			r.s = r.s[1:]
			break
		}
		if n > 0 {
			if !r.eat(",") {
				return false
			}
			r.space()
			if r.peek() == close {
				r.s = r.s[1:]
				break
			}
			b.WriteByte(',')
		}
		if !member() {
			return false
		}
	}
	b.WriteByte(jsonClose)
	return true
}

// bareKey reads a bare key up to the byte sep (Python's "key=", Gemma's
// "key:") and writes it as a JSON key with its colon.
func (r *reader) bareKey(b *strings.Builder, sep byte) bool {
	j := strings.IndexByte(r.s, sep)
	if j <= 0 {
		return false
	}
	key := strings.TrimSpace(r.s[:j])
	if !isName(key) || sep == '=' && strings.Contains(key, ".") {
		return false
	}
	r.s = r.s[j+1:]
	writeJSONString(b, key)
	b.WriteByte(':')
	return true
}

// number reads a number written as JSON writes it (a leading "+" is
// dropped) and writes it.
func (r *reader) number(b *strings.Builder) bool {
	s := strings.TrimPrefix(r.s, "+")
	n := 0
	for n < len(s) && strings.IndexByte("+-.eE0123456789", s[n]) >= 0 {
		n++
	}
	if n == 0 || !json.Valid([]byte(s[:n])) {
		return false
	}
	if _, err := strconv.ParseFloat(s[:n], 64); err != nil {
		return false
	}
	b.WriteString(s[:n])
	r.s = s[n:]
	return true
}

// pyString reads a Python string literal in single or double quotes with
// its escapes (\n, \t, \r, \b, \f, \\, \', \", \/, \xHH, \uHHHH with
// surrogate pairs, \UHHHHHHHH).
func (r *reader) pyString() (string, bool) {
	if r.s == "" || r.s[0] != '"' && r.s[0] != '\'' {
		return "", false
	}
	quote := r.s[0]
	var out []rune
	s := r.s[1:]
	for {
		if s == "" {
			return "", false
		}
		c, size := utf8.DecodeRuneInString(s)
		if c == utf8.RuneError && size <= 1 {
			return "", false
		}
		s = s[size:]
		switch {
		case c == rune(quote):
			r.s = s
			return string(out), true
		case c == '\n':
			return "", false
		case c != '\\':
			out = append(out, c)
			continue
		}
		if s == "" {
			return "", false
		}
		e := s[0]
		s = s[1:]
		switch e {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case '\\', '\'', '"', '/':
			out = append(out, rune(e))
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if len(s) < n {
				return "", false
			}
			v, err := strconv.ParseUint(s[:n], 16, 32)
			if err != nil {
				return "", false
			}
			s = s[n:]
			ru := rune(v)
			if utf16.IsSurrogate(ru) && strings.HasPrefix(s, `\u`) && len(s) >= 6 {
				if lo, err := strconv.ParseUint(s[2:6], 16, 32); err == nil {
					if p := utf16.DecodeRune(ru, rune(lo)); p != utf8.RuneError {
						ru, s = p, s[6:]
					}
				}
			}
			if !utf8.ValidRune(ru) {
				return "", false
			}
			out = append(out, ru)
		default:
			return "", false
		}
	}
}

// gemma reads FunctionGemma's calls: call:name{key:value,…}
// <end_function_call> (missing at the very end of the text), each after
// the first opened by <start_function_call>.
func (r *reader) gemma(s Syntax) {
	for {
		r.space()
		if !r.eat("call:") {
			return
		}
		i := strings.IndexByte(r.s, '{')
		if i <= 0 || !isName(r.s[:i]) {
			return
		}
		name := r.s[:i]
		r.s = r.s[i:]
		var b strings.Builder
		if !r.gemmaValue(&b, 0) || !r.add(name, json.RawMessage(b.String()), "") || !r.another(s) {
			return
		}
	}
}

// gemmaValue reads a FunctionGemma value and writes it as JSON: a string
// between <escape> marks, an object {key:value,…} with bare keys, a list,
// a number, true, false or null.
func (r *reader) gemmaValue(b *strings.Builder, depth int) bool {
	if depth >= maxDepth {
		return false
	}
	const esc = "<escape>"
	r.space()
	switch {
	case r.eat(esc):
		i := strings.Index(r.s, esc)
		if i < 0 || !utf8.ValidString(r.s[:i]) {
			return false
		}
		writeJSONString(b, r.s[:i])
		r.s = r.s[i+len(esc):]
		return true
	case r.eat("["):
		return r.members(b, '[', ']', ']', func() bool { return r.gemmaValue(b, depth+1) })
	case r.eat("{"):
		return r.members(b, '{', '}', '}', func() bool { return r.bareKey(b, ':') && r.gemmaValue(b, depth+1) })
	}
	for _, w := range [...]string{"true", "false", "null"} {
		if r.eat(w) {
			b.WriteString(w)
			return true
		}
	}
	return r.number(b)
}

// isName reports whether s is a function or argument name: letters,
// digits, "_", "-" and "." (LFM2 writes dotted names such as
// Calendar.create_event), not starting with a digit.
func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// writeJSONString writes s as a JSON string, without HTML escaping.
func writeJSONString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a Go string always encodes
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

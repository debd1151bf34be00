package grammar

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/inference/tokenizer"
)

// Schemas of the tricky cases.
const (
	personSchema = `{"type":"object","properties":{
		"name":{"type":"string","maxLength":3},
		"age":{"type":"integer"},
		"tags":{"type":"array","items":{"enum":["a","bc"]},"minItems":1,"maxItems":2}},
		"required":["name","age"],"additionalProperties":false}`
	anyOfSchema  = `{"anyOf":[{"type":"integer"},{"type":"string","maxLength":2},{"type":"null"}]}`
	extraSchema  = `{"type":"object","properties":{"a":{"type":"boolean"}},"additionalProperties":{"type":"integer"}}`
	enumSchema   = `{"enum":[1,12,"x",null,true,{"k":[1]}]}`
	pairSchema   = `{"type":"array","items":{"type":"string"},"minItems":2}`
	rangeSchema  = `{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":100}},"required":["n"],"additionalProperties":false}`
	numberSchema = `{"type":"number"}`
	unionSchema  = `{"type":["string","null"],"maxLength":1}`
)

// toolSchema is the schema of a call to one of two tools.
func toolSchema(t testing.TB) string {
	s, err := ToolCallSchema([]Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`)},
		{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}},"additionalProperties":false}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(s)
}

// trickyCase is a text whose bytes are all allowed (ok), followed by a byte
// that is not (the first byte of bad, when bad is not empty).
type trickyCase struct {
	schema   string // "" for any JSON
	opts     Options
	ok       string
	bad      string
	complete bool // ok is a complete value
}

func trickyCases(t testing.TB) []trickyCase {
	ws3 := Options{MaxWhitespace: 3}
	tool := toolSchema(t)
	return []trickyCase{
		// structure
		{ok: `{"a": 1}`, complete: true},
		{ok: ` [ {"a" : [1, 2.5, -0, "x"] } , true, false, null, {} ,[]]`, complete: true},
		{ok: `{"a":1,`, bad: `}`},
		{ok: `[1, 2,`, bad: `]`},
		{ok: `[`, bad: `,`},
		{ok: `{`, bad: `,`},
		{ok: `{`, bad: `a:1}`},
		{ok: `{"a"`, bad: `1`},
		{ok: `{"a":1`, bad: `"b"`},
		{ok: `{"a":`, bad: `}`},
		{ok: `[1 `, bad: `2`},
		{ok: `[1`, bad: `}`},
		{ok: `{"a":1`, bad: `]`},
		{ok: `{"a":1,"a`, bad: `"`},
		{ok: `{"a":1,"b":{"a":2},"c"`, bad: `}`},
		{ok: `{}`, bad: `x`, complete: true},
		{ok: `{}`, bad: ` `, complete: true},
		{ok: `null`, bad: `,`, complete: true},
		{ok: `"abc"`, bad: `"`, complete: true},
		// strings
		{ok: `"abc`},
		{ok: `"a\`, bad: `x`},
		{ok: `"a\u12`, bad: `G`},
		{ok: `"\uD`, bad: `C00"`},
		{ok: `"\uD800`, bad: `"`},
		{ok: `"\uD800\u`, bad: `0041"`},
		{ok: `"\uD800\uD`, bad: `800"`},
		{ok: `"\uD83D\uDE00\u00e9\n\t\"\\\/\b\f\r"`, complete: true},
		{ok: `"a`, bad: "\n"},
		{ok: `"a`, bad: "\x1f"},
		{ok: `"`, bad: "\xff"},
		{ok: `"`, bad: "\x80"},
		{ok: "\"\xc3", bad: "("},
		{ok: `"`, bad: "\xc0\x80"},
		{ok: "\"\xed", bad: "\xa0\x80"},
		{ok: "\"\xe0", bad: "\x80"},
		{ok: "\"\xf4", bad: "\x90"},
		{ok: "\"\xf0\x9f\x98\x80é\"", complete: true},
		// numbers
		{ok: `0`, bad: `1`, complete: true},
		{ok: `-0`, bad: `1`, complete: true},
		{ok: `-`, bad: `a`},
		{ok: `-`, bad: `-`},
		{ok: ``, bad: `+1`},
		{ok: ``, bad: `.5`},
		{ok: `1.`, bad: `e5`},
		{ok: `1.`, bad: `,`},
		{ok: `1e+`},
		{ok: `1E-05`, complete: true},
		{ok: `1e12`, bad: `3`, complete: true},
		{ok: `1234567890123456`, bad: `7`, complete: true},
		{ok: `0.1234567890123456`, bad: `7`, complete: true},
		{ok: `1.5`, bad: `.`, complete: true},
		// literals
		{ok: `tru`, bad: `x`},
		{ok: `nul`, bad: `L`},
		{ok: `true`, bad: `e`, complete: true},
		{ok: ``, bad: `True`},
		// whitespace and depth limits
		{opts: ws3, ok: "[ \n\t1   ", bad: " ]"},
		{opts: ws3, ok: "   ", bad: " 1"},
		{opts: Options{MaxWhitespace: -1}, ok: `[1,`, bad: ` 2]`},
		{opts: Options{MaxDepth: 2}, ok: `[{"a":`, bad: `[`},
		{opts: Options{MaxDepth: 2}, ok: `[{"a":"[", "b":1`, complete: false},

		// schema: required, maxLength, enum, additionalProperties false, duplicates
		{schema: personSchema, ok: `{"name":"bob", "age":3}`, complete: true},
		{schema: personSchema, ok: `{"age":-3,"tags":["bc"], "name":""}`, complete: true},
		{schema: personSchema, ok: `{"name":"bob`, bad: `b`},
		{schema: personSchema, ok: `{"age":1`, bad: `}`},
		{schema: personSchema, ok: `{"age":1`, bad: `.5`},
		{schema: personSchema, ok: `{"age":1`, bad: `e5`},
		{schema: personSchema, ok: `{"n`, bad: `ick"`},
		{schema: personSchema, ok: `{"name":"a","`, bad: `name"`},
		{schema: personSchema, ok: `{"name":"a","age":1,"tags":[`, bad: `]`},
		{schema: personSchema, ok: `{"name":"a","age":1,"tags":["`, bad: `c"`},
		{schema: personSchema, ok: `{"name":"a","age":1,"tags":["b`, bad: `"`},
		{schema: personSchema, ok: `{"name":"a","age":1,"tags":["a","bc"`, bad: `,`},
		{schema: personSchema, ok: `{"age":1,"`, bad: `x"`},
		{schema: personSchema, ok: `{"age":1,"tags":["a"],"name":"x"`, bad: `,`},
		{schema: personSchema, ok: ``, bad: `[]`},
		// anyOf
		{schema: anyOfSchema, ok: `12`, bad: `.`, complete: true},
		{schema: anyOfSchema, ok: `"ab`, bad: `c`},
		{schema: anyOfSchema, ok: `nu`, bad: `t`},
		{schema: anyOfSchema, ok: `null`, complete: true},
		{schema: anyOfSchema, ok: ``, bad: `true`},
		// additional properties with a schema, duplicate names
		{schema: extraSchema, ok: `{"a":true,"b":1,"c":-2}`, complete: true},
		{schema: extraSchema, ok: `{"b":1,"b`, bad: `"`},
		{schema: extraSchema, ok: `{"a":`, bad: `1`},
		{schema: extraSchema, ok: `{"a":false,"\u0061`, bad: `"`},
		{schema: extraSchema, ok: `{"x":1,"y":`, bad: `"`},
		// enum and const
		{schema: enumSchema, ok: `1`, bad: `3`, complete: true},
		{schema: enumSchema, ok: `12`, bad: `3`, complete: true},
		{schema: enumSchema, ok: `{"k":[1]}`, complete: true},
		{schema: enumSchema, ok: `{"k":[`, bad: `2`},
		{schema: enumSchema, ok: `"`, bad: `y`},
		{schema: enumSchema, ok: ``, bad: `false`},
		{schema: enumSchema, ok: ` `, bad: `2`},
		// integer ranges
		{schema: rangeSchema, ok: `{"n":100}`, complete: true},
		{schema: rangeSchema, ok: `{"n":10`, bad: `1`},
		{schema: rangeSchema, ok: `{"n":0`, bad: `0`},
		{schema: rangeSchema, ok: `{"n":-`, bad: `1`}, // "-0" is 0, which the range holds; "-1" is not
		{schema: rangeSchema, ok: `{"n":7}`, complete: true},
		// arrays, numbers, type lists
		{schema: pairSchema, ok: `["a"`, bad: `]`},
		{schema: pairSchema, ok: `["a", "b", "c"]`, complete: true},
		{schema: numberSchema, ok: `-1.5e-3`, complete: true},
		{schema: numberSchema, ok: ``, bad: `"1"`},
		{schema: unionSchema, ok: `"é"`, complete: true},
		{schema: unionSchema, ok: `"é`, bad: `e`},
		{schema: unionSchema, ok: `null`, complete: true},
		// tool calls
		{schema: tool, ok: `{"name":"get_weather","arguments":{"city":"Paris","days":3}}`, complete: true},
		{schema: tool, ok: `{"name": "get_time", "arguments": {}}`, complete: true},
		{schema: tool, ok: `{"name":"get_`, bad: `date"`},
		{schema: tool, ok: `{"name":"get_time","arguments":{"`, bad: `city"`},
		{schema: tool, ok: `{"name":"get_weather","arguments":{`, bad: `}`},
		{schema: tool, ok: `{"arguments":{"city":"x"},"name":"get_`, bad: `time"`},
		{schema: tool, ok: `{"name":"get_time","arguments":{}`, bad: `,`},
	}
}

// TestTricky feeds every case byte by byte, as single-byte tokens, and checks
// at each step that Mask allows the next byte's token exactly when the
// grammar does, and that Accept agrees.
func TestTricky(t *testing.T) {
	for _, path := range []string{gpt2Vocab, llamaVocab} {
		_, v := loadVocab(t, path)
		single := byteTokens(t, v)
		for i, tc := range trickyCases(t) {
			name := fmt.Sprintf("%s/%d %q+%q", path[strings.LastIndex(path, "/")+1:], i, tc.ok, tc.bad)
			m := mustMatcher(t, tc.schema, tc.opts, v)
			for j := 0; j < len(tc.ok); j++ {
				id := single[tc.ok[j]]
				if !allowedSet(t, m, 1000)[id] {
					t.Fatalf("%s: byte %d (%q) masked", name, j, tc.ok[j])
				}
				if err := m.Accept(id); err != nil {
					t.Fatalf("%s: byte %d: %v", name, j, err)
				}
			}
			if got := m.Complete(); got != tc.complete {
				t.Errorf("%s: Complete = %v, want %v", name, got, tc.complete)
			}
			if eos := v.tok.EOS(); allowedSet(t, m, 1000)[eos] != tc.complete {
				t.Errorf("%s: EOS allowed = %v, want %v", name, !tc.complete, tc.complete)
			}
			if tc.bad == "" {
				continue
			}
			id := single[tc.bad[0]]
			if allowedSet(t, m, 1000)[id] {
				t.Errorf("%s: bad byte %q allowed", name, tc.bad[0])
			}
			if err := m.Accept(id); err == nil {
				t.Errorf("%s: bad byte %q accepted", name, tc.bad[0])
			}
			if err := m.AcceptBytes([]byte(tc.bad)); err == nil {
				t.Errorf("%s: bad text %q accepted", name, tc.bad)
			}
		}
	}
}

// TestTrickyTokens feeds the complete cases as the tokenizer splits them and
// checks that every token is allowed, and that the whole text is then
// complete.
func TestTrickyTokens(t *testing.T) {
	for _, path := range []string{gpt2Vocab, llamaVocab} {
		tok, v := loadVocab(t, path)
		for _, tc := range trickyCases(t) {
			if !tc.complete || (tok.Model() == tokenizer.ModelSPM && tc.ok[0] == ' ') {
				continue // (the space prefix of SentencePiece merges with a leading space)
			}
			ids, err := tok.Encode(tc.ok, false)
			if err != nil {
				t.Fatal(err)
			}
			m := mustMatcher(t, tc.schema, tc.opts, v)
			var got []byte
			for _, id := range ids {
				p := tok.Piece(id)
				if len(got) == 0 && tok.Model() == tokenizer.ModelSPM && len(p) > 0 && p[0] == ' ' {
					p = p[1:] // SentencePiece's space prefix is not part of the text
					if err := m.AcceptBytes(p); err != nil {
						t.Fatalf("%q: first piece %q: %v", tc.ok, p, err)
					}
					got = append(got, p...)
					continue
				}
				if !allowedSet(t, m, 1000)[id] {
					t.Fatalf("%q: token %d (%q) after %q masked", tc.ok, id, p, got)
				}
				if err := m.Accept(id); err != nil {
					t.Fatalf("%q: token %q: %v", tc.ok, p, err)
				}
				got = append(got, p...)
			}
			if string(got) != tc.ok || !m.Complete() {
				t.Errorf("%q: decoded %q, complete %v", tc.ok, got, m.Complete())
			}
		}
	}
}

package grammar

import (
	"fmt"
	"testing"

	"github.com/edgellm/edgellm/inference/tokenizer"
)

// maskStates are grammars and texts after which TestMaskExact compares Mask
// with feeding every token on its own.
func maskStates(t testing.TB) []struct{ schema, text string } {
	tool := toolSchema(t)
	return []struct{ schema, text string }{
		{"", ""}, {"", "{"}, {"", `{"a`}, {"", `{"a":`}, {"", "[1"}, {"", `"ab`}, {"", `"\u00`},
		{"", "\"\xe4"}, {"", `{"a":"x"`}, {"", `[[1,{"b":[`}, {"", "tr"}, {"", "-1."}, {"", `{"a":1,"`},
		{personSchema, ""}, {personSchema, "{"}, {personSchema, `{"name":"b`}, {personSchema, `{"name":"bo`},
		{personSchema, `{"age":12,`}, {personSchema, `{"age":1,"name":"a","tags":[`},
		{extraSchema, `{"a":true,"`}, {extraSchema, `{"b`},
		{tool, `{"name":"get_`}, {tool, `{"arguments":{"ci`}, {tool, `{"name":"get_weather","arguments":{"city":"`},
		{enumSchema, "1"}, {enumSchema, ""}, {unionSchema, `"`},
		{`{"type":"string","maxLength":12}`, `"ab`}, {`{"type":"string","maxLength":40}`, `"`},
		{`{"type":"integer","minimum":-250,"maximum":1000}`, ""}, {`{"type":"integer","minimum":-250,"maximum":1000}`, "-2"},
		{`{"type":"integer","minimum":120,"maximum":250}`, "1"}, {`{"type":"string","minLength":5,"maxLength":9}`, `"ab`},
		{`{"type":"number","minimum":-2.5,"maximum":12.125}`, "12."}, {`{"type":"number","minimum":-2.5,"maximum":12.125}`, "-"},
	}
}

// TestMaskExact checks, for many states and budgets, that Mask allows
// exactly the tokens whose bytes the matcher accepts and after which the
// value can still be completed within the budget.
func TestMaskExact(t *testing.T) {
	for _, path := range []string{gpt2Vocab, llamaVocab} {
		tok, v := loadVocab(t, path)
		for _, st := range maskStates(t) {
			m := mustMatcher(t, st.schema, Options{}, v)
			if err := m.AcceptBytes([]byte(st.text)); err != nil {
				t.Fatalf("%q: %v", st.text, err)
			}
			checkMaskExact(t, tok, v, m, fmt.Sprintf("%s %.20q %q", path, st.schema, st.text))
		}
	}
}

// checkMaskExact checks, for several budgets, that Mask allows in the state
// of m exactly the tokens whose bytes the matcher accepts and after which
// the value can still be completed within the budget.
func checkMaskExact(t *testing.T, tok *tokenizer.Tokenizer, v *Vocab, m *Matcher, state string) {
	t.Helper()
	// cost after each token on its own; -1: not accepted
	c := clone(t, m)
	after := make([]int, v.n)
	for id := int32(0); id < int32(v.n); id++ {
		after[id] = -1
		if v.text[id] {
			restore(c, m)
			if c.AcceptBytes(tok.Piece(id)) == nil {
				after[id] = c.CloseCost()
			}
		}
	}
	cost := m.CloseCost()
	for _, remaining := range []int{1000, cost + 4, cost + 3, cost + 2, cost + 1, cost, 1} {
		if remaining < 1 {
			continue
		}
		name := fmt.Sprintf("%s remaining %d", state, remaining)
		allowed := allowedSet(t, m, remaining)
		n := 0
		for id := range after {
			want := after[id] >= 0 && after[id] <= remaining-1
			if tok.IsEOG(int32(id)) {
				want = cost == 0
			}
			if allowed[id] != want {
				t.Fatalf("%s: token %d %q: allowed %v, want %v", name, id, tok.Piece(int32(id)), allowed[id], want)
			}
			if want {
				n++
			}
		}
		if remaining > cost && n == 0 {
			t.Errorf("%s: no token allowed with a budget above the cost %d", name, cost)
		}
	}
}

package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestMergeRulesUncommon covers merge rules that real vocabularies do not
// have: rules making a text that is not a token, several rules making the
// same token, repeated and malformed rules.
func TestMergeRulesUncommon(t *testing.T) {
	encode := func(tokens []string, merges []string, text string) []int32 {
		t.Helper()
		v := NewVocab(ModelBPE, tokens)
		v.Pre = "gpt-2"
		v.Merges = merges
		tok, err := New(v)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode(text, false)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	tokens := []string{"a", "b", "c", "ab", "bc", "abc"}
	noAB := []string{"a", "b", "c", "x", "bc", "abc"}
	for _, c := range []struct {
		tokens, merges []string
		text           string
		want           []int32
	}{
		// "a b" makes "ab", not a token here, which "ab c" then merges
		{noAB, []string{"a b", "ab c"}, "abc", []int32{5}},
		{noAB, []string{"a b"}, "abc", []int32{0, 1, 2}},
		// "ab c" makes "abc" like the lower-ranked "a bc", but splits it elsewhere
		{tokens, []string{"a b", "a bc", "ab c"}, "abc", []int32{5}},
		{tokens, []string{"a b", "a bc"}, "abc", []int32{3, 2}},
		// a repeated rule keeps its first rank
		{tokens, []string{"b c", "a b", "b c"}, "abc", []int32{0, 4}},
		{tokens, []string{"a b", "b c", "a b"}, "abc", []int32{3, 2}},
		// rules that cannot apply to two symbols
		{tokens, []string{"ab", " a b", "a b ", "a  b", "a b c", "", " "}, "abc", []int32{0, 1, 2}},
	} {
		if got := encode(c.tokens, c.merges, c.text); !slices.Equal(got, c.want) {
			t.Errorf("tokens %q merges %q: Encode(%q) = %v, want %v", c.tokens, c.merges, c.text, got, c.want)
		}
	}
}

// naiveBPE is a plain reference for byte-level BPE on one word of printable
// ASCII: repeatedly merge the adjacent pair with the lowest-ranked rule
// (leftmost on ties), then map every symbol to its token, or its characters
// to theirs when it is not a token.
func naiveBPE(tokens, merges []string, word string) []int32 {
	ids := map[string]int32{}
	for i, s := range tokens {
		ids[s] = int32(i)
	}
	ranks := map[string]int{}
	for i, m := range merges {
		if _, ok := ranks[m]; !ok {
			ranks[m] = i
		}
	}
	var syms []string
	for _, c := range word {
		syms = append(syms, string(c))
	}
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := ranks[syms[i]+" "+syms[i+1]]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms = slices.Replace(syms, at, at+2, syms[at]+syms[at+1])
	}
	var out []int32
	for _, s := range syms {
		if id, ok := ids[s]; ok {
			out = append(out, id)
			continue
		}
		for _, c := range s {
			if id, ok := ids[string(c)]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}

// TestMergeRulesRandom compares the merge tables with naiveBPE on random
// vocabularies whose rules often make texts that are not tokens, or tokens
// that other rules make too.
func TestMergeRulesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(min, max int) string {
		var b strings.Builder
		for n := min + rng.IntN(max-min+1); n > 0; n-- {
			b.WriteByte("abc"[rng.IntN(3)])
		}
		return b.String()
	}
	for iter := 0; iter < 300; iter++ {
		tokens := []string{"a", "b", "c"}
		seen := map[string]bool{"a": true, "b": true, "c": true}
		for len(tokens) < 3+rng.IntN(20) {
			if s := word(2, 5); !seen[s] {
				seen[s] = true
				tokens = append(tokens, s)
			}
		}
		var merges []string
		for n := rng.IntN(40); n > 0; n-- {
			merges = append(merges, word(1, 3)+" "+word(1, 3))
		}
		v := NewVocab(ModelBPE, tokens)
		v.Pre = "gpt-2"
		v.Merges = merges
		tok, err := New(v)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 20; k++ {
			text := word(1, 12)
			got, err := tok.Encode(text, false)
			if err != nil {
				t.Fatal(err)
			}
			if want := naiveBPE(tokens, merges, text); !slices.Equal(got, want) {
				t.Fatalf("tokens %q merges %q: Encode(%q) = %v, want %v", tokens, merges, text, got, want)
			}
		}
	}
}

// TestTokenIndex checks text lookups, the texts given to empty tokens, and
// token types that do not fit in a byte.
func TestTokenIndex(t *testing.T) {
	v := NewVocab(ModelSPM, []string{"<unk>", "", "a", "", "▁a"})
	v.Types = []TokenType{TypeUnknown, TypeNormal, TypeNormal, 300, -7}
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	for id, text := range []string{"<unk>", "[EMPTY_1]", "a", "[EMPTY_3]", "▁a"} {
		if got := tok.Text(int32(id)); got != text {
			t.Errorf("Text(%d) = %q, want %q", id, got, text)
		}
		if got, ok := tok.ID(text); !ok || got != int32(id) {
			t.Errorf("ID(%q) = %d, %v, want %d", text, got, ok, id)
		}
	}
	for _, s := range []string{"", "b", "[EMPTY_2]", "▁", "a▁"} {
		if id, ok := tok.ID(s); ok {
			t.Errorf("ID(%q) = %d, want none", s, id)
		}
	}
	for id, ty := range v.Types {
		if got := tok.Type(int32(id)); got != ty {
			t.Errorf("Type(%d) = %d, want %d", id, got, ty)
		}
	}
	v.Tokens = []string{"a", "", "[EMPTY_1]"}
	v.Types = nil
	if _, err := New(v); err == nil {
		t.Error("New accepts an empty token whose placeholder text is taken")
	}

	// every token of a real vocabulary is found, under its own id
	gpt := loadVocab(t, "gpt-2")
	for id := int32(0); id < int32(gpt.NumTokens()); id++ {
		if got, ok := gpt.ID(gpt.Text(id)); !ok || got != id {
			t.Fatalf("ID(Text(%d)) = %d, %v", id, got, ok)
		}
	}
}

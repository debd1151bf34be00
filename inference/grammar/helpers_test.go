package grammar

import (
	"math"
	"testing"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference/tokenizer"
)

// Vocabularies of the tests: a byte-level BPE one and a SentencePiece one.
const (
	gpt2Vocab  = "../../testdata/vocab/ggml-vocab-gpt-2.gguf"
	llamaVocab = "../../testdata/vocab/ggml-vocab-llama-spm.gguf"
)

// loadVocab reads the tokenizer of a GGUF file and indexes it.
func loadVocab(t testing.TB, path string) (*tokenizer.Tokenizer, *Vocab) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok, NewVocab(tok)
}

// byteTokens returns, for every byte, a text token whose piece is that byte.
func byteTokens(t testing.TB, v *Vocab) [256]int32 {
	t.Helper()
	var ids [256]int32
	for i := range ids {
		ids[i] = -1
	}
	for _, id := range v.ids {
		if p := v.tok.Piece(id); len(p) == 1 && ids[p[0]] < 0 {
			ids[p[0]] = id
		}
	}
	for b, id := range ids {
		if id < 0 {
			t.Fatalf("no token for byte %#02x", b)
		}
	}
	return ids
}

// mustMatcher compiles schema ("" for any JSON) and returns a matcher over v.
func mustMatcher(t testing.TB, schema string, opts Options, v *Vocab) *Matcher {
	t.Helper()
	g := JSON(opts)
	if schema != "" {
		var err error
		if g, err = CompileSchema([]byte(schema), opts); err != nil {
			t.Fatalf("compile %s: %v", schema, err)
		}
	}
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// allowedSet runs Mask with the given budget and returns which tokens it
// left alone.
func allowedSet(t testing.TB, m *Matcher, remaining int) []bool {
	t.Helper()
	logits := make([]float32, m.v.n)
	err := m.Mask(logits, remaining)
	ok := make([]bool, len(logits))
	some := false
	for i, l := range logits {
		ok[i] = !math.IsInf(float64(l), -1)
		some = some || ok[i]
	}
	if (err == nil) != some {
		t.Fatalf("Mask returned %v with some allowed = %v", err, some)
	}
	return ok
}

// clone returns a matcher in the same state as m.
func clone(t testing.TB, m *Matcher) *Matcher {
	t.Helper()
	c, err := m.g.NewMatcher(m.v)
	if err != nil {
		t.Fatal(err)
	}
	restore(c, m)
	return c
}

// restore puts matcher c (of the same grammar and vocabulary) in the state of m.
func restore(c, m *Matcher) {
	c.ar = append(c.ar[:0], m.ar...)
	c.th = append(c.th[:0], m.th...)
	c.ended = m.ended
}

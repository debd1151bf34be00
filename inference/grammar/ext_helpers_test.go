package grammar_test

import (
	"strings"
	"testing"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/grammar"
	"github.com/edgellm/edgellm/inference/tokenizer"
)

// loadTokenizer reads the tokenizer of a GGUF file, kept open until the end
// of the test.
func loadTokenizer(t testing.TB, path string) *tokenizer.Tokenizer {
	t.Helper()
	tok, closeFile, err := inference.LoadTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFile() })
	return tok
}

// compile compiles schema, "" meaning any JSON.
func compile(t testing.TB, schema string) *grammar.Grammar {
	t.Helper()
	if schema == "" {
		return grammar.JSON(grammar.Options{})
	}
	g, err := grammar.CompileSchema([]byte(schema), grammar.Options{})
	if err != nil {
		t.Fatalf("compile %s: %v", schema, err)
	}
	return g
}

// compileMatcher compiles schema and returns a matcher over v.
func compileMatcher(t testing.TB, schema string, v *grammar.Vocab) *grammar.Matcher {
	t.Helper()
	m, err := compile(t, schema).NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// loadModel loads a model, closed at the end of the test.
func loadModel(t testing.TB, path string) *inference.Model {
	t.Helper()
	m, err := inference.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// greedyTokens splits text into the tokens with the longest pieces, left to
// right (the tokenizer's own split need not give back the text: a space
// that a SentencePiece vocabulary lacks comes back as "▁").
func greedyTokens(tok *tokenizer.Tokenizer, text string) []int32 {
	var ids []int32
	for len(text) > 0 {
		best, n := int32(-1), 0
		for id := int32(0); id < int32(tok.NumTokens()); id++ {
			ty := tok.Type(id)
			p := tok.Piece(id)
			if (ty == tokenizer.TypeNormal || ty == tokenizer.TypeByte) && len(p) > n && strings.HasPrefix(text, string(p)) {
				best, n = id, len(p)
			}
		}
		ids = append(ids, best)
		text = text[n:]
	}
	return ids
}

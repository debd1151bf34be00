package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edgellm/edgellm/gguf"
)

// vocabDir holds the vocabulary-only GGUF files and their test cases
// (ggml-vocab-NAME.gguf.inp / .out), produced with the original Hugging Face
// tokenizers.
var vocabDir = filepath.Join("..", "..", "testdata", "vocab")

// conformanceVocabs are the vocabularies with .inp/.out test cases.
var conformanceVocabs = []string{"llama-spm", "phi-3", "gpt-2", "deepseek-llm", "starcoder", "falcon"}

var (
	tokMu    sync.Mutex
	tokCache = map[string]*Tokenizer{}
)

// loadVocab returns the tokenizer of testdata/vocab/ggml-vocab-NAME.gguf.
// Missing data is a failure, never a skip.
func loadVocab(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	tokMu.Lock()
	defer tokMu.Unlock()
	if t, ok := tokCache[name]; ok {
		return t
	}
	v := loadVocabDesc(tb, name)
	t, err := New(v)
	if err != nil {
		tb.Fatalf("New(%s): %v", name, err)
	}
	tokCache[name] = t
	return t
}

// loadVocabDesc reads the Vocab of testdata/vocab/ggml-vocab-NAME.gguf.
func loadVocabDesc(tb testing.TB, name string) Vocab {
	tb.Helper()
	path := filepath.Join(vocabDir, "ggml-vocab-"+name+".gguf")
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatalf("open vocabulary (test data missing?): %v", err)
	}
	defer f.Close()
	v, err := VocabFromGGUF(f)
	if err != nil {
		tb.Fatalf("VocabFromGGUF(%s): %v", path, err)
	}
	return v
}

// testCase is one string of a .inp file with the ids of its .out line.
type testCase struct {
	text string
	ids  []int32
}

// splitInp splits a .inp file the way the reference test does: the cases are
// separated by "\n__ggml_vocab_test__\n", and the file ends with a separator.
func splitInp(raw string) []string {
	const sep = "\n__ggml_vocab_test__\n"
	var out []string
	for pos := 0; pos < len(raw); {
		i := strings.Index(raw[pos:], sep)
		if i < 0 {
			out = append(out, raw[pos:])
			break
		}
		out = append(out, raw[pos:pos+i])
		pos += i + len(sep)
	}
	return out
}

// loadCases reads testdata/vocab/ggml-vocab-NAME.gguf.inp and .out.
func loadCases(tb testing.TB, name string) []testCase {
	tb.Helper()
	base := filepath.Join(vocabDir, "ggml-vocab-"+name+".gguf")
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		tb.Fatalf("test data missing: %v", err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		tb.Fatalf("test data missing: %v", err)
	}
	texts := splitInp(string(inp))
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(texts) != len(lines) {
		tb.Fatalf("%s: %d inputs but %d outputs", name, len(texts), len(lines))
	}
	if len(texts) < 10 {
		tb.Fatalf("%s: only %d test cases", name, len(texts))
	}
	cases := make([]testCase, len(texts))
	for i, s := range texts {
		cases[i].text = s
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				tb.Fatalf("%s.out line %d: %v", name, i+1, err)
			}
			cases[i].ids = append(cases[i].ids, int32(id))
		}
	}
	return cases
}

// TestConformance checks every .inp case against the ids of the original
// tokenizer (no BOS, no special-token parsing).
func TestConformance(t *testing.T) {
	for _, name := range conformanceVocabs {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			cases := loadCases(t, name)
			pass := 0
			for i, c := range cases {
				got, err := tok.Encode(c.text, false)
				if err != nil {
					t.Errorf("case %d %q: %v", i, c.text, err)
					continue
				}
				if !slices.Equal(got, c.ids) {
					t.Errorf("case %d %q:\n got  %v\n want %v", i, c.text, got, c.ids)
					continue
				}
				pass++
			}
			t.Logf("%s: %d/%d cases reproduce", name, pass, len(cases))
		})
	}
}

// TestConformanceAfterSplitText encodes every case again, each right after a
// text that DeepSeek splits into many user-defined tokens, so the partition
// buffers the tokenizer reuses between calls are full of fragments. The ids
// must not change. "û0ÿ" is the fuzzer's find: the reference gives
// [100008 15 100005] ("û", "0", "ÿ" are user-defined tokens but for "0").
func TestConformanceAfterSplitText(t *testing.T) {
	tok := loadVocab(t, "deepseek-llm")
	cases := append(loadCases(t, "deepseek-llm"), testCase{text: "û0ÿ", ids: []int32{100008, 15, 100005}})
	const split = "ûaÿbûcÿdûeÿ ø ö ú õ ÷ û ý À ù Á þ ü"
	for i, c := range cases {
		if _, err := tok.Encode(split, false); err != nil {
			t.Fatal(err)
		}
		got, err := tok.Encode(c.text, false)
		if err != nil {
			t.Fatalf("case %d %q: %v", i, c.text, err)
		}
		if !slices.Equal(got, c.ids) {
			t.Errorf("case %d %q after %q:\n got  %v\n want %v", i, c.text, split, got, c.ids)
		}
	}
}

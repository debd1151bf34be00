package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPreTokenizerGolden compares the hand-written pre-tokenizers with splits
// computed by a real backtracking regex engine from the original regular
// expressions (testdata/vocab/gen_pretok_golden.py).
func TestPreTokenizerGolden(t *testing.T) {
	f, err := os.Open(filepath.Join(vocabDir, "pretok-golden.jsonl"))
	if err != nil {
		t.Fatalf("test data missing: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	count := map[string]int{}
	fail := map[string]int{}
	var scr scratch
	for sc.Scan() {
		var c struct {
			Pre    string   `json:"pre"`
			Text   string   `json:"text"`
			Pieces []string `json:"pieces"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		pt, err := newPreTokenizer(c.Pre)
		if err != nil {
			t.Fatal(err)
		}
		got := splitWords(pt, c.Text, &scr)
		count[c.Pre]++
		if !slices.Equal(got, c.Pieces) {
			fail[c.Pre]++
			if fail[c.Pre] <= 5 {
				t.Errorf("%s %q:\n got  %q\n want %q", c.Pre, c.Text, got, c.Pieces)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(count) < 10 {
		t.Fatalf("only %d pre-tokenizers in the golden file", len(count))
	}
	for pre, n := range count {
		if fail[pre] > 0 {
			t.Errorf("%s: %d of %d cases differ", pre, fail[pre], n)
		}
	}
}

// splitWords returns the words of text as strings.
func splitWords(pt *preTokenizer, text string, sc *scratch) []string {
	var words []string
	start := 0
	for _, end := range pt.split(text, sc) {
		words = append(words, text[start:end])
		start = end
	}
	return words
}

func TestPreTokenizerCases(t *testing.T) {
	for _, c := range []struct {
		pre, text string
		want      []string
	}{
		{"llama-bpe", "Hello, y'all! How're you 😁 ?我想在apple工作1314151天～",
			[]string{"Hello", ",", " y", "'all", "!", " How", "'re", " you", " 😁", " ?", "我想在apple工作", "131", "415", "1", "天", "～"}},
		{"llama-bpe", "  Hello\n\n  x   ", []string{" ", " Hello", "\n\n", " ", " x", "   "}},
		{"llama-bpe", "I'M DON'T", []string{"I", "'M", " DON", "'T"}},
		{"qwen2", "say: 'Done!' 123", []string{"say", ":", " '", "Done", "!'", " ", "1", "2", "3"}},
		{"gpt-2", "I'M don't  x\t\ty", []string{"I", "'", "M", " don", "'t", " ", " x", "\t", "\t", "y"}},
		{"starcoder", "abc123 4", []string{"abc", "1", "2", "3", " ", "4"}},
		{"falcon", "x=1234567;", []string{"x", "=", "123", "456", "7", ";"}},
		{"deepseek-llm", "Hello 123 我想\n", []string{"Hello", " ", "123", " ", "我想", "\n"}},
	} {
		pt, err := newPreTokenizer(c.pre)
		if err != nil {
			t.Fatal(err)
		}
		if got := splitWords(pt, c.text, new(scratch)); !slices.Equal(got, c.want) {
			t.Errorf("%s %q:\n got  %q\n want %q", c.pre, c.text, got, c.want)
		}
	}
	if _, err := newPreTokenizer("no-such-pre"); err == nil {
		t.Error("unknown pre-tokenizer accepted")
	}
}

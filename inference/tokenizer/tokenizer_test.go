package tokenizer

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/edgellm/edgellm/gguf"
)

// TestQwen2Reference encodes the prompt of the qwen2-tiny reference run (the
// GPT-2 vocabulary with the qwen2 pre-tokenizer, no BOS); the ids are the ones
// the reference implementation produced (testdata reference
// qwen2-tiny-q8_0.ids.txt, line prompt_ids).
func TestQwen2Reference(t *testing.T) {
	v := loadVocabDesc(t, "gpt-2")
	v.Pre = "qwen2"
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "Turn on the porch light when the sun sets, then say: 'Done!' 123"
	want := []int32{17278, 319, 262, 33179, 1657, 618, 262, 4252, 5621, 11, 788, 910, 25, 705, 45677, 13679, 220, 16, 17, 18}
	for _, special := range []bool{false, true} { // qwen2 adds no BOS
		got, err := tok.Encode(prompt, special)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("special=%v:\n got  %v\n want %v", special, got, want)
		}
	}
	if got := tok.Decode(want, false); got != prompt {
		t.Errorf("Decode = %q", got)
	}
}

// TestRoundTrip checks Decode(Encode(s)) == s on every conformance string:
// all six vocabularies are lossless on them (byte fallback or byte-level BPE).
func TestRoundTrip(t *testing.T) {
	for _, name := range conformanceVocabs {
		tok := loadVocab(t, name)
		n := 0
		for _, c := range loadCases(t, name) {
			for _, special := range []bool{false, true} {
				ids, err := tok.Encode(c.text, special)
				if err != nil {
					t.Fatalf("%s %q: %v", name, c.text, err)
				}
				if got := tok.Decode(ids, false); got != c.text {
					t.Errorf("%s special=%v: Decode(Encode(%q)) = %q", name, special, c.text, got)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s: no cases", name)
		}
	}
}

func TestSpecialTokens(t *testing.T) {
	for _, c := range []struct {
		vocab, text string
		special     bool
		want        []int32
	}{
		// BOS added, control tokens parsed, a space put after each special token
		{"llama-spm", "<s>Hello</s>", true, []int32{1, 1, 15043, 2}},
		// neither: "<s>" is ordinary text
		{"llama-spm", "<s>Hello</s>", false, []int32{529, 29879, 29958, 10994, 829, 29879, 29958}},
		// Phi-3 strips the whitespace after its special tokens
		{"phi-3", "<|user|>\nHi<|end|>\n<|assistant|>", true, []int32{1, 32010, 6324, 32007, 32001}},
		// user-defined tokens are split out even without special parsing ("</s>" is user-defined in Phi-3)
		{"phi-3", "a</s>  b", false, []int32{263, 2, 289}},
		{"gpt-2", "<|endoftext|>Hi", true, []int32{50256, 17250}},
		{"gpt-2", "<|endoftext|>Hi", false, []int32{27, 91, 437, 1659, 5239, 91, 29, 17250}},
		{"deepseek-llm", "øx", false, []int32{100002, 87}},
		{"deepseek-llm", "<｜end▁of▁sentence｜>", true, []int32{100000, 100001}},
		// the longest special token wins
		{"starcoder", "<pr_status><pr>", true, []int32{19, 18}},
	} {
		tok := loadVocab(t, c.vocab)
		got, err := tok.Encode(c.text, c.special)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s Encode(%q, %v):\n got  %v\n want %v", c.vocab, c.text, c.special, got, c.want)
		}
	}
}

func TestSpecialIDs(t *testing.T) {
	for _, c := range []struct {
		vocab          string
		bos, eos, unk  int32
		addBOS, addEOS bool
		eog            []int32
		notEOG         []int32
	}{
		{"llama-spm", 1, 2, 0, true, false, []int32{2}, []int32{0, 1, 13}},
		{"phi-3", 1, 32000, 0, true, false, []int32{32000, 32007}, []int32{1, 2, 32001, 32010}},
		{"gpt-2", 50256, 50256, NoToken, false, false, []int32{50256}, []int32{0, 198}},
		{"deepseek-llm", 100000, 100001, NoToken, true, false, []int32{100001}, []int32{100000, 100002}},
		{"starcoder", 0, 0, 0, false, false, []int32{0}, []int32{1, 4}},
		{"falcon", 11, 11, NoToken, false, false, []int32{11}, []int32{0, 10}},
	} {
		tok := loadVocab(t, c.vocab)
		if tok.BOS() != c.bos || tok.EOS() != c.eos || tok.UNK() != c.unk || tok.AddBOS() != c.addBOS || tok.AddEOS() != c.addEOS {
			t.Errorf("%s: bos %d eos %d unk %d addBOS %v addEOS %v", c.vocab, tok.BOS(), tok.EOS(), tok.UNK(), tok.AddBOS(), tok.AddEOS())
		}
		if !slices.Equal(tok.EOG(), c.eog) {
			t.Errorf("%s: EOG = %v, want %v", c.vocab, tok.EOG(), c.eog)
		}
		for _, id := range c.eog {
			if !tok.IsEOG(id) {
				t.Errorf("%s: IsEOG(%d) = false", c.vocab, id)
			}
		}
		for _, id := range c.notEOG {
			if tok.IsEOG(id) {
				t.Errorf("%s: IsEOG(%d) = true", c.vocab, id)
			}
		}
	}
	if n := loadVocab(t, "llama-spm").NumTokens(); n != 32000 {
		t.Errorf("NumTokens = %d", n)
	}
}

func TestPiece(t *testing.T) {
	spm := loadVocab(t, "llama-spm")
	gpt := loadVocab(t, "gpt-2")
	for _, c := range []struct {
		tok  *Tokenizer
		id   int32
		want string
	}{
		{spm, 15043, " Hello"},  // "▁Hello"
		{spm, 13, "\n"},         // <0x0A>
		{spm, 3 + 0xF0, "\xF0"}, // <0xF0>
		{spm, 1, "<s>"},         // control tokens render as their text
		{gpt, 18435, " Hello"},  // "ĠHello"
		{gpt, 198, "\n"},        // "Ċ"
		{gpt, 12520, " \xF0\x9F"},
		{gpt, 50256, "<|endoftext|>"},
		{gpt, -1, ""},
		{gpt, 50257, ""},
	} {
		if got := string(c.tok.Piece(c.id)); got != c.want {
			t.Errorf("Piece(%d) = %q, want %q", c.id, got, c.want)
		}
	}
	// special=false hides control tokens; the space prefix goes away once
	if got := spm.Decode([]int32{1, 15043, 29892, 3186, 2}, false); got != "Hello, world" {
		t.Errorf("Decode = %q", got)
	}
	if got := spm.Decode([]int32{1, 15043, 2}, true); got != "<s>Hello</s>" {
		t.Errorf("Decode special = %q", got)
	}
	// A streaming decoder leaves control tokens out, but for AddSpecial.
	d := spm.NewDecoder(false)
	var b []byte
	b = append(b, d.Add(1)...)
	b = append(b, d.AddSpecial(1)...)
	b = append(b, d.AddSpecial(15043)...)
	b = append(b, d.Add(2)...)
	if string(b) != "<s> Hello" {
		t.Errorf("Add, AddSpecial, AddSpecial, Add = %q, want %q", b, "<s> Hello")
	}
}

// TestDecoderHoldsPartialUTF8 feeds a character split over byte tokens.
func TestDecoderHoldsPartialUTF8(t *testing.T) {
	spm := loadVocab(t, "llama-spm")
	// " 🦙" = "▁▁" <0xF0> <0x9F> <0xA6> <0x99>
	ids, err := spm.Encode(" 🦙", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{259, 3 + 0xF0, 3 + 0x9F, 3 + 0xA6, 3 + 0x99}; !slices.Equal(ids, want) {
		t.Fatalf("Encode = %v, want %v", ids, want)
	}
	d := spm.NewDecoder(false)
	steps := []string{"  ", "", "", "", "🦙"}
	for i, id := range ids {
		if got := string(d.Add(id)); got != steps[i] {
			t.Errorf("step %d: Add(%d) = %q, want %q", i, id, got, steps[i])
		}
	}
	if d.Pending() != 0 || len(d.Flush()) != 0 {
		t.Error("bytes left after a complete character")
	}

	// byte-level BPE: "Ġ\xF0\x9F" then "\xA6" then "\x99"
	gpt := loadVocab(t, "gpt-2")
	d = gpt.NewDecoder(false)
	for i, c := range []struct {
		id   int32
		want string
	}{{428, " this"}, {12520, " "}, {99, ""}, {247, "🦙"}, {13, "."}} {
		if got := string(d.Add(c.id)); got != c.want {
			t.Errorf("step %d: Add(%d) = %q, want %q", i, c.id, got, c.want)
		}
	}

	// an unfinished character at the end comes out of Flush as is
	d.Reset()
	if got := d.Add(12520); string(got) != " " || d.Pending() != 2 {
		t.Fatalf("Add = %q, pending %d", got, d.Pending())
	}
	if got := d.Flush(); string(got) != "\xF0\x9F" {
		t.Errorf("Flush = %q", got)
	}
	// bytes that cannot start a character are not held
	d.Reset()
	if got := d.Add(247); string(got) != "\x99" {
		t.Errorf("stray continuation byte: Add = %q", got)
	}
	// a lead byte followed by a non-continuation byte is released
	d.Reset()
	d.Add(12520)
	if got := d.Add(13); string(got) != "\xF0\x9F." {
		t.Errorf("broken sequence: Add = %q", got)
	}
}

// TestDecoderMatchesDecode checks that the streamed text equals Decode on all
// conformance strings, and that every chunk but the last is valid UTF-8.
func TestDecoderMatchesDecode(t *testing.T) {
	for _, name := range conformanceVocabs {
		tok := loadVocab(t, name)
		d := tok.NewDecoder(true)
		for _, c := range loadCases(t, name) {
			ids, err := tok.Encode(c.text, true)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for _, id := range ids {
				chunk := d.Add(id)
				if !utf8.Valid(chunk) {
					t.Errorf("%s %q: chunk %q is not valid UTF-8", name, c.text, chunk)
				}
				got = append(got, chunk...)
			}
			got = append(got, d.Flush()...)
			var want []byte
			for _, id := range ids {
				want = append(want, tok.Piece(id)...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %q: streamed %q, pieces %q", name, c.text, got, want)
			}
		}
	}
}

func TestDecoderNoAllocs(t *testing.T) {
	for _, name := range []string{"llama-spm", "gpt-2"} {
		tok := loadVocab(t, name)
		ids, err := tok.Encode("Hello, y'all! How are you 😁 ?我想在apple工作1314151天～ 🦙.cpp", true)
		if err != nil {
			t.Fatal(err)
		}
		d := tok.NewDecoder(false)
		for _, id := range ids { // warm up
			d.Add(id)
		}
		d.Flush()
		allocs := testing.AllocsPerRun(100, func() {
			for _, id := range ids {
				d.Add(id)
			}
			d.Flush()
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decoded sequence", name, allocs)
		}
	}
}

// TestMergeOrder checks the merge priorities on tiny vocabularies.
func TestMergeOrder(t *testing.T) {
	spm := func(scoreAB, scoreBA float32) []int32 {
		v := NewVocab(ModelSPM, []string{"<unk>", "a", "b", "ab", "ba"})
		v.Scores = []float32{0, 0, 0, scoreAB, scoreBA}
		v.Types = []TokenType{TypeUnknown, TypeNormal, TypeNormal, TypeNormal, TypeNormal}
		v.UNK = 0
		tok, err := New(v)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode("aba", false)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := spm(1, 1); !slices.Equal(got, []int32{3, 1}) { // tie: leftmost pair first
		t.Errorf("SPM tie: %v", got)
	}
	if got := spm(1, 2); !slices.Equal(got, []int32{1, 4}) { // higher score first
		t.Errorf("SPM score: %v", got)
	}

	bpe := func(merges ...string) []int32 {
		v := NewVocab(ModelBPE, []string{"a", "b", "ab", "ba"})
		v.Pre = "gpt-2"
		v.Merges = merges
		tok, err := New(v)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode("aba", false)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := bpe("b a", "a b"); !slices.Equal(got, []int32{0, 3}) { // lower rank first
		t.Errorf("BPE rank: %v", got)
	}
	if got := bpe("a b", "b a"); !slices.Equal(got, []int32{2, 0}) {
		t.Errorf("BPE rank: %v", got)
	}
}

func TestUnknownFallback(t *testing.T) {
	base := NewVocab(ModelSPM, []string{"<unk>", "▁", "a"})
	base.UNK = 0
	base.AddSpacePrefix = true
	tok, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tok.Encode("aé", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	base.UNK = NoToken
	if tok, err = New(base); err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Encode("aé", false); err == nil || !strings.HasPrefix(err.Error(), "tokenizer: ") {
		t.Errorf("no UNK: err = %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	ok := NewVocab(ModelBPE, []string{"a", "b"})
	ok.Pre = "gpt-2"
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(v *Vocab){
		"empty":      func(v *Vocab) { v.Tokens = nil },
		"duplicate":  func(v *Vocab) { v.Tokens = []string{"a", "a"} },
		"model":      func(v *Vocab) { v.Model = "bert" },
		"pre":        func(v *Vocab) { v.Pre = "no-such-pre" },
		"bos range":  func(v *Vocab) { v.BOS = 2 },
		"eos range":  func(v *Vocab) { v.EOS = -2 },
		"add bos":    func(v *Vocab) { v.AddBOS = true },
		"scores len": func(v *Vocab) { v.Scores = []float32{1} },
		"types len":  func(v *Vocab) { v.Types = []TokenType{TypeNormal} },
	} {
		v := ok
		mod(&v)
		if _, err := New(v); err == nil || !strings.HasPrefix(err.Error(), "tokenizer: ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestFromGGUF builds a tokenizer straight from a file and uses it after the
// file is closed.
func TestFromGGUF(t *testing.T) {
	f, err := gguf.Open(filepath.Join(vocabDir, "ggml-vocab-phi-3.gguf"))
	if err != nil {
		t.Fatalf("test data missing: %v", err)
	}
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if tok.Model() != ModelSPM || tok.NumTokens() != 32064 || tok.PAD() != 32000 || tok.EOT() != 32007 {
		t.Errorf("model %q, %d tokens, pad %d, eot %d", tok.Model(), tok.NumTokens(), tok.PAD(), tok.EOT())
	}
	ids, err := tok.Encode("Hello world", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 15043, 3186}; !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if tok.Text(15043) != "▁Hello" || tok.Type(1) != TypeControl {
		t.Errorf("Text(15043) = %q, Type(1) = %d", tok.Text(15043), tok.Type(1))
	}
}

// TestConcurrentEncode encodes from several goroutines at once (run with -race).
func TestConcurrentEncode(t *testing.T) {
	tok := loadVocab(t, "gpt-2")
	cases := loadCases(t, "gpt-2")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 5; r++ {
				for _, c := range cases {
					got, err := tok.Encode(c.text, false)
					if err != nil || !slices.Equal(got, c.ids) {
						t.Errorf("concurrent Encode(%q) = %v, %v", c.text, got, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

package inference

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/inference/grammar"
	"github.com/edgellm/edgellm/inference/sampler"
)

func greedy() sampler.Params {
	p := sampler.DefaultParams()
	p.Temperature = 0
	return p
}

// TestStoriesGreedyFromBOS checks that greedy generation from BOS with a real
// trained model reproduces the reference implementation's first 30 ids.
func TestStoriesGreedyFromBOS(t *testing.T) {
	m := loadTestModel(t, "stories260K")
	prompt, want := referenceIDs(t, "stories260K-bos")
	if len(want) < 30 {
		t.Fatalf("reference has only %d ids", len(want))
	}
	s, err := m.NewState(128, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	smp, err := sampler.New(greedy(), m.Config.NVocab)
	if err != nil {
		t.Fatal(err)
	}
	var logits []float32
	for _, id := range prompt {
		if logits, err = s.Forward(id, true); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 30; i++ {
		id := smp.Sample(logits)
		if id != want[i] {
			t.Fatalf("id %d: got %d, reference %d (so far %v)", i, id, want[i], want[:i])
		}
		if logits, err = s.Forward(id, true); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGenerateZeroAllocs checks that generating a token allocates nothing once
// the generator has warmed up.
func TestGenerateZeroAllocs(t *testing.T) {
	for _, tc := range zeroAllocCases() {
		t.Run(tc.name+"/"+tc.kv.String(), func(t *testing.T) {
			m := loadTestModel(t, tc.name)
			s, err := m.NewStateKV(256, 2, tc.kv)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			g := NewGenerator(s, m.Tokenizer)
			prompt := []int32{1, 300, 301}
			opts := GenerateOptions{MaxTokens: 1, Sampling: sampler.DefaultParams(), OnText: func([]byte) error { return nil }}
			short := func() {
				if _, err := g.Generate(context.Background(), prompt, opts); err != nil {
					t.Fatal(err)
				}
			}
			short() // warm up
			long := func() {
				opts.MaxTokens = 21
				if _, err := g.Generate(context.Background(), prompt, opts); err != nil {
					t.Fatal(err)
				}
				opts.MaxTokens = 1
			}
			long()
			// The difference between 21 and 1 generated tokens is the cost of
			// 20 tokens; it must be zero allocations.
			a1 := testing.AllocsPerRun(3, short)
			a21 := testing.AllocsPerRun(3, long)
			if perToken := (a21 - a1) / 20; perToken > 0 {
				t.Fatalf("%.2f allocations per generated token (1 token: %.0f, 21 tokens: %.0f)", perToken, a1, a21)
			}
		})
	}
}

// OnProgress is called after every prompt batch and every generated token.
func TestGenerateReportsProgress(t *testing.T) {
	_, s, g := newTestState(t, "tiny-q8_0.gguf")
	prompt := make([]int32, 2*s.MaxBatch()+5) // three batches
	for i := range prompt {
		prompt[i] = int32(3 + i%100)
	}
	calls := 0
	res, err := g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 7, Sampling: greedy(),
		OnProgress: func() { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 + res.Tokens; calls != want {
		t.Fatalf("progress called %d times, want %d (3 batches + %d tokens)", calls, want, res.Tokens)
	}
}

// A grammar makes the output one JSON value, closed within MaxTokens, and
// constrained generation allocates nothing per token once warm.
func TestGenerateWithGrammar(t *testing.T) {
	m, _, g := newTestState(t, "tiny-q8_0.gguf")
	gr, err := grammar.CompileSchema([]byte(`{"type":"object","properties":{"on":{"type":"boolean"},"room":{"enum":["kitchen","hall"]}},"required":["on","room"],"additionalProperties":false}`), grammar.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := m.Tokenizer.Encode("Lights:", true)
	for _, budget := range []int{30, 60, 200} {
		p := sampler.DefaultParams()
		p.Seed = uint64(budget)
		var out []byte
		res, err := g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: budget, Sampling: p, Grammar: gr,
			OnText: func(b []byte) error { out = append(out, b...); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			On   *bool   `json:"on"`
			Room *string `json:"room"`
		}
		if err := json.Unmarshal(out, &v); err != nil || v.On == nil || v.Room == nil || res.Tokens > budget {
			t.Fatalf("budget %d: %q (%d tokens, %s): %v", budget, out, res.Tokens, res.Finish, err)
		}
	}
	if _, err := g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 3, Sampling: greedy(), Grammar: gr}); !errors.Is(err, ErrGrammarBudget) {
		t.Fatalf("tiny budget: %v", err)
	}
	// A lazy grammar that cannot fit is left unarmed: the text is free and
	// generation ends at the budget, with no error.
	var free []byte
	res, err := g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 3, Sampling: greedy(), Grammar: gr,
		GrammarStart: func(out []byte) int { return 0 }, OnText: func(b []byte) error { free = append(free, b...); return nil }})
	if err != nil || res.Tokens != 3 || res.Finish != FinishLength {
		t.Fatalf("tiny budget, lazy grammar: %d tokens, finish %s, %q: %v", res.Tokens, res.Finish, free, err)
	}
	allocs := testing.AllocsPerRun(3, func() {
		g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 40, Sampling: greedy(), Grammar: gr})
	})
	if allocs > 0 {
		t.Errorf("constrained generation allocates %.0f times", allocs)
	}
}

// With GrammarStart the output is free until the value begins, then
// constrained: here the value begins right after the first token.
func TestGenerateGrammarStartsLate(t *testing.T) {
	m, _, g := newTestState(t, "tiny-q8_0.gguf")
	prompt, _ := m.Tokenizer.Encode("Go:", true)
	for seed := range uint64(5) {
		p := sampler.DefaultParams()
		p.Seed = seed
		var out []byte
		first := -1
		res, err := g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 80, Sampling: p, Grammar: grammar.JSON(grammar.Options{}),
			GrammarStart: func(o []byte) int {
				if first < 0 && len(o) > 0 {
					first = len(o)
				}
				return first
			},
			OnText: func(b []byte) error { out = append(out, b...); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if first < 0 || !json.Valid(out[first:]) || res.Finish != FinishStop {
			t.Fatalf("seed %d: %q (value from byte %d, %s)", seed, out, first, res.Finish)
		}
	}
}

// ReusePrefix reuses the KV cache of the common prefix with the previous
// generation and changes no output.
func TestGenerateReusePrefix(t *testing.T) {
	m, err := Load("../testdata/models/tiny-q4_k_m.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cached, err := m.NewState(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	fresh, err := m.NewState(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	gc, gf := NewGenerator(cached, m.Tokenizer), NewGenerator(fresh, m.Tokenizer)
	system := "You are a helpful assistant in a house with many rooms and lights. Answer briefly. "
	prompts := []struct {
		text       string
		wantCached bool
	}{
		{system + "Is the kitchen light on?", false},
		{system + "Is the hall light on?", true},  // shares the system prompt
		{"Something else entirely.", false},       // shares nothing (but BOS)
		{"Something else entirely.", true},        // the same prompt again
		{system + "Is the hall light on?", false}, // the cache now holds the other prompt
		{system + "Is the hall light on? And", true},
	}
	for i, p := range prompts {
		ids, _ := m.Tokenizer.Encode(p.text, true)
		var a, b []byte
		rc, err := gc.Generate(context.Background(), ids, GenerateOptions{MaxTokens: 24, Sampling: greedy(), ReusePrefix: true,
			OnText: func(x []byte) error { a = append(a, x...); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		rf, err := gf.Generate(context.Background(), ids, GenerateOptions{MaxTokens: 24, Sampling: greedy(),
			OnText: func(x []byte) error { b = append(b, x...); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) || rc.Tokens != rf.Tokens {
			t.Fatalf("prompt %d: with the cache %q, without %q", i, a, b)
		}
		// Unrelated prompts share at most a few tokens (BOS, a space piece).
		if got := rc.CachedTokens >= 10; got != p.wantCached || rf.CachedTokens != 0 {
			t.Fatalf("prompt %d: %d tokens reused (fresh %d), want reuse %v", i, rc.CachedTokens, rf.CachedTokens, p.wantCached)
		}
	}
}

// zeroAllocModels are the models the zero-allocation tests run: every
// architecture and the kinds of matmul input (Q8_K, Q8_1, Q8_0, F32).
var zeroAllocModels = []string{"stories260K", "tiny-q4_k_m", "tiny-q4_1", "qwen2-tiny-q8_0",
	"qwen3-tiny-q4_k_m", "gemma3-tiny-q8_0", "phi3-tiny-q8_0", "lfm2-tiny-q8_0", "smollm3-tiny-q4_k_m",
	"qwen35-tiny-q8_0", "qwen35-tiny-q4_k_m", "gemma4-tiny-q8_0", "gemma4-tiny-q4_k_m"}

// zeroAllocCase is a model of zeroAllocModels with a KV cache type.
type zeroAllocCase struct {
	name string
	kv   KVType
}

// zeroAllocCases are zeroAllocModels with FP16 KV caches, and with Q8_0 ones
// but for stories260K (head dimension 8, which Q8_0 refuses).
func zeroAllocCases() []zeroAllocCase {
	var cases []zeroAllocCase
	for _, kv := range []KVType{KVF16, KVQ8_0} {
		for _, name := range zeroAllocModels {
			if kv != KVQ8_0 || name != "stories260K" {
				cases = append(cases, zeroAllocCase{name, kv})
			}
		}
	}
	return cases
}

// Force takes the tokens it returns in place of sampled ones, counted and
// streamed like them; ShowTokens puts a control token's text in the stream,
// which otherwise leaves it out.
func TestGenerateForceAndShowTokens(t *testing.T) {
	m, _, g := newTestState(t, "stories260K-tok512.gguf")
	tok := m.Tokenizer
	forced, err := tok.Encode("Once upon a time", false)
	if err != nil {
		t.Fatal(err)
	}
	bos := tok.BOS()
	if !tok.IsControl(bos) {
		t.Fatalf("BOS %d is not a control token", bos)
	}
	script := append(append([]int32(nil), forced...), bos)
	run := func(show []int32) (string, Result) {
		t.Helper()
		var out []byte
		next, lefts := 0, []int{}
		res, err := g.Generate(context.Background(), []int32{bos}, GenerateOptions{MaxTokens: len(script) + 3, Sampling: greedy(),
			Force: func(left int) int32 {
				lefts = append(lefts, left)
				if next < len(script) {
					next++
					return script[next-1]
				}
				return -1
			},
			ShowTokens: show,
			OnText:     func(b []byte) error { out = append(out, b...); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range lefts {
			if l != len(script)+3-i {
				t.Fatalf("Force saw %v tokens left", lefts)
			}
		}
		return string(out), res
	}
	hidden, res := run(nil)
	if res.Tokens != len(script)+3 || res.Finish != FinishLength {
		t.Fatalf("%d tokens, finish %s", res.Tokens, res.Finish)
	}
	const prefix = " Once upon a time"
	if len(hidden) <= len(prefix) || hidden[:len(prefix)] != prefix || strings.Contains(hidden, "<s>") {
		t.Fatalf("output %q", hidden)
	}
	shown, _ := run([]int32{bos})
	if want := prefix + "<s>" + hidden[len(prefix):]; shown != want {
		t.Fatalf("with BOS shown: %q, want %q", shown, want)
	}
}

// NoEnd keeps end-of-generation tokens from being sampled while it says so:
// a sampled generation that ends by itself runs to MaxTokens with it, and
// ends the same way as without it when it returns false.
func TestGenerateNoEnd(t *testing.T) {
	_, _, g := newTestState(t, "tiny-q8_0.gguf")
	p := sampler.DefaultParams()
	p.Temperature, p.TopK, p.TopP, p.MinP = 3, 0, 1, 0
	gen := func(seed uint64, noEnd func() bool) Result {
		t.Helper()
		p.Seed = seed
		res, err := g.Generate(context.Background(), []int32{1, 300, 301}, GenerateOptions{MaxTokens: 400, Sampling: p, NoEnd: noEnd})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for seed := uint64(0); seed < 64; seed++ {
		ended := gen(seed, nil)
		if ended.Finish != FinishStop {
			continue
		}
		if res := gen(seed, func() bool { return false }); res.Finish != FinishStop || res.Tokens != ended.Tokens {
			t.Fatalf("seed %d: NoEnd false: %d tokens (%s), without NoEnd %d (%s)", seed, res.Tokens, res.Finish, ended.Tokens, ended.Finish)
		}
		if res := gen(seed, func() bool { return true }); res.Finish != FinishLength || res.Tokens != 400 {
			t.Fatalf("seed %d: NoEnd true: %d tokens (%s), want 400 (length)", seed, res.Tokens, res.Finish)
		}
		return
	}
	t.Fatal("no seed of 64 made the sampled generation end by itself within 400 tokens")
}

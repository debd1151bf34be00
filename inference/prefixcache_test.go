package inference

import (
	"context"
	"slices"
	"testing"
)

// The prefix cache restores the KV cache of whichever kept prompt shares the
// longest prefix, outputs stay those of a fresh state, and the least
// recently used prompt goes first when the budget is full; with an FP16
// and with a Q8_0 KV cache, whose copies take 34/64 of the bytes.
func TestPrefixCache(t *testing.T) {
	for _, kv := range []KVType{KVF16, KVQ8_0} {
		t.Run(kv.String(), func(t *testing.T) { checkPrefixCache(t, kv) })
	}
}

func checkPrefixCache(t *testing.T, kv KVType) {
	_, s, g := newTestStateKV(t, "tiny-q4_k_m.gguf", kv)
	_, _, fresh := newTestStateKV(t, "tiny-q4_k_m.gguf", kv)
	a, b, c := cachePrompt(1, 100), cachePrompt(2, 100), cachePrompt(3, 100)
	perPrompt := int64(100 * s.c.NLayer * 2 * kv.rowBytes(s.c.KVDim())) // keys and values of 100 positions
	pc := NewPrefixCache(2*perPrompt + perPrompt/10)                    // two prompts and a few tokens more

	run := func(prompt []int32) (string, int) {
		t.Helper()
		if toks := pc.Restore(s, prompt, g.Tokens()); toks != nil {
			g.Adopt(toks)
		}
		got, res := greedyText(t, g, prompt)
		want, _ := greedyText(t, fresh, prompt)
		if got != want {
			t.Fatalf("with the prefix cache %q, fresh %q", got, want)
		}
		pc.Store(s, prompt)
		return got, res.CachedTokens
	}
	run(a)
	run(b)
	if pc.Len() != 2 || pc.Bytes() != 2*perPrompt {
		t.Fatalf("%d prompts, %d bytes", pc.Len(), pc.Bytes())
	}
	// a's continuation: the state holds b, the cache has a.
	if _, cached := run(append(slices.Clone(a), 7, 8, 9)); cached != 100 {
		t.Fatalf("reused %d tokens of a, want 100", cached)
	}
	// The longer a replaced a; c evicts the least recently used, b.
	run(c)
	if pc.Len() != 2 {
		t.Fatalf("%d prompts kept, want 2", pc.Len())
	}
	if toks := pc.Restore(s, b, nil); len(toks) > 1 {
		t.Fatalf("b was evicted but %d of its tokens were restored", len(toks))
	}
	// All of c but its last token, which gives the logits.
	if toks := pc.Restore(s, c, nil); len(toks) != 99 {
		t.Fatalf("c: restored %d tokens, want 99", len(toks))
	}
}

// TestCheckpointReusesSharedPrefix: Home Assistant's case. Prompts share a
// 500-token system prompt and differ after it. With caches that cannot be
// rewound (a DeltaNet or convolution state, a sliding-window ring, also
// under gemma4's layers that read an earlier layer's cache) the
// second prompt keeps a checkpoint where it parts from the first, and the
// third reuses it; with full KV caches the second already reuses the
// prefix and no checkpoint is needed. Outputs equal a fresh state's, with
// FP16 KV caches and with Q8_0 ones (gemma3's rings, lfm2's attention
// layers beside its convolutions).
func TestCheckpointReusesSharedPrefix(t *testing.T) {
	system := cachePrompt(7, 500)
	ask := func(seed int) []int32 {
		q := cachePrompt(seed, 21)[1:] // without its leading 1
		q[0] = int32(10 + seed)        // parts from the others at once
		return append(slices.Clone(system), q...)
	}
	for _, tc := range []struct {
		name string
		kv   KVType
	}{{"qwen35-tiny-q8_0", KVF16}, {"gemma4-tiny-q8_0", KVF16}, {"lfm2-tiny-q8_0", KVF16}, {"gemma3-tiny-q8_0", KVF16}, {"qwen3-tiny-q8_0", KVF16},
		{"gemma3-tiny-q8_0", KVQ8_0}, {"lfm2-tiny-q8_0", KVQ8_0}} {
		name := tc.name
		t.Run(name+"/"+tc.kv.String(), func(t *testing.T) {
			m, err := Load("../testdata/models/" + name + ".gguf")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			newState := func() (*State, *Generator) {
				s, err := m.NewStateKV(1024, 1, tc.kv)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				return s, NewGenerator(s, m.Tokenizer)
			}
			s, g := newState()
			_, fresh := newState()
			rewinds := s.restorable(len(system)+20, len(system))
			pc := NewPrefixCache(1 << 30)
			run := func(prompt []int32) (Result, int) {
				if toks := pc.Restore(s, prompt, g.Tokens()); toks != nil {
					g.Adopt(toks)
				}
				cp := pc.Checkpoint(s, prompt, g.Tokens())
				res, err := g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 20, Sampling: greedy(), ReusePrefix: true,
					Checkpoint: cp, OnCheckpoint: func() { pc.Store(s, prompt[:cp]) }, OnPrefilled: func() { pc.Store(s, prompt) }})
				if err != nil {
					t.Fatal(err)
				}
				greedyText(t, fresh, prompt)
				if got, want := g.Tokens(), fresh.Tokens(); !slices.Equal(got, want) {
					t.Fatalf("prompt of %d: with reuse %v, fresh %v", len(prompt), got, want)
				}
				return res, cp
			}
			if res, cp := run(ask(1)); res.CachedTokens != 0 || cp != 0 {
				t.Errorf("first prompt: %d reused, checkpoint at %d", res.CachedTokens, cp)
			}
			res, cp := run(ask(2))
			switch {
			case rewinds && (res.CachedTokens != len(system) || cp != 0):
				t.Errorf("second prompt, full caches: %d reused (want %d), checkpoint at %d (want none)", res.CachedTokens, len(system), cp)
			case !rewinds && (res.CachedTokens != 0 || cp != len(system)):
				t.Errorf("second prompt: %d reused (want 0), checkpoint at %d (want %d)", res.CachedTokens, cp, len(system))
			}
			if res, _ := run(ask(3)); res.CachedTokens != len(system) {
				t.Errorf("third prompt: %d tokens reused, want the system prompt's %d", res.CachedTokens, len(system))
			}
		})
	}
}

package inference

import (
	"slices"
	"testing"
)

// The prefix cache restores the KV cache of whichever kept prompt shares the
// longest prefix, outputs stay those of a fresh state, and the least
// recently used prompt goes first when the budget is full.
func TestPrefixCache(t *testing.T) {
	_, s, g := newTestState(t, "tiny-q4_k_m.gguf")
	_, _, fresh := newTestState(t, "tiny-q4_k_m.gguf")
	a, b, c := cachePrompt(1, 100), cachePrompt(2, 100), cachePrompt(3, 100)
	perPrompt := int64(100 * s.c.NLayer * s.c.KVDim() * 4)
	pc := NewPrefixCache(2*perPrompt + perPrompt/10) // two prompts and a few tokens more

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

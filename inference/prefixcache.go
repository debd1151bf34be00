package inference

// PrefixCache keeps copies of the caches of recent prompts, so a request
// that shares a prefix with any of them (not only with the previous one)
// skips prefilling it. It holds at most Budget bytes of cache data and drops
// the least recently used prompt first. It is not safe for concurrent use.
//
// A model whose layers all keep full key/value caches can reuse any prefix
// of a kept prompt. A sliding-window ring or a recurrent state (a
// convolution's, a DeltaNet's) cannot be rewound, so with such layers a kept
// prompt is reused only by a prompt that extends it whole; otherwise the
// request prefills, never reusing wrongly. Checkpoint then names where the
// request's prompt parts from the kept one, so the generation can keep the
// caches there too: the next prompt that shares that prefix (Home
// Assistant's fixed system prompt and tools, with another question after
// them) reuses it.
type PrefixCache struct {
	budget int64
	used   int64
	clock  uint64
	items  []*prefixItem
}

type prefixItem struct {
	tokens []int32
	data   []byte // State.saveCaches at len(tokens)
	last   uint64
}

// NewPrefixCache makes a cache of at most budget bytes of cache data.
func NewPrefixCache(budget int64) *PrefixCache { return &PrefixCache{budget: budget} }

// Len is the number of prompts kept; Bytes their cache size.
func (c *PrefixCache) Len() int { return len(c.items) }

// Bytes is the cache data kept, in bytes.
func (c *PrefixCache) Bytes() int64 { return c.used }

func commonPrefix(a, b []int32) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// Store keeps a copy of the caches of tokens, which the first len(tokens)
// positions of s must hold; it keeps nothing when s cannot be rewound to
// len(tokens) (see State.CanRewind). A prompt already covered by a kept one
// is not stored twice; one that covers kept ones replaces them.
func (c *PrefixCache) Store(s *State, tokens []int32) {
	n := len(tokens)
	if n == 0 || !s.CanRewind(n) {
		return
	}
	size := int64(s.cachesBytes(n))
	if size > c.budget {
		return
	}
	c.clock++
	for _, it := range c.items {
		if commonPrefix(it.tokens, tokens) == n && s.restorable(len(it.tokens), n) { // covered by it
			it.last = c.clock
			return
		}
	}
	kept := c.items[:0]
	for _, it := range c.items {
		if m := len(it.tokens); commonPrefix(it.tokens, tokens) == m && s.restorable(n, m) { // a prefix of the new one, which restores it
			c.used -= int64(len(it.data))
			continue
		}
		kept = append(kept, it)
	}
	clear(c.items[len(kept):])
	c.items = kept
	for c.used+size > c.budget {
		c.evict()
	}
	it := &prefixItem{tokens: append([]int32(nil), tokens...), last: c.clock,
		data: s.saveCaches(make([]byte, 0, size), n)}
	c.items = append(c.items, it)
	c.used += size
}

// evict drops the least recently used prompt.
func (c *PrefixCache) evict() {
	oldest := 0
	for i, it := range c.items {
		if it.last < c.items[oldest].last {
			oldest = i
		}
	}
	c.used -= int64(len(c.items[oldest].data))
	c.items = append(c.items[:oldest], c.items[oldest+1:]...)
}

// Restore finds the kept prompt whose caches can restore the longest prefix
// of prompt (leaving its last token to compute the logits) and, when that is
// longer than what the state itself can reuse of current (the tokens already
// in s, see Generator.Tokens), restores it into s and returns the prefix's
// tokens; the caller then passes them to Generator.Adopt. It returns nil
// when nothing better is kept.
func (c *PrefixCache) Restore(s *State, prompt, current []int32) []int32 {
	best, bestLen := c.best(s, prompt, current)
	if best == nil {
		return nil
	}
	c.clock++
	best.last = c.clock
	s.Reset()
	s.loadCaches(best.data, len(best.tokens), bestLen)
	return best.tokens[:bestLen]
}

// best returns the kept prompt that restores the longest prefix of prompt
// into s, when that is longer than what s reuses of current by itself, and
// the prefix's length; else nil and what s reuses.
func (c *PrefixCache) best(s *State, prompt, current []int32) (*prefixItem, int) {
	bestLen := selfReuse(s, prompt, current)
	var best *prefixItem
	for _, it := range c.items {
		if p := Reusable(s, it.tokens, prompt); p > bestLen {
			best, bestLen = it, p
		}
	}
	return best, bestLen
}

// Reusable returns how many tokens of prompt a state like s (same model,
// context and cache types) would skip prefilling if it were restored from
// the caches of kept: their common prefix, short of prompt's last token,
// when those caches can restore it (full KV caches restore any prefix; a
// window ring or a recurrent state only some), else 0.
func Reusable(s *State, kept, prompt []int32) int {
	p := min(commonPrefix(kept, prompt), len(prompt)-1) // the last prompt token gives the logits
	if p <= 0 || p > s.Ctx() || !s.restorable(len(kept), p) {
		return 0
	}
	return p
}

// Reuse returns how many tokens of prompt the next Generate would skip
// prefilling after Restore(s, prompt, current).
func (c *PrefixCache) Reuse(s *State, prompt, current []int32) int {
	_, n := c.best(s, prompt, current)
	return n
}

// MinCheckpoint is the shortest prefix Checkpoint proposes: shorter ones
// cost a cache copy for little prefill.
const MinCheckpoint = 16

// selfReuse is how much of prompt the state reuses by itself: the prefix
// it shares with current (the tokens in s, see Generator.Tokens), short of
// the last prompt token, when the state can go back to it.
func selfReuse(s *State, prompt, current []int32) int {
	n := min(commonPrefix(current, prompt), len(prompt)-1)
	if n < 0 || s.Pos() != len(current) || !s.CanRewind(n) {
		return 0
	}
	return n
}

// Checkpoint returns the position at which prompt parts from the kept
// prompt it shares most with, when keeping the caches there would let a
// later prompt reuse more than this one can (what the state reuses of
// current, the tokens in s after Restore): that happens only with caches
// that cannot be rewound. It returns 0 when there is no such position, or
// it is shorter than MinCheckpoint or not before the prompt's last token.
func (c *PrefixCache) Checkpoint(s *State, prompt, current []int32) int {
	reusable := selfReuse(s, prompt, current)
	best := 0
	for _, it := range c.items {
		p := commonPrefix(it.tokens, prompt)
		if p > best && p > reusable && p < len(prompt)-1 && !s.restorable(len(it.tokens), p) {
			best = p
		}
	}
	if best < MinCheckpoint {
		return 0
	}
	return best
}

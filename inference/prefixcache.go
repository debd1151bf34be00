package inference

// PrefixCache keeps copies of the KV cache of recent prompts, so a request
// that shares a prefix with any of them (not only with the previous one)
// skips prefilling it. It holds at most Budget bytes of KV data and drops the
// least recently used prompt first. It is not safe for concurrent use.
type PrefixCache struct {
	budget int64
	used   int64
	clock  uint64
	items  []*prefixItem
}

type prefixItem struct {
	tokens []int32
	k, v   [][]uint16 // per layer, len(tokens) positions
	bytes  int64
	last   uint64
}

// NewPrefixCache makes a cache of at most budget bytes of KV data.
func NewPrefixCache(budget int64) *PrefixCache { return &PrefixCache{budget: budget} }

// Len is the number of prompts kept; Bytes their KV size.
func (c *PrefixCache) Len() int { return len(c.items) }

// Bytes is the KV data kept, in bytes.
func (c *PrefixCache) Bytes() int64 { return c.used }

func commonPrefix(a, b []int32) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// Store keeps a copy of the KV cache of tokens, which the first len(tokens)
// positions of s must hold. A prompt already covered by a kept one is not
// stored twice; one that covers kept ones replaces them.
func (c *PrefixCache) Store(s *State, tokens []int32) {
	n := len(tokens)
	kvDim := s.c.KVDim()
	size := int64(n) * int64(s.c.NLayer) * int64(kvDim) * 4
	if n == 0 || n > s.pos || size > c.budget {
		return
	}
	c.clock++
	for _, it := range c.items {
		if commonPrefix(it.tokens, tokens) == n { // covered by it
			it.last = c.clock
			return
		}
	}
	kept := c.items[:0]
	for _, it := range c.items {
		if commonPrefix(it.tokens, tokens) == len(it.tokens) { // a prefix of the new one
			c.used -= it.bytes
			continue
		}
		kept = append(kept, it)
	}
	c.items = kept
	for c.used+size > c.budget {
		c.evict()
	}
	it := &prefixItem{tokens: append([]int32(nil), tokens...), bytes: size, last: c.clock,
		k: make([][]uint16, s.c.NLayer), v: make([][]uint16, s.c.NLayer)}
	for l := range it.k {
		it.k[l] = append([]uint16(nil), s.KV.K[l][:n*kvDim]...)
		it.v[l] = append([]uint16(nil), s.KV.V[l][:n*kvDim]...)
	}
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
	c.used -= c.items[oldest].bytes
	c.items = append(c.items[:oldest], c.items[oldest+1:]...)
}

// Restore finds the kept prompt sharing the longest prefix with prompt and,
// when that prefix is longer than the one prompt shares with current (the
// tokens already in s, see Generator.Tokens), copies its KV cache into s and
// returns the prefix's tokens; the caller then passes them to
// Generator.Adopt. It returns nil when nothing better is kept.
func (c *PrefixCache) Restore(s *State, prompt, current []int32) []int32 {
	var best *prefixItem
	bestLen := commonPrefix(current, prompt)
	for _, it := range c.items {
		if p := commonPrefix(it.tokens, prompt); p > bestLen {
			best, bestLen = it, p
		}
	}
	if best == nil || bestLen > s.KV.Ctx {
		return nil
	}
	c.clock++
	best.last = c.clock
	kvDim := s.c.KVDim()
	for l := range best.k {
		copy(s.KV.K[l][:bestLen*kvDim], best.k[l])
		copy(s.KV.V[l][:bestLen*kvDim], best.v[l])
	}
	s.pos = bestLen
	return best.tokens[:bestLen]
}

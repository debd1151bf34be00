package grammar

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrNoToken is returned by [Matcher.Mask] when no token may come next: the
// value is complete and cannot be continued, or the remaining tokens cannot
// hold the bytes that complete it.
var ErrNoToken = errors.New("grammar: no token can continue the text within the budget")

// Matcher follows one generation through a grammar, token by token. It is
// not safe for concurrent use. After warm-up, Mask, Accept and AcceptBytes
// do not allocate (except to return an error).
type Matcher struct {
	g *Grammar
	v *Vocab

	ar    []frame // frame arena; the committed threads use its start
	th    []int32 // top frames of the threads
	ended bool    // an end-of-generation token was accepted

	// scratch
	lvl        [][]int32 // walk: threads after each depth of the trie
	mark       []int     // walk: arena length after each depth
	bufA, bufB []int32
	fast, slow []int32
	allowed    []uint64 // Mask: allowed tokens
	remap      []int32  // compact: new index of each frame
}

// NewMatcher returns a matcher of g over the vocabulary v, at the start of
// the value. It fails when some byte that completing a value of g may need
// is not a token of its own in v.
func (g *Grammar) NewMatcher(v *Vocab) (*Matcher, error) {
	for c := 0; c < 256; c++ {
		if g.need[c] && !v.single[c] {
			return nil, fmt.Errorf("grammar: the vocabulary has no token for the single byte %#02x, which completing a value may need", c)
		}
	}
	threads := func() []int32 { return make([]int32, 0, maxThreads) }
	m := &Matcher{g: g, v: v,
		ar:      make([]frame, 0, 1024),
		th:      threads(),
		lvl:     make([][]int32, v.maxLen+1),
		mark:    make([]int, v.maxLen+1),
		bufA:    threads(),
		bufB:    threads(),
		fast:    threads(),
		slow:    threads(),
		allowed: make([]uint64, (v.n+63)/64),
	}
	for i := range m.lvl {
		m.lvl[i] = threads()
	}
	m.Reset()
	return m, nil
}

// Reset goes back to the start of the value.
func (m *Matcher) Reset() {
	m.ar = m.ar[:0]
	m.th = append(m.th[:0], m.add(frame{kind: fRoot, parent: -1, node: m.g.root, keys: -1, p: -1}))
	m.ended = false
}

// Complete reports whether the text so far is a complete value of the
// grammar, so that generation may end here.
func (m *Matcher) Complete() bool {
	return m.ended || m.minCost(m.th) == 0
}

// Done reports whether generation is over: an end-of-generation token was
// accepted, or the value is complete and no byte can continue it.
func (m *Matcher) Done() bool {
	if m.ended {
		return true
	}
	if m.minCost(m.th) != 0 {
		return false
	}
	base := len(m.ar)
	out := m.bufA[:0]
	for c := 0; c < 256 && len(out) == 0; c++ {
		for _, t := range m.th {
			m.feed(t, byte(c), &out)
		}
	}
	m.ar = m.ar[:base]
	return len(out) == 0
}

// CloseCost returns the fewest bytes that complete the value from here, and
// so the fewest tokens that may remain for Mask to find a token.
func (m *Matcher) CloseCost() int {
	if m.ended {
		return 0
	}
	return int(m.minCost(m.th))
}

// Mask sets to -Inf the logits of the tokens that may not come next, given
// that remaining tokens, this one included, may still be generated: a token
// is allowed when its bytes continue the text validly and the bytes that
// complete the value afterwards fit in the remaining-1 tokens after it.
// End-of-generation tokens are allowed when the value is complete. logits
// must have an entry per token of the vocabulary; entries beyond are masked
// too. Mask returns ErrNoToken when it masks every token.
func (m *Matcher) Mask(logits []float32, remaining int) error {
	if len(logits) < m.v.n {
		return fmt.Errorf("grammar: %d logits for a vocabulary of %d tokens", len(logits), m.v.n)
	}
	clear(m.allowed)
	if remaining >= 1 && !m.ended {
		m.fill(int32(min(remaining-1, math.MaxInt32-8)))
	}
	return m.apply(logits)
}

// fill sets the allowed bits for a budget of bytes after the next token.
func (m *Matcher) fill(budget int32) {
	if m.minCost(m.th) == 0 {
		for _, id := range m.v.eog {
			m.allow(id)
		}
	}
	// Threads inside a free string, between characters and with room in the
	// budget, accept every string-safe token that fits in their maximum
	// length: those are set from the precomputed list, and the walk only
	// visits the subtrees holding other tokens. The other threads walk the
	// whole trie (pruned wherever a prefix is rejected).
	fast, slow := m.fast[:0], m.slow[:0]
	limit := int32(-1)
	for _, t := range m.th {
		if l, ok := m.freeString(t, budget); ok {
			fast = append(fast, t)
			limit = max(limit, l)
		} else {
			slow = append(slow, t)
		}
	}
	if len(fast) > 0 {
		if k := int(min(int64(limit), int64(len(m.v.safeN)-1))); k >= 0 {
			m.allowSafe(int(m.v.safeN[k]))
		}
		m.walk(fast, true, budget)
	}
	if len(slow) > 0 {
		m.walk(slow, false, budget)
	}
}

// allowSafe allows the first n string-safe tokens (those of at most some
// number of characters), from whichever end of the list is shorter. (No
// string-safe token is allowed yet.)
func (m *Matcher) allowSafe(n int) {
	safe := m.v.safe
	if n < len(safe)/2 {
		for _, id := range safe[:n] {
			m.allow(id)
		}
		return
	}
	for w, word := range m.v.safeBits {
		m.allowed[w] |= word
	}
	for _, id := range safe[n:] {
		m.allowed[id>>6] &^= 1 << (id & 63)
	}
}

// freeString reports whether thread t is inside a string whose content is
// free, between two characters, with at least 3 bytes of budget to spare
// (the most an unfinished last character adds), and returns how many more
// characters the string may take.
func (m *Matcher) freeString(t int32, budget int32) (int32, bool) {
	f := &m.ar[t]
	if (f.kind != fString && f.kind != fKey) || f.st != sChar || f.u8n != 0 || addCost(m.cost(t), 3) > budget {
		return 0, false
	}
	if f.kind == fString {
		if ml := m.g.nodes[f.node].maxLength; ml >= 0 {
			return ml - f.a, true
		}
	}
	return math.MaxInt32, true
}

// walk visits the vocabulary trie depth first from the given threads,
// feeding each node's byte to the threads of its parent and skipping the
// subtree when none survive, and allows the tokens of the nodes reached with
// a thread whose cost fits in budget. With fast set, it skips the subtrees
// holding only string-safe tokens.
func (m *Matcher) walk(threads []int32, fast bool, budget int32) {
	nodes, tok0, ids := m.v.nodes, m.v.tok0, m.v.ids
	base := len(m.ar)
	m.lvl[0] = append(m.lvl[0][:0], threads...)
	m.mark[0] = base
	for i := 0; i < len(nodes); {
		nd := &nodes[i]
		if fast && nd.flags&flagUnsafe == 0 {
			i = int(nd.next)
			continue
		}
		d := int(nd.depth)
		m.ar = m.ar[:m.mark[d-1]]
		out := m.lvl[d][:0]
		for _, t := range m.lvl[d-1] {
			m.feed(t, nd.b, &out)
		}
		m.lvl[d] = out
		if len(out) == 0 {
			i = int(nd.next)
			continue
		}
		m.mark[d] = len(m.ar)
		if lo, hi := tok0[i], tok0[i+1]; lo < hi && m.minCost(out) <= budget {
			for _, id := range ids[lo:hi] {
				m.allow(id)
			}
		}
		i++
	}
	m.ar = m.ar[:base]
}

func (m *Matcher) allow(id int32) { m.allowed[id>>6] |= 1 << (id & 63) }

// apply masks the logits of the tokens not allowed.
func (m *Matcher) apply(logits []float32) error {
	some := false
	run := 0 // start of the current run of words with no allowed token
	for w, word := range m.allowed {
		if word == 0 {
			continue
		}
		some = true
		fillNegInf(logits[run*64 : w*64])
		run = w + 1
		if word == ^uint64(0) {
			continue
		}
		row := logits[w*64 : min(w*64+64, len(logits))]
		if bits.OnesCount64(word) > 16 {
			for z := ^word; z != 0; z &= z - 1 {
				if i := bits.TrailingZeros64(z); i < len(row) {
					row[i] = negInf[0]
				}
			}
			continue
		}
		// Few allowed: keep their logits aside, mask the whole row, put them back.
		var kept [16]float32
		k := 0
		for z := word; z != 0; z &= z - 1 {
			kept[k] = row[bits.TrailingZeros64(z)]
			k++
		}
		copy(row, negInf[:])
		k = 0
		for z := word; z != 0; z &= z - 1 {
			row[bits.TrailingZeros64(z)] = kept[k]
			k++
		}
	}
	fillNegInf(logits[min(run*64, len(logits)):])
	if !some {
		return ErrNoToken
	}
	return nil
}

// negInf is a block of -Inf values to copy from.
var negInf = func() (b [1024]float32) {
	for i := range b {
		b[i] = float32(math.Inf(-1))
	}
	return b
}()

// fillNegInf sets every element of x to -Inf.
func fillNegInf(x []float32) {
	for len(x) > 0 {
		x = x[copy(x, negInf[:]):]
	}
}

// Accept records token id as the next one. It fails, leaving the matcher
// unchanged, when the grammar does not allow the token's bytes here (which
// cannot happen for a token Mask allowed), or when id is an
// end-of-generation token and the value is not complete. An accepted
// end-of-generation token ends the generation (Done).
func (m *Matcher) Accept(id int32) error {
	switch {
	case m.ended:
		return errors.New("grammar: token after the end of generation")
	case id < 0 || int(id) >= m.v.n:
		return fmt.Errorf("grammar: token id %d out of range [0, %d)", id, m.v.n)
	case m.v.tok.IsEOG(id):
		if m.minCost(m.th) != 0 {
			return errors.New("grammar: end of generation before the value is complete")
		}
		m.ended = true
		return nil
	case !m.v.text[id]:
		return fmt.Errorf("grammar: token %d (%q) is not text", id, m.v.tok.Text(id))
	}
	return m.AcceptBytes(m.v.tok.Piece(id))
}

// AcceptBytes records text p as the next bytes of the value. It fails,
// leaving the matcher unchanged, when the grammar does not allow them. It
// serves to start constraining in the middle of a generation, with the part
// of the text already generated that belongs to the value.
func (m *Matcher) AcceptBytes(p []byte) error {
	if m.ended {
		return errors.New("grammar: text after the end of generation")
	}
	base := len(m.ar)
	cur := append(m.bufA[:0], m.th...)
	next := m.bufB[:0]
	for i, c := range p {
		next = next[:0]
		for _, t := range cur {
			m.feed(t, c, &next)
		}
		if len(next) == 0 {
			m.ar = m.ar[:base]
			return fmt.Errorf("grammar: byte %q at offset %d of %q is not allowed here", c, i, p)
		}
		cur, next = next, cur
	}
	m.th = append(m.th[:0], cur...)
	m.compact()
	return nil
}

// compact moves the frames the threads use to the start of the arena,
// dropping the others. Every frame refers only to frames written before it,
// so one pass in order can renumber them.
func (m *Matcher) compact() {
	n := len(m.ar)
	if cap(m.remap) < n {
		m.remap = make([]int32, n, 2*n)
	}
	remap := m.remap[:n]
	for i := range remap {
		remap[i] = -1
	}
	for _, t := range m.th {
		for ; t >= 0 && remap[t] < 0; t = m.ar[t].parent {
			remap[t] = 0
			for k := m.ar[t].keys; k >= 0 && remap[k] < 0; k = m.ar[k].parent {
				remap[k] = 0
			}
		}
	}
	w := int32(0)
	for i := range remap {
		if remap[i] < 0 {
			continue
		}
		f := m.ar[i]
		if f.parent >= 0 {
			f.parent = remap[f.parent]
		}
		if f.keys >= 0 {
			f.keys = remap[f.keys]
		}
		m.ar[w] = f
		remap[i] = w
		w++
	}
	m.ar = m.ar[:w]
	for i, t := range m.th {
		m.th[i] = remap[t]
	}
}

package tokenizer

// symbol is a piece of the word being merged: bytes word[start:start+n],
// linked to its neighbours. A symbol merged into its left neighbour has n == 0.
type symbol struct {
	start, n   int
	prev, next int
}

// bigram is a candidate merge of the adjacent symbols left and right.
// For SentencePiece the priority is the score of the merged token (higher
// first); for byte-level BPE it is minus the merge rank (lower rank first).
// Ties go to the leftmost pair. size is the byte length of the merged text,
// which tells a stale candidate (one of its symbols changed since) from a
// live one.
type bigram struct {
	left, right int
	prio        float64
	size        int
}

func (a bigram) before(b bigram) bool {
	return a.prio > b.prio || (a.prio == b.prio && a.left < b.left)
}

// bigramHeap is a binary max-heap of bigrams ordered by before.
type bigramHeap []bigram

func (h *bigramHeap) push(b bigram) {
	*h = append(*h, b)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bigramHeap) pop() bigram {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].before(s[m]) {
			m = l
		}
		if r < len(s) && s[r].before(s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// scratch holds the reusable buffers of one Encode call.
type scratch struct {
	cp   []rune
	offs []int
	ends []int
	tmp  []int

	word []byte // the word being merged (escaped or byte-level encoded)
	key  []byte // map key buffer
	syms []symbol
	heap bigramHeap

	frags  []fragment
	frags2 []fragment
}

func (t *Tokenizer) getScratch() *scratch {
	if sc, ok := t.pool.Get().(*scratch); ok {
		return sc
	}
	return new(scratch)
}

func (t *Tokenizer) putScratch(sc *scratch) {
	const maxKeep = 1 << 16 // do not keep huge buffers alive
	if cap(sc.cp) > maxKeep || cap(sc.word) > 4*maxKeep || cap(sc.syms) > maxKeep {
		return
	}
	t.pool.Put(sc)
}

// utf8Len is the length of the UTF-8 sequence that lead byte b starts
// (1 for continuation and invalid bytes), as the reference splits text.
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	default:
		return 4
	}
}

// initSymbols splits sc.word into one symbol per UTF-8 sequence.
func initSymbols(sc *scratch) {
	w := sc.word
	sc.syms = sc.syms[:0]
	for i := 0; i < len(w); {
		n := min(utf8Len(w[i]), len(w)-i)
		k := len(sc.syms)
		sc.syms = append(sc.syms, symbol{start: i, n: n, prev: k - 1, next: k + 1})
		i += n
	}
	if k := len(sc.syms); k > 0 {
		sc.syms[k-1].next = -1
	}
}

// mergeSymbols runs the merge loop on sc.syms: prio returns the priority of
// merging the two symbols, ok=false when they cannot merge.
func mergeSymbols(sc *scratch, prio func(sc *scratch, l, r *symbol) (float64, bool)) {
	sc.heap = sc.heap[:0]
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		ls, rs := &sc.syms[l], &sc.syms[r]
		if p, ok := prio(sc, ls, rs); ok {
			sc.heap.push(bigram{left: l, right: r, prio: p, size: ls.n + rs.n})
		}
	}
	for i := 1; i < len(sc.syms); i++ {
		try(i-1, i)
	}
	for len(sc.heap) > 0 {
		b := sc.heap.pop()
		l, r := &sc.syms[b.left], &sc.syms[b.right]
		// Symbols only grow, and only by absorbing their right neighbour, so
		// a candidate is stale exactly when a side is gone or its size changed.
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			sc.syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
}

package grammar

import "math"

// cost returns the fewest bytes that complete the thread whose top frame is
// t: 0 when its text is a complete value.
func (m *Matcher) cost(t int32) int32 {
	f := &m.ar[t]
	return addCost(m.own(f), f.below)
}

// minCost returns the lowest cost of threads.
func (m *Matcher) minCost(threads []int32) int32 {
	best := int32(math.MaxInt32)
	for _, t := range threads {
		best = min(best, m.cost(t))
	}
	return best
}

// own returns the fewest bytes that complete frame f (for fKeyLit frames:
// also their object's part, see key).
func (m *Matcher) own(f *frame) int32 {
	g := m.g
	switch f.kind {
	case fRoot:
		if f.st == rootValue {
			return g.nodes[f.node].minLen
		}
	case fObject:
		return m.objectCost(f)
	case fArray:
		return arrayCost(g, f)
	case fString:
		return addCost(stringCost(f), max(g.nodes[f.node].minLength-f.a, 0))
	case fKey:
		return stringCost(f)
	case fKeyLit:
		return m.keyCost(f)
	case fLit:
		lits := g.sets[g.nodes[f.node].lits].lits
		best := int32(math.MaxInt32)
		for _, l := range lits[f.a:f.b] {
			best = min(best, int32(len(l))-f.p)
		}
		return best
	case fSeq:
		return m.seqCost(f)
	case fRep:
		return m.repCost(f)
	case fRaw:
		return m.rawCost(f)
	case fNumber:
		switch n := &g.nodes[f.node]; {
		case n.kind == kInteger:
			return m.integerCost(f)
		case n.mags != nil:
			return m.boundedCost(f)
		}
		switch f.st {
		case nMinus, nDot, nE, nESign:
			return 1
		}
	}
	return 0
}

func (m *Matcher) objectCost(f *frame) int32 {
	g := m.g
	n := &g.nodes[f.node]
	after := closeAfter(f.a, f.b, false)
	switch f.st {
	case oFirst:
		return closeAfter(f.a, f.b, true)
	case oComma:
		if f.a > 0 {
			return closeAfter(f.a, f.b, true)
		}
		best := int32(math.MaxInt32)
		for i := range n.props {
			if f.h&(1<<i) == 0 {
				best = min(best, n.props[i].cost)
			}
		}
		if n.addl >= 0 {
			best = min(best, memberCost(`"`, g.nodes[n.addl].minLen))
		}
		return addCost(best, 1)
	case oColon, oValue:
		child := n.addl
		if f.p >= 0 {
			child = n.props[f.p].node
		}
		c := addCost(g.nodes[child].minLen, after)
		if f.st == oColon {
			c = addCost(c, 1)
		}
		return c
	case oAfter:
		return after
	}
	return 0
}

// keyCost is the cost of a declared key being read, with the rest of its
// member and of the object: the cheapest unwritten property it may still be.
func (m *Matcher) keyCost(f *frame) int32 {
	g := m.g
	obj := &m.ar[f.parent]
	n := &g.nodes[obj.node]
	set := &g.sets[n.keys]
	best := int32(math.MaxInt32)
	for i := f.a; i < f.b; i++ {
		q := set.props[i]
		if obj.h&(1<<q) != 0 {
			continue
		}
		nReq, reqCost := obj.a, obj.b
		if n.props[q].required {
			nReq--
			reqCost -= n.props[q].cost
		}
		c := int32(len(set.lits[i])) - f.p + g.nodes[n.props[q].node].minLen
		if !n.bare {
			c++ // the colon after the closing quote
		}
		best = min(best, addCost(c, closeAfter(nReq, reqCost, false)))
	}
	return best
}

func arrayCost(g *Grammar, f *frame) int32 {
	n := &g.nodes[f.node]
	itemLen := g.nodes[n.items].minLen
	after := func(count int32) int32 {
		if count >= n.minItems {
			return 1
		}
		return addCost(mulCost(n.minItems-count, addCost(itemLen, 1)), 1)
	}
	switch f.st {
	case aFirst:
		if n.minItems == 0 {
			return 1
		}
		return mulCost(n.minItems, addCost(itemLen, 1))
	case aComma:
		return addCost(itemLen, after(f.a+1))
	}
	return after(f.a)
}

func stringCost(f *frame) int32 {
	switch f.st {
	case sChar:
		return 1 + int32(f.u8n)
	case sEsc:
		return 2
	case sHex:
		c := int32(4-f.hexn) + 1
		if f.hexn >= 2 {
			if top := f.b >> (4 * (f.hexn - 2)); top >= 0xD8 && top <= 0xDB {
				c += 6 // the low surrogate: \uDC00
			}
		}
		return c
	case sLowBS:
		return 7
	case sLowU:
		return 6
	case sLowHex:
		return int32(4-f.hexn) + 1
	}
	return 0
}

package grammar

// maxThreads bounds the threads a matcher follows at once. A step that would
// make more keeps the first ones: the text stays valid, only some ways of
// continuing it are lost.
const maxThreads = 128

// push appends thread top t to out unless out is full.
func push(out *[]int32, t int32) {
	if len(*out) < cap(*out) {
		*out = append(*out, t)
	}
}

// add writes f into the arena and returns its index.
func (m *Matcher) add(f frame) int32 {
	m.ar = append(m.ar, f)
	return int32(len(m.ar) - 1)
}

// feed consumes byte c on the thread whose top frame is t and appends the
// tops of the resulting threads (none when c is not allowed) to out.
func (m *Matcher) feed(t int32, c byte, out *[]int32) {
	for t >= 0 {
		f := m.ar[t]
		again := false // the top is complete and c belongs to the frame below
		switch f.kind {
		case fRoot:
			m.root(f, c, out)
		case fObject, fArray:
			switch {
			case isWS(c):
				m.space(f, out)
			case f.kind == fObject:
				m.object(f, c, out)
			default:
				m.array(f, c, out)
			}
		case fString, fKey:
			m.str(f, c, out)
		case fKeyLit:
			m.keyLit(f, c, out)
		case fLit:
			again = m.lit(f, c, out)
		case fNumber:
			again = m.number(f, c, out)
		case fSeq:
			again = m.seq(f, c, out)
		case fRep:
			again = m.rep(f, c, out)
		case fSpace:
			again = m.spaceRun(f, c, out)
		case fRaw:
			m.raw(f, c, out)
		}
		if !again {
			return
		}
		t = f.parent
	}
}

// space consumes a whitespace byte in frame f.
func (m *Matcher) space(f frame, out *[]int32) {
	if f.ws < m.g.maxWS {
		f.ws++
		push(out, m.add(f))
	}
}

func (m *Matcher) root(f frame, c byte, out *[]int32) {
	switch {
	case f.st != rootValue:
	case isWS(c):
		m.space(f, out)
	default:
		f.st, f.ws = rootDone, 0
		m.value(m.add(f), f.node, c, out)
	}
}

// value starts a value of node ni with its first byte c, on top of frame pi,
// which is already in the state it will be in after the value.
func (m *Matcher) value(pi, ni int32, c byte, out *[]int32) {
	n := &m.g.nodes[ni]
	depth := m.ar[pi].depth
	f := frame{parent: pi, node: ni, keys: -1, p: -1, depth: depth}
	switch n.kind {
	case kAny:
		switch {
		case c == '{' || c == '[':
			if depth >= m.g.maxDepth {
				return
			}
			ni = nodeAnyObject
			if c == '[' {
				ni = nodeAnyArray
			}
		case c == m.g.strOpen:
			ni = nodeAnyString
		case c == '-' || isDigit(c):
			ni = nodeAnyNumber
		case m.g.word[c]:
			ni = nodeAnyWord
		default:
			return
		}
		m.value(pi, ni, c, out)
		return
	case kAnyOf:
		for _, a := range n.alts {
			m.value(pi, a, c, out)
		}
		return
	case kObject:
		if c != n.openByte() {
			return
		}
		f.kind, f.st, f.a, f.b = fObject, oFirst, n.nReq, n.reqCost
		f.depth = min(depth, 254) + 1
	case kArray:
		if c != '[' {
			return
		}
		f.kind, f.st = fArray, aFirst
		f.depth = min(depth, 254) + 1
	case kString:
		if c != '"' {
			return
		}
		f.kind, f.st = fString, sChar
	case kInteger:
		f.kind = fNumber
		if !intStart(&f, n, c) {
			return
		}
	case kNumber:
		f.kind = fNumber
		if n.mags != nil {
			if !boundedStart(&f, n, c) {
				return
			}
			break
		}
		switch {
		case c == '-':
			f.st = nMinus
		case c == '0':
			f.st = nZero
		case isDigit(c):
			f.st, f.a = nInt, 1
		default:
			return
		}
	case kLiteral:
		f.kind, f.b, f.p = fLit, int32(len(m.g.sets[n.lits].lits)), 0
		f.below = m.cost(pi)
		m.lit(f, c, out)
		return
	case kSeq:
		f.kind, f.below = fSeq, m.cost(pi)
		m.seq(f, c, out)
		return
	case kRep:
		f.kind, f.st, f.below = fRep, rItem, m.cost(pi)
		m.rep(f, c, out)
		return
	case kSpace:
		if isWS(c) && m.g.maxWS > 0 {
			f.kind, f.ws, f.below = fSpace, 1, m.cost(pi)
			push(out, m.add(f))
		}
		return
	case kRaw:
		f.kind, f.p, f.below = fRaw, 0, m.cost(pi)
		m.raw(f, c, out)
		return
	}
	f.below = m.cost(pi)
	push(out, m.add(f))
}

// object consumes c, not whitespace, in an object. (An object in state oKey
// is never a top frame: the key being read is on top of it.)
func (m *Matcher) object(f frame, c byte, out *[]int32) {
	n := &m.g.nodes[f.node]
	f.ws = 0
	switch f.st {
	case oFirst, oComma:
		switch {
		case c == n.closeByte() && f.st == oFirst && f.a == 0:
			push(out, f.parent)
		case n.bare:
			m.bareKey(f, n, c, out)
		case c == '"':
			m.key(f, n, out)
		}
	case oColon:
		if c == n.colonByte() {
			f.st = oValue
			push(out, m.add(f))
		}
	case oValue:
		child := n.addl
		if f.p >= 0 {
			child = n.props[f.p].node
		}
		f.st = oAfter
		m.value(m.add(f), child, c, out)
	case oAfter:
		switch {
		case c == ',' && (n.addl >= 0 || f.h != n.allSeen):
			f.st = oComma
			push(out, m.add(f))
		case c == n.closeByte() && f.a == 0:
			push(out, f.parent)
		}
	}
}

// bareKey starts a bare property name in object frame f with its first
// byte c: only declared properties not written yet may come.
func (m *Matcher) bareKey(f frame, n *node, c byte, out *[]int32) {
	if n.keys < 0 || f.h == n.allSeen {
		return
	}
	obj := f
	obj.st = oKey
	pi := m.add(obj)
	m.keyLit(frame{kind: fKeyLit, parent: pi, below: f.below, node: f.node, keys: -1,
		b: int32(len(m.g.sets[n.keys].lits)), depth: f.depth}, c, out)
}

// key starts a property name in object frame f (the opening quote was read):
// a declared one that was not written yet, or an additional one.
func (m *Matcher) key(f frame, n *node, out *[]int32) {
	if n.keys >= 0 && f.h != n.allSeen {
		obj := f
		obj.st = oKey
		pi := m.add(obj)
		push(out, m.add(frame{kind: fKeyLit, parent: pi, below: f.below, node: f.node, keys: -1,
			b: int32(len(m.g.sets[n.keys].lits)), depth: f.depth}))
	}
	if n.addl >= 0 {
		obj := f
		obj.st, obj.p = oColon, -1
		pi := m.add(obj)
		push(out, m.add(frame{kind: fKey, parent: pi, below: m.cost(pi), node: f.node, keys: -1,
			h: fnvOffset, depth: f.depth}))
	}
}

// keyLit consumes c in a declared property name.
func (m *Matcher) keyLit(f frame, c byte, out *[]int32) {
	obj := m.ar[f.parent]
	n := &m.g.nodes[obj.node]
	set := &m.g.sets[n.keys]
	lo, hi := narrow(set.lits, f.a, f.b, f.p, c)
	q := int32(-1) // a property still unwritten among the matches
	for i := lo; i < hi; i++ {
		if obj.h&(1<<set.props[i]) == 0 {
			q = set.props[i]
			break
		}
	}
	if q < 0 {
		return
	}
	f.a, f.b, f.p = lo, hi, f.p+1
	if hi-lo > 1 || int(f.p) < len(set.lits[lo]) {
		push(out, m.add(f))
		return
	}
	obj.st, obj.p = oColon, q
	if n.bare {
		obj.st = oValue // a bare key literal ends with the colon
	}
	obj.h |= 1 << q
	if n.props[q].required {
		obj.a--
		obj.b -= n.props[q].cost
	}
	push(out, m.add(obj))
}

// lit consumes c in a literal. It reports whether the literal was already
// complete, c then belonging to the frame below.
func (m *Matcher) lit(f frame, c byte, out *[]int32) bool {
	lits := m.g.sets[m.g.nodes[f.node].lits].lits
	lo, hi := narrow(lits, f.a, f.b, f.p, c)
	if lo == hi {
		return int(f.p) == len(lits[f.a])
	}
	f.a, f.b, f.p = lo, hi, f.p+1
	if hi-lo == 1 && int(f.p) == len(lits[lo]) {
		push(out, f.parent)
		return false
	}
	push(out, m.add(f))
	return false
}

// number consumes c in a number. It reports whether the number was already
// complete, c then belonging to the frame below.
func (m *Matcher) number(f frame, c byte, out *[]int32) bool {
	switch n := &m.g.nodes[f.node]; {
	case n.kind == kInteger:
		return m.integer(f, c, out)
	case n.mags != nil:
		return m.boundedNumber(f, c, out)
	}
	exp := c == 'e' || c == 'E'
	switch f.st {
	case nMinus:
		switch {
		case c == '0':
			f.st = nZero
		case isDigit(c):
			f.st, f.a = nInt, 1
		default:
			return false
		}
	case nZero, nInt:
		switch {
		case f.st == nInt && isDigit(c) && f.a < maxIntDigits:
			f.a++
		case c == '.':
			f.st = nDot
		case exp:
			f.st = nE
		default:
			return true
		}
	case nDot, nESign:
		if !isDigit(c) {
			return false
		}
		f.st, f.b = f.st+1, 1 // nFrac, nExp
	case nFrac:
		switch {
		case isDigit(c) && f.b < maxFracDigits:
			f.b++
		case exp:
			f.st, f.b = nE, 0
		default:
			return true
		}
	case nE:
		switch {
		case c == '+' || c == '-':
			f.st = nESign
		case isDigit(c):
			f.st, f.b = nExp, 1
		default:
			return false
		}
	case nExp:
		if !isDigit(c) || f.b >= maxExpDigits {
			return true
		}
		f.b++
	}
	push(out, m.add(f))
	return false
}

// array consumes c, not whitespace, in an array.
func (m *Matcher) array(f frame, c byte, out *[]int32) {
	n := &m.g.nodes[f.node]
	f.ws = 0
	switch f.st {
	case aFirst, aComma:
		if c == ']' {
			if f.st == aFirst && n.minItems == 0 {
				push(out, f.parent)
			}
			return
		}
		if n.maxItems == 0 {
			return
		}
		f.st = aAfter
		f.a++
		m.value(m.add(f), n.items, c, out)
	case aAfter:
		switch {
		case c == ',' && (n.maxItems < 0 || f.a < n.maxItems):
			f.st = aComma
			push(out, m.add(f))
		case c == ']' && f.a >= n.minItems:
			push(out, f.parent)
		}
	}
}

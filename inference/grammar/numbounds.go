package grammar

import (
	"fmt"
	"math/big"
)

// Bounded numbers ("type":"number" with minimum, maximum...) are written
// without an exponent: -?int(.frac)? with at most maxIntDigits and
// maxFracDigits digits, so that the values the grammar writes are the
// multiples of 10^-maxFracDigits below 10^maxIntDigits in magnitude, and a
// bound is a point of that lattice.

// fracScale is 10^maxFracDigits: a magnitude is written as its integer
// part and its fraction times fracScale.
const fracScale = 10_000_000_000_000_000

// magRange is the interval of the magnitudes of the numbers of one sign
// that a bounded number node allows: from ai.af to bi.bf, integer parts
// and fractions times fracScale.
type magRange struct {
	ai, af, bi, bf int64
	ok             bool // the interval is not empty
}

// numberNode returns the node of the numbers within bounds b, written
// without an exponent.
func numberNode(path string, s map[string]any, b *numBounds) (node, error) {
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(maxFracDigits), nil))
	maxM := new(big.Int).Mul(big.NewInt(maxIntMagnitude+1), big.NewInt(fracScale))
	maxM.Sub(maxM, big.NewInt(1)) // the largest magnitude, times fracScale
	lo, hi := new(big.Int).Neg(maxM), new(big.Int).Set(maxM)
	if b.lo != nil {
		if q := roundInward(new(big.Rat).Mul(b.lo, scale), true, b.loEx); q.Cmp(lo) > 0 {
			lo = q
		}
	}
	if b.hi != nil {
		if q := roundInward(new(big.Rat).Mul(b.hi, scale), false, b.hiEx); q.Cmp(hi) < 0 {
			hi = q
		}
	}
	if lo.Cmp(hi) > 0 {
		return node{}, fmt.Errorf("grammar: schema %s: no number of at most %d digits before and %d after the point is within the bounds%s",
			path, maxIntDigits, maxFracDigits, describeBounds(s))
	}
	var mags [2]magRange
	zero := new(big.Int)
	bigMax := func(x, y *big.Int) *big.Int {
		if x.Cmp(y) > 0 {
			return x
		}
		return y
	}
	// positive: [max(lo, 0), hi]; negative: [max(-hi, 0), -lo]
	ends := [2][2]*big.Int{{bigMax(lo, zero), hi}, {bigMax(new(big.Int).Neg(hi), zero), new(big.Int).Neg(lo)}}
	for i, e := range ends {
		if e[0].Cmp(e[1]) > 0 {
			continue
		}
		split := func(x *big.Int) (int64, int64) {
			q, r := new(big.Int).QuoRem(x, big.NewInt(fracScale), new(big.Int))
			return q.Int64(), r.Int64()
		}
		r := &mags[i]
		r.ai, r.af = split(e[0])
		r.bi, r.bf = split(e[1])
		r.ok = true
	}
	n := node{kind: kNumber, bounds: b, mags: &mags, minLen: -1}
	if c := mags[0].startCost(); c >= 0 {
		n.minLen = c
	}
	if c := mags[1].startCost(); c >= 0 && (n.minLen < 0 || 1+c < n.minLen) {
		n.minLen = 1 + c
	}
	return n, nil
}

// startCost returns the fewest bytes of a magnitude in r, -1 if none.
func (r *magRange) startCost() int32 {
	best := int32(-1)
	for d := int64(0); d <= 9; d++ {
		if c := r.intCost(d, 1); c >= 0 && (best < 0 || 1+c < best) {
			best = 1 + c
		}
	}
	return best
}

// intCost returns the fewest bytes that, written after the k integer
// digits of magnitude v, make a magnitude in r, or -1 when none do.
func (r *magRange) intCost(v int64, k int32) int32 {
	if !r.ok {
		return -1
	}
	best := int32(-1)
	for j := int32(0); k+j <= maxIntDigits && (best < 0 || j < best); j++ {
		if v == 0 && j > 0 {
			break // a leading zero
		}
		low := v * pow10[j] // the integer parts with j more digits: [low, low+10^j-1]
		if low > r.bi {
			break
		}
		lo, hi := max(low, r.ai), min(low+pow10[j]-1, r.bi)
		if lo > hi {
			continue
		}
		c := j
		if lo == r.ai && r.af > 0 && lo == hi {
			// Only the lower bound's integer part: a fraction must follow.
			e := fracReach(0, 0, r.af, r.fracHi(lo))
			if e < 0 {
				continue
			}
			c = j + 1 + e
		}
		if best < 0 || c < best {
			best = c
		}
	}
	return best
}

// fracHi returns the largest fraction (times fracScale) allowed after
// integer part i.
func (r *magRange) fracHi(i int64) int64 {
	if i == r.bi {
		return r.bf
	}
	return fracScale - 1
}

// fracReach returns the fewest fraction digits that, written after the m
// digits fp, make a fraction (times fracScale) in [fLo, fHi], at least one
// when m is 0, or -1 when none do.
func fracReach(fp int64, m int32, fLo, fHi int64) int32 {
	span := pow10[maxFracDigits-m]
	base := fp * span
	lo, hi := max(base, fLo), min(base+span-1, fHi)
	if lo > hi {
		return -1
	}
	e := int32(0)
	if m == 0 {
		e = 1 // a digit must follow the point
	}
	for ; m+e <= maxFracDigits; e++ {
		s := pow10[maxFracDigits-m-e]
		if (lo+s-1)/s*s <= hi {
			return e
		}
	}
	return -1
}

// Flags of bounded number frames, in p.
const (
	numNeg  = 1 << iota // after a minus sign
	numAtLo             // in the fraction, after the lower bound's integer part
	numAtHi             // in the fraction, after the upper bound's integer part
)

// mag returns the magnitude range of the sign of bounded number frame f.
func (n *node) mag(f *frame) *magRange {
	if f.p&numNeg != 0 {
		return &n.mags[1]
	}
	return &n.mags[0]
}

// fracBounds returns the fractions allowed in the fraction of frame f.
func (n *node) fracBounds(f *frame) (int64, int64) {
	r := n.mag(f)
	lo, hi := int64(0), int64(fracScale-1)
	if f.p&numAtLo != 0 {
		lo = r.af
	}
	if f.p&numAtHi != 0 {
		hi = r.bf
	}
	return lo, hi
}

// boundedStart starts bounded number frame f, of node n, with its first
// byte c; false when c cannot start a number of n.
func boundedStart(f *frame, n *node, c byte) bool {
	f.p = 0
	switch {
	case c == '-':
		f.st, f.p = nMinus, numNeg
		return n.mags[1].ok
	case isDigit(c):
		return boundedDigit(f, n, c)
	}
	return false
}

// boundedDigit takes c as the first digit of the integer part of f.
func boundedDigit(f *frame, n *node, c byte) bool {
	v := int64(c - '0')
	if n.mag(f).intCost(v, 1) < 0 {
		return false
	}
	f.st, f.a, f.h = nInt, 1, uint64(v)
	if v == 0 {
		f.st = nZero
	}
	return true
}

// boundedNumber consumes c in a bounded number. It reports whether the
// number was already complete, c then belonging to the frame below.
func (m *Matcher) boundedNumber(f frame, c byte, out *[]int32) bool {
	n := &m.g.nodes[f.node]
	r := n.mag(&f)
	switch f.st {
	case nMinus:
		if !isDigit(c) || !boundedDigit(&f, n, c) {
			return false
		}
	case nZero, nInt:
		v := int64(f.h)
		switch {
		case f.st == nInt && isDigit(c) && f.a < maxIntDigits && r.intCost(10*v+int64(c-'0'), f.a+1) >= 0:
			f.a, f.h = f.a+1, uint64(10*v+int64(c-'0'))
		case c == '.' && v >= r.ai && v <= r.bi && n.point(&f, v):
		default:
			return r.intCost(v, f.a) == 0
		}
	case nDot, nFrac:
		lo, hi := n.fracBounds(&f)
		if isDigit(c) && f.b < maxFracDigits {
			if fp := 10*int64(f.h) + int64(c-'0'); fracReach(fp, f.b+1, lo, hi) >= 0 {
				f.st, f.b, f.h = nFrac, f.b+1, uint64(fp)
				break
			}
		}
		return f.st == nFrac && fracReach(int64(f.h), f.b, lo, hi) == 0
	}
	push(out, m.add(f))
	return false
}

// point moves frame f, whose integer part v is within its magnitude range,
// past the decimal point, and reports whether a fraction can follow.
func (n *node) point(f *frame, v int64) bool {
	r := n.mag(f)
	g := *f
	g.st, g.b, g.h = nDot, 0, 0
	if v == r.ai {
		g.p |= numAtLo
	}
	if v == r.bi {
		g.p |= numAtHi
	}
	if lo, hi := n.fracBounds(&g); fracReach(0, 0, lo, hi) < 0 {
		return false
	}
	*f = g
	return true
}

// boundedCost is the fewest bytes that complete bounded number frame f.
func (m *Matcher) boundedCost(f *frame) int32 {
	n := &m.g.nodes[f.node]
	switch f.st {
	case nMinus:
		return n.mags[1].startCost()
	case nZero, nInt:
		return n.mag(f).intCost(int64(f.h), f.a)
	}
	lo, hi := n.fracBounds(f)
	return fracReach(int64(f.h), f.b, lo, hi)
}

package grammar

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// maxIntMagnitude is the largest magnitude of an integer the grammar
// writes: maxIntDigits nines.
const maxIntMagnitude = 9_999_999_999_999_999

// pow10 holds the powers of ten up to 10^maxIntDigits.
var pow10 = func() (p [maxIntDigits + 1]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = 10 * p[i-1]
	}
	return p
}()

// intNode returns the node of the integers in [lo, hi] (both within
// ±maxIntMagnitude, lo <= hi), the range that bounds b (nil: none) leave.
func intNode(lo, hi int64, b *numBounds) node {
	n := node{kind: kInteger, ilo: lo, ihi: hi, bounds: b, minLen: -1}
	if a, _, ok := n.magnitudes(false); ok {
		n.minLen = decDigits(a)
	}
	if a, _, ok := n.magnitudes(true); ok && (n.minLen < 0 || 1+decDigits(a) < n.minLen) {
		n.minLen = 1 + decDigits(a)
	}
	return n
}

// magnitudes returns the interval [a, b] of the magnitudes of the integers
// of integer node n that have the sign neg; ok is false when there are
// none. "-0" is 0: it is allowed when 0 is.
func (n *node) magnitudes(neg bool) (a, b int64, ok bool) {
	if neg {
		a, b = max(-n.ihi, 0), -n.ilo
	} else {
		a, b = max(n.ilo, 0), n.ihi
	}
	return a, b, a <= b
}

// decDigits returns the number of decimal digits of x >= 0.
func decDigits(x int64) int32 {
	d := int32(1)
	for ; d < int32(len(pow10)) && x >= pow10[d]; d++ {
	}
	return d
}

// intReach returns the fewest digits that, written after the k digits of
// magnitude v, make a magnitude in [a, b] of at most maxIntDigits digits,
// or -1 when none do. A leading zero cannot be followed by digits.
func intReach(v int64, k int32, a, b int64) int32 {
	if v == 0 {
		if a == 0 {
			return 0
		}
		return -1
	}
	for j := int32(0); k+j <= maxIntDigits; j++ {
		low := v * pow10[j]
		if low > b {
			break
		}
		if low+pow10[j]-1 >= a {
			return j
		}
	}
	return -1
}

// intStart starts integer frame f, of node n, with its first byte c; false
// when c cannot start an integer of n.
func intStart(f *frame, n *node, c byte) bool {
	switch {
	case c == '-':
		if _, _, ok := n.magnitudes(true); !ok {
			return false
		}
		f.st, f.b, f.a, f.h = nMinus, 1, 0, 0
		return true
	case isDigit(c):
		a, b, ok := n.magnitudes(false)
		v := int64(c - '0')
		if !ok || intReach(v, 1, a, b) < 0 {
			return false
		}
		f.st, f.a, f.h = nInt, 1, uint64(v)
		if v == 0 {
			f.st = nZero
		}
		return true
	}
	return false
}

// integer consumes c in an integer. It reports whether the integer was
// already complete, c then belonging to the frame below.
func (m *Matcher) integer(f frame, c byte, out *[]int32) bool {
	n := &m.g.nodes[f.node]
	a, b, _ := n.magnitudes(f.b != 0)
	switch f.st {
	case nMinus:
		if !isDigit(c) {
			return false
		}
		v := int64(c - '0')
		if intReach(v, 1, a, b) < 0 {
			return false
		}
		f.st, f.a, f.h = nInt, 1, uint64(v)
		if v == 0 {
			f.st = nZero
		}
	case nZero:
		return true // only reached when 0 is allowed
	case nInt:
		v := int64(f.h)
		if isDigit(c) && f.a < maxIntDigits {
			if w := 10*v + int64(c-'0'); intReach(w, f.a+1, a, b) >= 0 {
				f.a, f.h = f.a+1, uint64(w)
				break
			}
		}
		return v >= a && v <= b
	}
	push(out, m.add(f))
	return false
}

// integerCost is the fewest bytes that complete integer frame f.
func (m *Matcher) integerCost(f *frame) int32 {
	n := &m.g.nodes[f.node]
	a, b, _ := n.magnitudes(f.b != 0)
	if f.st == nMinus {
		return decDigits(a)
	}
	return intReach(int64(f.h), f.a, a, b)
}

// acceptsInteger reports whether integer node n allows the number num,
// written as it is (an enum or const value may have more digits than the
// grammar writes).
func (n *node) acceptsInteger(num json.Number) bool {
	r, ok := parseRat(string(num))
	return ok && r.IsInt() && n.bounds.contains(r)
}

// maxBoundExp bounds the exponent of a number that parseRat reads exactly.
const maxBoundExp = 1000

// parseRat reads a JSON number exactly; false for a number whose exponent
// is beyond ±maxBoundExp (which would take too long).
func parseRat(s string) (*big.Rat, bool) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxBoundExp || e < -maxBoundExp {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// numBounds are the bounds of a number schema: the tightest lower and
// upper ones (nil: none), each inclusive or exclusive.
type numBounds struct {
	lo, hi     *big.Rat
	loEx, hiEx bool
}

// contains reports whether x is within the bounds (b may be nil: no bounds).
func (b *numBounds) contains(x *big.Rat) bool {
	if b == nil {
		return true
	}
	if b.lo != nil {
		if c := x.Cmp(b.lo); c < 0 || c == 0 && b.loEx {
			return false
		}
	}
	if b.hi != nil {
		if c := x.Cmp(b.hi); c > 0 || c == 0 && b.hiEx {
			return false
		}
	}
	return true
}

// readBounds reads the bounds of a number or integer schema: minimum,
// maximum, exclusiveMinimum and exclusiveMaximum, the exclusive ones as
// numbers or, as in draft 4, as booleans beside minimum and maximum. It
// returns nil when there are none.
func readBounds(path string, s map[string]any) (*numBounds, error) {
	if err := checkDraft4(path, s); err != nil {
		return nil, err
	}
	var b numBounds
	for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		if _, isBool := v.(bool); isBool {
			continue // draft 4: see draft4Exclusive
		}
		r, err := boundValue(path, k, v)
		if err != nil {
			return nil, err
		}
		exclusive := k == "exclusiveMinimum" || k == "exclusiveMaximum" || draft4Exclusive(s, k)
		if k == "minimum" || k == "exclusiveMinimum" {
			if b.lo == nil || tighter(r.Cmp(b.lo), exclusive) {
				b.lo, b.loEx = r, exclusive
			}
		} else if b.hi == nil || tighter(-r.Cmp(b.hi), exclusive) {
			b.hi, b.hiEx = r, exclusive
		}
	}
	if b.lo == nil && b.hi == nil {
		return nil, nil
	}
	return &b, nil
}

// tighter reports whether a bound is tighter than another, given how it
// compares with it (> 0: further inward) and whether it is exclusive.
func tighter(c int, exclusive bool) bool { return c > 0 || c == 0 && exclusive }

// intRange returns the range of the integers that bounds b (nil: none)
// allow and that the grammar writes: at most maxIntDigits digits. A bound
// that is not an integer is rounded inward; an exclusive one that is moves
// by one.
func intRange(path string, s map[string]any, b *numBounds) (lo, hi int64, err error) {
	loB, hiB := big.NewInt(-maxIntMagnitude), big.NewInt(maxIntMagnitude)
	if b == nil {
		return loB.Int64(), hiB.Int64(), nil
	}
	if b.lo != nil {
		if q := roundInward(b.lo, true, b.loEx); q.Cmp(loB) > 0 {
			loB = q
		}
	}
	if b.hi != nil {
		if q := roundInward(b.hi, false, b.hiEx); q.Cmp(hiB) < 0 {
			hiB = q
		}
	}
	if loB.Cmp(hiB) > 0 {
		return 0, 0, fmt.Errorf("grammar: schema %s: no integer of at most %d digits is within the bounds%s", path, maxIntDigits, describeBounds(s))
	}
	return loB.Int64(), hiB.Int64(), nil
}

// roundInward returns the least integer above lower bound r (lower set) or
// the greatest below upper bound r, r included unless exclusive.
func roundInward(r *big.Rat, lower, exclusive bool) *big.Int {
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int)) // truncated
	switch {
	case lower && (rem.Sign() > 0 || rem.Sign() == 0 && exclusive):
		q.Add(q, big.NewInt(1))
	case !lower && (rem.Sign() < 0 || rem.Sign() == 0 && exclusive):
		q.Sub(q, big.NewInt(1))
	}
	return q
}

// boundValue reads the value v of bound keyword k.
func boundValue(path, k string, v any) (*big.Rat, error) {
	num, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("grammar: schema %s: %s must be a number, got %s", path, k, describe(v))
	}
	r, ok := parseRat(string(num))
	if !ok {
		return nil, fmt.Errorf("grammar: schema %s: %s %s has an exponent beyond ±%d", path, k, num, maxBoundExp)
	}
	return r, nil
}

// draft4Exclusive reports whether bound k (minimum or maximum) is made
// exclusive by a boolean exclusiveMinimum or exclusiveMaximum (draft 4).
func draft4Exclusive(s map[string]any, k string) bool {
	var b bool
	switch k {
	case "minimum":
		b, _ = s["exclusiveMinimum"].(bool)
	case "maximum":
		b, _ = s["exclusiveMaximum"].(bool)
	}
	return b
}

// checkDraft4 checks that a boolean exclusiveMinimum or exclusiveMaximum
// comes with the bound it qualifies.
func checkDraft4(path string, s map[string]any) error {
	for _, p := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		if _, isBool := s[p[0]].(bool); !isBool {
			continue
		}
		if _, ok := s[p[1]]; !ok {
			return fmt.Errorf("grammar: schema %s: %s as a boolean needs %s", path, p[0], p[1])
		}
	}
	return nil
}

// describeBounds lists the bounds of s for an error message.
func describeBounds(s map[string]any) string {
	var b strings.Builder
	for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		if v, ok := s[k]; ok {
			fmt.Fprintf(&b, " %s %v", k, v)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return " (" + strings.TrimPrefix(b.String(), " ") + ")"
}

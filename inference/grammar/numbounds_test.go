package grammar

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// plainNumber is the form of the numbers the grammar writes under bounds.
var plainNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,15})(\.[0-9]{1,16})?$`)

// plainPrefix matches the beginnings of the texts plainNumber matches.
var plainPrefix = regexp.MustCompile(`^-?((0|[1-9][0-9]{0,15})(\.[0-9]{0,16})?)?$`)

// numberOracle reports, independently of the grammar, whether text is a
// number the grammar should accept under bounds bs: written plainly (no
// exponent, at most 16 digits before and after the point) and within
// every bound.
func numberOracle(text string, bs []bound) bool {
	if !plainNumber.MatchString(text) {
		return false
	}
	return withinBounds(ratOf(text), bs)
}

// boundedSchema writes the schema of a number with bounds bs.
func boundedSchema(bs []bound) string {
	s := `{"type":"number"`
	for _, b := range bs {
		s += fmt.Sprintf(`,%q:%s`, b.key, b.txt)
	}
	return s + "}"
}

func ratOf(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

// newBound returns bound key with the value written txt.
func newBound(key, txt string) bound { return bound{key, ratOf(txt), txt} }

// numberCases are bounds of number schemas.
func numberCases() [][]bound {
	b := newBound
	return [][]bound{
		{b("minimum", "0"), b("maximum", "1")},
		{b("minimum", "0.5"), b("maximum", "2.25")},
		{b("exclusiveMinimum", "-1.5"), b("maximum", "2.25")},
		{b("minimum", "-0.001"), b("maximum", "-0.0001")},
		{b("minimum", "0")},
		{b("exclusiveMinimum", "0")},
		{b("maximum", "-3.5")},
		{b("exclusiveMaximum", "100")},
		{b("minimum", "99.99"), b("exclusiveMaximum", "100.01")},
		{b("minimum", "-7"), b("maximum", "-7")},
		{b("minimum", "0.25"), b("maximum", "0.25")},
		{b("minimum", "10"), b("maximum", "12")},
		{b("minimum", "0.1234567890123456"), b("maximum", "0.1234567890123457")},
		{b("exclusiveMinimum", "1e-17"), b("maximum", "1e-15")},
		{b("minimum", "-1e20"), b("maximum", "1e20")},
		{b("minimum", "9999999999999998.5")},
		{b("exclusiveMinimum", "-12.5"), b("exclusiveMaximum", "-12.25")},
		{b("minimum", "-3.25"), b("exclusiveMaximum", "-3")},
		{b("exclusiveMinimum", "0"), b("exclusiveMaximum", "0.01")},
		{b("minimum", "0"), b("maximum", "0")},
	}
}

// numberProbes returns texts to try against bounds bs: each bound and
// numbers just beside it at several scales, and assorted others.
func numberProbes(r *rand.Rand, bs []bound) []string {
	out := []string{"0", "-0", "0.0", "-0.0", "1", "-1", "0.5", "-0.5", "1e0", "1E1", "0.", ".5", "00", "01.5", "+1", "1.0000000000000000",
		"9999999999999999", "-9999999999999999", "9999999999999999.9999999999999999", "10000000000000000"}
	for _, b := range bs {
		for k := 0; k <= 17; k++ {
			step := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
			for _, d := range []int64{-2, -1, 0, 1, 2} {
				x := new(big.Rat).Add(b.val, new(big.Rat).Mul(step, big.NewRat(d, 1)))
				out = append(out, plain(x, k))
			}
		}
	}
	for range 50 {
		out = append(out, randomPlain(r))
	}
	return out
}

// plain writes x with digits after the point (trailing zeros trimmed, at
// least one digit kept when there is a point).
func plain(x *big.Rat, digits int) string {
	s := x.FloatString(digits)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}

// randomPlain returns a random number in the grammar's plain form, or a
// little beyond it.
func randomPlain(r *rand.Rand) string {
	s := ""
	if r.IntN(2) == 0 {
		s = "-"
	}
	n := 1 + r.IntN(17)
	if r.IntN(3) == 0 {
		n = 1 + r.IntN(3)
	}
	s += fmt.Sprint(1 + r.IntN(9))
	for range n - 1 {
		s += fmt.Sprint(r.IntN(10))
	}
	if r.IntN(4) == 0 {
		s = strings.TrimSuffix(s, s[len(s)-n:]) + "0"
	}
	if r.IntN(2) == 0 {
		s += "."
		for range 1 + r.IntN(17) {
			s += fmt.Sprint(r.IntN(10))
		}
	}
	return s
}

// TestNumberBounds checks number schemas with bounds: the grammar accepts
// exactly the texts the oracle does, and the budget never undercounts.
func TestNumberBounds(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	r := rand.New(rand.NewPCG(3, 5))
	for _, bs := range numberCases() {
		schema := boundedSchema(bs)
		c := newTextChecker(t, v, schema)
		list := newTextChecker(t, v, `{"type":"array","items":`+schema+`}`)
		for _, text := range numberProbes(r, bs) {
			want := numberOracle(text, bs)
			if got := c.complete(text); got != want {
				t.Errorf("%s: %q accepted %v, want %v", schema, text, got, want)
			}
			// followed by a byte of the value around it
			if got := list.complete("[" + text + "]"); got != want {
				t.Errorf("%s: [%s] accepted %v, want %v", schema, text, got, want)
			}
			if want {
				checkBudget(t, c, schema, text)
			}
		}
	}
}

// checkBudget checks that along text, which is allowed, CloseCost never
// exceeds the bytes of text still to come.
func checkBudget(t *testing.T, c textChecker, schema, text string) {
	t.Helper()
	for i := 0; i <= len(text); i++ {
		if !c.prefix(text[:i]) {
			t.Fatalf("%s: prefix %q of %q refused", schema, text[:i], text)
		}
		if cc := c.m.CloseCost(); cc > len(text)-i {
			t.Fatalf("%s: CloseCost after %q = %d, but %q completes it", schema, text[:i], cc, text[i:])
		}
	}
}

// TestNumberBoundsShortest compares, for each of numberCases, the prefixes the grammar allows and its CloseCost with a search
// of every completion of up to 3 bytes that the oracle accepts.
func TestNumberBoundsShortest(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	const depth = 3
	const alphabet = "0123456789.-e" // of the prefixes; completions need no "e"
	for _, bs := range numberCases() {
		schema := boundedSchema(bs)
		c := newTextChecker(t, v, schema)
		shortest := func(prefix string) int { // -1: none within depth
			level := []string{""}
			for d := 0; d <= depth; d++ {
				var next []string
				for _, s := range level {
					if numberOracle(prefix+s, bs) {
						return d
					}
					for _, ch := range alphabet[:12] {
						if plainPrefix.MatchString(prefix + s + string(ch)) {
							next = append(next, s+string(ch))
						}
					}
				}
				level = next
			}
			return -1
		}
		// breadth first through the prefixes the grammar allows, up to 4
		// bytes
		prefixes := []string{""}
		for seen := 0; len(prefixes) > 0 && seen < 600; seen++ { // the shortest 600
			p := prefixes[0]
			prefixes = prefixes[1:]
			want := shortest(p)
			got := -1
			allowed := c.prefix(p)
			if allowed {
				got = c.m.CloseCost()
				if got > depth {
					got = -1 // beyond the search: it must find none
				}
			}
			if got != want {
				t.Fatalf("%s: after %q: grammar %v (cost %d), search %d", schema, p, c.prefix(p), got, want)
			}
			if !allowed || len(p) >= 4 {
				continue
			}
			for _, ch := range alphabet {
				prefixes = append(prefixes, p+string(ch))
			}
		}
	}
}

// TestNumberBoundsRandom draws random bounds and numbers and compares the
// grammar with the oracle.
func TestNumberBoundsRandom(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	r := rand.New(rand.NewPCG(13, 17))
	var counts [3]int // compiled, empty, accepted
	for range 200 {
		var bs []bound
		for _, key := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if r.IntN(2) == 0 {
				continue
			}
			txt := randomPlain(r)
			if len(bs) > 0 && r.IntN(2) == 0 { // near the other bound
				txt = plain(new(big.Rat).Add(bs[0].val, big.NewRat(int64(r.IntN(2000)), int64(1+r.IntN(1000)))), 1+r.IntN(20))
			}
			switch r.IntN(6) {
			case 0:
				txt += "e" + fmt.Sprint(r.IntN(41)-20)
			case 1:
				if strings.Contains(txt, ".") {
					txt += "0"
				}
			}
			bs = append(bs, bound{key, ratOf(txt), txt})
		}
		if len(bs) == 0 {
			continue // no bounds: numbers may have exponents, which the oracle refuses
		}
		checkDraw(t, v, boundedSchema(bs), "no number of at most 16 digits before and 16 after the point", numberProbes(r, bs),
			func(text string) bool { return numberOracle(text, bs) }, &counts)
	}
	compiled, empty, accepted := counts[0], counts[1], counts[2]
	if compiled < 100 || empty < 5 || accepted < 1000 {
		t.Errorf("%d schemas compiled, %d empty, %d numbers accepted: the draw is off", compiled, empty, accepted)
	}
}

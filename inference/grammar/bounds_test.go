package grammar

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// textChecker says whether a grammar accepts texts, as prefixes and as
// complete values.
type textChecker struct {
	t *testing.T
	m *Matcher
}

func newTextChecker(t *testing.T, v *Vocab, schema string) textChecker {
	t.Helper()
	return textChecker{t, mustMatcher(t, schema, Options{}, v)}
}

// prefix reports whether text is allowed, complete or not.
func (c textChecker) prefix(text string) bool {
	c.m.Reset()
	return c.m.AcceptBytes([]byte(text)) == nil
}

// complete reports whether text is allowed and complete.
func (c textChecker) complete(text string) bool {
	return c.prefix(text) && c.m.Complete()
}

// check checks that the texts of whole are complete values or not, and
// that after each text of shortest its value is the shortest completion.
func (c textChecker) check(whole map[string]bool, shortest map[string]string) {
	c.t.Helper()
	for text, want := range whole {
		if got := c.complete(text); got != want {
			c.t.Errorf("%q: accepted %v, want %v", text, got, want)
		}
	}
	for text, rest := range shortest {
		if !c.prefix(text) {
			c.t.Fatalf("%q refused", text)
		}
		if got := c.m.CloseCost(); got != len(rest) {
			c.t.Errorf("%q: CloseCost %d, want %d (%q)", text, got, len(rest), rest)
		}
		if !c.complete(text + rest) {
			c.t.Errorf("%q + %q refused", text, rest)
		}
	}
}

// notIntegers are texts that no integer schema accepts.
var notIntegers = []string{"", "-", "+1", "--1", "01", "-01", "00", "1.0", "1.", "1e2", "1E2", "0x10", "1.5", "-0.0",
	`"1"`, "null", "true", "[1]", "12345678901234567", "-12345678901234567", "99999999999999999"}

// intCase is an integer schema and the integers it should allow: [lo, hi],
// nil for no bound (the grammar writes at most maxIntDigits digits in any
// case).
type intCase struct {
	schema string
	lo, hi *big.Int
}

func bigOf(s string) *big.Int {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return b
}

func intCases() []intCase {
	i := func(s string) *big.Int { return bigOf(s) }
	return []intCase{
		{`{"type":"integer","minimum":0,"maximum":100}`, i("0"), i("100")},
		{`{"type":"integer","minimum":-5,"maximum":5}`, i("-5"), i("5")},
		{`{"type":"integer","minimum":1,"maximum":1}`, i("1"), i("1")},
		{`{"type":"integer","minimum":0,"maximum":0}`, i("0"), i("0")},
		{`{"type":"integer","minimum":-1000,"maximum":-10}`, i("-1000"), i("-10")},
		{`{"type":"integer","minimum":7,"maximum":7000}`, i("7"), i("7000")},
		{`{"type":"integer","minimum":10}`, i("10"), nil},
		{`{"type":"integer","maximum":-3}`, nil, i("-3")},
		{`{"type":"integer","maximum":0}`, nil, i("0")},
		{`{"type":"integer","minimum":-1}`, i("-1"), nil},
		{`{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10}`, i("1"), i("9")},
		{`{"type":"integer","exclusiveMinimum":-10,"maximum":-1}`, i("-9"), i("-1")},
		{`{"type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":true}`, i("1"), i("9")},
		{`{"type":"integer","minimum":0,"exclusiveMinimum":false,"maximum":10,"exclusiveMaximum":false}`, i("0"), i("10")},
		{`{"type":"integer","minimum":3,"exclusiveMinimum":5}`, i("6"), nil},
		{`{"type":"integer","minimum":0.5,"maximum":99.5}`, i("1"), i("99")},
		{`{"type":"integer","minimum":-0.5,"maximum":-0.1}`, nil, nil}, // empty: see TestIntegerBoundErrors
		{`{"type":"integer","exclusiveMinimum":-2.5,"exclusiveMaximum":2.5}`, i("-2"), i("2")},
		{`{"type":"integer","minimum":1e2,"maximum":1.5e3}`, i("100"), i("1500")},
		{`{"type":"integer","minimum":123456789012,"maximum":123456789099}`, i("123456789012"), i("123456789099")},
		{`{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}`, nil, nil},
		{`{"type":"integer","minimum":9999999999999990}`, i("9999999999999990"), nil},
		{`{"type":"integer","maximum":-9999999999999990}`, nil, i("-9999999999999990")},
		{`{"type":"integer","minimum":1000000000000000,"maximum":9223372036854775807}`, i("1000000000000000"), nil},
		{`{"type":"integer","minimum":-9007199254740991,"maximum":-9007199254740000}`, i("-9007199254740991"), i("-9007199254740000")},
		{`{"type":"integer","minimum":99,"maximum":101}`, i("99"), i("101")},
		{`{"type":"integer","minimum":-101,"maximum":-99}`, i("-101"), i("-99")},
		{`{"type":"integer","minimum":5,"maximum":50}`, i("5"), i("50")},
		{`{"type":"integer","minimum":45,"maximum":5000}`, i("45"), i("5000")},
		{`{"type":"integer","minimum":-45,"maximum":4}`, i("-45"), i("4")},
	}
}

// inRange reports whether x is in [lo, hi] (nil: no bound) and has at most
// maxIntDigits digits.
func inRange(x, lo, hi *big.Int) bool {
	limit := big.NewInt(maxIntMagnitude)
	return new(big.Int).Abs(x).Cmp(limit) <= 0 && (lo == nil || x.Cmp(lo) >= 0) && (hi == nil || x.Cmp(hi) <= 0)
}

// TestIntegerBounds checks, for many ranges, every integer around the
// bounds and a sweep through and around the range: the grammar accepts
// exactly those in the range, and no text that is not an integer.
func TestIntegerBounds(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	for _, tc := range intCases() {
		if strings.Contains(tc.schema, "-0.5") {
			continue
		}
		c := newTextChecker(t, v, tc.schema)
		list := newTextChecker(t, v, `{"type":"array","items":`+tc.schema+`}`)
		for _, x := range probes(tc.lo, tc.hi) {
			want := inRange(x, tc.lo, tc.hi)
			if got := c.complete(x.String()); got != want {
				t.Errorf("%s: %s accepted %v, want %v", tc.schema, x, got, want)
			}
			// followed by a byte of the value around it
			if got := list.complete("[" + x.String() + "]"); got != want {
				t.Errorf("%s: [%s] accepted %v, want %v", tc.schema, x, got, want)
			}
		}
		zero := inRange(big.NewInt(0), tc.lo, tc.hi)
		if got := c.complete("-0"); got != zero {
			t.Errorf("%s: -0 accepted %v, want %v (as 0)", tc.schema, got, zero)
		}
		for _, s := range notIntegers {
			if c.complete(s) {
				t.Errorf("%s: %q accepted", tc.schema, s)
			}
		}
	}
}

// probes returns integers to try against the range [lo, hi]: each bound,
// 0, ±1 and the largest integers the grammar writes, ±2 around each, a
// sweep through and around the range, and integers of every length.
func probes(lo, hi *big.Int) []*big.Int {
	var out []*big.Int
	add := func(x *big.Int) { out = append(out, new(big.Int).Set(x)) }
	limit := big.NewInt(maxIntMagnitude)
	centers := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(-1), limit, new(big.Int).Neg(limit)}
	if lo != nil {
		centers = append(centers, lo)
	}
	if hi != nil {
		centers = append(centers, hi)
	}
	for _, c := range centers {
		for d := int64(-2); d <= 2; d++ {
			add(new(big.Int).Add(c, big.NewInt(d)))
		}
	}
	// the sweep: 1000 steps from below lo to above hi
	from, to := lo, hi
	switch {
	case from == nil && to == nil:
		from, to = new(big.Int).Neg(limit), limit
	case from == nil:
		from = new(big.Int).Sub(to, big.NewInt(5000))
	case to == nil:
		to = new(big.Int).Add(from, big.NewInt(5000))
	}
	span := new(big.Int).Sub(to, from)
	margin := new(big.Int).Add(new(big.Int).Quo(span, big.NewInt(10)), big.NewInt(3))
	start := new(big.Int).Sub(from, margin)
	width := new(big.Int).Add(span, new(big.Int).Mul(margin, big.NewInt(2)))
	step := new(big.Int).Quo(width, big.NewInt(1000))
	if step.Sign() == 0 {
		step.SetInt64(1)
	}
	for x := new(big.Int).Set(start); x.Cmp(new(big.Int).Add(start, width)) <= 0; x.Add(x, step) {
		add(x)
	}
	// every length, both signs
	for d := 1; d <= maxIntDigits+2; d++ {
		for _, s := range []string{"1" + strings.Repeat("0", d-1), strings.Repeat("9", d), "5" + strings.Repeat("3", d-1)} {
			x := bigOf(s)
			add(x)
			add(new(big.Int).Neg(x))
		}
	}
	return out
}

// TestIntegerBoundsExhaustive checks small ranges against every text they
// allow: each prefix of an allowed text is allowed with CloseCost the
// fewest bytes that complete it, a digit after it that no allowed text
// continues with is refused, and nothing else is complete.
func TestIntegerBoundsExhaustive(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	for _, tc := range intCases() {
		if tc.lo == nil || tc.hi == nil || new(big.Int).Sub(tc.hi, tc.lo).Cmp(big.NewInt(20000)) > 0 {
			continue
		}
		c := newTextChecker(t, v, tc.schema)
		best := map[string]int{} // prefix → fewest bytes completing it
		var texts []string
		for x := new(big.Int).Set(tc.lo); x.Cmp(tc.hi) <= 0; x.Add(x, big.NewInt(1)) {
			texts = append(texts, x.String())
		}
		if inRange(big.NewInt(0), tc.lo, tc.hi) {
			texts = append(texts, "-0")
		}
		for _, s := range texts {
			for i := 1; i <= len(s); i++ {
				if b, ok := best[s[:i]]; !ok || len(s)-i < b {
					best[s[:i]] = len(s) - i
				}
			}
		}
		minLen := math.MaxInt
		for _, s := range texts {
			minLen = min(minLen, len(s))
		}
		c.m.Reset()
		if got := c.m.CloseCost(); got != minLen {
			t.Errorf("%s: CloseCost at the start %d, want %d", tc.schema, got, minLen)
		}
		for p, want := range best {
			if !c.prefix(p) {
				t.Errorf("%s: prefix %q refused", tc.schema, p)
				continue
			}
			if got := c.m.CloseCost(); got != want {
				t.Errorf("%s: CloseCost after %q = %d, want %d", tc.schema, p, got, want)
			}
			if got := c.m.Complete(); got != (want == 0) {
				t.Errorf("%s: %q complete %v", tc.schema, p, got)
			}
			for d := byte('0'); d <= '9'; d++ {
				q := p + string(d)
				if _, ok := best[q]; !ok && c.prefix(q) {
					t.Errorf("%s: %q allowed", tc.schema, q)
				}
			}
		}
		for _, first := range "-0123456789" {
			if _, ok := best[string(first)]; !ok && c.prefix(string(first)) {
				t.Errorf("%s: %q allowed", tc.schema, string(first))
			}
		}
	}
}

// TestIntegerBoundsRandom draws random bounds (integers and decimals, in
// every form) and random integers, and compares what the grammar accepts
// with comparisons of big numbers.
func TestIntegerBoundsRandom(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	r := rand.New(rand.NewPCG(7, 11))
	randInt := func() *big.Int { // up to 19 digits, either sign
		d := 1 + r.IntN(19)
		s := strconv.Itoa(1 + r.IntN(9))
		for range d - 1 {
			s += strconv.Itoa(r.IntN(10))
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		if r.IntN(8) == 0 {
			s = strconv.Itoa(r.IntN(21) - 10)
		}
		return bigOf(s)
	}
	satisfies := func(x *big.Int, bs []bound) bool {
		return new(big.Int).Abs(x).Cmp(big.NewInt(maxIntMagnitude)) <= 0 && withinBounds(new(big.Rat).SetInt(x), bs)
	}
	var counts [3]int // compiled, empty, accepted
	for iter := 0; iter < 300; iter++ {
		var bs []bound
		var near []*big.Int
		for _, key := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if r.IntN(3) != 0 && !(iter%4 == 0 && key[0] == 'e') {
				continue
			}
			x := randInt()
			if key == "maximum" || key == "exclusiveMaximum" {
				if lo := findBound(bs, "minimum"); lo != nil && r.IntN(4) != 0 {
					// mostly nonempty ranges of assorted widths
					x = new(big.Int).Add(lo, big.NewInt(r.Int64N(pow10[r.IntN(12)])))
				}
			}
			near = append(near, x)
			val := new(big.Rat).SetInt(x)
			txt := x.String()
			switch r.IntN(4) {
			case 0: // a decimal
				val.Add(val, big.NewRat(int64(1+r.IntN(9)), 10))
				txt = val.FloatString(1)
			case 1: // a decimal that is an integer
				txt += ".0"
			}
			bs = append(bs, bound{key, val, txt})
		}
		schema := `{"type":"integer"`
		for _, b := range bs {
			schema += fmt.Sprintf(`,%q:%s`, b.key, b.txt)
		}
		schema += "}"
		// candidates: around each bound, random ones
		var xs []*big.Int
		for _, c := range near {
			for d := int64(-3); d <= 3; d++ {
				xs = append(xs, new(big.Int).Add(c, big.NewInt(d)))
			}
		}
		for range 20 {
			xs = append(xs, randInt())
		}
		if len(near) >= 2 { // between the first two bounds
			a, b := near[0], near[1]
			if a.Cmp(b) > 0 {
				a, b = b, a
			}
			w := new(big.Int).Sub(b, a)
			for range 20 {
				k := new(big.Int).Mul(w, big.NewInt(r.Int64N(1001)))
				xs = append(xs, k.Quo(k, big.NewInt(1000)).Add(k, a))
			}
		}
		texts := make([]string, len(xs))
		for i, x := range xs {
			texts[i] = x.String()
		}
		checkDraw(t, v, schema, "no integer of at most 16 digits is within the bounds", texts,
			func(text string) bool { return satisfies(bigOf(text), bs) }, &counts)
	}
	compiled, empty, accepted := counts[0], counts[1], counts[2]
	if compiled < 100 || empty < 10 || accepted < 1000 {
		t.Errorf("%d schemas compiled, %d empty, %d integers accepted: the draw is off", compiled, empty, accepted)
	}
}

// bound is a bound keyword of a schema: its value and its text.
type bound struct {
	key string
	val *big.Rat
	txt string
}

// checkDraw compiles schema, with random bounds, and checks it against
// oracle on texts: the schema is refused with an error containing
// emptyErr only when oracle accepts none of them, and otherwise the
// grammar accepts exactly the texts oracle does, with a budget that never
// undercounts along them. counts adds up the schemas compiled, those
// refused and the texts accepted.
func checkDraw(t *testing.T, v *Vocab, schema, emptyErr string, texts []string, oracle func(string) bool, counts *[3]int) {
	t.Helper()
	g, err := CompileSchema([]byte(schema), Options{})
	if err != nil {
		if !strings.Contains(err.Error(), emptyErr) {
			t.Fatalf("%s: %v", schema, err)
		}
		counts[1]++
		for _, text := range texts {
			if oracle(text) {
				t.Fatalf("%s: refused (%v), but %s is within", schema, err, text)
			}
		}
		return
	}
	counts[0]++
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	c := textChecker{t, m}
	for _, text := range texts {
		want := oracle(text)
		if got := c.complete(text); got != want {
			t.Fatalf("%s: %q accepted %v, want %v", schema, text, got, want)
		}
		if want {
			counts[2]++
			checkBudget(t, c, schema, text)
		}
	}
}

// withinBounds reports whether x satisfies every bound of bs.
func withinBounds(x *big.Rat, bs []bound) bool {
	for _, b := range bs {
		c := x.Cmp(b.val)
		switch b.key {
		case "minimum":
			if c < 0 {
				return false
			}
		case "maximum":
			if c > 0 {
				return false
			}
		case "exclusiveMinimum":
			if c <= 0 {
				return false
			}
		case "exclusiveMaximum":
			if c >= 0 {
				return false
			}
		}
	}
	return true
}

// findBound returns the floor of bound key among bs, or nil.
func findBound(bs []bound, key string) *big.Int {
	for _, b := range bs {
		if b.key == key {
			q := new(big.Int)
			q.Div(b.val.Num(), b.val.Denom()) // Euclidean: the floor, as Denom > 0
			return q
		}
	}
	return nil
}

// TestMinLength checks strings with a minimum length, in JSON and in
// FunctionGemma's strings: texts allowed or not, and that CloseCost counts
// the missing characters (the shortest completion of each state is given).
func TestMinLength(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	c := newTextChecker(t, v, `{"type":"string","minLength":3,"maxLength":4}`)
	c.check(map[string]bool{`"abc"`: true, `"abcd"`: true, `"ab"`: false, `""`: false, `"abcde"`: false,
		`"\u00e9\n\uD83D\uDE00"`: true, `"é\n"`: false, `"éé😀"`: true, `"\"\\"`: false},
		map[string]string{``: `"aaa"`, `"`: `aaa"`, `"a`: `aa"`, `"ab\`: `n"`, `"\uD83D`: `\uDC00aa"`,
			"\"\xf0\x9f": "\x98\x80aa\"", `"abc`: `"`, `"abcd`: `"`})

	// FunctionGemma: a string ends at the first <escape>, so too short a
	// string cannot hold one, and the terminator bytes matched so far
	// become content when the next byte starts it again.
	b := NewBuilder(DialectGemma, Options{})
	g, err := b.Build(b.Seq(b.Text("f"), b.Value([]byte(`{"type":"string","minLength":3,"maxLength":4}`))))
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	c = textChecker{t, m}
	c.check(map[string]bool{"f<escape>abc<escape>": true, "f<escape>a<e<escape>": true, "f<escape><<<<escape>": true,
		"f<escape>ab<escape>": false, "f<escape><escape>": false, "f<escape>abcde<escape>": false, "f<escape>ab<escape>x<escape>": false},
		map[string]string{"f": "<escape>aaa<escape>", "f<escape>": "aaa<escape>", "f<escape>a<es": "<escape>",
			"f<escape><": "aa<escape>", "f<escape>ab<": "<escape>", "f<escape>abc<esc": "ape>", "f<escape>é": "aa<escape>"})
	// Past the maximum, matched terminator bytes cannot become content.
	for _, text := range []string{"f<escape>ab<esca", "f<escape>ab<es", "f<escape>a<esc"} {
		if c.prefix(text) {
			t.Errorf("%q allowed", text)
		}
	}
}

// TestBoundsComposed checks the new keywords in the values and arguments
// of composed grammars (the tool-call syntaxes), in every dialect.
func TestBoundsComposed(t *testing.T) {
	params := []byte(`{"type":"object","properties":{"level":{"type":"integer","minimum":1,"maximum":10},"name":{"type":"string","minLength":2}},"required":["level","name"]}`)
	for _, c := range []struct {
		dialect Dialect
		build   func(b *Builder) Node
		cases   []composeCase
	}{
		{DialectJSON, func(b *Builder) Node { return b.Seq(b.Text("call:"), b.Value(params)) }, []composeCase{
			{`call:{"level":10,"name":"ab"}`, true, true},
			{`call:{"level":1,"name":"ab"}`, true, true},
			{`call:{"level":0`, false, false},
			{`call:{"level":11`, false, false},
			{`call:{"level":-1`, false, false},
			{`call:{"level":5,"name":"a"}`, false, false},
			{`call:{"name":"a"`, false, false},
			{`call:{"level":1`, false, true},
		}},
		{DialectPython, func(b *Builder) Node { return b.Seq(b.Text("f"), b.Arguments(params, '(', ')', '=')) }, []composeCase{
			{`f(level=7, name="xy")`, true, true},
			{`f(level=70`, false, false},
			{`f(level=7, name="x")`, false, false},
		}},
		{DialectGemma, func(b *Builder) Node { return b.Seq(b.Text("f"), b.Arguments(params, '{', '}', ':')) }, []composeCase{
			{`f{level:10,name:<escape>xy<escape>}`, true, true},
			{`f{level:100`, false, false},
			{`f{level:10,name:<escape>x<escape>`, false, false},
			{`f{level:10,name:<escape>x<e`, false, true},
		}},
	} {
		b := NewBuilder(c.dialect, Options{})
		g, err := b.Build(c.build(b))
		if err != nil {
			t.Fatal(err)
		}
		checkComposed(t, g, c.cases)
	}
	b := NewBuilder(DialectPython, Options{})
	if _, err := b.Build(b.Value([]byte(`{"type":"integer","minimum":3,"maximum":2}`))); err == nil || !strings.Contains(err.Error(), "no integer") {
		t.Errorf("empty range in a composed grammar: %v", err)
	}
}

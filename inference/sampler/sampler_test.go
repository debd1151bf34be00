package sampler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// ---- helpers ---------------------------------------------------------------

func mustNew(t testing.TB, p Params, n int) *Sampler {
	t.Helper()
	s, err := New(p, n)
	if err != nil {
		t.Fatalf("New(%+v, %d): %v", p, n, err)
	}
	return s
}

// params returns DefaultParams with the filters disabled and the given
// temperature; tests switch on what they need.
func plain(temp float32) Params {
	p := DefaultParams()
	p.Temperature = temp
	p.TopK = 0
	p.TopP = 1
	p.MinP = 0
	return p
}

// refArgmax is the reference greedy decoder: argmax, ties to the lowest id.
func refArgmax(l []float32) int32 {
	best := 0
	for i := 1; i < len(l); i++ {
		if l[i] > l[best] {
			best = i
		}
	}
	return int32(best)
}

func randLogits(r *rand.Rand, n int, sd float64, quant float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		v := r.NormFloat64() * sd
		if quant > 0 {
			v = math.Round(v/quant) * quant
		}
		l[i] = float32(v)
	}
	return l
}

// refDist is an independent, sort-based implementation of the chain
// (without penalties): it returns the final probability of every token.
func refDist(logits []float32, p Params) []float64 {
	probs, _ := refChain(logits, p)
	return probs
}

// refChain returns the final probabilities and the sorted surviving ids.
func refChain(logits []float32, p Params) ([]float64, []int) {
	n := len(logits)
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	l := make([]float32, n)
	for i, v := range logits {
		if math.IsNaN(float64(v)) {
			v = float32(math.Inf(-1))
		}
		l[i] = v
	}
	sort.SliceStable(ids, func(a, b int) bool { return l[ids[a]] > l[ids[b]] })
	if p.TopK > 0 && p.TopK < n {
		ids = ids[:p.TopK]
	}
	maxL := l[ids[0]]
	w := func(id int) float32 {
		if l[id] == maxL {
			return 1
		}
		return expf(l[id] - maxL) // same weights as the sampler, so boundaries agree
	}
	if p.TopP < 1 {
		var sum float64
		for _, id := range ids {
			sum += float64(w(id))
		}
		need := float64(p.TopP) * sum
		var cum float64
		for i, id := range ids {
			cum += float64(w(id))
			if cum >= need {
				ids = ids[:i+1]
				break
			}
		}
	}
	if p.MinP > 0 {
		kept := ids[:0:0]
		for _, id := range ids {
			if w(id) >= p.MinP {
				kept = append(kept, id)
			}
		}
		ids = kept
	}
	probs := make([]float64, n)
	var total float64
	for _, id := range ids {
		v := math.Exp(float64(l[id]-maxL) / float64(p.Temperature))
		probs[id] = v
		total += v
	}
	for i := range probs {
		probs[i] /= total
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return probs, ids
}

func keptSet(c []cand) []int {
	out := make([]int, len(c))
	for i, x := range c {
		out[i] = int(x.id)
	}
	slices.Sort(out)
	return out
}

// ---- params ----------------------------------------------------------------

func TestDefaultParamsValid(t *testing.T) {
	p := DefaultParams()
	if err := p.Validate(); err != nil {
		t.Fatalf("DefaultParams invalid: %v", err)
	}
	want := Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64}
	if p != want {
		t.Fatalf("DefaultParams = %+v, want %+v", p, want)
	}
}

func TestValidateRejects(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		field string
		mod   func(*Params)
	}{
		{"Temperature", func(p *Params) { p.Temperature = -0.1 }},
		{"Temperature", func(p *Params) { p.Temperature = nan }},
		{"Temperature", func(p *Params) { p.Temperature = inf }},
		{"TopK", func(p *Params) { p.TopK = -1 }},
		{"TopP", func(p *Params) { p.TopP = 0 }},
		{"TopP", func(p *Params) { p.TopP = -0.5 }},
		{"TopP", func(p *Params) { p.TopP = 1.0001 }},
		{"TopP", func(p *Params) { p.TopP = nan }},
		{"MinP", func(p *Params) { p.MinP = -0.01 }},
		{"MinP", func(p *Params) { p.MinP = 1 }},
		{"MinP", func(p *Params) { p.MinP = nan }},
		{"RepeatPenalty", func(p *Params) { p.RepeatPenalty = 0 }},
		{"RepeatPenalty", func(p *Params) { p.RepeatPenalty = -1 }},
		{"RepeatPenalty", func(p *Params) { p.RepeatPenalty = nan }},
		{"RepeatPenalty", func(p *Params) { p.RepeatPenalty = inf }},
		{"RepeatLastN", func(p *Params) { p.RepeatLastN = -1 }},
		{"RepeatLastN", func(p *Params) { p.RepeatLastN = MaxRepeatLastN + 1 }},
	}
	for _, tc := range cases {
		p := DefaultParams()
		tc.mod(&p)
		err := p.Validate()
		if err == nil {
			t.Errorf("%+v: Validate accepted bad %s", p, tc.field)
			continue
		}
		if !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: error %q does not name %s", p, err, tc.field)
		}
		if _, err := New(p, 10); err == nil {
			t.Errorf("%+v: New accepted bad %s", p, tc.field)
		}
	}

	// Boundary values that must be accepted.
	good := []func(*Params){
		func(p *Params) { p.Temperature = 0 },
		func(p *Params) { p.TopK = 0 },
		func(p *Params) { p.TopP = 1 },
		func(p *Params) { p.MinP = 0 },
		func(p *Params) { p.RepeatPenalty = 0.5 },
		func(p *Params) { p.RepeatLastN = 0 },
		func(p *Params) { p.RepeatLastN = MaxRepeatLastN },
	}
	for i, mod := range good {
		p := DefaultParams()
		mod(&p)
		if err := p.Validate(); err != nil {
			t.Errorf("good case %d (%+v) rejected: %v", i, p, err)
		}
	}

	// Several bad fields are all reported.
	p := Params{Temperature: -1, TopP: 0, RepeatPenalty: 0}
	msg := p.Validate().Error()
	for _, f := range []string{"Temperature", "TopP", "RepeatPenalty"} {
		if !strings.Contains(msg, f) {
			t.Errorf("joined error %q misses %s", msg, f)
		}
	}
}

func TestNewRejectsBadVocab(t *testing.T) {
	for _, n := range []int{0, -5} {
		if _, err := New(DefaultParams(), n); err == nil || !strings.Contains(err.Error(), "nVocab") {
			t.Errorf("New(_, %d) err = %v, want nVocab error", n, err)
		}
	}
}

func TestSamplePanicsOnBadLength(t *testing.T) {
	s := mustNew(t, DefaultParams(), 4)
	for _, n := range []int{0, 5} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Sample(len %d) did not panic", n)
				}
			}()
			s.Sample(make([]float32, n))
		}()
	}
	// Shorter than nVocab is fine.
	if id := s.Sample([]float32{0, 5, 1}); id < 0 || id > 2 {
		t.Fatalf("Sample(len 3) = %d", id)
	}
}

// ---- greedy ----------------------------------------------------------------

func TestGreedyArgmaxTiesLowest(t *testing.T) {
	s := mustNew(t, plain(0), 8)
	fixed := []struct {
		l    []float32
		want int32
	}{
		{[]float32{1, 3, 3, 2}, 1},
		{[]float32{5, 5, 5}, 0},
		{[]float32{-2, -1, -1, -3}, 1},
		{[]float32{0, float32(math.Inf(1)), float32(math.Inf(1))}, 1},
		{[]float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, 0},
		{[]float32{1, float32(math.NaN()), 2, 2}, 2},
	}
	for _, tc := range fixed {
		if got := s.Sample(slices.Clone(tc.l)); got != tc.want {
			t.Errorf("greedy(%v) = %d, want %d", tc.l, got, tc.want)
		}
	}

	r := rand.New(rand.NewPCG(1, 2))
	s = mustNew(t, plain(0), 1000)
	for trial := range 500 {
		n := 1 + r.IntN(1000)
		l := randLogits(r, n, 1, 0.5) // coarse quantisation: many ties
		want := refArgmax(l)
		if got := s.Sample(l); got != want {
			t.Fatalf("trial %d: greedy = %d, reference argmax = %d", trial, got, want)
		}
	}
}

func TestTemperatureZeroLimitIsGreedy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, temp := range []float32{1e-2, 1e-4, 1e-6, 1e-30} {
		s := mustNew(t, plain(temp), 500)
		for trial := range 200 {
			l := randLogits(r, 500, 3, 0)
			// Make the maximum unique with a clear gap.
			m := refArgmax(l)
			l[m] += 1
			if got := s.Sample(l); got != m {
				t.Fatalf("T=%g trial %d: got %d, want argmax %d", temp, trial, got, m)
			}
		}
	}
}

func TestTopK1IsArgmax(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := plain(2.5)
	p.TopK = 1
	s := mustNew(t, p, 300)
	for trial := range 1000 {
		l := randLogits(r, 300, 1, 0.25) // ties included
		want := refArgmax(l)
		if got := s.Sample(l); got != want {
			t.Fatalf("trial %d: top-k=1 gave %d, want %d", trial, got, want)
		}
	}
}

func TestTinyTopPKeepsTopToken(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{0, 40, 1000} {
		p := plain(1.5)
		p.TopK = k
		p.TopP = 1e-6
		s := mustNew(t, p, 5000)
		for trial := range 200 {
			l := randLogits(r, 5000, 0.1, 0) // flat: nucleus would be huge otherwise
			want := refArgmax(l)
			if got := s.Sample(l); got != want {
				t.Fatalf("k=%d trial %d: got %d, want %d", k, trial, got, want)
			}
		}
	}
}

func TestMinPFilters(t *testing.T) {
	// Relative probabilities 1, 0.5, 0.2, 0.05, 0.3.
	l := []float32{0, float32(math.Log(0.5)), float32(math.Log(0.2)), float32(math.Log(0.05)), float32(math.Log(0.3))}
	p := plain(1)
	p.MinP = 0.25
	s := mustNew(t, p, len(l))

	c, _, _ := s.filter(slices.Clone(l))
	if got, want := keptSet(c), []int{0, 1, 4}; !slices.Equal(got, want) {
		t.Fatalf("min-p kept %v, want %v", got, want)
	}

	counts := make([]int, len(l))
	for range 20000 {
		counts[s.Sample(slices.Clone(l))]++
	}
	if counts[2] != 0 || counts[3] != 0 {
		t.Fatalf("min-p let filtered tokens through: %v", counts)
	}
	for _, id := range []int{0, 1, 4} {
		if counts[id] == 0 {
			t.Fatalf("token %d never drawn: %v", id, counts)
		}
	}
}

// ---- repetition penalty ----------------------------------------------------

func TestRepeatPenaltyChangesArgmax(t *testing.T) {
	p := plain(0)
	p.RepeatPenalty = 1.5
	p.RepeatLastN = 4
	s := mustNew(t, p, 4)

	l := []float32{2.0, 1.9, -1, -2}
	if got := s.Sample(slices.Clone(l)); got != 0 {
		t.Fatalf("without history: %d, want 0", got)
	}
	s.Accept(0)
	if got := s.Sample(slices.Clone(l)); got != 1 {
		t.Fatalf("positive logit penalised: got %d, want 1", got)
	}

	// Negative logits are multiplied.
	s.Reset()
	neg := []float32{-0.5, -0.6, -3, -4}
	s.Accept(0)
	if got := s.Sample(slices.Clone(neg)); got != 1 {
		t.Fatalf("negative logit penalised: got %d, want 1", got)
	}

	// A token repeated in the window is penalised exactly once, in place.
	s.Reset()
	for range 3 {
		s.Accept(0)
	}
	s.Accept(2)
	buf := []float32{3, 2.6, -1, 0.5}
	s.Sample(buf)
	if buf[0] != 3/float32(1.5) || buf[2] != -1*float32(1.5) || buf[1] != 2.6 || buf[3] != 0.5 {
		t.Fatalf("penalised logits = %v", buf)
	}

	// Window eviction: with RepeatLastN=4, token 0 falls out after 4 more.
	s.Reset()
	s.Accept(0)
	for range 4 {
		s.Accept(3)
	}
	if got := s.Sample(slices.Clone(l)); got != 0 {
		t.Fatalf("evicted token still penalised: got %d", got)
	}

	// Reset clears history.
	s.Accept(0)
	s.Reset()
	if got := s.Sample(slices.Clone(l)); got != 0 {
		t.Fatalf("Reset kept history: got %d", got)
	}

	// Out-of-range ids are ignored.
	s.Accept(-1)
	s.Accept(100)
	if got := s.Sample(slices.Clone(l)); got != 0 {
		t.Fatalf("out-of-range history changed result: got %d", got)
	}
}

func TestRepeatPenaltyDisabled(t *testing.T) {
	for _, p := range []Params{
		func() Params { p := plain(0); p.RepeatPenalty = 1; p.RepeatLastN = 8; return p }(),
		func() Params { p := plain(0); p.RepeatPenalty = 2; p.RepeatLastN = 0; return p }(),
	} {
		s := mustNew(t, p, 3)
		s.Accept(0)
		buf := []float32{2, 1.9, 0}
		if got := s.Sample(buf); got != 0 || buf[0] != 2 {
			t.Fatalf("%+v: penalty applied (id %d, logits %v)", p, got, buf)
		}
	}
}

func TestRepeatPenaltyNonGreedy(t *testing.T) {
	p := DefaultParams()
	p.RepeatPenalty = 100
	p.RepeatLastN = 1
	s := mustNew(t, p, 3)
	s.Accept(0)
	for range 1000 {
		if got := s.Sample([]float32{5, 4.5, 0}); got == 0 {
			t.Fatal("heavily penalised token drawn")
		}
	}
}

// ---- filters vs reference --------------------------------------------------

func TestFilterMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ks := []int{0, 1, 2, 40, heapTopKMax, heapTopKMax + 1, 1000, 5000}
	ps := []float32{1, 0.95, 0.5, 0.1}
	mps := []float32{0, 0.05, 0.3}
	for trial := range 40 {
		n := []int{1, 2, 7, 33, 300, 3000}[trial%6]
		quant := []float64{0, 0.25, 1}[trial%3]
		l := randLogits(r, n, 1+float64(trial%4), quant)
		if trial%5 == 0 {
			l[r.IntN(n)] = float32(math.NaN())
			l[r.IntN(n)] = float32(math.Inf(-1))
		}
		for _, k := range ks {
			for _, tp := range ps {
				for _, mp := range mps {
					p := plain(1)
					p.TopK, p.TopP, p.MinP = k, tp, mp
					s := mustNew(t, p, n)
					c, _, _ := s.filter(slices.Clone(l))
					_, want := refChain(l, p)
					if got := keptSet(c); !slices.Equal(got, want) {
						t.Fatalf("n=%d k=%d p=%g minp=%g: kept %v, want %v", n, k, tp, mp, got, want)
					}
				}
			}
		}
	}
}

func TestFilterMatchesReferenceLargeVocab(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const n = 40000
	for trial := range 6 {
		var l []float32
		switch trial % 3 {
		case 0:
			l = randLogits(r, n, 0.05, 0) // nearly flat: huge nucleus
		case 1:
			l = randLogits(r, n, 2, 0.5) // broad, many ties
		default:
			l = benchLogits(n) // peaked, LLM-like
		}
		for _, k := range []int{0, 2000} {
			for _, tp := range []float32{0.99, 0.9, 0.5} {
				for _, mp := range []float32{0, 0.01} {
					p := plain(1)
					p.TopK, p.TopP, p.MinP = k, tp, mp
					s := mustNew(t, p, n)
					c, _, _ := s.filter(slices.Clone(l))
					_, want := refChain(l, p)
					if got := keptSet(c); !slices.Equal(got, want) {
						t.Fatalf("trial %d k=%d p=%g minp=%g: kept %d ids, want %d", trial, k, tp, mp, len(got), len(want))
					}
				}
			}
		}
	}
}

func TestSelectTopKAllK(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{33, 34, 64, 100, 257} {
		for rep := range 3 {
			l := randLogits(r, n, 1, []float64{0, 0.5, 2}[rep])
			c0 := fill(make([]cand, n), l)
			ref := slices.Clone(c0)
			slices.SortFunc(ref, cmpCand)
			for k := 1; k < n; k++ {
				c := slices.Clone(c0)
				selectTopK(c, k)
				if got, want := keptSet(c[:k]), keptSet(ref[:k]); !slices.Equal(got, want) {
					t.Fatalf("n=%d k=%d: selected %v, want %v", n, k, got, want)
				}
			}
		}
	}
}

// ---- determinism -----------------------------------------------------------

func TestSeededDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	seq := make([][]float32, 300)
	for i := range seq {
		seq[i] = randLogits(r, 1000, 2, 0)
	}
	p := DefaultParams()
	p.Seed = 42
	p.RepeatPenalty = 1.1
	run := func(s *Sampler) []int32 {
		out := make([]int32, len(seq))
		for i, l := range seq {
			out[i] = s.Sample(slices.Clone(l))
			s.Accept(out[i])
		}
		return out
	}
	a := mustNew(t, p, 1000)
	b := mustNew(t, p, 1000)
	ra, rb := run(a), run(b)
	if !slices.Equal(ra, rb) {
		t.Fatal("same seed gave different sequences")
	}
	a.Reset()
	if rc := run(a); !slices.Equal(ra, rc) {
		t.Fatal("Reset did not reproduce the sequence")
	}
}

func TestDifferentSeedsDiffer(t *testing.T) {
	flat := make([]float32, 100) // uniform over 100 tokens
	p := plain(1)
	p.Seed = 1
	a := mustNew(t, p, 100)
	p.Seed = 2
	b := mustNew(t, p, 100)
	diff := 0
	const draws = 2000
	for range draws {
		if a.Sample(flat) != b.Sample(flat) {
			diff++
		}
	}
	// Independent uniform draws agree with probability 1/100.
	if diff < draws*9/10 {
		t.Fatalf("seeds 1 and 2 differ on only %d/%d draws", diff, draws)
	}
}

// ---- distribution ----------------------------------------------------------

func TestEmpiricalDistribution(t *testing.T) {
	logits := []float32{1, 2, 0.5, -1, 3, 0, -0.5, 1.5}
	configs := []Params{
		plain(1),
		plain(0.7),
		func() Params { p := plain(1.3); p.TopK = 5; return p }(),
		func() Params { p := plain(0.8); p.TopP = 0.9; p.MinP = 0.1; return p }(),
		func() Params { p := DefaultParams(); p.TopK = 6; p.TopP = 0.97; p.MinP = 0.05; return p }(),
	}
	const draws = 200000
	for ci, p := range configs {
		p.Seed = uint64(1000 + ci)
		s := mustNew(t, p, len(logits))
		want := refDist(logits, p)
		counts := make([]int, len(logits))
		buf := make([]float32, len(logits))
		for range draws {
			copy(buf, logits)
			counts[s.Sample(buf)]++
		}
		chi2, df := 0.0, -1
		for i, pr := range want {
			if pr == 0 {
				if counts[i] != 0 {
					t.Fatalf("config %d: filtered token %d drawn %d times", ci, i, counts[i])
				}
				continue
			}
			exp := pr * draws
			d := float64(counts[i]) - exp
			chi2 += d * d / exp
			df++
			// Per-bin bound: 5 standard deviations of a binomial count.
			if sd := math.Sqrt(draws * pr * (1 - pr)); math.Abs(d) > 5*sd {
				t.Errorf("config %d token %d: count %d, expected %.0f ± %.0f", ci, i, counts[i], exp, sd)
			}
		}
		// Critical chi-square values at p = 0.001 for df = 1..7.
		crit := []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32}[df]
		if chi2 > crit {
			t.Errorf("config %d: chi2 = %.2f > %.2f (df %d); counts %v, want %v", ci, chi2, crit, df, counts, want)
		}
	}
}

// ---- allocations -----------------------------------------------------------

func TestSampleZeroAllocs(t *testing.T) {
	const n = 4096
	r := rand.New(rand.NewPCG(13, 14))
	base := randLogits(r, n, 2, 0)
	configs := map[string]Params{
		"default": DefaultParams(),
		"greedy":  plain(0),
		"topp":    func() Params { p := plain(0.9); p.TopP = 0.9; return p }(),
		"bigk":    func() Params { p := DefaultParams(); p.TopK = 1000; return p }(),
		"plain":   plain(1),
		"penalty": func() Params { p := DefaultParams(); p.RepeatPenalty = 1.2; return p }(),
	}
	for name, p := range configs {
		s := mustNew(t, p, n)
		for i := range 100 {
			s.Accept(int32(i * 7 % n))
		}
		buf := make([]float32, n)
		allocs := testing.AllocsPerRun(50, func() {
			copy(buf, base)
			s.Accept(s.Sample(buf))
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per Sample, want 0", name, allocs)
		}
	}
}

// ---- benchmarks ------------------------------------------------------------

// benchLogits returns LLM-like logits: a broad Gaussian body plus a handful of
// strong candidates.
func benchLogits(n int) []float32 {
	r := rand.New(rand.NewPCG(99, uint64(n)))
	l := randLogits(r, n, 2, 0)
	for range 8 {
		l[r.IntN(n)] += 12 + 4*float32(r.Float64())
	}
	return l
}

func BenchmarkSample(b *testing.B) {
	configs := []struct {
		name string
		p    Params
	}{
		{"default", DefaultParams()},
		{"greedy", plain(0)},
		{"topk0_topp0.95", func() Params { p := DefaultParams(); p.TopK = 0; return p }()},
		{"topk0_topp1_minp0", plain(0.8)},
		{"default_penalty1.1", func() Params { p := DefaultParams(); p.RepeatPenalty = 1.1; return p }()},
	}
	for _, n := range []int{32000, 151936} {
		for _, cfg := range configs {
			b.Run(fmt.Sprintf("vocab=%d/%s", n, cfg.name), func(b *testing.B) {
				s := mustNew(b, cfg.p, n)
				l := benchLogits(n)
				for i := range 64 {
					s.Accept(int32(i * 997 % n)) // a full 64-token window
				}
				b.ReportAllocs()
				for b.Loop() {
					// Only the penalty config modifies l (64 entries per
					// call); the cost is the same either way, so l is not
					// restored.
					s.Sample(l)
				}
			})
		}
	}
}

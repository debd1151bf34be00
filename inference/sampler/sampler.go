// Package sampler turns a logits vector into a token id.
//
// # Sampler chain
//
// A [Sampler] follows the order of llama.cpp's default sampler chain
// (common_params_sampling.samplers, restricted to the samplers implemented
// here):
//
//  1. repetition penalty over the last [Params.RepeatLastN] accepted tokens
//     (applied in place to the caller's logits);
//  2. top-k;
//  3. top-p (nucleus);
//  4. min-p;
//  5. temperature;
//  6. softmax and a draw from the seeded PRNG ("dist").
//
// As in llama.cpp, temperature comes last: the probabilities that top-p and
// min-p look at are the temperature-1 softmax of the candidates that survived
// the previous steps (top-p renormalises over the top-k survivors), and
// temperature only reshapes the distribution among the final survivors.
// With Temperature == 0 the chain is replaced by greedy decoding: the
// repetition penalty (if enabled) followed by argmax with ties to the lowest
// id, which is exactly a plain argmax when the penalty is off.
//
// Ties in the top-k and top-p rankings are broken towards the lower token id,
// so the surviving set is fully determined by the logits. NaN logits are
// treated as -Inf and never chosen unless every logit is NaN or -Inf.
//
// # Determinism and cost
//
// The PRNG is a private xoshiro256** seeded from [Params.Seed]; each
// non-greedy [Sampler.Sample] consumes exactly one 64-bit value and greedy
// sampling consumes none, so equal seeds and equal logits sequences give
// equal ids. [Sampler.Sample] performs no heap allocation: all buffers are
// sized in [New]. Top-k uses a bounded heap (small k) or quickselect (large
// k); top-p first discards, exactly, every candidate whose weight lies below
// the binary order of magnitude at which the nucleus mass is reached, then
// finds the nucleus with a probability-mass quickselect; so no step sorts the
// whole vocabulary. Weights are computed in float32 with a polynomial exp
// (relative error below 1e-7) and summed in float64.
package sampler

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// heapTopKMax is the largest TopK handled by the bounded-heap scan; larger
// values use quickselect over the full candidate array.
const heapTopKMax = 256

// smallRange is the size below which selection loops finish with a sort.
const smallRange = 32

// massBucketMin is the candidate count above which top-p first prunes by
// per-exponent probability mass (see topPLarge).
const massBucketMin = 1024

// cand is one candidate token.
type cand struct {
	logit float32
	id    int32
	w     float32 // scratch weight, exp((logit-max)/T) for the current step
}

// better reports whether a ranks strictly before b: higher logit first, ties
// to the lower id. Ids are unique, so this is a strict total order.
func better(a, b cand) bool {
	return a.logit > b.logit || (a.logit == b.logit && a.id < b.id)
}

// cmpCand orders candidates best first, consistently with better.
func cmpCand(a, b cand) int {
	if c := cmp.Compare(b.logit, a.logit); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// sanitize maps NaN to -Inf so that it ranks last.
func sanitize(v float32) float32 {
	if v != v {
		return float32(math.Inf(-1))
	}
	return v
}

// Sampler draws token ids from logits according to [Params]. It keeps the
// repetition-penalty history and the PRNG state. A Sampler is not safe for
// concurrent use.
type Sampler struct {
	p      Params
	nVocab int

	cands []cand // candidate buffer, len nVocab

	hist    []int32  // ring buffer of accepted ids; nil when the penalty is off
	histPos int      // next write position in hist
	histLen int      // number of valid entries in hist
	seen    []uint64 // bitset over the vocabulary, all zero between calls

	mass [128]float64 // top-p scratch: weight mass per float32 exponent

	rng rng
}

// New returns a Sampler for logits vectors of up to nVocab entries. It
// returns an error if p is invalid (see [Params.Validate]) or nVocab is not in
// [1, math.MaxInt32].
func New(p Params, nVocab int) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if nVocab <= 0 || nVocab > math.MaxInt32 {
		return nil, fmt.Errorf("sampler: nVocab must be in [1, %d], got %d", math.MaxInt32, nVocab)
	}
	s := &Sampler{
		p:      p,
		nVocab: nVocab,
		cands:  make([]cand, nVocab),
	}
	if p.RepeatLastN > 0 && p.RepeatPenalty != 1 {
		s.hist = make([]int32, p.RepeatLastN)
		s.seen = make([]uint64, (nVocab+63)/64)
	}
	s.rng.seed(p.Seed)
	return s, nil
}

// Sample returns the id of the next token given one logits vector, with
// 1 <= len(logits) <= nVocab (it panics otherwise). It may modify logits in
// place (the repetition penalty is applied to it). Sample does not record
// the returned id; call [Sampler.Accept] for that.
func (s *Sampler) Sample(logits []float32) int32 {
	if len(logits) == 0 || len(logits) > s.nVocab {
		panic(fmt.Sprintf("sampler: len(logits) = %d, want 1..%d", len(logits), s.nVocab))
	}
	s.applyPenalty(logits)
	if s.p.Temperature == 0 {
		return argmax(logits)
	}
	c, maxL, weighted := s.filter(logits)
	return s.draw(c, maxL, weighted)
}

// Accept records id as generated (or prompt) text for the repetition
// penalty, evicting the oldest entry once RepeatLastN ids are held. It is a
// no-op when the penalty is disabled. Ids outside the logits range are kept
// but have no effect.
func (s *Sampler) Accept(id int32) {
	if s.hist == nil {
		return
	}
	s.hist[s.histPos] = id
	s.histPos++
	if s.histPos == len(s.hist) {
		s.histPos = 0
	}
	if s.histLen < len(s.hist) {
		s.histLen++
	}
}

// Reset clears the repetition history and reseeds the PRNG from
// [Params.Seed], returning the Sampler to its state just after [New].
func (s *Sampler) Reset() {
	s.histPos, s.histLen = 0, 0
	s.rng.seed(s.p.Seed)
}

// applyPenalty applies the repetition penalty once to every distinct id in
// the history window.
func (s *Sampler) applyPenalty(logits []float32) {
	if s.histLen == 0 {
		return
	}
	// While the ring has not wrapped, the valid entries are hist[:histLen];
	// once full, all entries are valid. Either way hist[:histLen] is the set.
	ids := s.hist[:s.histLen]
	n := uint32(len(logits))
	pen := s.p.RepeatPenalty
	for _, id := range ids {
		u := uint32(id) // negative ids wrap to large values and are skipped
		if u >= n {
			continue
		}
		word, bit := u>>6, uint64(1)<<(u&63)
		if s.seen[word]&bit != 0 {
			continue
		}
		s.seen[word] |= bit
		if l := logits[u]; l > 0 {
			logits[u] = l / pen
		} else {
			logits[u] = l * pen
		}
	}
	for _, id := range ids {
		if u := uint32(id); u < n {
			s.seen[u>>6] = 0
		}
	}
}

// argmax returns the index of the largest logit, ties to the lowest index,
// ignoring NaN; 0 if no logit is larger than -Inf. Four interleaved lanes
// break the loop-carried dependency; each lane keeps its first maximum and
// the lanes are merged with the same tie rule, so the result is exactly that
// of a sequential scan.
func argmax(logits []float32) int32 {
	ninf := float32(math.Inf(-1))
	b0, b1, b2, b3 := ninf, ninf, ninf, ninf
	i0, i1, i2, i3 := 0, 0, 0, 0
	i := 0
	for ; i+4 <= len(logits); i += 4 {
		v := logits[i : i+4 : i+4]
		if v[0] > b0 {
			b0, i0 = v[0], i
		}
		if v[1] > b1 {
			b1, i1 = v[1], i+1
		}
		if v[2] > b2 {
			b2, i2 = v[2], i+2
		}
		if v[3] > b3 {
			b3, i3 = v[3], i+3
		}
	}
	for ; i < len(logits); i++ {
		if v := logits[i]; v > b0 {
			b0, i0 = v, i
		}
	}
	best, idx := b0, i0
	for _, lane := range [...]struct {
		b float32
		i int
	}{{b1, i1}, {b2, i2}, {b3, i3}} {
		if lane.b > best || (lane.b == best && lane.i < idx) {
			best, idx = lane.b, lane.i
		}
	}
	return int32(idx)
}

// filter runs top-k, top-p and min-p and returns the surviving candidates
// (in no particular order, never empty), the largest logit among them, and
// whether their w fields hold the temperature-1 weights (they are only
// computed when top-p or min-p needs them).
func (s *Sampler) filter(logits []float32) (c []cand, maxL float32, weighted bool) {
	n := len(logits)
	if k := s.p.TopK; k > 0 && k < n {
		if k <= heapTopKMax {
			c = topKHeap(s.cands[:k], logits)
		} else {
			c = fill(s.cands[:n], logits)
			selectTopK(c, k)
			c = c[:k]
		}
	} else {
		c = fill(s.cands[:n], logits)
	}

	maxL = c[0].logit
	for _, x := range c[1:] {
		if x.logit > maxL {
			maxL = x.logit
		}
	}
	if len(c) == 1 || (s.p.TopP == 1 && s.p.MinP == 0) {
		return c, maxL, false
	}

	// Temperature-1 weights relative to the maximum (so the best weight is
	// exactly 1). The l == maxL test keeps ±Inf maxima well defined.
	if s.p.TopP < 1 && len(c) > massBucketMin {
		c = s.topPLarge(c, maxL)
	} else {
		var sum float64
		for i := range c {
			w := float32(1)
			if l := c[i].logit; l != maxL {
				w = expf(l - maxL)
			}
			c[i].w = w
			sum += float64(w)
		}
		if s.p.TopP < 1 {
			c = c[:nucleus(c, float64(s.p.TopP)*sum)]
		}
	}

	// p_i >= MinP * p_max  <=>  w_i >= MinP, since w_max == 1.
	if minP := s.p.MinP; minP > 0 {
		j := 0
		for i := range c {
			if c[i].w >= minP {
				c[j] = c[i]
				j++
			}
		}
		c = c[:j]
	}
	return c, maxL, true
}

// topPLarge computes the temperature-1 weights of c and applies top-p for a
// large candidate set. While computing the weights it accumulates their mass
// per binary exponent; the highest exponent e at which the mass of all
// weights >= 2**e reaches the target is found, and every candidate with a
// smaller weight is dropped before the mass quickselect. This is exact: a
// weight below 2**e belongs to a strictly smaller logit than every weight at
// or above it, so it ranks after a set that already holds enough mass.
func (s *Sampler) topPLarge(c []cand, maxL float32) []cand {
	mass := &s.mass
	clear(mass[:])
	for i := range c {
		w := float32(1)
		if l := c[i].logit; l != maxL {
			w = expf(l - maxL)
		}
		c[i].w = w
		mass[math.Float32bits(w)>>23] += float64(w) // w <= 1: exponent <= 127
	}
	var sum float64
	for _, m := range mass {
		sum += m
	}
	need := float64(s.p.TopP) * sum
	var acc float64
	for e := len(mass) - 1; e > 0; e-- {
		if acc += mass[e]; acc >= need {
			j := 0
			for i := range c {
				if math.Float32bits(c[i].w)>>23 >= uint32(e) {
					c[j] = c[i]
					j++
				}
			}
			c = c[:j]
			break
		}
	}
	return c[:nucleus(c, need)]
}

// draw applies the temperature, normalises and draws one candidate. maxL
// and weighted are as returned by filter.
func (s *Sampler) draw(c []cand, maxL float32, weighted bool) int32 {
	u := s.rng.float64()
	var total float64
	if t := s.p.Temperature; t == 1 && weighted {
		for i := range c {
			total += float64(c[i].w)
		}
	} else {
		invT := 1 / t // +Inf for subnormal t: every non-maximum weight becomes 0
		for i := range c {
			w := float32(1)
			if l := c[i].logit; l != maxL {
				w = expf((l - maxL) * invT)
			}
			c[i].w = w
			total += float64(w)
		}
	}
	target := u * total
	var cum float64
	last := 0
	for i := range c {
		if w := c[i].w; w > 0 {
			cum += float64(w)
			last = i
			if target < cum {
				return c[i].id
			}
		}
	}
	return c[last].id // rounding: fall back to the last positive weight
}

// fill loads every logit into c (len(c) == len(logits)).
func fill(c []cand, logits []float32) []cand {
	for i, v := range logits {
		c[i] = cand{logit: sanitize(v), id: int32(i)}
	}
	return c
}

// topKHeap returns the len(h) best candidates of logits, using h as a heap
// whose root is the worst candidate kept so far.
func topKHeap(h []cand, logits []float32) []cand {
	k := len(h)
	for i := range h {
		h[i] = cand{logit: sanitize(logits[i]), id: int32(i)}
	}
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	root := h[0].logit
	for i := k; i < len(logits); i++ {
		// A later id with an equal logit ranks after the root, and NaN
		// compares false, so a strict > is exactly "better than the root".
		if v := logits[i]; v > root {
			h[0] = cand{logit: v, id: int32(i)}
			siftDown(h, 0)
			root = h[0].logit
		}
	}
	return h
}

// siftDown restores the worst-at-root heap property below i.
func siftDown(h []cand, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		w := l
		if r := l + 1; r < n && better(h[l], h[r]) {
			w = r
		}
		if !better(h[i], h[w]) {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// partition reorders c[lo:hi] (hi-lo >= 3) around a median-of-three pivot
// and returns its final index m: c[lo:m] rank before c[m], c[m+1:hi] after.
func partition(c []cand, lo, hi int) int {
	i0, i1, i2 := lo, lo+(hi-lo)/2, hi-1
	if better(c[i1], c[i0]) {
		i0, i1 = i1, i0
	}
	if better(c[i2], c[i1]) {
		i1 = i2
		if better(c[i1], c[i0]) {
			i1 = i0
		}
	}
	last := hi - 1
	c[i1], c[last] = c[last], c[i1]
	pivot := c[last]
	m := lo
	for j := lo; j < last; j++ {
		if better(c[j], pivot) {
			c[m], c[j] = c[j], c[m]
			m++
		}
	}
	c[m], c[last] = c[last], c[m]
	return m
}

// selectBudget bounds the partitioning rounds before falling back to a sort,
// guarding against quadratic behaviour on adversarial inputs.
func selectBudget(n int) int { return 2 * bits.Len(uint(n)) }

// selectTopK reorders c so that c[:k] holds the k best candidates
// (0 < k < len(c)), in no particular order.
func selectTopK(c []cand, k int) {
	lo, hi := 0, len(c)
	for budget := selectBudget(len(c)); hi-lo > smallRange && budget > 0; budget-- {
		m := partition(c, lo, hi)
		switch {
		case m == k || m+1 == k:
			return
		case k < m:
			hi = m
		default:
			lo = m + 1
		}
	}
	slices.SortFunc(c[lo:hi], cmpCand)
}

// nucleus reorders c and returns cut >= 1 such that c[:cut] is the smallest
// best-first prefix (in the order of better) whose weight sum is >= need.
// If rounding keeps the sum below need, everything that might belong to the
// nucleus is kept.
func nucleus(c []cand, need float64) int {
	lo, hi := 0, len(c)
	var acc float64 // weight of c[:lo], all of which is in the nucleus
	for budget := selectBudget(len(c)); hi-lo > smallRange && budget > 0; budget-- {
		m := partition(c, lo, hi)
		var g float64
		for i := lo; i < m; i++ {
			g += float64(c[i].w)
		}
		if acc+g >= need {
			hi = m // the cut lies within c[lo:m]
			continue
		}
		acc += g + float64(c[m].w)
		if acc >= need {
			return m + 1
		}
		lo = m + 1
	}
	slices.SortFunc(c[lo:hi], cmpCand)
	for i := lo; i < hi; i++ {
		acc += float64(c[i].w)
		if acc >= need {
			return i + 1
		}
	}
	return max(hi, 1)
}

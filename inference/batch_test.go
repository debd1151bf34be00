package inference

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// batchTestLen is long enough for three batches, the last one partial.
const batchTestLen = 2*maxBatch + 6

// testIDs returns the model's reference ids followed by random ids of its
// vocabulary, n in all.
func testIDs(t *testing.T, name string, nVocab, n int) []int32 {
	prompt, gen := referenceIDs(t, name)
	ids := append(append([]int32{}, prompt...), gen...)
	r := rand.New(rand.NewPCG(uint64(nVocab), uint64(n)))
	for len(ids) < n {
		ids = append(ids, int32(r.IntN(nVocab)))
	}
	return ids[:n]
}

// tokenLogits feeds ids one at a time with Forward and returns a copy of the
// logits after each.
func tokenLogits(t *testing.T, s *State, ids []int32) [][]float32 {
	t.Helper()
	out := make([][]float32, len(ids))
	for i, id := range ids {
		l, err := s.Forward(id, true)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = slices.Clone(l)
	}
	return out
}

// newBatchTest loads the model name and returns a state with room for
// batchTestLen positions and a KV cache of type kv, at position 0, the test
// ids, and the logits after each of them fed one at a time.
func newBatchTest(t *testing.T, name string, kv KVType) (*State, []int32, [][]float32) {
	m := loadTestModel(t, name)
	ids := testIDs(t, name, m.Config.NVocab, batchTestLen)
	s, err := m.NewStateKV(batchTestLen, 2, kv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	want := tokenLogits(t, s, ids)
	s.Reset()
	return s, ids, want
}

// sameBits fails unless got and want are identical bit for bit.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	for j := range got {
		if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
			t.Fatalf("%s: logit %d is %v, one token at a time %v", what, j, got[j], want[j])
		}
	}
}

// evalRows runs Eval over ids and checks every row against want.
func evalRows(t *testing.T, s *State, ids []int32, want [][]float32, what string) {
	t.Helper()
	calls := 0
	err := s.Eval(ids, func(i int, logits []float32) error {
		if i != calls {
			t.Fatalf("%s: Eval reported position %d after %d calls", what, i, calls)
		}
		sameBits(t, what, logits, want[i])
		calls++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(ids) {
		t.Fatalf("%s: fn called %d times for %d ids", what, calls, len(ids))
	}
}

// TestBatchMatchesTokenByToken checks, on every test model, that batched
// forward passes give exactly (bit for bit) the logits of feeding the tokens
// one at a time: every position of an Eval over several batches, the last
// position of prompts of 1, maxBatch-1, maxBatch, maxBatch+1 and several
// batches, batches that start mid-context, and single tokens that follow a
// batch (so the KV cache a batch writes is the same too).
func TestBatchMatchesTokenByToken(t *testing.T) {
	for _, tc := range conformanceModels {
		t.Run(tc.name, func(t *testing.T) { checkBatchMatches(t, tc.name, KVF16) })
	}
}

// TestBatchMatchesTokenByTokenQ8_0 is TestBatchMatchesTokenByToken with a
// Q8_0 KV cache: each key, value and query is quantized on its own, so
// batches change nothing either.
func TestBatchMatchesTokenByTokenQ8_0(t *testing.T) {
	for _, tc := range q8KVModels {
		t.Run(tc.name, func(t *testing.T) { checkBatchMatches(t, tc.name, KVQ8_0) })
	}
}

func checkBatchMatches(t *testing.T, name string, kv KVType) {
	s, ids, want := newBatchTest(t, name, kv)
	evalRows(t, s, ids, want, "Eval")
	if s.Pos() != len(ids) {
		t.Fatalf("Eval of %d ids: position %d", len(ids), s.Pos())
	}
	for _, n := range []int{1, maxBatch - 1, maxBatch, maxBatch + 1, batchTestLen} {
		s.Reset()
		last, err := s.Prefill(context.Background(), ids[:n], true)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, "Prefill", last, want[n-1])
		if s.Pos() != n {
			t.Fatalf("Prefill of %d ids: position %d", n, s.Pos())
		}
	}

	// A batch from position 5, then single tokens after it.
	s.Reset()
	if l, err := s.Prefill(context.Background(), ids[:5], false); l != nil || err != nil {
		t.Fatalf("Prefill without logits: %v, %v", l, err)
	}
	const mid = 5 + maxBatch + 3
	evalRows(t, s, ids[5:mid], want[5:], "Eval from position 5")
	for i := mid; i < mid+4; i++ {
		l, err := s.Forward(ids[i], true)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, "Forward after a batch", l, want[i])
	}

	// Rewind into a batch and consume the rest again; a state that
	// cannot rewind (a convolution state) says so and starts over.
	from := 10
	if !s.Rewind(from) {
		if s.CanRewind(from) || s.Pos() != 0 {
			t.Fatalf("Rewind(%d) failed but CanRewind says %v, position %d", from, s.CanRewind(from), s.Pos())
		}
		from = 0
	}
	last, err := s.Prefill(context.Background(), ids[from:], true)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "Prefill after Rewind", last, want[len(ids)-1])
}

// TestEvalStopsAtCallbackError checks that when fn fails in the middle of a
// batch, Eval returns its error and the state keeps the tokens up to the one
// reported, so that going on from there gives the right logits.
func TestEvalStopsAtCallbackError(t *testing.T) {
	s, ids, want := newBatchTest(t, "tiny-q4_k_m", KVF16)
	stop := errors.New("stop")
	const at = maxBatch + 7
	err := s.Eval(ids, func(i int, _ []float32) error {
		if i == at {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Eval returned %v, want the callback's error", err)
	}
	if s.Pos() != at+1 {
		t.Fatalf("position %d after stopping at id %d, want %d", s.Pos(), at, at+1)
	}
	l, err := s.Forward(ids[at+1], true)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "Forward after a stopped Eval", l, want[at+1])
}

// cancelAfter is a context whose Err is nil for its first n calls and
// context.Canceled afterwards.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestPrefillChecksAndCancels checks that Prefill rejects bad input before
// computing anything and stops between batches when its context is cancelled.
func TestPrefillChecksAndCancels(t *testing.T) {
	m := loadTestModel(t, "stories260K")
	s, err := m.NewState(100, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := testIDs(t, "stories260K", m.Config.NVocab, 90)
	if _, err := s.Prefill(context.Background(), ids[:3], false); err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(ids)
	bad[50] = int32(m.Config.NVocab)
	if _, err := s.Prefill(context.Background(), bad, true); err == nil || s.Pos() != 3 {
		t.Fatalf("id out of range: err %v, position %d (want an error at position 3)", err, s.Pos())
	}
	if err := s.Eval(bad, func(int, []float32) error { return nil }); err == nil || s.Pos() != 3 {
		t.Fatalf("Eval with an id out of range: err %v, position %d (want an error at position 3)", err, s.Pos())
	}
	long := append(slices.Clone(ids), ids[:8]...)
	if _, err := s.Prefill(context.Background(), long, true); err == nil || s.Pos() != 3 {
		t.Fatalf("prompt longer than the context: err %v, position %d (want an error at position 3)", err, s.Pos())
	}
	if l, err := s.Prefill(context.Background(), nil, true); l != nil || err != nil || s.Pos() != 3 {
		t.Fatalf("empty prompt: %v, %v, position %d", l, err, s.Pos())
	}
	ctx := &cancelAfter{Context: context.Background(), n: 2}
	if _, err := s.Prefill(ctx, ids, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Prefill returned %v", err)
	}
	if want := 3 + 2*maxBatch; s.Pos() != want {
		t.Fatalf("position %d after two batches, want %d", s.Pos(), want)
	}
}

// TestPrefillZeroAllocs checks that consuming a prompt of several batches
// allocates nothing, with FP16 and with Q8_0 KV caches.
func TestPrefillZeroAllocs(t *testing.T) {
	for _, tc := range zeroAllocCases() {
		t.Run(tc.name+"/"+tc.kv.String(), func(t *testing.T) {
			m := loadTestModel(t, tc.name)
			ids := testIDs(t, tc.name, m.Config.NVocab, batchTestLen)
			s, err := m.NewStateKV(batchTestLen, 2, tc.kv)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			run := func() {
				s.Reset()
				if _, err := s.Prefill(context.Background(), ids, true); err != nil {
					t.Fatal(err)
				}
			}
			if a := testing.AllocsPerRun(2, run); a != 0 {
				t.Fatalf("%v allocations per Prefill of %d tokens", a, len(ids))
			}
		})
	}
}

// BenchmarkPrefill compares consuming a prompt in batches with consuming it
// one token at a time.
func BenchmarkPrefill(b *testing.B) {
	const n = 256
	for _, name := range []string{"tiny-q4_k_m", "qwen2-tiny-q8_0"} {
		m := loadTestModel(b, name)
		r := rand.New(rand.NewPCG(1, 2))
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(r.IntN(m.Config.NVocab))
		}
		s, err := m.NewState(n, 2)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(s.Close)
		b.Run(name+"/batch", func(b *testing.B) {
			for b.Loop() {
				s.Reset()
				if _, err := s.Prefill(context.Background(), ids, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
		b.Run(name+"/token", func(b *testing.B) {
			for b.Loop() {
				s.Reset()
				for i, id := range ids {
					if _, err := s.Forward(id, i == n-1); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
		s.Close()
	}
}

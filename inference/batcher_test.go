package inference

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/edgellm/edgellm/inference/sampler"
	"testing"
)

// batcherSeq is one sequence of a batcher test: a prompt, then tokens fed
// one at a time (teacher forcing), each giving logits.
type batcherSeq struct {
	prompt, tokens []int32
}

// batcherSeqs returns four sequences over the model's vocabulary: prompts
// of 3, maxBatch+5 (two chunks), 17 and 1 tokens, then 20, 8, 30 and 12
// tokens, so that they join and leave the steps at different times.
func batcherSeqs(t *testing.T, name string, nVocab int) []batcherSeq {
	ids := testIDs(t, name, nVocab, batchTestLen)
	var seqs []batcherSeq
	for i, sh := range []struct{ prompt, tokens int }{{3, 20}, {maxBatch + 5, 8}, {17, 30}, {1, 12}} {
		from := 7 * i // different prompts, sharing some ids
		seqs = append(seqs, batcherSeq{ids[from : from+sh.prompt], ids[from+sh.prompt : from+sh.prompt+sh.tokens]})
	}
	return seqs
}

// runSeq feeds q to s and returns a copy of the logits after the prompt and
// after each token; before its first single token it calls before, and
// after token i after(i) (each when set).
func runSeq(s *State, q batcherSeq, before func(), after func(int)) ([][]float32, error) {
	l, err := s.Prefill(context.Background(), q.prompt, true)
	if err != nil {
		return nil, err
	}
	out := [][]float32{slices.Clone(l)}
	if before != nil {
		before()
	}
	for i, id := range q.tokens {
		if l, err = s.Forward(id, true); err != nil {
			return nil, err
		}
		out = append(out, slices.Clone(l))
		if after != nil {
			after(i)
		}
	}
	s.Idle()
	return out, nil
}

// TestBatcherMatchesAlone checks, on every test model, that sequences run
// together by a batcher get exactly (bit for bit) the logits they get alone:
// four sequences whose prompts are prefilled in chunks beside the others'
// tokens, two of them joining while the first two decode, each leaving when
// its tokens are done. It checks too that steps did hold rows of several
// sequences.
func TestBatcherMatchesAlone(t *testing.T) {
	for _, tc := range conformanceModels {
		t.Run(tc.name, func(t *testing.T) { checkBatcherMatches(t, tc.name, KVF16) })
	}
	for _, tc := range q8KVModels {
		t.Run(tc.name+"/q8_0", func(t *testing.T) { checkBatcherMatches(t, tc.name, KVQ8_0) })
	}
}

func checkBatcherMatches(t *testing.T, name string, kv KVType) {
	const ctx = 128
	m := loadTestModel(t, name)
	seqs := batcherSeqs(t, name, m.Config.NVocab)
	alone, err := m.NewStateKV(ctx, 2, kv)
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	want := make([][][]float32, len(seqs))
	for i, q := range seqs {
		alone.Reset()
		if want[i], err = runSeq(alone, q, nil, nil); err != nil {
			t.Fatal(err)
		}
	}

	b, err := NewBatcher(m, ctx, 2, len(seqs), kv)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	states := make([]*State, len(seqs))
	for i := range states {
		if states[i], err = b.NewState(); err != nil {
			t.Fatal(err)
		}
		defer states[i].Close()
	}
	// Sequence 0 takes its first token only once sequence 1 has asked for
	// its prompt, so that a step holds both; sequences 2 and 3 start once
	// sequence 0 has its fourth token, and sequence 0 goes on once they
	// have asked for their prompts, so that they join while it decodes
	// however the goroutines are scheduled.
	var (
		mu     sync.Mutex
		queued = map[*State]bool{}
		change = make(chan struct{}, 1)
	)
	b.queued = func(s *State) {
		mu.Lock()
		queued[s] = true
		mu.Unlock()
		select {
		case change <- struct{}{}:
		default:
		}
	}
	waitQueued := func(want ...*State) {
		for {
			mu.Lock()
			all := true
			for _, s := range want {
				all = all && queued[s]
			}
			mu.Unlock()
			if all {
				return
			}
			<-change
		}
	}
	waitFor1 := func() { waitQueued(states[1]) }
	later := make(chan struct{})
	letIn := sync.OnceFunc(func() { close(later) })
	got := make([][][]float32, len(seqs))
	errs := make([]error, len(seqs))
	var wg sync.WaitGroup
	for i := range seqs {
		wg.Go(func() {
			var before func()
			var after func(int)
			switch i {
			case 0:
				before = waitFor1
				after = func(k int) {
					if k == 3 {
						letIn()
						waitQueued(states[2], states[3])
					}
				}
			case 2, 3:
				<-later
			}
			got[i], errs[i] = runSeq(states[i], seqs[i], before, after)
			if i == 0 {
				letIn() // also when it failed early
			}
		})
	}
	wg.Wait()
	for i := range seqs {
		if errs[i] != nil {
			t.Fatalf("sequence %d: %v", i, errs[i])
		}
		if len(got[i]) != len(want[i]) {
			t.Fatalf("sequence %d: %d rows of logits, want %d", i, len(got[i]), len(want[i]))
		}
		for r := range want[i] {
			sameBits(t, "batched", got[i][r], want[i][r])
		}
	}
	if st := b.Stats(); st.Shared == 0 {
		t.Fatalf("no step held rows of several sequences: %+v", st)
	}
}

// TestBatcherZeroAllocs checks that the steps of four sequences generating
// together allocate nothing: four concurrent Generate calls of 21 tokens
// allocate fewer than 20 more than four of 1 token, the fewest of three runs
// each. Anything allocated per step would show 20 times (80 per sequence's
// token); the few left are the runtime's own, now and then, when it grows
// its caches of waiting goroutines.
func TestBatcherZeroAllocs(t *testing.T) {
	for _, tc := range zeroAllocCases() {
		t.Run(tc.name+"/"+tc.kv.String(), func(t *testing.T) {
			m := loadTestModel(t, tc.name)
			const n = 4
			b, err := NewBatcher(m, 256, 2, n+1, tc.kv)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var gens [n]*Generator
			for i := range gens {
				s, err := b.NewState()
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				gens[i] = NewGenerator(s, m.Tokenizer)
			}
			var errs [n]error
			var tokens [n]int
			// A fifth state holds the steps back (a member between two
			// requests) until the run's four sequences have all asked, so
			// that every step of the run holds all four.
			hold, err := b.NewState()
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Close()
			var arrived atomic.Int32
			var all chan struct{}
			b.queued = func(s *State) {
				if s != hold && arrived.Add(1) == n {
					close(all)
				}
			}
			holds := 0
			run := func(maxTokens int) uint64 {
				hold.Reset()
				if _, err := hold.Forward(1, false); err != nil {
					t.Fatal(err)
				}
				holds++
				arrived.Store(0)
				all = make(chan struct{})
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				var wg sync.WaitGroup
				for i, g := range gens {
					opts := GenerateOptions{MaxTokens: maxTokens, Sampling: sampler.DefaultParams(), OnText: func([]byte) error { return nil },
						NoEnd: func() bool { return true }} // no early end
					wg.Go(func() {
						var res Result
						res, errs[i] = g.Generate(context.Background(), []int32{1, int32(300 + i), 301}, opts)
						tokens[i] = res.Tokens
					})
				}
				<-all
				hold.Idle()
				wg.Wait()
				runtime.ReadMemStats(&after)
				for i, err := range errs {
					if err != nil {
						t.Fatalf("sequence %d: %v", i, err)
					}
				}
				return after.Mallocs - before.Mallocs
			}
			fewest := func(maxTokens int) uint64 {
				a := run(maxTokens)
				for range 2 {
					a = min(a, run(maxTokens))
				}
				return a
			}
			run(1)
			run(21) // warm up
			a1, a21 := fewest(1), fewest(21)
			if tokens != [n]int{21, 21, 21, 21} {
				t.Fatalf("generated %v tokens, want 21 each", tokens)
			}
			if a21 >= a1+20 {
				t.Fatalf("%d allocations for 4×21 tokens, %d for 4×1: %.2f per step", a21, a1, float64(a21-a1)/20)
			}
			if st := b.Stats(); st.Shared != st.Steps-uint64(holds) {
				t.Fatalf("steps of fewer than four sequences: %+v (%d of the holding state alone)", st, holds)
			}
		})
	}
}

// TestBatcherShortRequestDuringLongPrompt checks that a short prompt asking
// while another's 1000-token prompt is prefilled gets its logits from the
// next step, which holds its own rows only (not a chunk of the long
// prompt), long before the long prompt is done; that steps hold a decoding
// sequence's token beside a prompt's chunk; and that a prefill whose
// context is cancelled stops between steps, keeping the chunks done.
func TestBatcherShortRequestDuringLongPrompt(t *testing.T) {
	const name, long = "tiny-q8_0", 1000
	m := loadTestModel(t, name)
	ids := testIDs(t, name, m.Config.NVocab, long)
	b, err := NewBatcher(m, long+8, 2, 3, KVF16)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var states [3]*State
	for i := range states {
		if states[i], err = b.NewState(); err != nil {
			t.Fatal(err)
		}
		defer states[i].Close()
	}
	sa, sb, hold := states[0], states[1], states[2]
	if _, err := b.NewState(); err == nil {
		t.Fatal("a fourth state of a batcher of 3 slots")
	}
	// hold, a member between two requests, holds the steps back while it
	// does not ask, and paces them when it does.
	if _, err := hold.Forward(ids[0], false); err != nil {
		t.Fatal(err)
	}
	asked := make(chan *State, 8)
	b.queued = func(s *State) {
		select {
		case asked <- s:
		default:
		}
	}
	waitAsked := func(s *State) {
		for q := range asked {
			if q == s {
				return
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	longDone := make(chan error, 1)
	go func() {
		_, err := sa.Prefill(ctx, ids, true)
		sa.Idle()
		longDone <- err
	}()
	waitAsked(sa)
	// Two steps, each a token of hold and maxBatch−1 of the long prompt.
	for i := range 2 {
		if _, err := hold.Forward(ids[1+i], false); err != nil {
			t.Fatal(err)
		}
	}
	type short struct {
		logits      []float32
		steps, rows uint64
		err         error
	}
	shortDone, letGo := make(chan short, 1), make(chan struct{})
	before := b.Stats()
	go func() {
		l, err := sb.Prefill(context.Background(), ids[:3], true)
		st := b.Stats() // sb is a member until Idle: no step runs meanwhile
		shortDone <- short{slices.Clone(l), st.Steps - before.Steps, st.Rows - before.Rows, err}
		<-letGo
		sb.Idle()
	}()
	waitAsked(sb)
	hold.Idle()
	got := <-shortDone
	if got.err != nil {
		t.Fatal(got.err)
	}
	select {
	case err := <-longDone:
		t.Fatalf("the long prompt was done (%v) before the short one's logits came", err)
	default:
	}
	if got.steps != 1 || got.rows != 3 {
		t.Fatalf("the short prompt's logits came after %d steps of %d rows, want 1 step of its 3 rows", got.steps, got.rows)
	}
	cancel() // before the long prompt's next step, which waits for sb
	close(letGo)
	if err := <-longDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled long prompt: %v", err)
	}
	if p := sa.Pos(); p != 2*(maxBatch-1) {
		t.Fatalf("cancelled long prompt at position %d, want the %d of its two steps", p, 2*(maxBatch-1))
	}
	// The short request got the logits it gets alone.
	alone, err := m.NewState(long+8, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	want, err := alone.Prefill(context.Background(), ids[:3], true)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "short prompt beside a long one", got.logits, want)
	// The cancelled sequence goes on from where it stopped.
	p := sa.Pos()
	if _, err := sa.Prefill(context.Background(), ids[p:], false); err != nil {
		t.Fatal(err)
	}
	sa.Idle()
	if sa.Pos() != long {
		t.Fatalf("position %d after the rest of the prompt, want %d", sa.Pos(), long)
	}

	b.Close()
	if _, err := sb.Forward(1, true); !errors.Is(err, ErrBatcherClosed) {
		t.Fatalf("Forward after Close: %v, want ErrBatcherClosed", err)
	}
}

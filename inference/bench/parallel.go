package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/edgellm/edgellm/inference"
)

// MaxParallel is the largest Options.Parallel.
const MaxParallel = 32

// The join test's prompts: a short one arriving while a long one is
// prefilled (JoinLong tokens, or what the model's context leaves).
const (
	JoinLong  = 1000
	JoinShort = 8
)

// JoinReport is the join test: a prompt of JoinShort tokens arrives while
// another sequence prefills LongTokens tokens, after the first step of it.
type JoinReport struct {
	LongTokens int `json:"long_tokens"`
	// Wait is the time from the short prompt's arrival to its logits
	// (milliseconds): its time to first token.
	Wait Stat `json:"wait_ms"`
	// Step is the time of one step of the long prefill alone (its prefill
	// time ÷ its steps, measured without the short prompt), milliseconds.
	Step Stat `json:"step_ms"`
	// Long is the time of the whole long prefill beside the short prompt,
	// milliseconds.
	Long Stat `json:"long_ms"`
}

// joinSamples collects the join test's repetitions.
type joinSamples struct {
	longTokens       int
	wait, step, long []float64
}

func (j *joinSamples) report() *JoinReport {
	if len(j.wait) == 0 {
		return nil
	}
	return &JoinReport{LongTokens: j.longTokens, Wait: newStat(j.wait), Step: newStat(j.step), Long: newStat(j.long)}
}

// newStates returns the states the tests run on: one state of its own
// without opts.Parallel, else opts.Parallel states of a batcher; and what
// closes them.
func newStates(m *inference.Model, ctx int, opts Options) ([]*inference.State, func(), error) {
	if opts.Parallel == 0 {
		s, err := m.NewStateKV(ctx, opts.Threads, opts.KVType)
		if err != nil {
			return nil, nil, err
		}
		return []*inference.State{s}, s.Close, nil
	}
	b, err := inference.NewBatcher(m, ctx, opts.Threads, opts.Parallel, opts.KVType)
	if err != nil {
		return nil, nil, err
	}
	var states []*inference.State
	closeAll := func() {
		for _, s := range states {
			s.Close()
		}
		b.Close()
	}
	for range opts.Parallel {
		s, err := b.NewState()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		states = append(states, s)
	}
	return states, closeAll, nil
}

// decodeAll decodes ids one at a time in every state at once, each from
// its own goroutine (a batcher's states then share steps).
func decodeAll(states []*inference.State, ids []int32) error {
	if len(states) == 1 {
		return decodeIDs(states[0], ids)
	}
	errs := make([]error, len(states))
	var wg sync.WaitGroup
	for i, s := range states {
		wg.Go(func() { errs[i] = decodeIDs(s, ids) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeIDs(s *inference.State, ids []int32) error {
	defer s.Idle()
	for _, id := range ids {
		if _, err := s.Forward(id, true); err != nil {
			return err
		}
	}
	return nil
}

// joinTest runs the join test once on the first two states (of a batcher):
// the long prompt alone, timed per step; then again with the short prompt
// arriving once its first step is done.
func joinTest(ctx context.Context, states []*inference.State, rng *rand.Rand, nVocab int, out *joinSamples) error {
	long, short := make([]int32, out.longTokens), make([]int32, JoinShort)
	for i := range long {
		long[i] = int32(rng.IntN(nVocab))
	}
	for i := range short {
		short[i] = int32(rng.IntN(nVocab))
	}
	a, b := states[0], states[1]
	prefill := func(s *inference.State, ids []int32) error {
		s.Reset()
		defer s.Idle()
		_, err := s.Prefill(ctx, ids, true)
		return err
	}
	bat := a.Batcher()
	st0 := bat.Stats()
	start := time.Now()
	if err := prefill(a, long); err != nil {
		return fmt.Errorf("bench: join test: %w", err)
	}
	alone := time.Since(start)
	steps := bat.Stats().Steps - st0.Steps
	done := make(chan error, 1)
	st1 := bat.Stats()
	start = time.Now()
	go func() { done <- prefill(a, long) }()
	for bat.Stats().Steps == st1.Steps { // until the long prompt's first step is done
		select {
		case err := <-done:
			return fmt.Errorf("bench: join test: the long prompt: %w", err)
		default:
			runtime.Gosched()
		}
	}
	arrived := time.Now()
	if err := prefill(b, short); err != nil {
		return fmt.Errorf("bench: join test: %w", err)
	}
	wait := time.Since(arrived)
	if err := <-done; err != nil {
		return fmt.Errorf("bench: join test: %w", err)
	}
	out.wait = append(out.wait, ms(wait))
	out.step = append(out.step, ms(alone)/float64(steps))
	out.long = append(out.long, ms(time.Since(start)))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

package inference

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Batcher runs the sequences of up to Slots requests on one model, one
// workspace and one thread pool. The States it makes ask for forward passes
// (Forward, Prefill, Eval, Generator.Generate) from their own goroutines;
// the batcher gathers them into shared steps, so that each weight matrix is
// read from memory once for every sequence of a step: decoding four
// sequences costs little more than decoding one.
//
// Steps go in lock-step, as the reference's server loop does: a State that
// has asked for a step takes part in the steps (it is a member) until it
// goes Idle, and a step runs once every member has asked for its next one.
// A step holds at most MaxBatch rows: first one row for each sequence
// decoding a token, then the prompt tokens of prefilling sequences, the
// shortest prompt first, the rest of a prompt waiting for the next steps.
// So a long prompt never holds up the others' tokens for more than one
// step, and a new request joins at the next step. A step that ends a
// prompt whose request waits for its logits takes no part of a longer one,
// so a short request arriving during a long prefill waits for the step in
// flight, then for its own rows only.
//
// Every row is computed by the same functions, in the same order, as it is
// alone (kernels.Pool.MatMul gives each row the bits of a batch of one), so
// a sequence's results do not depend on what it was batched with.
type Batcher struct {
	ws    *workspace
	slots int

	mu      sync.Mutex
	states  int      // open states
	members int      // states taking part in the steps
	pending []*State // members waiting for a step, in the order they asked
	closed  bool
	wake    chan struct{} // a member asked, or left
	stopped chan struct{} // the loop has ended

	// Rows of the step being computed: which states, how many rows each.
	stepSeqs  []*State
	stepRows  []int
	logitSeqs []*State // whose logits the step computes, in row order

	steps, rows, shared atomic.Uint64 // for Stats

	// queued, when set (tests), is called with each state that has asked
	// for a step, after it is queued.
	queued func(*State)
}

// submission is what a batcher's State asked for: tokens to consume at its
// next positions, whether it wants the logits after the last, and how far
// the batcher got.
type submission struct {
	ctx    context.Context
	tokens []int32
	done   int
	logits bool
	err    error
	ready  chan struct{}
}

// MaxSlots is the most sequences a batcher runs: each decodes a row of a
// step, and a step holds at most MaxBatch rows.
const MaxSlots = maxBatch

// ErrBatcherClosed is returned for a forward pass asked of a closed
// batcher.
var ErrBatcherClosed = errors.New("inference: the batcher is closed")

// NewBatcher makes a batcher for at most slots sequences of ctx positions
// each (0: the model's training context), computing on threads threads (0:
// the CPUs the process may use), attention layers storing keys and values
// as kv. Close stops it.
func NewBatcher(m *Model, ctx, threads, slots int, kv KVType) (*Batcher, error) {
	if slots < 1 || slots > MaxSlots {
		return nil, fmt.Errorf("inference: %d slots: between 1 and %d", slots, MaxSlots)
	}
	ws, err := newWorkspace(m, ctx, threads, kv, slots)
	if err != nil {
		return nil, err
	}
	b := &Batcher{ws: ws, slots: slots, pending: make([]*State, 0, slots),
		wake: make(chan struct{}, 1), stopped: make(chan struct{}),
		stepSeqs: make([]*State, 0, slots), stepRows: make([]int, 0, slots), logitSeqs: make([]*State, 0, slots)}
	go b.loop()
	return b, nil
}

// NewState makes a sequence of the batcher, with empty caches; at most
// Slots are open at once. Each is used by one goroutine at a time, and
// Close gives its slot back.
func (b *Batcher) NewState() (*State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrBatcherClosed
	}
	if b.states == b.slots {
		return nil, fmt.Errorf("inference: the batcher's %d slots are taken", b.slots)
	}
	b.states++
	s := newSequence(b.ws)
	s.batcher = b
	s.sub.ready = make(chan struct{}, 1)
	s.out = make([]float32, b.ws.c.NVocab)
	return s, nil
}

// BatcherStats counts a batcher's work.
type BatcherStats struct {
	Steps  uint64 // forward passes run
	Rows   uint64 // token rows computed in them
	Shared uint64 // steps that computed rows of several sequences
}

// Stats reports the steps run so far and their rows.
func (b *Batcher) Stats() BatcherStats {
	return BatcherStats{Steps: b.steps.Load(), Rows: b.rows.Load(), Shared: b.shared.Load()}
}

// Close stops the batcher: forward passes still asked for end with
// ErrBatcherClosed, and its threads stop.
func (b *Batcher) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	b.signal()
	<-b.stopped
	b.ws.pool.Close()
}

// signal wakes the loop without blocking.
func (b *Batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// run asks for tokens (checked) to go through the model for s and waits
// until they have, or ctx is done between steps (the rows done so far stay
// consumed), or the batcher is closed. It returns the logits after the last
// token when wantLogits is set, s.out, valid until s asks again.
func (b *Batcher) run(ctx context.Context, s *State, tokens []int32, wantLogits bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	s.sub = submission{ctx: ctx, tokens: tokens, logits: wantLogits, ready: s.sub.ready}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrBatcherClosed
	}
	if !s.member {
		s.member = true
		b.members++
	}
	b.pending = append(b.pending, s)
	b.mu.Unlock()
	if b.queued != nil {
		b.queued(s)
	}
	b.signal()
	<-s.sub.ready
	if s.sub.err != nil || !wantLogits {
		return nil, s.sub.err
	}
	return s.out, nil
}

// Idle tells the state's batcher that the state asks for no step for now,
// so the others' steps stop waiting for it (Generator.Generate goes idle
// when it returns; a caller driving Forward itself calls Idle when it
// pauses). The state's next forward pass makes it a member again. For a
// state with its own workspace it does nothing.
func (s *State) Idle() {
	b := s.batcher
	if b == nil || !s.member {
		return
	}
	b.mu.Lock()
	s.member = false
	b.members--
	b.mu.Unlock()
	b.signal()
}

// release closes s, a state of b.
func (b *Batcher) release(s *State) {
	s.Idle()
	b.mu.Lock()
	b.states--
	b.mu.Unlock()
	s.batcher = nil
	s.workspace = nil
}

// loop runs steps until the batcher is closed.
func (b *Batcher) loop() {
	defer close(b.stopped)
	for range b.wake {
		for b.step() {
		}
		b.mu.Lock()
		closed := b.closed
		if closed {
			for _, s := range b.pending {
				s.sub.err = ErrBatcherClosed
				s.sub.ready <- struct{}{}
			}
			b.pending = b.pending[:0]
		}
		b.mu.Unlock()
		if closed {
			return
		}
	}
}

// step runs one step when every member has asked for one, and reports
// whether it did.
func (b *Batcher) step() bool {
	ws := b.ws
	b.mu.Lock()
	if b.closed || len(b.pending) == 0 || len(b.pending) < b.members {
		b.mu.Unlock()
		return false
	}
	// Requests whose context is done leave with what they have.
	kept := b.pending[:0]
	for _, s := range b.pending {
		if err := s.sub.ctx.Err(); err != nil {
			s.sub.err = err
			s.sub.ready <- struct{}{}
			continue
		}
		kept = append(kept, s)
	}
	b.pending = kept
	// The step's rows: a token for each decoding sequence, then prompt
	// chunks, the shortest prompt first (a short request is not held up by
	// a long one; a long one still gets what the short ones leave).
	seqs, counts, budget := b.stepSeqs[:0], b.stepRows[:0], maxBatch
	for _, s := range b.pending {
		if len(s.sub.tokens)-s.sub.done == 1 && budget > 0 {
			seqs, counts, budget = append(seqs, s), append(counts, 1), budget-1
		}
	}
	firsts := false // the step ends a prompt whose request waits for its logits
	for budget > 0 {
		var next *State
		for _, s := range b.pending {
			left := len(s.sub.tokens) - s.sub.done
			if left > 1 && !slices.Contains(seqs, s) && (next == nil || left < len(next.sub.tokens)-next.sub.done) {
				next = s
			}
		}
		if next == nil {
			break
		}
		left := len(next.sub.tokens) - next.sub.done
		k := min(left, budget)
		if firsts && k < left {
			// A step that gives a request its first token takes no part
			// of a longer prompt: it costs that request its own rows only.
			break
		}
		firsts = firsts || k == left && next.sub.logits
		seqs, counts, budget = append(seqs, next), append(counts, k), budget-k
	}
	b.stepSeqs, b.stepRows = seqs, counts
	b.mu.Unlock()
	if len(seqs) == 0 {
		return true // every request was cancelled: look again
	}

	rows := ws.rows[:0]
	for i, s := range seqs {
		for k := range counts[i] {
			rows = append(rows, batchRow{seq: s, pos: s.pos + k, token: s.sub.tokens[s.sub.done+k]})
		}
	}
	ws.forward(rows)
	b.steps.Add(1)
	b.rows.Add(uint64(len(rows)))
	if len(seqs) > 1 {
		b.shared.Add(1)
	}
	// The logits of the requests this step finished, logitRows at a time.
	idx, owners, r := ws.logitIdx[:0], b.logitSeqs[:0], 0
	for i, s := range seqs {
		r += counts[i]
		s.sub.done += counts[i]
		if s.sub.done == len(s.sub.tokens) && s.sub.logits {
			idx, owners = append(idx, r-1), append(owners, s)
		}
	}
	nv := ws.c.NVocab
	for lo := 0; lo < len(idx); lo += ws.logitRows {
		hi := min(lo+ws.logitRows, len(idx))
		logits := ws.logitsAt(idx[lo:hi])
		for j := lo; j < hi; j++ {
			copy(owners[j].out, logits[(j-lo)*nv:(j-lo+1)*nv])
		}
	}
	// Finished requests leave the pending list and are woken.
	b.mu.Lock()
	kept = b.pending[:0]
	for _, s := range b.pending {
		if s.sub.done == len(s.sub.tokens) {
			s.sub.ready <- struct{}{}
			continue
		}
		kept = append(kept, s)
	}
	b.pending = kept
	b.mu.Unlock()
	return true
}

// Batcher returns the batcher whose steps the state takes part in, nil for a
// state with its own workspace.
func (s *State) Batcher() *Batcher { return s.batcher }

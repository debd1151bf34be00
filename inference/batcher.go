package inference

import "fmt"

// Batcher runs the sequences of up to Slots requests on one model, one
// workspace and one thread pool: the forward passes their States ask for
// (Forward, Prefill, Generator.Generate) from their own goroutines are
// gathered into shared steps, each weight read once for all of them.
//
// (First form: every State has its own workspace; the shared steps follow.)
type Batcher struct {
	m       *Model
	ctx     int
	threads int
	slots   int
	kv      KVType
}

// NewBatcher makes a batcher for at most slots sequences of ctx positions
// each (0: the model's training context), computing on threads threads (0:
// the CPUs the process may use), attention layers storing keys and values
// as kv.
func NewBatcher(m *Model, ctx, threads, slots int, kv KVType) (*Batcher, error) {
	if slots < 1 {
		return nil, fmt.Errorf("inference: %d slots: at least one is needed", slots)
	}
	if err := m.Config.CheckKVType(kv); err != nil {
		return nil, err
	}
	if ctx <= 0 {
		ctx = m.Config.NCtxTrain
	}
	return &Batcher{m: m, ctx: ctx, threads: threads, slots: slots, kv: kv}, nil
}

// NewState makes a sequence of the batcher (at most Slots of them). Each is
// used by one goroutine at a time; Close releases it.
func (b *Batcher) NewState() (*State, error) {
	return b.m.NewStateKV(b.ctx, b.threads, b.kv)
}

// Slots is the number of sequences the batcher runs together at most.
func (b *Batcher) Slots() int { return b.slots }

// Close stops the batcher's threads, once every State it made is closed.
func (b *Batcher) Close() {}

package inference

import (
	"context"
	"fmt"

	"github.com/edgellm/edgellm/kernels"
)

// KVCache holds the keys and values of every layer and position in FP16.
// K[l] and V[l] have Ctx rows of Config.KVDim() values.
type KVCache struct {
	Ctx  int
	K, V [][]uint16
}

func newKVCache(c *Config, ctx int) KVCache {
	kv := KVCache{Ctx: ctx, K: make([][]uint16, c.NLayer), V: make([][]uint16, c.NLayer)}
	for l := range kv.K {
		kv.K[l] = make([]uint16, ctx*c.KVDim())
		kv.V[l] = make([]uint16, ctx*c.KVDim())
	}
	return kv
}

// State is one inference session over a Model: the KV cache, the position
// reached and every scratch buffer of the forward pass, allocated once so that
// computing a token allocates nothing. The scratch buffers hold a batch of up
// to MaxBatch tokens, one row each. A State is not safe for concurrent use.
type State struct {
	m    *Model
	c    *Config
	KV   KVCache
	rope ropeTables
	pos  int

	x, xb, xb2 []float32  // residual stream and normalised copies (NEmbd per row)
	q, k, v    []float32  // projections (NHead·HeadDim, KVDim, KVDim per row)
	att        []float32  // attention output (NHead·HeadDim per row)
	hb, hb2    []float32  // feed-forward hidden (NFF per row)
	logits     []float32  // logitRows rows of NVocab
	logitRows  int        // positions whose logits are computed at once
	in         batchInput // quantized input of the current matmuls
	one        [1]int32   // the batch of Forward

	pool   *kernels.Pool
	mm     kernels.MatMulJob
	attJob attentionJob
}

// NewState allocates a session with room for ctx positions (0: the model's
// training context) that computes on the given number of threads (0: the CPUs
// the process may use). Close releases its threads.
func (m *Model) NewState(ctx, threads int) (*State, error) {
	c := &m.Config
	if ctx <= 0 {
		ctx = c.NCtxTrain
	}
	if ctx > 1<<20 {
		return nil, fmt.Errorf("inference: context %d is too large", ctx)
	}
	buf := func(width int) []float32 { return make([]float32, maxBatch*width) }
	logitRows := min(maxBatch, max(1, logitBudget/c.NVocab))
	s := &State{
		m: m, c: c,
		KV:        newKVCache(c, ctx),
		rope:      newRopeTables(c, m.RopeFactors, ctx),
		x:         buf(c.NEmbd),
		xb:        buf(c.NEmbd),
		xb2:       buf(c.NEmbd),
		q:         buf(c.NHead * c.HeadDim),
		k:         buf(c.KVDim()),
		v:         buf(c.KVDim()),
		att:       buf(c.NHead * c.HeadDim),
		hb:        buf(c.NFF),
		hb2:       buf(c.NFF),
		logits:    make([]float32, logitRows*c.NVocab),
		logitRows: logitRows,
		in:        newBatchInput(m),
		pool:      kernels.NewPool(threads),
	}
	return s, nil
}

// Close stops the state's threads.
func (s *State) Close() { s.pool.Close() }

// Threads is the number of threads the state computes on.
func (s *State) Threads() int { return s.pool.Threads() }

// MaxBatch is the number of tokens that go through the model together when
// several are consumed at once (Prefill, Eval).
func (s *State) MaxBatch() int { return maxBatch }

// Model returns the model the state runs.
func (s *State) Model() *Model { return s.m }

// Pos is the number of tokens consumed so far.
func (s *State) Pos() int { return s.pos }

// Ctx is the number of positions the state has room for.
func (s *State) Ctx() int { return s.KV.Ctx }

// Reset forgets every consumed token (the KV cache is overwritten as new tokens
// arrive).
func (s *State) Reset() { s.pos = 0 }

// Rewind forgets the tokens after the first n, keeping the cache of those n.
func (s *State) Rewind(n int) {
	if n >= 0 && n < s.pos {
		s.pos = n
	}
}

// check returns an error unless every token is in the vocabulary and they all
// fit in the context after the current position.
func (s *State) check(tokens []int32) error {
	for _, id := range tokens {
		if id < 0 || int(id) >= s.c.NVocab {
			return fmt.Errorf("inference: token id %d out of range [0, %d)", id, s.c.NVocab)
		}
	}
	if s.pos+len(tokens) > s.KV.Ctx {
		if s.pos >= s.KV.Ctx {
			return fmt.Errorf("inference: context full (%d tokens)", s.KV.Ctx)
		}
		return fmt.Errorf("inference: %d tokens at position %d do not fit in the context of %d tokens", len(tokens), s.pos, s.KV.Ctx)
	}
	return nil
}

// Forward consumes one token at the next position and, when wantLogits is set,
// returns the logits of the next token (a slice owned by the state, valid until
// the next call). It returns an error when the context is full or the token id
// is out of range.
func (s *State) Forward(token int32, wantLogits bool) ([]float32, error) {
	s.one[0] = token
	if err := s.check(s.one[:]); err != nil {
		return nil, err
	}
	s.forward(s.one[:])
	if !wantLogits {
		return nil, nil
	}
	return s.logitsOf(0, 1), nil
}

// Prefill consumes tokens from the next position in batches of up to MaxBatch,
// each going through every layer at once, and, when wantLogits is set, returns
// the logits after the last token (a slice owned by the state, valid until the
// next call). The results are those of consuming the tokens one at a time with
// Forward. It checks every token and the room left in the context before
// computing anything, and ctx between batches: when ctx is cancelled, the
// batches done so far stay consumed.
func (s *State) Prefill(ctx context.Context, tokens []int32, wantLogits bool) ([]float32, error) {
	if err := s.check(tokens); err != nil {
		return nil, err
	}
	n := 0
	for lo := 0; lo < len(tokens); lo += n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n = min(maxBatch, len(tokens)-lo)
		s.forward(tokens[lo : lo+n])
	}
	if !wantLogits || n == 0 {
		return nil, nil
	}
	return s.logitsOf(n-1, n), nil
}

// Eval consumes ids from the current position, in batches as Prefill does,
// and calls fn with the logits after each of them in order (teacher forcing).
// The logits slice is reused. It checks every id and the room left in the
// context before computing anything. When fn returns an error, Eval stops
// with it and the state keeps the tokens up to and including the one whose
// logits fn was given.
func (s *State) Eval(ids []int32, fn func(i int, logits []float32) error) error {
	if err := s.check(ids); err != nil {
		return err
	}
	nv := s.c.NVocab
	for lo := 0; lo < len(ids); lo += maxBatch {
		batch := ids[lo:min(lo+maxBatch, len(ids))]
		s.forward(batch)
		for r0 := 0; r0 < len(batch); r0 += s.logitRows {
			r1 := min(r0+s.logitRows, len(batch))
			logits := s.logitsOf(r0, r1)
			for r := r0; r < r1; r++ {
				if err := fn(lo+r, logits[(r-r0)*nv:(r-r0+1)*nv]); err != nil {
					s.Rewind(s.pos - len(batch) + r + 1)
					return err
				}
			}
		}
	}
	return nil
}

package inference

import (
	"context"
	"fmt"

	"github.com/edgellm/edgellm/kernels"
)

// workspace holds what a forward pass computes with: every scratch buffer,
// sized for a batch of up to maxBatch rows, and the thread pool. A State
// computing alone owns one; a Batcher's States share the batcher's. It is
// used by one forward pass at a time.
type workspace struct {
	m   *Model
	c   *Config
	ctx int    // positions of each sequence
	kv  KVType // how attention layers store keys and values

	// rows is the current batch: which sequence, position and token each
	// row of the buffers below is.
	rows []batchRow
	// Batch buffers, one row per token; their widths are the largest any
	// layer needs (Config.buffers).
	x, xb, xb2 []float32  // residual stream, normalised copy, block output (NEmbd)
	q, k, v    []float32  // projections (qDim, kvDim, kvDim)
	qkv        []float32  // fused projection, rows [Q | K | V] (attn_qkv; DeltaNet's), or queries with their gates
	z          []float32  // DeltaNet's output gate, then its gated output (VDim)
	beta, gate []float32  // DeltaNet's β and decay g, one per V head
	convRow    []float32  // one row of DeltaNet's convolution output (ConvDim)
	att        []float32  // attention output (qDim)
	hb, hb2    []float32  // feed-forward hidden (nFF; hb2 2·nFF with a fused ffn_up)
	bcu        []float32  // short convolution's input projection [b | c | u] (3·NEmbd)
	pl         []float32  // per-layer inputs, PerLayerDim·NLayer a row (gemma4)
	plh        []float32  // a layer's per-layer hidden (PerLayerDim)
	plTok      []float32  // one token's per-layer embeddings (PerLayerDim·NLayer)
	logits     []float32  // logitRows rows of NVocab
	logitRows  int        // positions whose logits are computed at once
	logitIdx   []int      // the batch rows whose logits are computed (logitsOf)
	in         batchInput // quantized forms of the current matmul input
	rope       []ropeRows // per Config.Ropes entry: cos and sin of the batch's positions
	// qAct holds a Q8_0 KV cache's queries quantized to Q8_0, one per head
	// of each batch row (item h·n + i of attentionJob); nil with FP16.
	qAct []kernels.Activation

	pool     *kernels.Pool
	mm       kernels.MatMulJob
	attJob   attentionJob
	qkvJob   qkvRowsJob
	deltaJob deltaNetJob
}

// batchRow is one row of a batch: token at position pos of sequence seq.
// A sequence's rows in a batch are consecutive positions, in order.
type batchRow struct {
	seq   *State
	pos   int
	token int32
}

// newWorkspace allocates the buffers of batches of sequences of ctx
// positions whose caches store kv, with room for the logits of at least
// logitRows rows at once, and starts threads threads.
func newWorkspace(m *Model, ctx, threads int, kv KVType, logitRows int) (*workspace, error) {
	c := &m.Config
	if ctx <= 0 {
		ctx = c.NCtxTrain
	}
	if ctx > 1<<20 {
		return nil, fmt.Errorf("inference: context %d is too large", ctx)
	}
	if err := c.CheckKVType(kv); err != nil {
		return nil, err
	}
	s := &workspace{m: m, c: c, ctx: ctx, kv: kv, rows: make([]batchRow, 0, maxBatch), logitIdx: make([]int, maxBatch)}
	b := c.buffers()
	buf := func(width int) []float32 { return make([]float32, maxBatch*width) }
	s.x, s.xb, s.xb2 = buf(c.NEmbd), buf(c.NEmbd), buf(c.NEmbd)
	s.q, s.k, s.v, s.att = buf(b.qDim), buf(b.kvDim), buf(b.kvDim), buf(b.qDim)
	s.qkv, s.hb, s.hb2, s.bcu = buf(b.qkv), buf(b.hb), buf(b.hb2), buf(b.bcu)
	s.z, s.beta, s.gate, s.convRow = buf(b.z), buf(b.heads), buf(b.heads), make([]float32, b.qkv)
	s.pl, s.plh, s.plTok = buf(c.PerLayerDim*c.NLayer), buf(c.PerLayerDim), make([]float32, c.PerLayerDim*c.NLayer)
	if kv == KVQ8_0 {
		heads, hd := c.attentionHeads()
		s.qAct = make([]kernels.Activation, maxBatch*heads)
		for i := range s.qAct {
			s.qAct[i].Reset(kernels.Q8_0, hd)
		}
	}
	s.logitRows = min(maxBatch, max(1, logitBudget/c.NVocab, logitRows))
	s.logits = make([]float32, s.logitRows*c.NVocab)
	for i := range c.Ropes {
		s.rope = append(s.rope, newRopeRows(&c.Ropes[i], ctx))
	}
	s.in = newBatchInput(m)
	s.pool = kernels.NewPool(threads)
	return s, nil
}

// State is one sequence over a Model: every layer's cache and the position
// reached, with a workspace to compute in. A State made by Model.NewState
// owns its workspace and threads, and computing a token allocates nothing.
// A State made by a Batcher shares the batcher's: its forward passes join
// those of the batcher's other States in shared steps. A State is not safe
// for concurrent use.
type State struct {
	*workspace
	caches []layerCache // one per layer, as Config.CacheSpecs(ctx, kv) declares
	pos    int
	one    [1]int32 // the batch of Forward

	// With a batcher: the request being run, whether the state takes part
	// in the batcher's steps, and the logits of its last request.
	batcher *Batcher
	sub     submission
	member  bool
	out     []float32
}

// NewState allocates a session with room for ctx positions (0: the model's
// training context) that computes on the given number of threads (0: the CPUs
// the process may use), with an FP16 KV cache. Close releases its threads.
func (m *Model) NewState(ctx, threads int) (*State, error) {
	return m.NewStateKV(ctx, threads, KVF16)
}

// NewStateKV is NewState with attention layers storing their keys and values
// as kv; it fails when the model cannot (Config.CheckKVType).
func (m *Model) NewStateKV(ctx, threads int, kv KVType) (*State, error) {
	ws, err := newWorkspace(m, ctx, threads, kv, 1)
	if err != nil {
		return nil, err
	}
	return newSequence(ws), nil
}

// newSequence makes a sequence computing in ws, with empty caches.
func newSequence(ws *workspace) *State {
	s := &State{workspace: ws}
	for _, spec := range ws.c.CacheSpecs(ws.ctx, ws.kv) {
		s.caches = append(s.caches, newLayerCache(spec))
	}
	return s
}

// Close stops the state's threads, or, for a batcher's state, leaves the
// batcher.
func (s *State) Close() {
	if s.batcher != nil {
		s.batcher.release(s)
		return
	}
	s.pool.Close()
}

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
func (s *State) Ctx() int { return s.ctx }

// KVType is how the state's attention layers store keys and values.
func (s *State) KVType() KVType { return s.kv }

// Reset forgets every consumed token (key and value rows are overwritten as
// new tokens arrive; convolution and DeltaNet states are cleared).
func (s *State) Reset() {
	s.pos = 0
	for i := range s.caches {
		s.caches[i].reset()
	}
}

// CanRewind reports whether the state can forget the tokens after the first
// n and continue from there: always for full KV caches, within limits for
// sliding-window rings, and never (n < Pos) with a convolution or DeltaNet
// state.
func (s *State) CanRewind(n int) bool {
	if n < 0 || n > s.pos {
		return false
	}
	for i := range s.caches {
		if !s.caches[i].canRewind(s.pos, n) {
			return false
		}
	}
	return true
}

// Rewind forgets the tokens after the first n, keeping the cache of those n,
// and reports whether it could (see CanRewind). When the caches cannot go
// back to n, the state is reset; n beyond the position changes nothing.
func (s *State) Rewind(n int) bool {
	if n >= s.pos {
		return n == s.pos
	}
	if !s.CanRewind(n) {
		s.Reset()
		return false
	}
	s.pos = n
	return true
}

// check returns an error unless every token is in the vocabulary and they all
// fit in the context after the current position.
func (s *State) check(tokens []int32) error {
	for _, id := range tokens {
		if id < 0 || int(id) >= s.c.NVocab {
			return fmt.Errorf("inference: token id %d out of range [0, %d)", id, s.c.NVocab)
		}
	}
	if s.pos+len(tokens) > s.ctx {
		if s.pos >= s.ctx {
			return fmt.Errorf("inference: context full (%d tokens)", s.ctx)
		}
		return fmt.Errorf("inference: %d tokens at position %d do not fit in the context of %d tokens", len(tokens), s.pos, s.ctx)
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
	if s.batcher != nil {
		return s.batcher.run(context.Background(), s, s.one[:], wantLogits)
	}
	s.compute(s.one[:])
	if !wantLogits {
		return nil, nil
	}
	return s.logitsOf(0, 1), nil
}

// compute runs tokens (at most maxBatch, checked) through the model in the
// state's own workspace, at the next positions.
func (s *State) compute(tokens []int32) {
	rows := s.rows[:0]
	for i, t := range tokens {
		rows = append(rows, batchRow{seq: s, pos: s.pos + i, token: t})
	}
	s.forward(rows)
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
	if s.batcher != nil {
		return s.batcher.run(ctx, s, tokens, wantLogits)
	}
	n := 0
	for lo := 0; lo < len(tokens); lo += n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n = min(maxBatch, len(tokens)-lo)
		s.compute(tokens[lo : lo+n])
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
// logits fn was given (a state that cannot rewind, see CanRewind, is reset
// instead). A batcher's state consumes the ids one step at a time.
func (s *State) Eval(ids []int32, fn func(i int, logits []float32) error) error {
	if err := s.check(ids); err != nil {
		return err
	}
	if s.batcher != nil {
		defer s.Idle()
		for i := range ids {
			s.one[0] = ids[i]
			logits, err := s.batcher.run(context.Background(), s, s.one[:], true)
			if err == nil {
				err = fn(i, logits)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	nv := s.c.NVocab
	for lo := 0; lo < len(ids); lo += maxBatch {
		batch := ids[lo:min(lo+maxBatch, len(ids))]
		s.compute(batch)
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

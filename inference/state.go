package inference

import (
	"fmt"
	"math"

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
// computing a token allocates nothing. A State is not safe for concurrent use.
type State struct {
	m    *Model
	c    *Config
	KV   KVCache
	rope ropeTables
	pos  int

	x, xb, xb2 []float32 // residual stream and normalised copies (NEmbd)
	q, k, v    []float32 // projections (NHead·HeadDim, KVDim, KVDim)
	att        []float32 // attention output (NHead·HeadDim)
	hb, hb2    []float32 // feed-forward hidden (NFF)
	logits     []float32 // NVocab
	in         input     // quantized input of the current matmuls

	pool   *kernels.Pool
	mv     kernels.MatVecJob
	attJob attentionJob
}

// input is a float vector together with its quantized forms, each made at most
// once however many matrices multiply it.
type input struct {
	x     []float32
	acts  [len(activationKinds)]kernels.Activation
	valid [len(activationKinds)]bool
}

// activationKinds are the formats a matmul input can be quantized to.
var activationKinds = [...]kernels.Type{kernels.F32, kernels.F16, kernels.BF16, kernels.Q8_0, kernels.Q8_1, kernels.Q8_K}

func kindSlot(kind kernels.Type) int {
	for i, k := range activationKinds {
		if k == kind {
			return i
		}
	}
	panic("inference: unknown activation kind " + kind.String())
}

func (in *input) set(x []float32) {
	in.x = x
	in.valid = [len(activationKinds)]bool{}
}

func (in *input) act(kind kernels.Type) *kernels.Activation {
	s := kindSlot(kind)
	if !in.valid[s] {
		kernels.QuantizeActivation(&in.acts[s], kind, in.x)
		in.valid[s] = true
	}
	return &in.acts[s]
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
	s := &State{
		m: m, c: c,
		KV:     newKVCache(c, ctx),
		rope:   newRopeTables(c, m.RopeFactors, ctx),
		x:      make([]float32, c.NEmbd),
		xb:     make([]float32, c.NEmbd),
		xb2:    make([]float32, c.NEmbd),
		q:      make([]float32, c.NHead*c.HeadDim),
		k:      make([]float32, c.KVDim()),
		v:      make([]float32, c.KVDim()),
		att:    make([]float32, c.NHead*c.HeadDim),
		hb:     make([]float32, c.NFF),
		hb2:    make([]float32, c.NFF),
		logits: make([]float32, c.NVocab),
		pool:   kernels.NewPool(threads),
	}
	s.attJob.s = s
	// Grow the activation buffers to their largest size now, so that the
	// token loop never allocates.
	for _, n := range []int{c.NEmbd, c.NHead * c.HeadDim, c.NFF} {
		for i, kind := range activationKinds {
			if n%kind.BlockSize() == 0 {
				s.in.acts[i].Reset(kind, n)
			}
		}
	}
	return s, nil
}

// Close stops the state's threads.
func (s *State) Close() { s.pool.Close() }

// Threads is the number of threads the state computes on.
func (s *State) Threads() int { return s.pool.Threads() }

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

// matmul computes out = W · in.
func (s *State) matmul(out []float32, w *Matrix) {
	a := s.in.act(w.Type.ActivationKind())
	s.pool.MatVec(&s.mv, w.Type, w.Data, w.RowBytes, a, out)
}

// Forward consumes one token at the next position and, when wantLogits is set,
// returns the logits of the next token (a slice owned by the state, valid until
// the next call). It returns an error when the context is full or the token id
// is out of range.
func (s *State) Forward(token int32, wantLogits bool) ([]float32, error) {
	c := s.c
	if token < 0 || int(token) >= c.NVocab {
		return nil, fmt.Errorf("inference: token id %d out of range [0, %d)", token, c.NVocab)
	}
	if s.pos >= s.KV.Ctx {
		return nil, fmt.Errorf("inference: context full (%d tokens)", s.KV.Ctx)
	}
	m := s.m
	kernels.DequantizeRow(m.Embed.Type, m.Embed.Row(int(token)), s.x)
	cos, sin := s.rope.at(s.pos)
	kvDim := c.KVDim()
	for l := range m.Layers {
		L := &m.Layers[l]
		// Attention.
		kernels.RMSNorm(s.xb, s.x, L.AttnNorm, c.NormEps)
		s.in.set(s.xb)
		s.matmul(s.q, L.Wq)
		s.matmul(s.k, L.Wk)
		s.matmul(s.v, L.Wv)
		if c.HasQKVBias {
			kernels.AddF32(s.q, L.Bq)
			kernels.AddF32(s.k, L.Bk)
			kernels.AddF32(s.v, L.Bv)
		}
		s.rotate(s.q, c.NHead, cos, sin)
		s.rotate(s.k, c.NHeadKV, cos, sin)
		kernels.FP32ToFP16Slice(s.KV.K[l][s.pos*kvDim:(s.pos+1)*kvDim], s.k)
		kernels.FP32ToFP16Slice(s.KV.V[l][s.pos*kvDim:(s.pos+1)*kvDim], s.v)
		s.attJob.layer = l
		s.pool.Run(c.NHead, 1, &s.attJob)
		s.in.set(s.att)
		s.matmul(s.xb2, L.Wo)
		kernels.AddF32(s.x, s.xb2)
		// Feed-forward (SwiGLU).
		kernels.RMSNorm(s.xb, s.x, L.FFNNorm, c.NormEps)
		s.in.set(s.xb)
		s.matmul(s.hb, L.Gate)
		s.matmul(s.hb2, L.Up)
		kernels.SwiGLU(s.hb, s.hb2)
		s.in.set(s.hb)
		s.matmul(s.xb2, L.Down)
		kernels.AddF32(s.x, s.xb2)
	}
	s.pos++
	if !wantLogits {
		return nil, nil
	}
	kernels.RMSNorm(s.xb, s.x, m.OutNorm, c.NormEps)
	s.in.set(s.xb)
	s.matmul(s.logits, m.Output)
	return s.logits, nil
}

func (s *State) rotate(x []float32, heads int, cos, sin []float32) {
	if s.c.RopeStyle == RopeNeox {
		kernels.RopeNeox(x, heads, s.c.HeadDim, cos, sin)
	} else {
		kernels.RopeNorm(x, heads, s.c.HeadDim, cos, sin)
	}
}

// attentionJob computes the attention output of a range of heads for one
// layer at the current position.
type attentionJob struct {
	s     *State
	layer int
}

// Do computes heads [lo, hi) with a single pass of online softmax over the
// cached keys and values: no buffer of scores is kept.
func (j *attentionJob) Do(lo, hi int) {
	s, c := j.s, j.s.c
	hd, kvDim := c.HeadDim, c.KVDim()
	group := c.NHead / c.NHeadKV
	scale := float32(1 / math.Sqrt(float64(hd)))
	K, V := s.KV.K[j.layer], s.KV.V[j.layer]
	for h := lo; h < hi; h++ {
		q := s.q[h*hd : (h+1)*hd]
		out := s.att[h*hd : (h+1)*hd]
		clear(out)
		off := (h / group) * hd
		maxScore := float32(math.Inf(-1))
		var sum float32
		for t := 0; t <= s.pos; t++ {
			score := kernels.DotF32F16(q, K[t*kvDim+off:t*kvDim+off+hd]) * scale
			if score > maxScore {
				// Rescale what was accumulated under the old maximum.
				r := float32(math.Exp(float64(maxScore - score)))
				sum *= r
				kernels.ScaleF32(out, r)
				maxScore = score
			}
			w := float32(math.Exp(float64(score - maxScore)))
			sum += w
			kernels.AxpyF32F16(out, w, V[t*kvDim+off:t*kvDim+off+hd])
		}
		kernels.ScaleF32(out, 1/sum)
	}
}

// Eval feeds ids one at a time from the current position and calls fn with the
// logits after each of them (teacher forcing). The logits slice is reused.
func (s *State) Eval(ids []int32, fn func(i int, logits []float32) error) error {
	for i, id := range ids {
		logits, err := s.Forward(id, true)
		if err != nil {
			return fmt.Errorf("position %d: %w", s.pos, err)
		}
		if err := fn(i, logits); err != nil {
			return err
		}
	}
	return nil
}

package inference

import (
	"math"

	"github.com/edgellm/edgellm/kernels"
)

// The forward pass runs a batch of consecutive tokens through each layer at
// once: every matmul multiplies a weight matrix with the inputs of all the
// batch's tokens (kernels.Pool.MatMul), so each weight row is read from memory
// once per batch; attention is causal inside the batch. A single token is a
// batch of one. Every value is computed by the same functions, in the same
// order, as for a token on its own, so the results do not depend on how the
// tokens were batched.

// maxBatch is the number of tokens a forward pass takes at most; longer runs
// of tokens go in several batches. The batch buffers hold this many rows.
const maxBatch = 32

// logitBudget is the number of logits (float32) the state keeps room for: the
// output projection of Eval runs on as many positions at once as fit.
const logitBudget = 1 << 18

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

// batchInput is the input of the current matmuls, n rows of floats, together
// with its quantized forms, each made at most once however many matrices
// multiply it.
type batchInput struct {
	x     []float32
	n     int
	acts  [len(activationKinds)][]kernels.Activation // maxBatch each, for the kinds the model uses
	valid [len(activationKinds)]bool
	job   quantizeJob
}

// newBatchInput sizes the quantized forms for every matrix of m, so that the
// forward pass never allocates.
func newBatchInput(m *Model) batchInput {
	var in batchInput
	grow := func(w *Matrix) {
		kind := w.Type.ActivationKind()
		s := kindSlot(kind)
		if in.acts[s] == nil {
			in.acts[s] = make([]kernels.Activation, maxBatch)
		}
		for i := range in.acts[s] {
			in.acts[s][i].Reset(kind, max(w.Cols, in.acts[s][i].N))
		}
	}
	for l := range m.Layers {
		L := &m.Layers[l]
		for _, w := range []*Matrix{L.Wq, L.Wk, L.Wv, L.Wo, L.Gate, L.Up, L.Down} {
			grow(w)
		}
	}
	grow(m.Output)
	return in
}

// set makes the first n rows of the batch buffer x, whose rows hold width
// values, the input.
func (in *batchInput) set(x []float32, n, width int) {
	in.x, in.n = x[:n*width], n
	in.valid = [len(activationKinds)]bool{}
}

// quantizeJob quantizes rows of a batch input.
type quantizeJob struct {
	kind kernels.Type
	x    []float32
	cols int
	acts []kernels.Activation
}

// Do quantizes rows [lo, hi).
func (j *quantizeJob) Do(lo, hi int) {
	for i := lo; i < hi; i++ {
		kernels.QuantizeActivation(&j.acts[i], j.kind, j.x[i*j.cols:(i+1)*j.cols])
	}
}

// act returns the input quantized to kind, one activation per row.
func (s *State) act(kind kernels.Type) []kernels.Activation {
	in := &s.in
	k := kindSlot(kind)
	acts := in.acts[k][:in.n]
	if !in.valid[k] {
		in.job = quantizeJob{kind, in.x, len(in.x) / in.n, acts}
		s.pool.Run(in.n, 1, &in.job)
		in.valid[k] = true
	}
	return acts
}

// matmul computes out = W · input for every row of the input, into the
// first rows of out (rows of W.Rows values).
func (s *State) matmul(out []float32, w *Matrix) {
	acts := s.act(w.Type.ActivationKind())
	s.pool.MatMul(&s.mm, w.Type, w.Data, w.RowBytes, acts, out[:len(acts)*w.Rows])
}

// row returns row i of a batch buffer whose rows hold width values.
func row(buf []float32, i, width int) []float32 { return buf[i*width : (i+1)*width] }

// forward runs tokens (at most maxBatch, already checked) through the model at
// the next positions, leaving the final residual stream of each in the rows
// of s.x.
func (s *State) forward(tokens []int32) {
	c, m := s.c, s.m
	n, p0 := len(tokens), s.pos
	e, qDim, kvDim := c.NEmbd, c.NHead*c.HeadDim, c.KVDim()
	for i, tok := range tokens {
		kernels.DequantizeRow(m.Embed.Type, m.Embed.Row(int(tok)), row(s.x, i, e))
	}
	for l := range m.Layers {
		L := &m.Layers[l]
		// Attention.
		s.norm(0, n, L.AttnNorm)
		s.matmul(s.q, L.Wq)
		s.matmul(s.k, L.Wk)
		s.matmul(s.v, L.Wv)
		for i := range n {
			q, k, v := row(s.q, i, qDim), row(s.k, i, kvDim), row(s.v, i, kvDim)
			if c.HasQKVBias {
				kernels.AddF32(q, L.Bq)
				kernels.AddF32(k, L.Bk)
				kernels.AddF32(v, L.Bv)
			}
			p := p0 + i
			cos, sin := s.rope.at(p)
			s.rotate(q, c.NHead, cos, sin)
			s.rotate(k, c.NHeadKV, cos, sin)
			kernels.FP32ToFP16Slice(s.KV.K[l][p*kvDim:(p+1)*kvDim], k)
			kernels.FP32ToFP16Slice(s.KV.V[l][p*kvDim:(p+1)*kvDim], v)
		}
		s.attJob = attentionJob{s: s, layer: l, pos: p0, n: n}
		s.pool.Run(c.NHead*n, 1, &s.attJob)
		s.in.set(s.att, n, qDim)
		s.matmul(s.xb2, L.Wo)
		for i := range n {
			kernels.AddF32(row(s.x, i, e), row(s.xb2, i, e))
		}
		// Feed-forward (SwiGLU).
		s.norm(0, n, L.FFNNorm)
		s.matmul(s.hb, L.Gate)
		s.matmul(s.hb2, L.Up)
		for i := range n {
			kernels.SwiGLU(row(s.hb, i, c.NFF), row(s.hb2, i, c.NFF))
		}
		s.in.set(s.hb, n, c.NFF)
		s.matmul(s.xb2, L.Down)
		for i := range n {
			kernels.AddF32(row(s.x, i, e), row(s.xb2, i, e))
		}
	}
	s.pos += n
}

// norm sets the first n rows of s.xb to rows lo, lo+1, … of s.x normalised
// with weight, and makes them the matmul input.
func (s *State) norm(lo, n int, weight []float32) {
	e := s.c.NEmbd
	for i := range n {
		kernels.RMSNorm(row(s.xb, i, e), row(s.x, lo+i, e), weight, s.c.NormEps)
	}
	s.in.set(s.xb, n, e)
}

// logitsOf computes the logits after rows [lo, hi) of the last batch
// (hi-lo <= s.logitRows) and returns them, hi-lo rows of NVocab values owned
// by the state.
func (s *State) logitsOf(lo, hi int) []float32 {
	s.norm(lo, hi-lo, s.m.OutNorm)
	s.matmul(s.logits, s.m.Output)
	return s.logits[:(hi-lo)*s.c.NVocab]
}

func (s *State) rotate(x []float32, heads int, cos, sin []float32) {
	if s.c.RopeStyle == RopeNeox {
		kernels.RopeNeox(x, heads, s.c.HeadDim, cos, sin)
	} else {
		kernels.RopeNorm(x, heads, s.c.HeadDim, cos, sin)
	}
}

// attentionJob computes the attention output of one layer for the n tokens of
// a batch at positions pos, pos+1, …: item h·n + i is head h of token i, so
// the items of a thread's chunk share few heads, whose keys and values stay
// in its cache.
type attentionJob struct {
	s      *State
	layer  int
	pos, n int
}

// Do computes items [lo, hi) with a single pass of online softmax over the
// cached keys and values of positions 0 … pos+i, attBlock keys at a time: no
// buffer of scores longer than a block is kept.
func (j *attentionJob) Do(lo, hi int) {
	s, c := j.s, j.s.c
	hd, qDim, kvDim := c.HeadDim, c.NHead*c.HeadDim, c.KVDim()
	group := c.NHead / c.NHeadKV
	scale := float32(1 / math.Sqrt(float64(hd)))
	K, V := s.KV.K[j.layer], s.KV.V[j.layer]
	for item := lo; item < hi; item++ {
		h, i := item/j.n, item%j.n
		q := row(s.q, i, qDim)[h*hd : (h+1)*hd]
		out := row(s.att, i, qDim)[h*hd : (h+1)*hd]
		clear(out)
		off := (h / group) * hd
		maxScore := float32(math.Inf(-1))
		var sum float32
		var w [attBlock]float32
		var r [1]float32
		last := j.pos + i
		for t0 := 0; t0 <= last; t0 += attBlock {
			blk := w[:min(attBlock, last+1-t0)]
			kernels.DotsF32F16(blk, q, K[t0*kvDim+off:], kvDim)
			blockMax := float32(math.Inf(-1))
			for b := range blk {
				blk[b] *= scale
				if blk[b] > blockMax {
					blockMax = blk[b]
				}
			}
			if blockMax > maxScore {
				// Rescale what was accumulated under the old maximum.
				r[0] = maxScore
				kernels.ExpSub(r[:], blockMax)
				sum *= r[0]
				kernels.ScaleF32(out, r[0])
				maxScore = blockMax
			}
			kernels.ExpSub(blk, maxScore)
			for _, wb := range blk {
				sum += wb
			}
			kernels.AxpysF32F16(out, blk, V[t0*kvDim+off:], kvDim)
		}
		kernels.ScaleF32(out, 1/sum)
	}
}

// attBlock is the number of keys whose scores attention computes before
// their exponentials (one vector pass, kernels.ExpSub) and their weighted
// values: the softmax is online across blocks, rescaled at most once per
// block.
const attBlock = 64

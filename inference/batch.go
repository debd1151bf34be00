package inference

import (
	"math"

	"github.com/edgellm/edgellm/kernels"
)

// The forward pass runs a batch of rows through each layer at once, each row
// a token at its position in its sequence (consecutive tokens of one
// sequence when a state computes alone; tokens of several sequences in a
// Batcher's steps): every matmul multiplies a weight matrix with the inputs
// of all the batch's rows (kernels.Pool.MatMul), so each weight row is read
// from memory once per batch; attention reads each row's own sequence's
// cache and is causal inside the batch; convolution and DeltaNet states are
// the row's sequence's. A single token is a batch of one. Every value is
// computed by the same functions, in the same order, as for a token on its
// own, so the results do not depend on how the tokens were batched.

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

// batchInput is the input of the matmuls of one step, n rows of floats,
// together with its quantized forms, each made at most once however many
// matrices multiply it (State.input makes a buffer the input).
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
		for _, w := range m.Layers[l].Matrices() {
			grow(w)
		}
	}
	grow(m.Output)
	if m.PerLayerProj != nil {
		grow(m.PerLayerProj)
	}
	return in
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

// input makes the first n rows of buf, whose rows hold width values, the
// input of the next matmuls, and returns it. buf must not change while its
// input is in use: its quantized forms are made once.
func (s *workspace) input(buf []float32, n, width int) *batchInput {
	in := &s.in
	in.x, in.n = buf[:n*width], n
	in.valid = [len(activationKinds)]bool{}
	return in
}

// act returns the input quantized to kind, one activation per row.
func (s *workspace) act(in *batchInput, kind kernels.Type) []kernels.Activation {
	k := kindSlot(kind)
	acts := in.acts[k][:in.n]
	if !in.valid[k] {
		in.job = quantizeJob{kind, in.x, len(in.x) / in.n, acts}
		s.pool.Run(in.n, 1, &in.job)
		in.valid[k] = true
	}
	return acts
}

// matmul computes out = W · in for every row of the input, into the first
// rows of out (rows of W.Rows values).
func (s *workspace) matmul(out []float32, w *Matrix, in *batchInput) {
	acts := s.act(in, w.Type.ActivationKind())
	s.pool.MatMul(&s.mm, w.Type, w.Data, w.RowBytes, acts, out[:len(acts)*w.Rows])
}

// row returns row i of a batch buffer whose rows hold width values.
func row(buf []float32, i, width int) []float32 { return buf[i*width : (i+1)*width] }

// forward runs a batch (at most maxBatch rows, tokens already checked)
// through the model, each row's token at its position in its sequence,
// leaving the final residual stream of each in the rows of s.x, and moves
// each sequence past its rows. Every layer reads a normalised copy of the
// residual stream x into xb, computes its mixer (attention, short
// convolution or Gated DeltaNet) and then its feed-forward network into
// xb2, and adds xb2 back to x; then, where the layer says so, its
// per-layer input and its output scale.
func (s *workspace) forward(rows []batchRow) {
	c, m := s.c, s.m
	n, e := len(rows), c.NEmbd
	s.rows = rows
	for i, r := range rows {
		x := row(s.x, i, e)
		kernels.DequantizeRow(m.Embed.Type, m.Embed.Row(int(r.token)), x) // x = token_embd[token]
		if c.EmbedScale != 1 {
			kernels.ScaleF32(x, c.EmbedScale) // × sqrt(NEmbd) (Gemma)
		}
	}
	if c.PerLayerDim > 0 {
		s.perLayerInputs() // pl = the per-layer inputs of every layer (gemma4)
	}
	for r := range s.rope {
		s.rope[r].compute(rows)
	}
	for l := range m.Layers {
		L, spec := &m.Layers[l], &c.Layers[l]
		// Mixer: xb2 = mixer(rmsnorm(x)·attn_norm).
		s.rmsnorm(s.xb, s.x, n, L.AttnNorm)
		switch spec.Mixer {
		case MixAttention:
			s.attention(s.xb2, s.xb, l, n) // xb2 = attention(xb)
		case MixShortConv:
			s.shortConv(s.xb2, s.xb, l, n) // xb2 = shortconv(xb)
		case MixDeltaNet:
			s.deltaNet(s.xb2, s.xb, l, n) // xb2 = deltanet(xb)
		}
		if L.PostAttnNorm != nil {
			s.rmsnorm(s.xb2, s.xb2, n, L.PostAttnNorm)
		}
		s.addRows(s.x, s.xb2, n) // x += xb2
		// Feed-forward: xb2 = ffn(rmsnorm(x)·ffn_norm).
		s.rmsnorm(s.xb, s.x, n, L.FFNNorm)
		s.ffn(s.xb2, s.xb, L, &spec.FFN, n) // xb2 = ffn(xb)
		if L.PostFFNNorm != nil {
			s.rmsnorm(s.xb2, s.xb2, n, L.PostFFNNorm)
		}
		s.addRows(s.x, s.xb2, n) // x += xb2
		if spec.PerLayerInput {
			s.perLayerMix(s.xb2, l, n) // xb2 = rmsnorm(proj·(gelu(inp_gate·x) × pl[l]))·post_norm
			s.addRows(s.x, s.xb2, n)   // x += xb2
		}
		if spec.OutScale {
			for i := range n {
				kernels.ScaleF32(row(s.x, i, c.NEmbd), L.OutScale[0]) // x ×= layer_output_scale
			}
		}
	}
	for _, r := range rows {
		r.seq.pos = r.pos + 1
	}
}

// perLayerInputs computes gemma4's per-layer inputs of the batch from the
// scaled embeddings in the rows of s.x: each row of s.pl holds, layer by
// layer, pl[l] = (rmsnorm(p[l])·per_layer_proj_norm + e[l]) / sqrt(2) with
// p = per_layer_model_proj·x / sqrt(NEmbd) and e = per_layer_token_embd[id]
// × sqrt(PerLayerDim), the reference's order of operations.
func (s *workspace) perLayerInputs() {
	c, m := s.c, s.m
	n, P, w := len(s.rows), c.PerLayerDim, c.PerLayerDim*c.NLayer
	projScale := 1 / float32(math.Sqrt(float64(c.NEmbd)))
	embdScale := float32(math.Sqrt(float64(P)))
	mixScale := 1 / float32(math.Sqrt(2))
	s.matmul(s.pl, m.PerLayerProj, s.input(s.x, n, c.NEmbd)) // pl = per_layer_model_proj·x
	for i, r := range s.rows {
		p := row(s.pl, i, w)
		kernels.ScaleF32(p, projScale) // p /= sqrt(NEmbd)
		for l := range c.NLayer {
			kernels.RMSNorm(p[l*P:(l+1)*P], p[l*P:(l+1)*P], m.PerLayerNorm, c.NormEps) // p[l] = rmsnorm(p[l])·per_layer_proj_norm
		}
		kernels.DequantizeRow(m.PerLayerEmbd.Type, m.PerLayerEmbd.Row(int(r.token)), s.plTok) // e = per_layer_token_embd[token]
		kernels.ScaleF32(s.plTok, embdScale)                                                  // e ×= sqrt(P)
		kernels.AddF32(p, s.plTok)                                                            // p += e
		kernels.ScaleF32(p, mixScale)                                                         // p /= sqrt(2)
	}
}

// perLayerMix computes layer l's per-layer input term of the batch into
// out: rmsnorm(proj·(gelu(inp_gate·x) × pl[l]))·post_norm, x the residual
// stream after the feed-forward.
func (s *workspace) perLayerMix(out []float32, l, n int) {
	L, P, e := &s.m.Layers[l], s.c.PerLayerDim, s.c.NEmbd
	w := P * s.c.NLayer
	s.matmul(s.plh, L.InpGate, s.input(s.x, n, e)) // plh = inp_gate·x
	for i := range n {
		kernels.GELUMul(row(s.plh, i, P), row(s.pl, i, w)[l*P:(l+1)*P]) // plh = gelu(plh) × pl[l]
	}
	s.matmul(out, L.Proj, s.input(s.plh, n, P)) // out = proj·plh
	s.rmsnorm(out, out, n, L.PostNorm)
}

// attention computes layer l's self-attention of the batch: out = Wo ·
// attention(q, cached keys and values) with q, k, v projected from the rows
// of x, and stores the batch's keys and values in the layer's cache. With
// an output gate (qwen35), attn_q gives each head's query then its gate, and
// the attention output is × sigmoid(gate) before Wo. A layer that reads
// another layer's cache (AttnSpec.KVLayer, gemma4) computes only its
// queries and attends to what that layer stored.
func (s *workspace) attention(out, x []float32, l, n int) {
	L, a := &s.m.Layers[l], &s.c.Layers[l].Attn
	hd, qDim, kvDim := a.HeadDim, a.QDim(), a.KVDim()
	own := a.KVLayer == l
	in := s.input(x, n, s.c.NEmbd)
	switch {
	case !own:
		s.matmul(s.q, L.Wq, in) // q = Wq·x; keys and values are in layer KVLayer's cache
	case a.OutGate:
		s.matmul(s.qkv, L.Wq, in) // qkv = Wq·x, per head [query | gate]
		for i := range n {
			q, qg := row(s.q, i, qDim), row(s.qkv, i, 2*qDim)
			for h := range a.NHead {
				copy(q[h*hd:(h+1)*hd], qg[2*h*hd:(2*h+1)*hd]) // q = the queries
			}
		}
		s.matmul(s.k, L.Wk, in) // k = Wk·x
		s.matmul(s.v, L.Wv, in) // v = Wv·x
	case L.Wqkv != nil:
		w := qDim + 2*kvDim
		s.matmul(s.qkv, L.Wqkv, in) // qkv = Wqkv·x, rows [q | k | v]
		for i := range n {
			qkv := row(s.qkv, i, w)
			copy(row(s.q, i, qDim), qkv[:qDim])
			copy(row(s.k, i, kvDim), qkv[qDim:qDim+kvDim])
			copy(row(s.v, i, kvDim), qkv[qDim+kvDim:])
		}
	default:
		s.matmul(s.q, L.Wq, in) // q = Wq·x
		s.matmul(s.k, L.Wk, in) // k = Wk·x
		if L.Wv != nil {
			s.matmul(s.v, L.Wv, in) // v = Wv·x
		} else {
			copy(s.v[:n*kvDim], s.k[:n*kvDim]) // v = the raw k (gemma4 without attn_v)
		}
	}
	s.qkvJob = qkvRowsJob{s: s, L: L, a: a, own: own}
	s.pool.Run(n, 1, &s.qkvJob) // the rows' queries finished, keys and values stored
	if own {
		for _, r := range s.rows {
			r.seq.caches[l].wrote(r.pos + 1)
		}
	}
	if s.kv == KVQ8_0 {
		for i := range n {
			q := row(s.q, i, qDim)
			for h := range a.NHead {
				kernels.QuantizeActivation(&s.qAct[h*n+i], kernels.Q8_0, q[h*hd:(h+1)*hd])
			}
		}
	}
	s.attJob = attentionJob{s: s, a: a, n: n}
	s.pool.Run(a.NHead*n, 1, &s.attJob) // att = softmax(q·Kᵀ)·V per head
	if a.OutGate {
		for i := range n {
			att, qg := row(s.att, i, qDim), row(s.qkv, i, 2*qDim)
			for h := range a.NHead {
				sigmoidMul(att[h*hd:(h+1)*hd], qg[(2*h+1)*hd:(2*h+2)*hd]) // att ×= sigmoid(gate)
			}
		}
	}
	s.matmul(out, L.Wo, s.input(s.att, n, qDim)) // out = Wo·att
}

// qkvRowsJob finishes the queries of the rows of a batch (biases, Q norm,
// RoPE, scale) and, when the layer owns its cache, their keys and values
// (storeKV): rows are independent, so threads take them in chunks.
type qkvRowsJob struct {
	s   *workspace
	L   *Layer
	a   *AttnSpec
	own bool
}

// Do finishes rows [lo, hi).
func (j *qkvRowsJob) Do(lo, hi int) {
	s, L, a := j.s, j.L, j.a
	hd, qDim := a.HeadDim, a.QDim()
	for i := lo; i < hi; i++ {
		q := row(s.q, i, qDim)
		if L.Bq != nil {
			kernels.AddF32(q, L.Bq)
		}
		if L.QNorm != nil {
			s.headNorm(q, a.NHead, hd, L.QNorm)
		}
		if a.Rope >= 0 {
			s.rope[a.Rope].rotate(q, a.NHead, hd, i)
		}
		if a.QScale != 1 {
			kernels.ScaleF32(q, a.QScale)
		}
		if j.own {
			s.storeKV(L, a, &s.rows[i].seq.caches[a.KVLayer], i)
		}
	}
}

// storeKV finishes the key and value of batch row i (biases, K norm, V norm
// without weight, RoPE) and stores them at the row's position in cache, its
// sequence's.
func (s *workspace) storeKV(L *Layer, a *AttnSpec, cache *layerCache, i int) {
	hd, kvDim := a.HeadDim, a.KVDim()
	k, v := row(s.k, i, kvDim), row(s.v, i, kvDim)
	if L.Bk != nil {
		kernels.AddF32(k, L.Bk)
		kernels.AddF32(v, L.Bv)
	}
	if L.KNorm != nil {
		s.headNorm(k, a.NHeadKV, hd, L.KNorm)
	}
	if a.VNorm {
		s.headNorm(v, a.NHeadKV, hd, ones[:hd])
	}
	if a.Rope >= 0 {
		s.rope[a.Rope].rotate(k, a.NHeadKV, hd, i)
	}
	p := s.rows[i].pos
	if cache.spec.KV == KVQ8_0 {
		kernels.QuantizeQ8_0Blocks(cache.keyBytes(p), k)
		kernels.QuantizeQ8_0Blocks(cache.valueBytes(p), v)
		return
	}
	kernels.FP32ToFP16Slice(cache.keyRow(p), k)
	kernels.FP32ToFP16Slice(cache.valueRow(p), v)
}

// ones is the weight of a norm without one (× 1 is exact).
var ones = func() []float32 {
	w := make([]float32, maxHeadDim)
	for i := range w {
		w[i] = 1
	}
	return w
}()

// shortConv computes layer l's gated short convolution (lfm2) of the batch:
// [b | c | u] = in_proj·x; the convolution runs over time on v = b × u with
// the layer's previous ConvL−1 inputs in its cache; out = out_proj·(c × conv).
// The rows of x are overwritten (they hold c × conv once in_proj has read
// them).
func (s *workspace) shortConv(out, x []float32, l, n int) {
	L, e := &s.m.Layers[l], s.c.NEmbd
	taps := s.c.Layers[l].ConvL
	s.matmul(s.bcu, L.ConvIn, s.input(x, n, e)) // bcu = in_proj·x, rows [b | c | u]
	for i := range n {
		hist := s.rows[i].seq.caches[l].conv // the sequence's inputs t−(taps−1) … t−1, the oldest first
		bcu := row(s.bcu, i, 3*e)
		b, c, u := bcu[:e], bcu[e:2*e], bcu[2*e:]
		kernels.MulF32(u, b, u) // u = b × u, this position's input
		y := row(x, i, e)
		causalConv(y, L.ConvW, hist, u, taps) // y = conv(…, u); hist takes u
		kernels.MulF32(y, c, y)               // y = c × y
	}
	s.matmul(out, L.ConvOut, s.input(x, n, e)) // out = out_proj·y
}

// causalConv sets y to a causal depthwise convolution's output at a new
// input u: y = Σ_k w[k] × input(t−(taps−1)+k), the taps in order, with the
// previous taps−1 inputs in hist (the oldest first; w and hist tap-major,
// len(u) channels a tap), and moves u into hist.
func causalConv(y, w, hist, u []float32, taps int) {
	e := len(u)
	kernels.MulF32(y, w[:e], hist[:e])
	for k := 1; k < taps-1; k++ {
		kernels.MulAddF32(y, w[k*e:(k+1)*e], hist[k*e:(k+1)*e])
	}
	kernels.MulAddF32(y, w[(taps-1)*e:], u)
	copy(hist, hist[e:])
	copy(hist[(taps-2)*e:], u)
}

// deltaNet computes layer l's Gated DeltaNet of the batch (qwen35's linear
// attention; d is its DeltaSpec, S the state size):
//
//	qkv = attn_qkv·x, rows [q (NKHead·S) | k (NKHead·S) | v (NVHead·S)]
//	z = attn_gate·x; β = sigmoid(ssm_beta·x); g = softplus(ssm_alpha·x + ssm_dt)·ssm_a
//	qkv = silu(causal depthwise conv of qkv over the last ConvL positions)
//	q, k = each head L2-normed
//	per V head h (Q/K head h mod NKHead), state M (S×S, zero at the start):
//	  M ← exp(g)·M; d = β·(v − M·k); M ← M + d·kᵀ; o = M·q / sqrt(S)
//	z = rmsnorm(o)·ssm_norm × silu(z) per head; out = ssm_out·z
//
// The convolution history and the states are the layer's cache. The
// recurrence runs token by token inside the batch (each head on its own
// thread), which gives the bits of feeding the tokens one at a time; the
// chunked form of the recurrence, faster for long prompts, is a later
// optimisation. The rows of x are read only by the projections.
func (s *workspace) deltaNet(out, x []float32, l, n int) {
	L, d := &s.m.Layers[l], &s.c.Layers[l].Delta
	S, kd, vd, cd, hv, eps := d.StateDim, d.KDim(), d.VDim(), d.ConvDim(), d.NVHead, s.c.NormEps
	in := s.input(x, n, s.c.NEmbd)
	s.matmul(s.qkv, L.Wqkv, in)      // qkv = attn_qkv·x, rows [q | k | v]
	s.matmul(s.z, L.SsmZ, in)        // z = attn_gate·x
	s.matmul(s.beta, L.SsmBeta, in)  // beta = ssm_beta·x
	s.matmul(s.gate, L.SsmAlpha, in) // gate = ssm_alpha·x
	for i := range n {
		hist, _ := s.rows[i].seq.caches[l].deltaNet(d) // the sequence's convolution history
		beta, g := row(s.beta, i, hv), row(s.gate, i, hv)
		for h := range hv {
			beta[h] = sigmoid(beta[h])                   // β = sigmoid(beta)
			g[h] = softplus(g[h]+L.SsmDt[h]) * L.SsmA[h] // g = softplus(alpha + dt)·a
		}
		qkv := row(s.qkv, i, cd)
		causalConv(s.convRow, L.ConvW, hist, qkv, d.ConvL) // convRow = conv(…, qkv); hist takes qkv
		kernels.SiLUs(s.convRow)                           // convRow = silu(convRow)
		copy(qkv, s.convRow)                               // qkv = convRow
		for h := range 2 * d.NKHead {
			l2Norm(qkv[h*S:(h+1)*S], eps) // q and k heads L2-normed
		}
	}
	s.deltaJob = deltaNetJob{s: s, d: d, l: l, n: n}
	s.pool.Run(hv, 1, &s.deltaJob) // the v part of each qkv row = o, head by head
	for i := range n {
		o, z := row(s.qkv, i, cd)[2*kd:], row(s.z, i, vd)
		for h := range hv {
			oh, zh := o[h*S:(h+1)*S], z[h*S:(h+1)*S]
			kernels.RMSNorm(oh, oh, L.SsmNorm, eps) // o = rmsnorm(o)·ssm_norm
			kernels.SwiGLU(zh, oh)                  // z = silu(z) × o
		}
	}
	s.matmul(out, L.SsmOut, s.input(s.z, n, vd)) // out = ssm_out·z
}

// ffn computes a layer's gated feed-forward network of the batch:
// out = down · (act(gate·x) × up·x).
func (s *workspace) ffn(out, x []float32, L *Layer, f *FFNSpec, n int) {
	nff := f.NFF
	in := s.input(x, n, s.c.NEmbd)
	if f.FusedUp {
		s.matmul(s.hb2, L.Up, in) // hb2 = ffn_up·x, rows [gate | up]
		for i := range n {
			gu, h := row(s.hb2, i, 2*nff), row(s.hb, i, nff)
			copy(h, gu[:nff])
			gate(f.Act, h, gu[nff:]) // hb = act(gate) × up
		}
	} else {
		s.matmul(s.hb, L.Gate, in) // hb = ffn_gate·x
		s.matmul(s.hb2, L.Up, in)  // hb2 = ffn_up·x
		for i := range n {
			gate(f.Act, row(s.hb, i, nff), row(s.hb2, i, nff)) // hb = act(hb) × hb2
		}
	}
	s.matmul(out, L.Down, s.input(s.hb, n, nff)) // out = ffn_down·hb
}

// gate sets g = act(g) × up.
func gate(act Activation, g, up []float32) {
	if act == ActGELU {
		kernels.GELUMul(g, up)
	} else {
		kernels.SwiGLU(g, up)
	}
}

// rmsnorm sets the first n rows of dst to those of src RMS-normed and scaled
// by weight (dst may be src).
func (s *workspace) rmsnorm(dst, src []float32, n int, weight []float32) {
	e := s.c.NEmbd
	for i := range n {
		kernels.RMSNorm(row(dst, i, e), row(src, i, e), weight, s.c.NormEps)
	}
}

// headNorm RMS-normalises each of heads heads of hd values of x in place,
// scaled by weight (Q/K norms).
func (s *workspace) headNorm(x []float32, heads, hd int, weight []float32) {
	for h := range heads {
		head := x[h*hd : (h+1)*hd]
		kernels.RMSNorm(head, head, weight, s.c.NormEps)
	}
}

// addRows sets dst += src for the first n rows of NEmbd values.
func (s *workspace) addRows(dst, src []float32, n int) {
	e := s.c.NEmbd
	for i := range n {
		kernels.AddF32(row(dst, i, e), row(src, i, e))
	}
}

// logitsOf computes the logits after rows [lo, hi) of the last batch
// (hi-lo <= s.logitRows) and returns them, hi-lo rows of NVocab values owned
// by the workspace.
func (s *workspace) logitsOf(lo, hi int) []float32 {
	idx := s.logitIdx[:0]
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	return s.logitsAt(idx)
}

// logitsAt computes the logits after the rows idx of the last batch
// (len(idx) <= s.logitRows) and returns them, a row of NVocab values per
// index, owned by the workspace.
func (s *workspace) logitsAt(idx []int) []float32 {
	n, e := len(idx), s.c.NEmbd
	for j, i := range idx {
		kernels.RMSNorm(row(s.xb, j, e), row(s.x, i, e), s.m.OutNorm, s.c.NormEps) // xb = rmsnorm(x)·output_norm
	}
	s.matmul(s.logits, s.m.Output, s.input(s.xb, n, e)) // logits = output·xb
	logits := s.logits[:n*s.c.NVocab]
	if c := s.c.FinalSoftcap; c > 0 {
		// logits = c·tanh(logits/c), as the reference scales, tanhs, scales.
		inv := 1 / c
		for i, v := range logits {
			logits[i] = float32(math.Tanh(float64(v*inv))) * c
		}
	}
	return logits
}

// attentionJob computes the attention output of one layer for the n rows of
// a batch, each at its position against its sequence's cache: item h·n + i
// is head h of row i, so the items of a thread's chunk share few heads,
// whose keys and values stay in its cache.
type attentionJob struct {
	s *workspace
	a *AttnSpec
	n int
}

// Do computes items [lo, hi) as the reference's attention computes them
// (llama.cpp without flash attention): the scores of the FP16 keys with the
// query rounded to FP16, a softmax whose sum is kept in float64, and the FP16
// values weighted by the normalised softmax weights rounded to FP16. A query
// sees positions 0 … pos+i, or the window's latest. Up to attScores scores
// are kept on the stack; a longer context is taken attScores positions at a
// time in three passes (maximum, sum, weighted values), the scores computed
// again in each.
//
// With a Q8_0 cache the scores are the Q8_0 dots of the query quantized to
// Q8_0 (State.qAct) with the keys, and the values are dequantized to float32
// before they are weighted and added, as the reference's attention with a
// quantized cache does; the softmax is the same.
func (j *attentionJob) Do(lo, hi int) {
	s, a := j.s, j.a
	hd, qDim := a.HeadDim, a.QDim()
	group := a.NHead / a.NHeadKV
	var qBuf [maxHeadDim]float32
	var scores [attScores]float32
	for item := lo; item < hi; item++ {
		h, i := item/j.n, item%j.n
		cache := &s.rows[i].seq.caches[a.KVLayer]
		q := qBuf[:hd]
		if s.kv == KVF16 {
			kernels.RoundFP16(q, row(s.q, i, qDim)[h*hd:(h+1)*hd])
		}
		qa := j.queryAct(item)
		out := row(s.att, i, qDim)[h*hd : (h+1)*hd]
		clear(out)
		kv := (h / group) * hd // the head's offset in a key or value row
		last := s.rows[i].pos
		first := 0
		if a.Window > 0 {
			first = max(0, last-a.Window+1)
		}
		// Three passes over the positions, attScores at a time: the maximum
		// score, the sum of the exponentials, the weighted values. When all
		// the scores fit (kept), they are computed once.
		kept := last-first < attScores
		maxScore := float32(math.Inf(-1))
		for t := first; t <= last; t += attScores {
			sc := scores[:min(attScores, last+1-t)]
			j.scores(cache, sc, q, qa, t, kv)
			for _, v := range sc {
				maxScore = max(maxScore, v)
			}
		}
		var sum float64
		for t := first; t <= last; t += attScores {
			sc := scores[:min(attScores, last+1-t)]
			if !kept {
				j.scores(cache, sc, q, qa, t, kv)
			}
			kernels.ExpSub(sc, maxScore)
			for _, v := range sc {
				sum += float64(v)
			}
		}
		for t := first; t <= last; t += attScores {
			sc := scores[:min(attScores, last+1-t)]
			if !kept {
				j.scores(cache, sc, q, qa, t, kv)
				kernels.ExpSub(sc, maxScore)
			}
			j.weigh(cache, out, sc, float32(1/sum), t, kv)
		}
	}
}

// queryAct is item's query quantized to Q8_0 with a Q8_0 cache, else nil.
func (j *attentionJob) queryAct(item int) *kernels.Activation {
	if j.s.kv != KVQ8_0 {
		return nil
	}
	return &j.s.qAct[item]
}

// scores sets sc[t] to the scaled score of the query with the key of
// position first+t (the head's part of the key row at offset kv): q rounded
// to FP16 with an FP16 cache, qa with a Q8_0 cache.
func (j *attentionJob) scores(cache *layerCache, sc, q []float32, qa *kernels.Activation, first, kv int) {
	rows, width := cache.spec.Rows, cache.spec.Width
	rb, kvb := cache.rowBytes(), kv/kvBlock*kvBlockBytes
	for t := 0; t < len(sc); {
		r := (first + t) % rows
		seg := sc[t:min(len(sc), t+rows-r)] // up to the end of a ring
		if qa != nil {
			kernels.DotsQ8_0(seg, qa, cache.kq[r*rb+kvb:], rb)
		} else {
			kernels.DotsF32F16(seg, q, cache.k[r*width+kv:], width)
		}
		t += len(seg)
	}
	if j.a.Scale != 1 {
		kernels.ScaleF32(sc, j.a.Scale)
	}
}

// weigh adds to out the values of positions first … first+len(w)−1 weighted
// by w[t]·inv rounded to FP16 (w is overwritten).
func (j *attentionJob) weigh(cache *layerCache, out, w []float32, inv float32, first, kv int) {
	kernels.ScaleF32(w, inv)
	kernels.RoundFP16(w, w)
	rows, width := cache.spec.Rows, cache.spec.Width
	rb, kvb := cache.rowBytes(), kv/kvBlock*kvBlockBytes
	for t := 0; t < len(w); {
		r := (first + t) % rows
		seg := w[t:min(len(w), t+rows-r)]
		if cache.spec.KV == KVQ8_0 {
			kernels.AxpysQ8_0(out, seg, cache.vq[r*rb+kvb:], rb)
		} else {
			kernels.AxpysF32F16(out, seg, cache.v[r*width+kv:], width)
		}
		t += len(seg)
	}
}

// maxHeadDim is the largest head dimension attention takes.
const maxHeadDim = 512

// attScores is the number of scores attention keeps at once (16 KiB of a
// worker's stack).
const attScores = 4096

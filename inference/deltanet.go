package inference

import (
	"math"

	"github.com/edgellm/edgellm/kernels"
)

// deltaNetJob runs the Gated DeltaNet recurrence of one layer over the n
// tokens of a batch: item h is V head h, which goes through the tokens in
// order (its state depends on the previous token), so the heads share the
// threads and every token gets the arithmetic of a batch of one.
type deltaNetJob struct {
	s    *workspace
	d    *DeltaSpec
	l, n int // the layer, the batch rows
}

// Do runs V heads [lo, hi) over the batch, as the reference's fused
// gated-delta-net operator does at batch 1: the state scaled by exp(g), the
// delta d[j] = (v[j] − M[j]·k)·β, M[j] += d[j]·k, o[j] = (M[j]·q)/sqrt(S),
// in one pass over the state per token (kernels.DeltaRuleF32).
// The queries and keys are the L2-normed convolution outputs in the rows of
// s.qkv; o replaces the head's values there. Each row updates the state of
// its sequence (NVHead states of StateDim × StateDim, row j = value j).
func (j *deltaNetJob) Do(lo, hi int) {
	s, d := j.s, j.d
	S, kd, cd := d.StateDim, d.KDim(), d.ConvDim()
	scale := 1 / float32(math.Sqrt(float64(S)))
	for h := lo; h < hi; h++ {
		kh := h % d.NKHead // V head h reads Q/K head h mod NKHead
		for i := range j.n {
			_, states := s.rows[i].seq.caches[j.l].deltaNet(d)
			M := states[h*S*S : (h+1)*S*S]
			qkv := row(s.qkv, i, cd)
			q, k := qkv[kh*S:(kh+1)*S], qkv[kd+kh*S:kd+(kh+1)*S]
			v := qkv[2*kd+h*S : 2*kd+(h+1)*S]
			beta, g := row(s.beta, i, d.NVHead)[h], row(s.gate, i, d.NVHead)[h]
			kernels.DeltaRuleF32(M, S, k, q, v, float32(math.Exp(float64(g))), beta, scale)
		}
	}
}

// sigmoid is 1/(1+e^−x), as the reference's expf-based sigmoid.
func sigmoid(x float32) float32 {
	return 1 / (1 + float32(math.Exp(-float64(x))))
}

// softplus is log(1+e^x), x itself above 20 (as the reference).
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log(float64(1 + float32(math.Exp(float64(x))))))
}

// sigmoidMul sets x[i] ×= sigmoid(gate[i]).
func sigmoidMul(x, gate []float32) {
	gate = gate[:len(x)]
	for i := range x {
		x[i] *= sigmoid(gate[i])
	}
}

// l2Norm scales x to unit L2 norm, x / max(‖x‖, eps), the sum of squares
// in float64 as the reference's l2_norm.
func l2Norm(x []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	kernels.ScaleF32(x, 1/max(float32(math.Sqrt(float64(float32(sum)))), eps))
}

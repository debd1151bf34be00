package inference

import "github.com/edgellm/edgellm/kernels"

// ropeRows holds cos and sin of one RoPE setting for the positions of the
// current batch: row i, Dim/2 entries, for the position of batch row i. They are computed
// once per batch with kernels.RopeTable, the reference's way of computing
// the angles, and shared by every layer of that setting.
type ropeRows struct {
	spec     *RopeSpec
	factors  []float32 // per-pair divisors for the state's context (LongRoPE: short or long)
	half     int
	cos, sin []float32
}

func newRopeRows(r *RopeSpec, ctx int) ropeRows {
	half := r.Dim / 2
	return ropeRows{spec: r, factors: r.factorsFor(ctx), half: half,
		cos: make([]float32, maxBatch*half), sin: make([]float32, maxBatch*half)}
}

// compute fills the rows of a batch, each for its row's position.
func (t *ropeRows) compute(rows []batchRow) {
	r := t.spec
	for i := range rows {
		cos, sin := t.at(i)
		kernels.RopeTable(cos, sin, rows[i].pos, r.Dim, r.Base, r.Scale, t.factors)
		if r.AttnFactor != 1 {
			kernels.ScaleF32(cos, r.AttnFactor)
			kernels.ScaleF32(sin, r.AttnFactor)
		}
	}
}

// at returns the cos and sin of row i of the batch.
func (t *ropeRows) at(i int) (cos, sin []float32) {
	return t.cos[i*t.half : (i+1)*t.half], t.sin[i*t.half : (i+1)*t.half]
}

// rotate applies the setting's rotation at batch row i to heads heads of
// headDim values in x.
func (t *ropeRows) rotate(x []float32, heads, headDim, i int) {
	cos, sin := t.at(i)
	if t.spec.Style == RopeNeox {
		kernels.RopeNeox(x, heads, headDim, cos, sin)
	} else {
		kernels.RopeNorm(x, heads, headDim, cos, sin)
	}
}

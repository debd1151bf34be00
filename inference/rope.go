package inference

import "github.com/edgellm/edgellm/kernels"

// ropeTables holds cos and sin of every rotation angle for positions 0 … ctx-1:
// row p has RopeDim/2 entries. Computed once per State, so the token loop only
// looks them up.
type ropeTables struct {
	half     int
	cos, sin []float32
}

// newRopeTables computes the tables of every position with kernels.RopeTable,
// the reference's way of computing the angles.
func newRopeTables(c *Config, factors []float32, ctx int) ropeTables {
	half := c.RopeDim / 2
	t := ropeTables{half: half, cos: make([]float32, ctx*half), sin: make([]float32, ctx*half)}
	for p := 0; p < ctx; p++ {
		cos, sin := t.at(p)
		kernels.RopeTable(cos, sin, p, c.RopeDim, c.RopeBase, c.RopeScale, factors)
	}
	return t
}

// at returns the cos and sin tables of position p.
func (t *ropeTables) at(p int) (cos, sin []float32) {
	return t.cos[p*t.half : (p+1)*t.half], t.sin[p*t.half : (p+1)*t.half]
}

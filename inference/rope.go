package inference

import "math"

// ropeTables holds cos and sin of every rotation angle for positions 0 … ctx-1:
// row p has RopeDim/2 entries. Computed once per State, so the token loop only
// looks them up.
type ropeTables struct {
	half     int
	cos, sin []float32
}

// newRopeTables computes the angles the way the reference does: for pair i the
// angle is p · scale · base^(-2i/d) / factor[i], with base^(-2/d) raised by
// repeated float32 multiplication.
func newRopeTables(c *Config, factors []float32, ctx int) ropeTables {
	half := c.RopeDim / 2
	t := ropeTables{half: half, cos: make([]float32, ctx*half), sin: make([]float32, ctx*half)}
	thetaScale := float32(math.Pow(float64(c.RopeBase), -2.0/float64(c.RopeDim)))
	for p := 0; p < ctx; p++ {
		theta := float32(p)
		row := p * half
		for i := 0; i < half; i++ {
			th := theta * c.RopeScale
			if factors != nil {
				th /= factors[i]
			}
			t.cos[row+i] = float32(math.Cos(float64(th)))
			t.sin[row+i] = float32(math.Sin(float64(th)))
			theta *= thetaScale
		}
	}
	return t
}

// at returns the cos and sin tables of position p.
func (t *ropeTables) at(p int) (cos, sin []float32) {
	return t.cos[p*t.half : (p+1)*t.half], t.sin[p*t.half : (p+1)*t.half]
}

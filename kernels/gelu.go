package kernels

import (
	"math"
	"sync"
)

// GELU, tanh form, as the reference computes it for Gemma's gated
// feed-forward (ggml_vec_geglu_f32 with GGML_GELU_FP16): inputs at or below
// -10 give 0, at or above 10 give x; in between the input is rounded to FP16
// and looked up in a table of GELU at every FP16 value, itself rounded to
// FP16. The table makes the results bit-identical to the reference's, not only
// close: Gemma's activations pass through it in every layer.

// geluTable returns the table of FP16(GELU(x)) for every FP16 bit pattern x,
// built once per process and never written afterwards.
var geluTable = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for i := range t {
		t[i] = FP32ToFP16(geluF32(FP16ToFP32(uint16(i))))
	}
	return &t
})

// geluF32 is the tanh approximation of GELU in float32 arithmetic, each
// operation rounded as the reference's C expression rounds it:
// 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))).
func geluF32(x float32) float32 {
	const (
		coefA       = float32(0.044715)
		sqrt2OverPi = float32(0.79788456080286535587989211986876)
	)
	inner := float32(sqrt2OverPi*x) * float32(1+float32(float32(coefA*x)*x))
	th := float32(math.Tanh(float64(inner)))
	return float32(float32(0.5*x) * float32(1+th))
}

// GELUMul sets gate[i] = GELU(gate[i]) · up[i] for i < len(gate) (Gemma's
// GEGLU feed-forward), with GELU looked up in the FP16 table as the reference
// does. up must be at least as long as gate.
func GELUMul(gate, up []float32) {
	up = up[:len(gate)]
	t := geluTable()
	done := geluMulAccel(gate, up, t)
	geluMulGeneric(gate[done:], up[done:], t)
}

// geluMulGeneric is GELUMul without the vector kernels.
func geluMulGeneric(gate, up []float32, t *[1 << 16]uint16) {
	up = up[:len(gate)]
	for i, x := range gate {
		switch {
		case x <= -10:
			gate[i] = 0
		case x >= 10:
			gate[i] = x * up[i]
		default:
			gate[i] = FP16ToFP32(t[FP32ToFP16(x)]) * up[i]
		}
	}
}

// MulF32 sets dst[i] = a[i]·b[i] for i < len(dst); a and b must be at least
// as long as dst. dst may alias a or b.
func MulF32(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	done := mulAccel(dst, a, b)
	for i := done; i < len(dst); i++ {
		dst[i] = a[i] * b[i]
	}
}

// MulAddF32 sets dst[i] += a[i]·b[i] for i < len(dst), the product rounded to
// float32 before it is added (no fused multiply-add, so every architecture
// gives the same bits); a and b must be at least as long as dst.
func MulAddF32(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	done := mulAddAccel(dst, a, b)
	for i := done; i < len(dst); i++ {
		dst[i] += float32(a[i] * b[i])
	}
}

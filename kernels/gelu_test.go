package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGELUMul checks GELUMul against the tanh GELU in float64: within FP16
// rounding of the table (input and output; the float32 tail below -4
// cancels to about 1e-7 absolute, as in the reference), exactly 0 at or below -10 and
// x·up at or above 10.
func TestGELUMul(t *testing.T) {
	gelu := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x)))
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		x := float32(rng.NormFloat64() * 4)
		up := float32(rng.NormFloat64())
		g := []float32{x}
		GELUMul(g, []float32{up})
		var want float64
		switch {
		case x <= -10:
			want = 0
		case x >= 10:
			want = float64(x * up)
		default:
			// FP16 input rounding moves x by up to 2^-11 relatively; the
			// output rounding adds as much again.
			want = gelu(float64(FP16ToFP32(FP32ToFP16(x)))) * float64(up)
		}
		if d := math.Abs(float64(g[0]) - want); d > 2e-3*math.Abs(want)+1e-6 {
			t.Fatalf("GELUMul(%v)·%v = %v, want %v", x, up, g[0], want)
		}
	}
	for _, c := range []struct{ x, up, want float32 }{{-10, 3, 0}, {-50, 3, 0}, {10, 0.5, 5}, {0, 9, 0}} {
		g := []float32{c.x}
		GELUMul(g, []float32{c.up})
		if g[0] != c.want {
			t.Errorf("GELUMul(%v)·%v = %v, want %v", c.x, c.up, g[0], c.want)
		}
	}
}

// TestTwinGELUMulMul compares GELUMul, MulF32 and MulAddF32 with their
// portable loops at every tier, for lengths around the vector widths and at
// unaligned offsets: the results must be the same bits.
func TestTwinGELUMulMul(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		for n := 0; n <= 70; n++ {
			for off := range 3 {
				a, b, d := make([]float32, n+off), make([]float32, n+off), make([]float32, n+off)
				for i := range a {
					a[i], b[i], d[i] = float32(rng.NormFloat64()*6), float32(rng.NormFloat64()), float32(rng.NormFloat64())
				}
				got := append([]float32(nil), a[off:]...)
				want := append([]float32(nil), a[off:]...)
				GELUMul(got, b[off:])
				geluMulGeneric(want, b[off:], geluTable())
				sameFloats(t, "GELUMul", n, off, got, want)

				got = append([]float32(nil), d[off:]...)
				MulF32(got, a[off:], b[off:])
				for i := range want {
					want[i] = a[off+i] * b[off+i]
				}
				sameFloats(t, "MulF32", n, off, got, want)

				got = append([]float32(nil), d[off:]...)
				MulAddF32(got, a[off:], b[off:])
				for i := range want {
					want[i] = d[off+i] + float32(a[off+i]*b[off+i])
				}
				sameFloats(t, "MulAddF32", n, off, got, want)
			}
		}
	})
}

func sameFloats(t *testing.T, what string, n, off int, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s n=%d offset=%d: [%d] = %v, twin %v", what, n, off, i, got[i], want[i])
		}
	}
}

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
// portable loops at every tier, for lengths up to 300 (several vector blocks
// and every tail) at unaligned offsets, on inputs spanning ±12 so that the
// ±10 cut-offs fall inside vector blocks, with special values mixed in (see
// twinGELUValue), and GELUMul on every half and its float32 neighbours: the
// results must be the same bits. MulF32 is also run in place, dst aliasing
// a, as its callers may.
func TestTwinGELUMulMul(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		// Every half as a float32 and its two float32 neighbours: every
		// entry of the table, and the rounding to halves on either side.
		var a, b []float32
		for h := range 1 << 16 {
			x := FP16ToFP32(uint16(h))
			a = append(a, x, math.Nextafter32(x, float32(math.Inf(-1))), math.Nextafter32(x, float32(math.Inf(1))))
			b = append(b, 1, 0.75, -3)
		}
		got, want := append([]float32(nil), a...), append([]float32(nil), a...)
		GELUMul(got, b)
		geluMulGeneric(want, b, geluTable())
		sameFloats(t, "GELUMul of every half", len(a), 0, got, want)

		rng := rand.New(rand.NewPCG(11, 12))
		for n := 0; n <= 300; n++ {
			if n > 70 && n%7 != 0 {
				continue
			}
			for off := range 3 {
				a, b, d := make([]float32, n+off), make([]float32, n+off), make([]float32, n+off)
				for i := range a {
					a[i], b[i], d[i] = twinGELUValue(rng), float32(rng.NormFloat64()), float32(rng.NormFloat64())
					// One special operand per lane at most: which of two
					// NaNs a product or sum keeps depends on the operand
					// order the compiler picks.
					if math.IsNaN(float64(a[i])) || math.IsInf(float64(a[i]), 0) {
						continue
					}
					switch rng.IntN(40) {
					case 0:
						b[i] = float32(math.NaN())
					case 1:
						b[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
					case 2:
						d[i] = float32(math.Inf(-1))
					}
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

				got = append([]float32(nil), a[off:]...)
				MulF32(got, got, b[off:])
				sameFloats(t, "MulF32 in place", n, off, got, want)

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

// twinGELUValue returns a random input for the GELU twin test: mostly normal
// with σ = 6 (a tenth beyond ±10), sometimes a value on or next to ±10, an
// infinity, a zero, a float32 subnormal (which rounds to a zero half), a
// value halfway between two halves (rounding to even), or a NaN: quiet or
// signalling, of either sign, with a random payload or all payload bits set
// (the NaN whose half, 0xffff, is the table's last entry).
func twinGELUValue(r *rand.Rand) float32 {
	if r.IntN(4) != 0 {
		return float32(r.NormFloat64() * 6)
	}
	sign := uint32(r.IntN(2)) << 31
	switch r.IntN(8) {
	case 0:
		return []float32{10, -10, math.Nextafter32(10, 0), math.Nextafter32(10, 20),
			math.Nextafter32(-10, 0), math.Nextafter32(-10, -20)}[r.IntN(6)]
	case 1:
		return math.Float32frombits(sign | 0x7f800000)
	case 2:
		return math.Float32frombits(sign)
	case 3:
		return math.Float32frombits(sign | uint32(1+r.IntN(1<<23-1)))
	case 4:
		// 1 + 2^-11 and the like: exactly halfway, ties to even.
		h := uint32(0x3c00 + r.IntN(0x800))
		return math.Float32frombits(sign | math.Float32bits(FP16ToFP32(uint16(h))) | 1<<12)
	case 5:
		return math.Float32frombits(0xffffffff)
	default:
		return math.Float32frombits(sign | 0x7f800000 | uint32(1+r.IntN(1<<23-1)))
	}
}

func sameFloats(t *testing.T, what string, n, off int, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s n=%d offset=%d: [%d] = %v, twin %v", what, n, off, i, got[i], want[i])
		}
	}
}

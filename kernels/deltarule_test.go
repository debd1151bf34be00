package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// deltaRuleUnfused is the gated delta rule as four passes over the state
// (the sequence DeltaRuleF32 fuses): the whole state scaled, every row's
// delta, every row's update, then every row's readout; with the portable
// kernels, so that it does not depend on the tier.
func deltaRuleUnfused(M []float32, S int, k, q, v []float32, decay, beta, scale float32) {
	for i := range M[:S*S] {
		M[i] *= decay
	}
	delta := make([]float32, S)
	for r := range S {
		delta[r] = (v[r] - dotF32SliceGeneric(M[r*S:(r+1)*S], k)) * beta
	}
	for r := range S {
		row := M[r*S : (r+1)*S]
		for i := range row {
			row[i] += float32(delta[r] * k[i])
		}
	}
	for r := range S {
		v[r] = dotF32SliceGeneric(M[r*S:(r+1)*S], q) * scale
	}
}

// sameFloat reports whether got and want are the same float32 bit pattern,
// or both NaNs (which NaN an operation on NaNs gives differs between
// instruction sets).
func sameFloat(got, want float32) bool { return sameBits(got, want) || isNaN32(got) && isNaN32(want) }

// deltaRuleData returns n random values of the magnitude class c: normal,
// small, tiny (products are float32 subnormals), large, or normal with a
// quarter of them zero.
func deltaRuleData(r *rand.Rand, n, c int) []float32 {
	x := randNormal32(r, n, []float64{1, 1e-3, 1e-20, 1e12, 1}[c%5])
	if c%5 == 4 {
		for i := range x {
			if r.IntN(4) == 0 {
				x[i] = 0
			}
		}
	}
	return x
}

// TestDeltaRule compares DeltaRuleF32 at every tier, bit for bit, with the
// unfused sequence: state sides with and without a kernel (multiples of
// eight, odd ones), several tokens in a row on the same state, every
// magnitude class for the state, keys, queries and values, unaligned
// slices, and guard values after the state and the values.
func TestDeltaRule(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(31, 32))
		for _, S := range []int{16, 32, 64, 128, 8, 24, 40, 1, 3, 7, 9, 15, 17, 33, 127} {
			for c := range 5 {
				want := deltaRuleData(r, S*S, c)
				got := guarded(want, (S+c)%8, guardD)
				copy(got, want)
				for tok := range 3 {
					k := deltaRuleData(r, S, c+tok+1)
					q := deltaRuleData(r, S, c+2*tok)
					v := deltaRuleData(r, S, c+tok)
					decay := float32(math.Exp(-r.Float64() * 2))
					beta := float32(r.Float64())
					if tok == 2 {
						decay, beta = 1, 0 // no decay, no update
					}
					scale := 1 / float32(math.Sqrt(float64(S)))
					wantV := append([]float32(nil), v...)
					deltaRuleUnfused(want, S, k, q, wantV, decay, beta, scale)
					gotV := guarded(v, S%8, guardD)
					copy(gotV, v)
					DeltaRuleF32(got, S, atOffset(k, (c+1)%8), atOffset(q, (c+3)%8), gotV, decay, beta, scale)
					for i := range want {
						if !sameFloat(got[i], want[i]) {
							t.Fatalf("S=%d class %d token %d: M[%d] = %v, unfused %v", S, c, tok, i, got[i], want[i])
						}
					}
					for i := range wantV {
						if !sameFloat(gotV[i], wantV[i]) {
							t.Fatalf("S=%d class %d token %d: v[%d] = %v, unfused %v", S, c, tok, i, gotV[i], wantV[i])
						}
					}
					if err := checkGuard(got, guardD, "M"); err != nil {
						t.Fatalf("S=%d class %d token %d: %v", S, c, tok, err)
					}
					if err := checkGuard(gotV, guardD, "v"); err != nil {
						t.Fatalf("S=%d class %d token %d: %v", S, c, tok, err)
					}
				}
			}
		}
	})
}

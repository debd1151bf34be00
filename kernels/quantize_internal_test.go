package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pruneCases returns sub-blocks of n values from several distributions,
// including ones where candidates tie or the fit is degenerate.
func pruneCases(n, count int) [][]float32 {
	rng := rand.New(rand.NewPCG(11, 12))
	gens := []func(i int) float64{
		func(int) float64 { return rng.NormFloat64() * 0.02 },
		func(int) float64 { return rng.NormFloat64()*0.02 + 0.05 }, // all positive
		func(int) float64 { return rng.Float64() - 0.5 },
		func(int) float64 { return math.Tan(math.Pi * (rng.Float64() - 0.5)) }, // heavy tails
		func(i int) float64 { // sparse
			if rng.IntN(4) == 0 {
				return rng.NormFloat64()
			}
			return 0
		},
		func(int) float64 { return float64(rng.IntN(7)-3) * 0.25 }, // few levels, ties
		func(int) float64 { return rng.NormFloat64() * 1e-25 },
		func(int) float64 { return rng.NormFloat64() * 1e-36 },
		func(int) float64 { return rng.NormFloat64() * 1e6 },
		func(i int) float64 { return float64(i) },
	}
	var out [][]float32
	for k := range count {
		gen := gens[k%len(gens)]
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(gen(i))
		}
		out = append(out, x)
	}
	return out
}

// Pruning candidates of the K-quant searches must not change any result.
func TestQKX2PruneExact(t *testing.T) {
	params := []struct {
		nmax         int32
		rmin, rdelta float32
		nstep        int
	}{{15, -1, 0.1, 20}, {31, -0.5, 0.1, 15}} // Q4_K, Q5_K
	for _, p := range params {
		for k, xs := range pruneCases(32, 20000) {
			x := (*[32]float32)(xs)
			var w [32]float32
			kWeights(x, &w)
			var l1, l2 [32]uint8
			s1, m1 := makeQKX2(x, &w, &l1, p.nmax, p.rmin, p.rdelta, p.nstep, false)
			s2p, m2 := makeQKX2(x, &w, &l2, p.nmax, p.rmin, p.rdelta, p.nstep, true)
			if l1 != l2 || math.Float32bits(s1) != math.Float32bits(s2p) || math.Float32bits(m1) != math.Float32bits(m2) {
				t.Fatalf("nmax %d, case %d: pruned search gives %v %v %v, full search %v %v %v", p.nmax, k, s2p, m2, l2, s1, m1, l1)
			}
		}
	}
}

func TestQXQuantsPruneExact(t *testing.T) {
	for k, x := range pruneCases(16, 40000) {
		var l1, l2 [16]int8
		s1 := makeQXQuants16(x, l1[:], false)
		s2 := makeQXQuants16(x, l2[:], true)
		if l1 != l2 || math.Float32bits(s1) != math.Float32bits(s2) {
			t.Fatalf("case %d: pruned search gives %v %v, full search %v %v", k, s2, l2, s1, l1)
		}
	}
}

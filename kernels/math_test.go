package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// closeRel reports whether got is within rel·max(|want|, floor) of want.
func closeRel(got float32, want, rel, floor float64) bool {
	return math.Abs(float64(got)-want) <= rel*math.Max(math.Abs(want), floor)
}

func TestRMSNorm(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		for _, n := range []int{1, 7, 64, 4096} {
			x := randNormal32(r, n, 3)
			w := randNormal32(r, n, 1)
			const eps = 1e-5
			var ss float64
			for _, v := range x {
				ss += float64(v) * float64(v)
			}
			scale := 1 / math.Sqrt(ss/float64(n)+eps)
			out := make([]float32, n)
			RMSNorm(out, x, w, eps)
			for i := range out {
				want := float64(x[i]) * scale * float64(w[i])
				if !closeRel(out[i], want, 1e-6, 0) {
					t.Fatalf("n=%d: out[%d] = %v, want %v", n, i, out[i], want)
				}
			}
			// In place gives the same result.
			RMSNorm(x, x, w, eps)
			for i := range x {
				if x[i] != out[i] {
					t.Fatalf("n=%d: in-place result differs at %d", n, i)
				}
			}
		}
		// A zero vector stays zero thanks to eps.
		z := make([]float32, 8)
		RMSNorm(z, z, []float32{1, 1, 1, 1, 1, 1, 1, 1}, 1e-6)
		for _, v := range z {
			if v != 0 {
				t.Fatalf("zero vector: %v", z)
			}
		}
		// Hand case: x = (3, 4) has mean square 12.5.
		out := make([]float32, 2)
		RMSNorm(out, []float32{3, 4}, []float32{1, 2}, 0)
		if want0, want1 := 3/math.Sqrt(12.5), 8/math.Sqrt(12.5); !closeRel(out[0], want0, 1e-7, 0) || !closeRel(out[1], want1, 1e-7, 0) {
			t.Fatalf("RMSNorm(3,4) = %v, want %v %v", out, want0, want1)
		}
	})
}

// TestTwinRMSNorm compares RMSNorm, whose vector kernels do the multiples
// of eight (or four), with its portable twin bit for bit, for lengths around
// the vector widths and model sizes, at offsets, in place too.
func TestTwinRMSNorm(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		for _, n := range []int{1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 64, 100, 960, 2048, 2051} {
			for off := range 3 {
				x := atOffset(randNormal32(r, n, []float64{1, 1e-3, 300}[off]), off)
				w := atOffset(randNormal32(r, n, 1), (off+1)%4)
				want := make([]float32, n)
				rmsNormGeneric(want, x, w, 1e-5)
				got := guarded(make([]float32, n), off, guardD)
				RMSNorm(got, x, w, 1e-5)
				for i := range want {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("n=%d offset=%d: out[%d] = %v, twin %v", n, off, i, got[i], want[i])
					}
				}
				if err := checkGuard(got, guardD, "out"); err != nil {
					t.Fatalf("n=%d offset=%d: %v", n, off, err)
				}
				RMSNorm(x, x, w, 1e-5)
				for i := range want {
					if !sameBits(x[i], want[i]) {
						t.Fatalf("n=%d offset=%d: in place, x[%d] = %v, twin %v", n, off, i, x[i], want[i])
					}
				}
			}
		}
	})
}

func TestSoftmax(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 24))
		for _, n := range []int{1, 2, 10, 1000} {
			for _, scale := range []float64{1, 30, 1000} {
				x := randNormal32(r, n, scale)
				mx := math.Inf(-1)
				for _, v := range x {
					mx = math.Max(mx, float64(v))
				}
				want := make([]float64, n)
				var sum float64
				for i, v := range x {
					want[i] = math.Exp(float64(v) - mx)
					sum += want[i]
				}
				orig := append([]float32(nil), x...)
				Softmax(x)
				var total float64
				for i := range x {
					// float32(x - max) is rounded: a relative error of the
					// exponent's argument, |x - max|·2^-24, on top of float32 noise.
					rel := 1e-6 + math.Abs(float64(orig[i])-mx)*0x1p-23
					if !closeRel(x[i], want[i]/sum, rel, 1e-30) {
						t.Fatalf("n=%d scale=%v: p[%d] = %v, want %v", n, scale, i, x[i], want[i]/sum)
					}
					total += float64(x[i])
				}
				if math.Abs(total-1) > 1e-5 {
					t.Fatalf("n=%d scale=%v: probabilities sum to %v", n, scale, total)
				}
			}
		}
		// Masked entries (-Inf) get probability 0; equal logits are uniform.
		x := []float32{float32(math.Inf(-1)), 2, 2, float32(math.Inf(-1))}
		Softmax(x)
		if x[0] != 0 || x[3] != 0 || x[1] != 0.5 || x[2] != 0.5 {
			t.Fatalf("masked softmax = %v", x)
		}
		Softmax(nil)
	})
}

func TestSiLUSwiGLU(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		for _, v := range []float32{-100, -20, -3, -1, -1e-3, 0, 1e-3, 0.5, 1, 3, 20, 100} {
			want := float64(v) / (1 + math.Exp(-float64(v)))
			if got := SiLU(v); !closeRel(got, want, 3e-7, 1e-30) {
				t.Errorf("SiLU(%v) = %v, want %v", v, got, want)
			}
		}
		if SiLU(0) != 0 || SiLU(100) != 100 {
			t.Error("SiLU(0) or SiLU(100) not exact")
		}
		if v := SiLU(-1000); v != 0 || math.IsNaN(float64(v)) {
			t.Errorf("SiLU(-1000) = %v, want 0", v)
		}
		r := rand.New(rand.NewPCG(25, 26))
		gate, up := randNormal32(r, 100, 2), randNormal32(r, 100, 1)
		orig := append([]float32(nil), gate...)
		SwiGLU(gate, up)
		for i := range gate {
			if want := SiLU(orig[i]) * up[i]; gate[i] != want {
				t.Fatalf("SwiGLU[%d] = %v, want %v", i, gate[i], want)
			}
		}
		// SiLUs over more values than its ones buffer, and a tail the
		// vector kernels leave to the loop.
		x := randNormal32(r, 203, 4)
		orig = append(orig[:0], x...)
		SiLUs(x)
		for i := range x {
			if want := SiLU(orig[i]); math.Float32bits(x[i]) != math.Float32bits(want) {
				t.Fatalf("SiLUs[%d] = %v, SiLU %v", i, x[i], want)
			}
		}
	})
}

func TestRopeTable(t *testing.T) {
	cos, sin := make([]float32, 64), make([]float32, 64)

	// Position 0: all angles 0.
	RopeTable(cos, sin, 0, 128, 10000, 1, nil)
	for i := range cos {
		if cos[i] != 1 || sin[i] != 0 {
			t.Fatalf("pos 0: cos[%d] = %v, sin[%d] = %v", i, cos[i], i, sin[i])
		}
	}

	// Hand case: ropeDim 4, base 10000: theta_scale = powf(10000, -0.5) = 0.01f,
	// angles 1 and 0.01f.
	RopeTable(cos[:2], sin[:2], 1, 4, 10000, 1, nil)
	want := [4]float32{
		float32(math.Cos(1)), float32(math.Sin(1)),
		float32(math.Cos(float64(float32(0.01)))), float32(math.Sin(float64(float32(0.01)))),
	}
	if [4]float32{cos[0], sin[0], cos[1], sin[1]} != want {
		t.Fatalf("pos 1 ropeDim 4: got %v %v, want %v", cos[:2], sin[:2], want)
	}

	// Against the float64 formula. The reference's float32 recurrence for theta
	// drifts by about one rounding per step, so allow |theta|·(i+2)·2^-23.
	for _, pos := range []int{1, 17, 500, 4095, 100000} {
		for _, base := range []float32{10000, 500000, 1e6} {
			const dim = 128
			RopeTable(cos, sin, pos, dim, base, 1, nil)
			for i := range dim / 2 {
				theta := float64(pos) * math.Pow(float64(base), -2*float64(i)/dim)
				tol := theta*float64(i+2)*0x1p-23 + 1e-7
				if math.Abs(float64(cos[i])-math.Cos(theta)) > tol || math.Abs(float64(sin[i])-math.Sin(theta)) > tol {
					t.Fatalf("pos %d base %v i %d: cos,sin = %v,%v want %v,%v", pos, base, i, cos[i], sin[i], math.Cos(theta), math.Sin(theta))
				}
			}
		}
	}
}

func TestRopeIdentityAndNorms(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	const nHeads, headDim = 4, 64
	cos, sin := make([]float32, headDim/2), make([]float32, headDim/2)
	for _, rope := range []func([]float32, int, int, []float32, []float32){RopeNorm, RopeNeox} {
		x := randNormal32(r, nHeads*headDim, 1)
		orig := append([]float32(nil), x...)
		RopeTable(cos, sin, 0, headDim, 10000, 1, nil)
		rope(x, nHeads, headDim, cos, sin)
		for i := range x {
			if x[i] != orig[i] {
				t.Fatalf("pos 0 changed x[%d]", i)
			}
		}
		RopeTable(cos, sin, 1234, headDim, 10000, 1, nil)
		rope(x, nHeads, headDim, cos, sin)
		for h := range nHeads {
			var n0, n1 float64
			for i := h * headDim; i < (h+1)*headDim; i++ {
				n0 += float64(orig[i]) * float64(orig[i])
				n1 += float64(x[i]) * float64(x[i])
			}
			if math.Abs(n0-n1) > 1e-6*n0 {
				t.Fatalf("head %d norm² %v became %v", h, n0, n1)
			}
		}
	}
}

// neoxFromNorm permutes a head from the normal pair layout (2i, 2i+1) to the NeoX
// layout (i, i+n), n pairs; values from 2n on stay in place.
func neoxFromNorm(x []float32, nHeads, headDim, n int) []float32 {
	y := append([]float32(nil), x...)
	for h := range nHeads {
		src, dst := x[h*headDim:], y[h*headDim:]
		for i := range n {
			dst[i], dst[i+n] = src[2*i], src[2*i+1]
		}
	}
	return y
}

func TestRopeNeoxMatchesNormPermuted(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	const nHeads, headDim = 3, 96
	for _, ropeDim := range []int{96, 64, 32} {
		n := ropeDim / 2
		cos, sin := make([]float32, n), make([]float32, n)
		RopeTable(cos, sin, 777, ropeDim, 10000, 1, nil)
		x := randNormal32(r, nHeads*headDim, 1)
		y := neoxFromNorm(x, nHeads, headDim, n)
		orig := append([]float32(nil), x...)
		RopeNorm(x, nHeads, headDim, cos, sin)
		RopeNeox(y, nHeads, headDim, cos, sin)
		xp := neoxFromNorm(x, nHeads, headDim, n)
		for i := range xp {
			if xp[i] != y[i] {
				t.Fatalf("ropeDim %d: neox[%d] = %v, permuted norm = %v", ropeDim, i, y[i], xp[i])
			}
		}
		// The values past ropeDim are untouched.
		for h := range nHeads {
			for i := h*headDim + ropeDim; i < (h+1)*headDim; i++ {
				if x[i] != orig[i] {
					t.Fatalf("ropeDim %d: x[%d] changed", ropeDim, i)
				}
			}
		}
	}
}

func TestRopeRelativePosition(t *testing.T) {
	// The score of a rotated query and key depends only on their distance.
	r := rand.New(rand.NewPCG(31, 32))
	const headDim = 128
	q0, k0 := randNormal32(r, headDim, 1), randNormal32(r, headDim, 1)
	cos, sin := make([]float32, headDim/2), make([]float32, headDim/2)
	score := func(rope func([]float32, int, int, []float32, []float32), pq, pk int) float32 {
		q, k := append([]float32(nil), q0...), append([]float32(nil), k0...)
		RopeTable(cos, sin, pq, headDim, 10000, 1, nil)
		rope(q, 1, headDim, cos, sin)
		RopeTable(cos, sin, pk, headDim, 10000, 1, nil)
		rope(k, 1, headDim, cos, sin)
		return DotF32(q, k)
	}
	for _, rope := range []func([]float32, int, int, []float32, []float32){RopeNorm, RopeNeox} {
		a, b := score(rope, 5, 0), score(rope, 105, 100)
		if math.Abs(float64(a-b)) > 1e-4*float64(headDim) {
			t.Fatalf("score at distance 5: %v at (5,0), %v at (105,100)", a, b)
		}
		if c := score(rope, 0, 0); math.Abs(float64(c-DotF32(q0, k0))) > 1e-5 {
			t.Fatalf("score at (0,0) = %v, want %v", c, DotF32(q0, k0))
		}
	}
}

func TestRopeRotatesUnitVector(t *testing.T) {
	// (1, 0) rotated by theta is (cos theta, sin theta).
	x := []float32{1, 0, 1, 0}
	RopeNorm(x, 1, 4, []float32{0.6, 0}, []float32{0.8, 1})
	if x[0] != 0.6 || x[1] != 0.8 || x[2] != 0 || x[3] != 1 {
		t.Fatalf("RopeNorm = %v", x)
	}
	y := []float32{1, 1, 0, 0}
	RopeNeox(y, 1, 4, []float32{0.6, 0}, []float32{0.8, 1})
	if y[0] != 0.6 || y[2] != 0.8 || y[1] != 0 || y[3] != 1 {
		t.Fatalf("RopeNeox = %v", y)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("tables longer than half a head did not panic")
		}
	}()
	RopeNorm(x, 1, 4, make([]float32, 3), make([]float32, 3))
}

func TestFloatVectorHelpers(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(33, 34))
		for _, n := range []int{0, 1, 7, 8, 9, 128, 1001} {
			a, b := randNormal32(r, n, 1), randNormal32(r, n, 1)
			bh := make([]uint16, n)
			FP32ToFP16Slice(bh, b)
			var want, wantH, abs, absH float64
			for i := range n {
				want += float64(a[i]) * float64(b[i])
				abs += math.Abs(float64(a[i]) * float64(b[i]))
				p := float64(a[i]) * float64(FP16ToFP32(bh[i]))
				wantH += p
				absH += math.Abs(p)
			}
			if got := DotF32(a, b); math.Abs(float64(got)-want) > dotRoundingTol(n, abs) {
				t.Fatalf("DotF32 n=%d = %v, want %v", n, got, want)
			}
			if got := DotF32F16(a, bh); math.Abs(float64(got)-wantH) > dotRoundingTol(n, absH) {
				t.Fatalf("DotF32F16 n=%d = %v, want %v", n, got, wantH)
			}

			y := append([]float32(nil), a...)
			AxpyF32(y, 0.5, b)
			for i := range y {
				if y[i] != a[i]+0.5*b[i] {
					t.Fatalf("AxpyF32[%d] = %v", i, y[i])
				}
			}
			y = append(y[:0], a...)
			AxpyF32F16(y, -2, bh)
			for i := range y {
				if y[i] != a[i]-2*FP16ToFP32(bh[i]) {
					t.Fatalf("AxpyF32F16[%d] = %v", i, y[i])
				}
			}
			y = append(y[:0], a...)
			ScaleF32(y, 3)
			for i := range y {
				if y[i] != a[i]*3 {
					t.Fatalf("ScaleF32[%d] = %v", i, y[i])
				}
			}
			y = append(y[:0], a...)
			AddF32(y, b)
			for i := range y {
				if y[i] != a[i]+b[i] {
					t.Fatalf("AddF32[%d] = %v", i, y[i])
				}
			}
		}
		if got := DotF32([]float32{1, 2, 3}, []float32{4, 5, 6, 7}); got != 32 {
			t.Fatalf("DotF32 hand case = %v, want 32", got)
		}
	})
}

func TestMathNoAlloc(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(35, 36))
		const nHeads, headDim = 8, 128
		x := randNormal32(r, nHeads*headDim, 1)
		w := randNormal32(r, len(x), 1)
		out := make([]float32, len(x))
		h := make([]uint16, len(x))
		cos, sin := make([]float32, headDim/2), make([]float32, headDim/2)
		if n := testing.AllocsPerRun(20, func() {
			RMSNorm(out, x, w, 1e-5)
			Softmax(out)
			SwiGLU(out, w)
			RopeTable(cos, sin, 42, headDim, 10000, 1, nil)
			RopeNorm(out, nHeads, headDim, cos, sin)
			RopeNeox(out, nHeads, headDim, cos, sin)
			FP32ToFP16Slice(h, x)
			DotF32(x, w)
			DotF32F16(x, h)
			AxpyF32F16(out, 0.5, h)
			AxpyF32(out, 0.5, x)
			ScaleF32(out, 0.5)
			AddF32(out, x)
		}); n != 0 {
			t.Fatalf("allocs = %v", n)
		}
	})
}

func BenchmarkSwiGLU(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	gate, up := randNormal32(r, 11008, 1), randNormal32(r, 11008, 1)
	b.SetBytes(int64(4 * len(gate)))
	for range b.N {
		SwiGLU(gate, up)
	}
}

// TestRopeTableScaling checks the linear scale and the per-pair factors: both
// divide the angle, so a factor of 2 equals a scale of 0.5.
func TestRopeTableScaling(t *testing.T) {
	const dim = 16
	plain, scaled, factored := make([]float32, dim), make([]float32, dim), make([]float32, dim)
	sinA, sinB, sinC := make([]float32, dim), make([]float32, dim), make([]float32, dim)
	factors := make([]float32, dim/2)
	for i := range factors {
		factors[i] = 2
	}
	RopeTable(plain, sinA, 300, dim, 10000, 1, nil)
	RopeTable(scaled, sinB, 300, dim, 10000, 0.5, nil)
	RopeTable(factored, sinC, 300, dim, 10000, 1, factors)
	for i := 0; i < dim/2; i++ {
		if scaled[i] != factored[i] || sinB[i] != sinC[i] {
			t.Fatalf("pair %d: scale 0.5 gives (%v, %v), factor 2 gives (%v, %v)", i, scaled[i], sinB[i], factored[i], sinC[i])
		}
		if i == 0 && scaled[0] == plain[0] {
			t.Fatalf("scaling changed nothing: cos %v", plain[0])
		}
	}
}

// TestExpApprox checks expApprox against the float64 exponential over its
// whole range, in steps finer than the polynomial's interval: at most two
// units in the last place, +Inf above the range and e^expLo below it.
func TestExpApprox(t *testing.T) {
	worst := 0.0
	for y := float32(expLo); y <= expHi; y += 1.0 / 1024 {
		for _, v := range []float32{y, min(math.Nextafter32(y, 100), expHi)} {
			got, want := float64(expApprox(v)), math.Exp(float64(v))
			ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
			if e := math.Abs(got-want) / ulp; e > worst {
				worst = e
			}
		}
	}
	if worst > 2 {
		t.Errorf("expApprox: worst error %.2f ulp, want at most 2", worst)
	}
	t.Logf("expApprox: worst error %.2f ulp", worst)
	if v := expApprox(89); !math.IsInf(float64(v), 1) {
		t.Errorf("expApprox(89) = %v, want +Inf", v)
	}
	if v, want := expApprox(-1000), expApprox(expLo); v != want {
		t.Errorf("expApprox(-1000) = %v, want e^expLo = %v", v, want)
	}
	if v := expApprox(float32(math.NaN())); !math.IsNaN(float64(v)) {
		t.Errorf("expApprox(NaN) = %v", v)
	}
}

// TestRopeRoundsAsFusedMultiplyAdd pins the rounding of the rotation: each
// output is one product rounded to float32 plus the other product, added
// exactly and rounded once, as the reference's contracted C code computes it.
// The expected values were computed with C's fmaf; in each case rounding both
// products (the second pair of values) gives different bits for both outputs.
func TestRopeRoundsAsFusedMultiplyAdd(t *testing.T) {
	cases := []struct{ x0, x1, c, s, want0, want1, unfused0, unfused1 float32 }{
		{0x1.7f89e4p+0, 0x1.c9ad48p-1, 0x1.d164c4p-1, 0x1.aadcacp-2, 0x1.fa7736p-1, 0x1.6fe37ep+0, 0x1.fa7738p-1, 0x1.6fe37cp+0},
		{-0x1.fc36cp+0, 0x1.43dc78p-1, 0x1.b57936p-1, 0x1.0a0264p-1, -0x1.032f48p+1, -0x1.f6ba94p-2, -0x1.032f4ap+1, -0x1.f6ba98p-2},
		{-0x1.8280ecp+0, -0x1.857458p-1, -0x1.978864p-1, 0x1.35efe8p-1, 0x1.a9850ap+0, -0x1.3be42ep-2, 0x1.a9850cp+0, -0x1.3be43p-2},
	}
	for i, tc := range cases {
		cos, sin := []float32{tc.c}, []float32{tc.s}
		norm := []float32{tc.x0, tc.x1}
		RopeNorm(norm, 1, 2, cos, sin)
		neox := []float32{tc.x0, tc.x1}
		RopeNeox(neox, 1, 2, cos, sin)
		for _, got := range [][]float32{norm, neox} {
			if got[0] != tc.want0 || got[1] != tc.want1 {
				t.Errorf("case %d: rotated to (%x, %x), want (%x, %x) (both products rounded: (%x, %x))",
					i, got[0], got[1], tc.want0, tc.want1, tc.unfused0, tc.unfused1)
			}
		}
	}
}

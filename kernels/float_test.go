package kernels

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
)

// halfValue is an independent decoding of a finite or infinite half: the IEEE
// formula evaluated in float64.
func halfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(mant, -24)
	case 0x1f:
		if mant == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1024+mant, exp-25)
}

func isHalfNaN(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }

func TestFP16ToFP32Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := FP16ToFP32(h)
		want := halfValue(h)
		if isHalfNaN(h) {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("FP16ToFP32(%#04x) = %v, want NaN", h, f)
			}
			if math.Signbit(float64(f)) != (h&0x8000 != 0) {
				t.Fatalf("FP16ToFP32(%#04x) lost the NaN sign", h)
			}
			if back := FP32ToFP16(f); !isHalfNaN(back) || back&0x8000 != h&0x8000 {
				t.Fatalf("FP32ToFP16(FP16ToFP32(%#04x)) = %#04x, want a NaN of the same sign", h, back)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != math.Signbit(want) {
			t.Fatalf("FP16ToFP32(%#04x) = %v, want %v", h, f, want)
		}
		if back := FP32ToFP16(f); back != h {
			t.Fatalf("FP32ToFP16(FP16ToFP32(%#04x)) = %#04x", h, back)
		}
	}
}

// positiveHalves lists the values of the finite non-negative halves 0x0000…0x7bff
// in increasing order (the bit patterns are ordered like the values).
func positiveHalves() []float64 {
	v := make([]float64, 0x7c00)
	for i := range v {
		v[i] = halfValue(uint16(i))
	}
	return v
}

// refFP32ToFP16 rounds f to half precision independently of FP32ToFP16: it finds
// the two neighbouring halves by binary search and compares |f| with their exact
// midpoint (exact in float64: the halves have 11 significant bits).
func refFP32ToFP16(halves []float64, f float32) uint16 {
	var sign uint16
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	ax := math.Abs(float64(f))
	switch {
	case math.IsNaN(ax):
		return 0x7e00 | sign
	case ax >= 65520: // midpoint of 65504 and 2^16; the tie goes to the even 2^16 = Inf
		return 0x7c00 | sign
	}
	i := sort.SearchFloat64s(halves, ax) // first half >= ax
	if i == len(halves) {
		return 0x7bff | sign
	}
	if halves[i] == ax {
		return uint16(i) | sign
	}
	lo, hi := i-1, i
	mid := (halves[lo] + halves[hi]) / 2
	switch {
	case ax < mid:
		return uint16(lo) | sign
	case ax > mid:
		return uint16(hi) | sign
	case lo%2 == 0:
		return uint16(lo) | sign
	default:
		return uint16(hi) | sign
	}
}

func checkFP32ToFP16(t *testing.T, halves []float64, f float32) {
	t.Helper()
	got, want := FP32ToFP16(f), refFP32ToFP16(halves, f)
	if isHalfNaN(want) {
		if !isHalfNaN(got) || got&0x8000 != want&0x8000 {
			t.Fatalf("FP32ToFP16(%v [%#08x]) = %#04x, want a NaN of the same sign", f, math.Float32bits(f), got)
		}
		return
	}
	if got != want {
		t.Fatalf("FP32ToFP16(%g [%#08x]) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
	}
}

func TestFP32ToFP16Rounding(t *testing.T) {
	halves := positiveHalves()
	check := func(f float32) {
		checkFP32ToFP16(t, halves, f)
		checkFP32ToFP16(t, halves, -f)
	}

	// Specials and edges.
	for _, f := range []float32{
		0, 1, 65504, 65519.996, 65520, 65536, 1e6, math.MaxFloat32,
		float32(math.Inf(1)), float32(math.NaN()),
		0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1.8p-25, 0x1p-26, 0x1.8p-24, 0x1.4p-24,
		0x1p-14, 0x1.ff8p-15, 0x1.ffcp-15, 0x1p-149, 0x1p-126,
		1.0009765625,  // 1 + 2^-10: a half
		1.00048828125, // 1 + 2^-11: tie, rounds to even 1
		1.00146484375, // 1 + 3·2^-11: tie, rounds to even 1 + 2^-9
	} {
		check(f)
	}
	if FP32ToFP16(1.00048828125) != 0x3c00 || FP32ToFP16(1.00146484375) != 0x3c02 {
		t.Fatal("ties do not round to even")
	}
	if FP32ToFP16(65520) != 0x7c00 || FP32ToFP16(65519.996) != 0x7bff {
		t.Fatal("overflow threshold wrong")
	}
	if FP32ToFP16(0x1p-25) != 0 || FP32ToFP16(0x1.000002p-25) != 1 || FP32ToFP16(0x1.8p-24) != 2 {
		t.Fatal("subnormal rounding wrong")
	}

	// Every half, every midpoint between neighbours and the floats next to it.
	for i := 0; i+1 < len(halves); i++ {
		check(float32(halves[i]))
		mid := float32((halves[i] + halves[i+1]) / 2) // exact
		check(mid)
		check(math.Nextafter32(mid, 0))
		check(math.Nextafter32(mid, 1e9))
	}
	mid := float32(65520)
	check(math.Nextafter32(mid, 0))

	// A sweep through all float32 bit patterns and random ones.
	for b := uint32(0); b < 0x80000000; b += 2039 {
		check(math.Float32frombits(b))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		check(math.Float32frombits(r.Uint32()))
		// Concentrate on the half range 2^-26 … 2^17.
		check(float32(math.Ldexp(r.Float64()+0.5, r.IntN(44)-26)))
	}
}

func TestBF16ToFP32(t *testing.T) {
	cases := []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0}, {0x3f80, 1}, {0xc040, -3}, {0x4049, 3.140625}, {0x7f80, float32(math.Inf(1))},
		{0xff80, float32(math.Inf(-1))}, {0x0001, 0x1p-133},
	}
	for _, c := range cases {
		if got := BF16ToFP32(c.h); got != c.want {
			t.Errorf("BF16ToFP32(%#04x) = %v, want %v", c.h, got, c.want)
		}
	}
	if !math.IsNaN(float64(BF16ToFP32(0x7fc0))) {
		t.Error("BF16ToFP32(0x7fc0) is not NaN")
	}
}

// refFP32ToBF16 rounds f to bfloat16 by comparing it with the exact midpoint of
// its two bfloat16 neighbours (finite f only).
func refFP32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	lo := b &^ 0xffff // truncation: the neighbour towards zero
	hi := lo + 0x10000
	flo, fhi := float64(math.Float32frombits(lo)), float64(math.Float32frombits(hi))
	if hi&0x7fffffff == 0x7f800000 {
		fhi = math.Copysign(0x1p128, float64(f)) // the next step past the largest finite bfloat16
	}
	mid := (flo + fhi) / 2 // exact
	switch d := math.Abs(float64(f)) - math.Abs(mid); {
	case d < 0:
		return uint16(lo >> 16)
	case d > 0:
		return uint16(hi >> 16)
	}
	if lo>>16&1 == 0 {
		return uint16(lo >> 16)
	}
	return uint16(hi >> 16)
}

func TestFP32ToBF16(t *testing.T) {
	cases := map[float32]uint16{
		0: 0x0000, 1: 0x3f80, -3: 0xc040, 3.140625: 0x4049,
		1 + 0x1p-8:            0x3f80, // tie, to even (down)
		1 + 3*0x1p-8:          0x3f82, // tie, to even (up)
		1 + 0x1p-8 + 0x1p-20:  0x3f81,
		0x1.fffffep127:        0x7f80, // rounds past the largest bfloat16
		float32(math.Inf(-1)): 0xff80,
		0x1p-130:              0x0008, // subnormal, kept
	}
	for f, want := range cases {
		if got := FP32ToBF16(f); got != want {
			t.Errorf("FP32ToBF16(%g) = %#04x, want %#04x", f, got, want)
		}
	}
	for _, nan := range []uint32{0x7fc00000, 0x7f800001, 0xff800001, 0x7fffffff} {
		h := FP32ToBF16(math.Float32frombits(nan))
		if !math.IsNaN(float64(BF16ToFP32(h))) || h&0x40 == 0 || h>>15 != uint16(nan>>31) {
			t.Errorf("FP32ToBF16(NaN %#08x) = %#04x, want a quiet NaN of the same sign", nan, h)
		}
	}
	check := func(f float32) {
		if math.IsNaN(float64(f)) {
			return
		}
		if got, want := FP32ToBF16(f), refFP32ToBF16(f); got != want {
			t.Fatalf("FP32ToBF16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for b := uint32(0); b < 0x80000000; b += 997 {
		check(math.Float32frombits(b))
		check(math.Float32frombits(b | 0x80000000))
	}
	r := rand.New(rand.NewPCG(3, 5))
	for range 1 << 18 {
		check(math.Float32frombits(r.Uint32()&^0xffff | 0x8000)) // ties
		check(math.Float32frombits(r.Uint32()))
	}
}

// exactFMA32 is a·b + c rounded once to float32, computed exactly with math/big.
func exactFMA32(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(256).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(256).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(256).SetFloat64(float64(c)))
	f, _ := x.Float32()
	if f == 0 && a*b+c == 0 {
		return a*b + c // the sign of an exact zero
	}
	return f
}

func TestFMA32(t *testing.T) {
	check := func(a, b, c float32) {
		t.Helper()
		if got, want := fma32(a, b, c), exactFMA32(a, b, c); got != want && !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	// Double rounding: a·b + c = 1 + 2^-23 + 2^-24 - 2^-64 rounds to the float64
	// 1 + 2^-23 + 2^-24, halfway between two float32 values, whose tie goes up;
	// the exact sum is below the midpoint and must round down.
	a, b, c := float32(0x1p-24*(1+0x1p-20)), float32(1-0x1p-20), float32(1+0x1p-23)
	if got := fma32(a, b, c); got != c {
		t.Fatalf("double-rounding case: fma32 = %g, want %g", got, c)
	}
	check(a, b, c)
	check(-a, b, -c)
	check(a, -b, c) // exact sum above the midpoint (1 + 2^-24 + 2^-64 below c)
	r := rand.New(rand.NewPCG(7, 9))
	randF := func() float32 { return float32(math.Ldexp(r.NormFloat64(), r.IntN(40)-20)) }
	for range 1 << 16 {
		x, y, z := randF(), randF(), randF()
		check(x, y, z)
		// Sums near cancellation and near float32 midpoints.
		p := float32(float64(x) * float64(y))
		check(x, y, -p)
		check(x, y, math.Float32frombits(math.Float32bits(-p)^1))
		// Integer-valued lanes times a scale, as in the dot products.
		check(x, float32(r.IntN(1<<16)-1<<15), z)
	}
	// Subnormal float32 results take the slow path.
	for range 1 << 12 {
		x := float32(math.Ldexp(r.Float64()+0.5, -70))
		y := float32(math.Ldexp(r.Float64()+0.5, -60))
		z := float32(math.Ldexp(r.Float64()-0.5, -128))
		check(x, y, z)
	}
	check(float32(math.Inf(1)), 1, 1)
	check(1e30, 1e30, 0) // overflow to infinity
}

func TestHorizontalSums(t *testing.T) {
	// Lane values of very different magnitude, so that the order of the
	// additions shows in the result.
	var x16 [16]float32
	for l := range x16 {
		x16[l] = float32(math.Ldexp(1+float64(l)/16, 2*l-12))
		if l%3 == 0 {
			x16[l] = -x16[l]
		}
	}
	// The reference's reduction, written as the register operations it
	// performs: 256-bit halves, 128-bit halves, 64-bit halves, then two lanes.
	var y8 [8]float32
	for l := range y8 {
		y8[l] = x16[8+l] + x16[l]
	}
	var y4 [4]float32
	for l := range y4 {
		y4[l] = y8[4+l] + y8[l]
	}
	want16 := (y4[2] + y4[0]) + (y4[3] + y4[1])
	if got := hsum16(&x16); got != want16 {
		t.Errorf("hsum16 = %v, want %v", got, want16)
	}
	x8 := (*[8]float32)(x16[4:])
	for l := range y4 {
		y4[l] = x8[4+l] + x8[l]
	}
	want8 := (y4[0] + y4[2]) + (y4[1] + y4[3])
	if got := hsum8(x8); got != want8 {
		t.Errorf("hsum8 = %v, want %v", got, want8)
	}
}

func TestFP16Slices(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		src := []float32{0, 1, -2, 0.1, 65504, 1e9, 0x1p-24}
		h := make([]uint16, len(src)+2)
		FP32ToFP16Slice(h, src)
		back := make([]float32, len(src))
		FP16ToFP32Slice(back, h[:len(src)])
		for i, v := range src {
			if h[i] != FP32ToFP16(v) || back[i] != FP16ToFP32(h[i]) {
				t.Fatalf("slice conversion differs at %d", i)
			}
		}
		if h[len(src)] != 0 {
			t.Fatal("FP32ToFP16Slice wrote past len(src)")
		}
		if back[4] != 65504 || !math.IsInf(float64(back[5]), 1) || back[6] != 0x1p-24 {
			t.Fatalf("unexpected values %v", back)
		}
		if n := testing.AllocsPerRun(10, func() {
			FP32ToFP16Slice(h, src)
			FP16ToFP32Slice(back, h[:len(src)])
		}); n != 0 {
			t.Fatalf("allocs = %v", n)
		}
	})
}

// TestFP32ToFP16SliceTwin checks that FP32ToFP16Slice, whose vector kernel
// converts the multiples of eight, gives FP32ToFP16's bits for a sweep of
// float32 bit patterns (every exponent, NaNs with many payloads, infinities,
// subnormals, the overflow edge and rounding ties), at every offset of a
// slice and for lengths around the vector width, without writing past dst.
func TestFP32ToFP16SliceTwin(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		var src []float32
		for b := uint32(0); b < 1<<18; b++ {
			bits := b*16381 + b>>5 // spread over all 2^32 patterns
			src = append(src, math.Float32frombits(bits), math.Float32frombits(bits^0x80000000))
		}
		src = append(src, 65519.996, 65520, 1.00048828125, 1.00146484375, 0x1p-25, 0x1.000002p-25,
			float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00001))
		dst := make([]uint16, len(src)+8)
		for off := range 8 {
			s := src[off:]
			for i := range dst {
				dst[i] = 0xdead
			}
			FP32ToFP16Slice(dst, s)
			for i, v := range s {
				if want := FP32ToFP16(v); dst[i] != want {
					t.Fatalf("offset %d: value %d (%#08x) converts to %#04x, FP32ToFP16 gives %#04x", off, i, math.Float32bits(v), dst[i], want)
				}
			}
			if dst[len(s)] != 0xdead {
				t.Fatalf("offset %d: written past len(src)", off)
			}
		}
		for n := range 20 {
			h := make([]uint16, n+1)
			h[n] = 0xdead
			FP32ToFP16Slice(h, src[100:100+n])
			for i := range n {
				if h[i] != FP32ToFP16(src[100+i]) {
					t.Fatalf("n=%d: value %d differs", n, i)
				}
			}
			if h[n] != 0xdead {
				t.Fatalf("n=%d: written past len(src)", n)
			}
		}
	})
}

func TestDequantFloatHandWritten(t *testing.T) {
	f32 := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(-1e-3))
	f16 := []byte{0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00} // 1, -2, 65504, 2^-24
	bf16 := []byte{0x80, 0x3f, 0x40, 0xc0, 0x49, 0x40}            // 1, -3, 3.140625
	cases := []struct {
		typ  Type
		src  []byte
		want []float32
	}{
		{F32, f32, []float32{1.5, -1e-3}},
		{F16, f16, []float32{1, -2, 65504, 0x1p-24}},
		{BF16, bf16, []float32{1, -3, 3.140625}},
	}
	for _, c := range cases {
		got := make([]float32, len(c.want))
		DequantizeRow(c.typ, c.src, got)
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%v value %d = %v, want %v", c.typ, i, got[i], c.want[i])
			}
		}
	}
}

// floatRow returns n random weights encoded as type t (F32, F16 or BF16), and
// their exact float values.
func floatRow(r *rand.Rand, t Type, n int) ([]byte, []float32) {
	w := make([]byte, 0, n*4)
	vals := make([]float32, n)
	for i := range vals {
		v := float32(r.NormFloat64() * 0.05)
		switch t {
		case F32:
			w = binary.LittleEndian.AppendUint32(w, math.Float32bits(v))
		case F16:
			h := FP32ToFP16(v)
			w = binary.LittleEndian.AppendUint16(w, h)
			v = FP16ToFP32(h)
		case BF16:
			h := uint16(math.Float32bits(v) >> 16)
			w = binary.LittleEndian.AppendUint16(w, h)
			v = BF16ToFP32(h)
		}
		vals[i] = v
	}
	return w, vals
}

// dotRoundingTol bounds the float32 rounding error of a sum of n products whose
// absolute values add up to absSum, accumulated in at most 8 chains.
func dotRoundingTol(n int, absSum float64) float64 {
	return float64(n/8+8) * 0x1p-23 * absSum
}

// refOrderFloatDot recomputes a float dot with the activation values of a
// (already rounded to a.Kind) in the order of the reference's x86 AVX-512
// kernels, written as the vector registers they use:
//
//	F16:  four registers of 16 lanes fed 64 values at a time, added as
//	      (r0+r2)+(r1+r3) and reduced; the tail added in float64.
//	BF16: two registers of 16 lanes fed 64 values at a time by VDPBF16PS (lane l
//	      of the first takes values 2l+1, then 2l; of the second 32+2l+1, then
//	      32+2l), each reduced and added in float64, the tail in float64.
//
// Products of an F16 (BF16) weight and activation are exact in float32, so a
// fused multiply-add is a plain float32 addition of the product.
func refOrderFloatDot(t Type, wv []float32, a *Activation) float32 {
	x := a.F[:a.N]
	n := len(x)
	switch t {
	case F16:
		var r [4][16]float32
		np := n &^ 63
		for i := 0; i < np; i += 64 {
			for j := range r {
				for l := range r[j] {
					k := i + 16*j + l
					r[j][l] = exactFMA32(wv[k], x[k], r[j][l])
				}
			}
		}
		var v [16]float32
		for l := range v {
			v[l] = (r[0][l] + r[2][l]) + (r[1][l] + r[3][l])
		}
		sum := float64(hsum16(&v))
		for i := np; i < n; i++ {
			sum += float64(wv[i] * x[i])
		}
		return float32(sum)
	case BF16:
		var c [2][16]float32
		np := n &^ 63
		for i := 0; i < np; i += 64 {
			for j := range c {
				for l := range c[j] {
					k := i + 32*j + 2*l
					c[j][l] = exactFMA32(wv[k+1], x[k+1], c[j][l])
					c[j][l] = exactFMA32(wv[k], x[k], c[j][l])
				}
			}
		}
		sum := float64(hsum16(&c[0]))
		sum += float64(hsum16(&c[1]))
		for i := np; i < n; i++ {
			sum += float64(wv[i] * x[i])
		}
		return float32(sum)
	}
	panic("refOrderFloatDot: " + t.String())
}

func TestFloatDots(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		var a Activation
		for _, typ := range []Type{F32, F16, BF16} {
			for _, n := range []int{1, 7, 8, 9, 31, 32, 63, 64, 65, 100, 256, 1000, 4096, 5003} {
				for range 3 {
					w, wv := floatRow(r, typ, n)
					x := randNormal32(r, n, 1)
					QuantizeActivation(&a, typ.ActivationKind(), x)
					got := DotRow(typ, w, &a)
					// The activation as the dot sees it: rounded to F16/BF16.
					var want, abs float64
					for i := range n {
						p := float64(wv[i]) * float64(a.F[i])
						want += p
						abs += math.Abs(p)
					}
					if d := math.Abs(float64(got) - want); d > dotRoundingTol(n, abs) {
						t.Fatalf("%v n=%d: dot = %v, want %v (diff %g)", typ, n, got, want, d)
					}
					if typ != F32 {
						if exact := refOrderFloatDot(typ, wv, &a); got != exact {
							t.Fatalf("%v n=%d: dot = %v, reference-order dot = %v", typ, n, got, exact)
						}
					}
					dq := make([]float32, n)
					DequantizeRow(typ, w, dq)
					for i := range dq {
						if dq[i] != wv[i] {
							t.Fatalf("%v dequant[%d] = %v, want %v", typ, i, dq[i], wv[i])
						}
					}
				}
			}
		}
	})
}

// TestQuantizeActivationFloat checks the float activation kinds: F32 keeps the
// values, F16 and BF16 round each to nearest even in that precision.
func TestQuantizeActivationFloat(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(8, 9))
		x := randNormal32(r, 1000, 3)
		x = append(x, 0, float32(math.Copysign(0, -1)), 1+0x1p-11, 1+3*0x1p-11, 1+0x1p-8, 70000, 0x1p-30, float32(math.Inf(-1)))
		var a Activation
		for _, kind := range []Type{F32, F16, BF16} {
			if got := kind.ActivationKind(); got != kind {
				t.Errorf("%v.ActivationKind() = %v, want %v", kind, got, kind)
			}
			QuantizeActivation(&a, kind, x)
			if a.Kind != kind || a.N != len(x) || len(a.F) != len(x) {
				t.Fatalf("%v: activation shape kind %v n %d len %d", kind, a.Kind, a.N, len(a.F))
			}
			for i, v := range x {
				want := v
				switch kind {
				case F16:
					want = FP16ToFP32(FP32ToFP16(v))
				case BF16:
					want = BF16ToFP32(refFP32ToBF16(v))
				}
				if math.Float32bits(a.F[i]) != math.Float32bits(want) {
					t.Fatalf("%v: value %d (%g) = %g, want %g", kind, i, v, a.F[i], want)
				}
				if math.Signbit(float64(a.F[i])) != math.Signbit(float64(v)) {
					t.Fatalf("%v: value %d (%g) lost its sign: %g", kind, i, v, a.F[i])
				}
			}
		}
	})
}

// randNormal32 returns n normal random values times scale.
func randNormal32(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func TestFloatDotsNoAlloc(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		x := randNormal32(r, 4096, 1)
		var a Activation
		for _, typ := range []Type{F32, F16, BF16} {
			w, _ := floatRow(r, typ, len(x))
			dst := make([]float32, len(x))
			kind := typ.ActivationKind()
			QuantizeActivation(&a, kind, x)
			if n := testing.AllocsPerRun(20, func() {
				QuantizeActivation(&a, kind, x)
				DotRow(typ, w, &a)
				DequantizeRow(typ, w, dst)
			}); n != 0 {
				t.Errorf("%v: allocs = %v", typ, n)
			}
		}
	})
}

package kernels

import (
	"encoding/binary"
	"math"
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

func TestFP16Slices(t *testing.T) {
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

func TestFloatDots(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var a Activation
	for _, typ := range []Type{F32, F16, BF16} {
		for _, n := range []int{1, 7, 8, 9, 31, 32, 100, 256, 1000, 4096, 5003} {
			for range 3 {
				w, wv := floatRow(r, typ, n)
				x := randNormal32(r, n, 1)
				QuantizeActivation(&a, typ.ActivationKind(), x)
				got := DotRow(typ, w, &a)
				var want, abs float64
				for i := range n {
					p := float64(wv[i]) * float64(x[i])
					want += p
					abs += math.Abs(p)
				}
				if d := math.Abs(float64(got) - want); d > dotRoundingTol(n, abs) {
					t.Fatalf("%v n=%d: dot = %v, want %v (diff %g)", typ, n, got, want, d)
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
	r := rand.New(rand.NewPCG(5, 6))
	x := randNormal32(r, 4096, 1)
	var a Activation
	for _, typ := range []Type{F32, F16, BF16} {
		w, _ := floatRow(r, typ, len(x))
		dst := make([]float32, len(x))
		QuantizeActivation(&a, F32, x)
		if n := testing.AllocsPerRun(20, func() {
			QuantizeActivation(&a, F32, x)
			DotRow(typ, w, &a)
			DequantizeRow(typ, w, dst)
		}); n != 0 {
			t.Errorf("%v: allocs = %v", typ, n)
		}
	}
}

func benchDotRow(b *testing.B, typ Type, w []byte, x []float32) {
	var a Activation
	QuantizeActivation(&a, typ.ActivationKind(), x)
	b.SetBytes(int64(len(w)))
	b.ResetTimer()
	var s float32
	for range b.N {
		s += DotRow(typ, w, &a)
	}
	benchSinkFloat = s
}

var benchSinkFloat float32

func BenchmarkDotF32(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	w, _ := floatRow(r, F32, 4096)
	benchDotRow(b, F32, w, randNormal32(r, 4096, 1))
}

func BenchmarkDotF16(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	w, _ := floatRow(r, F16, 4096)
	benchDotRow(b, F16, w, randNormal32(r, 4096, 1))
}

func BenchmarkDotBF16(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	w, _ := floatRow(r, BF16, 4096)
	benchDotRow(b, BF16, w, randNormal32(r, 4096, 1))
}

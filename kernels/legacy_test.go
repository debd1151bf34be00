package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var legacyTypes = []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0}

// legacyHasMin reports whether blocks of t carry a minimum m after d.
func legacyHasMin(t Type) bool { return t == Q4_1 || t == Q5_1 }

// randomLegacyRow returns n values of random valid blocks of type t: random quant
// bytes, and scales (and minimums) that are fp16 encodings of sane random values.
func randomLegacyRow(r *rand.Rand, t Type, n int) []byte {
	rowBytes, err := t.RowBytes(n)
	if err != nil {
		panic(err)
	}
	w := make([]byte, rowBytes)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := 0; b < rowBytes; b += t.BlockBytes() {
		d := float32(r.Float64()*0.02 + 1e-4)
		if r.IntN(2) == 0 {
			d = -d // the formats do not forbid negative scales
		}
		binary.LittleEndian.PutUint16(w[b:], FP32ToFP16(d))
		if legacyHasMin(t) {
			binary.LittleEndian.PutUint16(w[b+2:], FP32ToFP16(float32(r.NormFloat64()*0.1)))
		}
	}
	return w
}

// legacyBlock builds one block from its parts: the fp16 header values, the optional
// 32-bit qh and the quant bytes.
func legacyBlock(header []float32, qh *uint32, qs []byte) []byte {
	var b []byte
	for _, v := range header {
		b = binary.LittleEndian.AppendUint16(b, FP32ToFP16(v))
	}
	if qh != nil {
		b = binary.LittleEndian.AppendUint32(b, *qh)
	}
	return append(b, qs...)
}

// rampNibbles is 16 bytes whose low nibbles count 0…15 and high nibbles 15…0.
func rampNibbles() []byte {
	qs := make([]byte, 16)
	for j := range qs {
		qs[j] = byte(j) | byte(15-j)<<4
	}
	return qs
}

func TestDequantLegacyHandWritten(t *testing.T) {
	qh := uint32(1<<0 | 1<<5 | 1<<20 | 1<<31)
	q8 := make([]byte, 32)
	for j := range q8 {
		q8[j] = byte(int8(j*7 - 100))
	}
	cases := []struct {
		typ   Type
		blk   []byte
		check map[int]float32 // value index -> expected value
	}{
		// Q4_0, d = 0.5: x = (q-8)/2.
		{Q4_0, legacyBlock([]float32{0.5}, nil, rampNibbles()), map[int]float32{
			0: -4, 1: -3.5, 7: -0.5, 8: 0, 15: 3.5, 16: 3.5, 17: 3, 23: 0, 24: -0.5, 31: -4,
		}},
		// Q4_1, d = 0.25, m = -1: x = q/4 - 1.
		{Q4_1, legacyBlock([]float32{0.25, -1}, nil, rampNibbles()), map[int]float32{
			0: -1, 1: -0.75, 4: 0, 15: 2.75, 16: 2.75, 19: 2, 31: -1,
		}},
		// Q5_0, d = 1, fifth bits set for values 0, 5, 20, 31: x = q - 16.
		{Q5_0, legacyBlock([]float32{1}, &qh, rampNibbles()), map[int]float32{
			0: 0, 1: -15, 5: 5, 15: -1, 16: -1, 20: 11, 21: -6, 31: 0,
		}},
		// Q5_1, d = 0.5, m = 2: x = q/2 + 2.
		{Q5_1, legacyBlock([]float32{0.5, 2}, &qh, rampNibbles()), map[int]float32{
			0: 10, 1: 2.5, 5: 12.5, 15: 9.5, 16: 9.5, 20: 15.5, 21: 7, 31: 10,
		}},
		// Q8_0, d = 0.125, qs[j] = 7j-100: x = (7j-100)/8.
		{Q8_0, legacyBlock([]float32{0.125}, nil, q8), map[int]float32{
			0: -12.5, 1: -11.625, 14: -0.25, 15: 0.625, 31: 14.625,
		}},
	}
	for _, c := range cases {
		if len(c.blk) != c.typ.BlockBytes() {
			t.Fatalf("%v: test block has %d bytes", c.typ, len(c.blk))
		}
		got := make([]float32, QK)
		DequantizeRow(c.typ, c.blk, got)
		for i, want := range c.check {
			if got[i] != want {
				t.Errorf("%v value %d = %v, want %v", c.typ, i, got[i], want)
			}
		}
	}
}

// dequantActivation expands a quantized activation: Qs[i]·D[block].
func dequantActivation(a *Activation) []float64 {
	out := make([]float64, a.N)
	for i := range out {
		out[i] = float64(a.Qs[i]) * float64(a.D[i/QK])
	}
	return out
}

// refLegacyDot is the float64 check of a fused dot: Σ w[i]·a[i] over the
// dequantized row and activation. For the types with a minimum the reference
// format replaces m·Σ a[i] of a block by m·s with s = fp16(d_float·Σq), so that
// difference is added explicitly. It also returns Σ of the absolute terms, for a
// tolerance.
func refLegacyDot(t Type, w []byte, a *Activation) (dot, absSum float64) {
	wf := make([]float32, a.N)
	DequantizeRow(t, w, wf)
	af := dequantActivation(a)
	bb := t.BlockBytes()
	for b := range a.N / QK {
		var blockDot, blockSum float64
		for i := b * QK; i < (b+1)*QK; i++ {
			p := float64(wf[i]) * af[i]
			blockDot += p
			blockSum += math.Abs(p)
		}
		if legacyHasMin(t) {
			m := float64(FP16ToFP32(binary.LittleEndian.Uint16(w[b*bb+2:])))
			var sumA float64
			for i := b * QK; i < (b+1)*QK; i++ {
				sumA += af[i]
			}
			blockDot += m * (float64(a.Sum[b]) - sumA)
			blockSum += math.Abs(m * float64(a.Sum[b]))
		}
		dot += blockDot
		absSum += blockSum
	}
	return dot, absSum
}

// activationCases returns named random activation vectors of n values.
func activationCases(r *rand.Rand, n int) map[string][]float32 {
	neg := randNormal32(r, n, 2)
	for i := range neg {
		neg[i] = -float32(math.Abs(float64(neg[i])))
	}
	neg[n/2] = 0.5
	mixed := randNormal32(r, n, 1)
	for i := range mixed {
		if i%64 < 32 {
			mixed[i] *= 1e-3 // blocks of very different scales
		}
	}
	return map[string][]float32{
		"normal":   randNormal32(r, n, 1),
		"negheavy": neg,
		"mixed":    mixed,
	}
}

func TestLegacyDots(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		var a Activation
		for _, typ := range legacyTypes {
			for _, n := range []int{32, 64, 96, 256, 1024, 4096, 4096 + 32, 11008} {
				for seed := range 3 {
					w := randomLegacyRow(r, typ, n)
					for name, x := range activationCases(r, n) {
						QuantizeActivation(&a, typ.ActivationKind(), x)
						got := DotRow(typ, w, &a)
						want, abs := refLegacyDot(typ, w, &a)
						tol := float64(n/QK+4) * 0x1p-23 * abs
						if d := math.Abs(float64(got) - want); d > tol {
							t.Fatalf("%v n=%d seed=%d %s: dot = %v, want %v (diff %g > tol %g)",
								typ, n, seed, name, got, want, d, tol)
						}
						if exact := refOrderDot(typ, w, &a); got != exact {
							t.Fatalf("%v n=%d %s: dot = %v, reference-order dot = %v", typ, n, name, got, exact)
						}
					}
				}
			}
		}
	})
}

// refOrderDot recomputes a fused dot block by block from the dequantized integer
// quants, with the float32 operations of the reference implementation's x86
// kernels (each fused multiply-add rounded once, computed exactly with
// math/big):
//
//	Q4_0 (repacked gemv):  sum = fma(sumi, d_w·d_a, sum)
//	others (AVX2 vec_dot): acc[t] = fma(d_w·d_a, lane_t, acc[t]) with lane_t the
//	                       integer sum of values 4t…4t+3, then
//	                       ((acc0+acc4)+(acc2+acc6)) + ((acc1+acc5)+(acc3+acc7))
//	Q4_1, Q5_1:            + summs, with summs = fma(m_w, s_a, summs)
//
// The weight quants are recovered from the dequantized values, (x - m)/d.
func refOrderDot(t Type, w []byte, a *Activation) float32 {
	bb := t.BlockBytes()
	wf := make([]float32, a.N)
	DequantizeRow(t, w, wf)
	var (
		sum, summs float32
		acc        [8]float32
	)
	for b := range a.N / QK {
		dw := FP16ToFP32(binary.LittleEndian.Uint16(w[b*bb:]))
		var mw float32
		if legacyHasMin(t) {
			mw = FP16ToFP32(binary.LittleEndian.Uint16(w[b*bb+2:]))
		}
		var lanes [8]int32
		for i := b * QK; i < (b+1)*QK; i++ {
			q := int32(math.Round(float64(wf[i]-mw) / float64(dw)))
			lanes[(i%QK)/4] += q * int32(a.Qs[i])
		}
		d := dw * a.D[b]
		if t == Q4_0 {
			var sumi int32
			for _, l := range lanes {
				sumi += l
			}
			sum = exactFMA32(float32(sumi), d, sum)
			continue
		}
		for k, l := range lanes {
			acc[k] = exactFMA32(d, float32(l), acc[k])
		}
		if legacyHasMin(t) {
			summs = exactFMA32(mw, a.Sum[b], summs)
		}
	}
	if t == Q4_0 {
		return sum
	}
	return (((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))) + summs
}

// TestLegacyDotRoundingOrder makes the per-block integer sums large (activation
// signs follow the weight quants' signs) so that they have more significant bits
// than the float32 products can hold exactly, where the order of the float32
// operations of the reference becomes visible, and requires bit-exact agreement.
func TestLegacyDotRoundingOrder(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		var a Activation
		const n = 1024
		for _, typ := range legacyTypes {
			for range 20 {
				w := randomLegacyRow(r, typ, n)
				wf := make([]float32, n)
				DequantizeRow(typ, w, wf)
				x := make([]float32, n)
				for i := range x {
					v := wf[i]
					if legacyHasMin(typ) {
						v = 1 // unsigned quants: a positive activation correlates
					} else if f16at(w, i/QK*typ.BlockBytes()) < 0 {
						v = -v // negative scale
					}
					x[i] = float32(math.Copysign(0.5+0.5*r.Float64(), float64(v)))
				}
				QuantizeActivation(&a, typ.ActivationKind(), x)
				if got, want := DotRow(typ, w, &a), refOrderDot(typ, w, &a); got != want {
					t.Fatalf("%v: dot = %v, reference-order dot = %v", typ, got, want)
				}
			}
		}
	})
}

func TestLegacyDotKnownValue(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		// One Q8_0 block times itself: the activation of the dequantized weights
		// reproduces the weights' own quants when the block's absmax quant is 127.
		qs := make([]byte, 32)
		for j := range qs {
			qs[j] = byte(int8(j*8 - 121)) // -121 … 127
		}
		w := legacyBlock([]float32{0.5}, nil, qs)
		x := make([]float32, 32)
		DequantizeRow(Q8_0, w, x)
		var a Activation
		QuantizeActivation(&a, Q8_0, x)
		var want int32
		for j := range qs {
			if int8(qs[j]) != a.Qs[j] {
				t.Fatalf("requantized q[%d] = %d, want %d", j, a.Qs[j], int8(qs[j]))
			}
			want += int32(int8(qs[j])) * int32(int8(qs[j]))
		}
		if a.D[0] != 0.5 {
			t.Fatalf("activation d = %v, want 0.5", a.D[0])
		}
		if got := DotRow(Q8_0, w, &a); got != float32(want)*0.25 {
			t.Fatalf("dot = %v, want %v", got, float32(want)*0.25)
		}
	})
}

func TestRoundToEven(t *testing.T) {
	cases := map[float32]int32{
		0: 0, 0.5: 0, -0.5: 0, 1.5: 2, 2.5: 2, -2.5: -2, 0.49999997: 0, -0.49999997: 0,
		126.5: 126, -127.49: -127, 3.7: 4, -3.2: -3,
	}
	for v, want := range cases {
		if got := roundToEvenInt32(v); got != want {
			t.Errorf("roundToEvenInt32(%v) = %d, want %d", v, got, want)
		}
	}
}

func TestQuantizeActivationQ8(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		var a Activation
		for _, kind := range []Type{Q8_0, Q8_1} {
			for _, n := range []int{32, 64, 4096} {
				for name, x := range activationCases(r, n) {
					t.Run(fmt.Sprintf("%v/%d/%s", kind, n, name), func(t *testing.T) {
						QuantizeActivation(&a, kind, x)
						checkQ8Activation(t, kind, x, &a)
					})
				}
			}
			// Zero vector.
			x := make([]float32, 64)
			QuantizeActivation(&a, kind, x)
			for i, q := range a.Qs {
				if q != 0 {
					t.Fatalf("%v zero vector: q[%d] = %d", kind, i, q)
				}
			}
			for b := range a.D {
				if a.D[b] != 0 || (kind == Q8_1 && a.Sum[b] != 0) {
					t.Fatalf("%v zero vector: block %d d = %v", kind, b, a.D[b])
				}
			}
		}
	})
}

// checkQ8Activation checks a against the reference quantization of x: d is the
// float32 max|x|/127, stored rounded to fp16; every quant is within half a step
// of x/d, the absmax value maps to ±127, and for Q8_1 Sum = fp16(d·Σq).
func checkQ8Activation(t *testing.T, kind Type, x []float32, a *Activation) {
	t.Helper()
	if a.Kind != kind || a.N != len(x) || len(a.Qs) != len(x) || len(a.D) != len(x)/QK {
		t.Fatalf("activation shape: kind %v n %d, %d quants, %d scales", a.Kind, a.N, len(a.Qs), len(a.D))
	}
	for b := range len(x) / QK {
		xs, qs := x[b*QK:(b+1)*QK], a.Qs[b*QK:(b+1)*QK]
		var amax float32
		for _, v := range xs {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		if want := FP16ToFP32(FP32ToFP16(d)); a.D[b] != want {
			t.Fatalf("block %d: D = %v, want fp16(%v) = %v", b, a.D[b], d, want)
		}
		var sum, qmax int32
		for j, v := range xs {
			q := int32(qs[j])
			sum += q
			qmax = max(qmax, q, -q)
			// Error with the float32 scale the quants were made with.
			if e := math.Abs(float64(v) - float64(q)*float64(d)); e > float64(d)/2*(1+1e-5) {
				t.Fatalf("block %d value %d: x = %v, q = %d, d = %v: error %g > d/2", b, j, v, q, d, e)
			}
			// Error with the stored fp16 scale: d/2 plus the scale's rounding.
			dh := float64(a.D[b])
			if e := math.Abs(float64(v) - float64(q)*dh); e > float64(d)/2*(1+1e-5)+127*math.Abs(dh-float64(d)) {
				t.Fatalf("block %d value %d: error %g with the stored scale", b, j, e)
			}
		}
		if amax > 0 && qmax != 127 {
			t.Fatalf("block %d: max |q| = %d, want 127", b, qmax)
		}
		if kind == Q8_1 {
			if want := FP16ToFP32(FP32ToFP16(float32(sum) * d)); a.Sum[b] != want {
				t.Fatalf("block %d: Sum = %v, want %v", b, a.Sum[b], want)
			}
		}
	}
}

func TestLegacyNoAlloc(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		x := randNormal32(r, 4096, 1)
		dst := make([]float32, len(x))
		var a Activation
		for _, typ := range legacyTypes {
			w := randomLegacyRow(r, typ, len(x))
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

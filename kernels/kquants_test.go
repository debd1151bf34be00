package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// kTypes are the K-quant weight types, in GGUF order.
var kTypes = []Type{Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}

// Half-precision bit patterns used by the hand-built blocks.
const (
	halfOne  = 0x3C00 // 1.0
	halfHalf = 0x3800 // 0.5
	halfTwo  = 0x4000 // 2.0
)

// putHalf stores the half bits h little-endian at b[off:].
func putHalf(b []byte, off int, h uint16) { binary.LittleEndian.PutUint16(b[off:], h) }

// fill sets n values of e starting at from to v.
func fill(e []float32, from, n int, v float32) {
	for i := from; i < from+n; i++ {
		e[i] = v
	}
}

// checkDequant dequantizes one block of t and compares it with want exactly.
func checkDequant(t *testing.T, typ Type, block []byte, want []float32) {
	t.Helper()
	if len(block) != typ.BlockBytes() {
		t.Fatalf("%v: test block has %d bytes, want %d", typ, len(block), typ.BlockBytes())
	}
	got := make([]float32, QKK)
	DequantizeRow(typ, block, got)
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			if bad < 10 {
				t.Errorf("%v: value %d = %v, want %v", typ, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%v: %d of %d values wrong", typ, bad, QKK)
	}
}

func TestDequantQ2_KLayout(t *testing.T) {
	b := make([]byte, 84)
	putHalf(b, 80, halfOne)  // d = 1
	putHalf(b, 82, halfHalf) // dmin = 0.5
	const qs = 16
	b[3] = 0x01  // sub-block 3: scale 1, min 0
	b[5] = 0x23  // sub-block 5: scale 3, min 2
	b[12] = 0x15 // sub-block 12: scale 5, min 1
	// Byte 3 of the second 16 bytes of the first half: bits 0-1 belong to
	// sub-block 1, bits 2-3 to sub-block 3, bits 4-5 to 5 and bits 6-7 to 7,
	// each at position 3 within its sub-block.
	b[qs+16+3] = 0b10_11_01_00
	// Byte 7 of the second half, bits 4-5: sub-block 12, position 7.
	b[qs+32+7] = 0b00_11_00_00

	want := make([]float32, QKK)
	want[3*16+3] = 1 * 1         // sub-block 3 has min 0
	fill(want, 5*16, 16, -0.5*2) // d·0 − dmin·2
	want[5*16+3] = 3*3 - 0.5*2
	fill(want, 12*16, 16, -0.5*1)
	want[12*16+7] = 5*3 - 0.5*1
	checkDequant(t, Q2_K, b, want)
}

func TestDequantQ3_KLayout(t *testing.T) {
	b := make([]byte, 110)
	putHalf(b, 108, halfTwo) // d = 2
	const hmask, qs, sc = 0, 32, 96
	// Every 6-bit scale 32 (offset removed: 0): high 2 bits = 2 everywhere.
	for j := 8; j < 12; j++ {
		b[sc+j] = 0b10_10_10_10
	}
	// Sub-block 9: 6-bit scale 37 → 5. Low nibble: high nibble of byte 1.
	b[sc+1] = 0x50
	// Sub-block 14: 6-bit scale 30 → −2 = 0b01_1110. Low nibble: high nibble of
	// byte 6; high bits: bits 6-7 of byte 10 (= 14%4 + 8) become 01.
	b[sc+6] = 0xE0
	b[sc+10] = 0b01_10_10_10

	// Sub-block 9 = group 4 (second 128 values, shift 0), bytes 16…31.
	b[qs+32+16+2] = 0b11    // position 2: low bits 3
	b[hmask+16+2] |= 1 << 4 // … and high bit set: 3
	b[hmask+16+4] |= 1 << 4 // position 4: low bits 0, high bit set: 0
	// Sub-block 14 = group 7 (second 128 values, shift 6), bytes 0…15.
	b[qs+32+5] = 0b10_00_00_00
	b[hmask+5] |= 1 << 7 // position 5: 2

	want := make([]float32, QKK)
	fill(want, 9*16, 16, 2*5*-4) // clear high bit: 0 − 4
	want[9*16+2] = 2 * 5 * 3
	want[9*16+4] = 0
	fill(want, 14*16, 16, 2*-2*-4)
	want[14*16+5] = 2 * -2 * 2
	checkDequant(t, Q3_K, b, want)
}

// k4Scales sets, in the 12 packed bytes sc shared by Q4_K and Q5_K, sub-block 1
// to scale 3, min 4, sub-block 6 to scale 37, min 19, and sub-block 4 to scale 32,
// min 16 through its high bits alone; every other scale and min stays 0.
func k4Scales(sc []byte) {
	sc[1] = 3                 // scale of sub-block 1
	sc[5] = 4                 // min of sub-block 1
	sc[10] = 0x35             // sub-block 6: low 4 bits of min (3) and scale (5)
	sc[2] |= 0b10 << 6        // high bits of scale 6: 37 = 0b10_0101
	sc[6] |= 0b01 << 6        // high bits of min 6: 19 = 0b01_0011
	sc[0], sc[4] = 0x80, 0x40 // top bits only: sub-block 4's high bits; 0's low 6 stay 0
}

func TestDequantQ4_KLayout(t *testing.T) {
	b := make([]byte, 144)
	putHalf(b, 0, halfOne)
	putHalf(b, 2, halfHalf)
	k4Scales(b[4:16])
	const qs = 16
	b[qs+7] = 0xA0     // high nibble of byte 7: sub-block 1, position 7 → 10
	b[qs+96+31] = 0x0F // low nibble of byte 127: sub-block 6, position 31 → 15

	want := make([]float32, QKK)
	fill(want, 32, 32, -0.5*4)
	want[32+7] = 3*10 - 0.5*4
	fill(want, 6*32, 32, -0.5*19)
	want[6*32+31] = 37*15 - 0.5*19
	// Sub-block 4: scale 0b10_0000 = 32, min 0b01_0000 = 16 (high bits only).
	fill(want, 4*32, 32, -0.5*16)
	checkDequant(t, Q4_K, b, want)
}

func TestDequantQ5_KLayout(t *testing.T) {
	b := make([]byte, 176)
	putHalf(b, 0, halfOne)
	putHalf(b, 2, halfHalf)
	k4Scales(b[4:16])
	const qh, qs = 16, 48
	b[qs+7] = 0xA0
	b[qh+7] = 1 << 1 // fifth bit of sub-block 1, position 7: 10 + 16
	b[qs+96+31] = 0x0F
	b[qh+31] = 1 << 6 // sub-block 6, position 31: 15 + 16
	b[qh+0] = 1 << 6  // sub-block 6, position 0: 0 + 16

	want := make([]float32, QKK)
	fill(want, 32, 32, -0.5*4)
	want[32+7] = 3*26 - 0.5*4
	fill(want, 6*32, 32, -0.5*19)
	want[6*32+31] = 37*31 - 0.5*19
	want[6*32] = 37*16 - 0.5*19
	fill(want, 4*32, 32, -0.5*16)
	checkDequant(t, Q5_K, b, want)
}

func TestDequantQ6_KLayout(t *testing.T) {
	b := make([]byte, 210)
	putHalf(b, 208, halfHalf) // d = 0.5
	const ql, qh, sc = 0, 128, 192
	b[sc+3] = byte(0xFD) // sub-block 3: −3
	b[sc+12] = 7         // sub-block 12: 7
	// Sub-block 3 = values 48…63 of the first half (k = 1): low nibble of
	// ql[32+l], bits 2-3 of qh[l], l = 16…31.
	b[ql+48+1] = 0x05
	b[qh+17] = 0b10 << 2 // 5 | 2<<4 = 37 → 5
	// Sub-block 12 = values 64…79 of the second half (k = 2): high nibble of
	// ql[64+l], bits 4-5 of qh[32+l], l = 0…15.
	b[ql+64+9] = 0xF0
	b[qh+32+9] = 0b11 << 4 // 63 → 31

	want := make([]float32, QKK)
	fill(want, 3*16, 16, 0.5*-3*-32)
	want[3*16+1] = 0.5 * -3 * 5
	fill(want, 12*16, 16, 0.5*7*-32)
	want[12*16+9] = 0.5 * 7 * 31
	checkDequant(t, Q6_K, b, want)
}

// kFactorOffsets are the byte offsets of the f16 d and (if any, else -1) dmin
// fields of each K-quant block.
var kFactorOffsets = map[Type][2]int{
	Q2_K: {80, 82},
	Q3_K: {108, -1},
	Q4_K: {0, 2},
	Q5_K: {0, 2},
	Q6_K: {208, -1},
}

// randomKRow returns nb random valid blocks of t: random quant and scale bytes,
// and d, dmin set to random halves of sane magnitude and either sign.
func randomKRow(rng *rand.Rand, typ Type, nb int) []byte {
	bb := typ.BlockBytes()
	w := make([]byte, nb*bb)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	offs := kFactorOffsets[typ]
	for i := range nb {
		for _, off := range offs {
			if off >= 0 {
				v := float32((rng.Float64()*2 - 1) * 0.02)
				putHalf(w, i*bb+off, FP32ToFP16(v))
			}
		}
	}
	return w
}

// zeroMins returns a copy of row w of t with every dmin set to zero.
func zeroMins(typ Type, w []byte) []byte {
	c := append([]byte(nil), w...)
	if off := kFactorOffsets[typ][1]; off >= 0 {
		for i := 0; i < len(c); i += typ.BlockBytes() {
			putHalf(c, i+off, 0)
		}
	}
	return c
}

// randomActivation returns n normally distributed values, with a few larger
// outliers as real activations have.
func randomActivation(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		if rng.IntN(64) == 0 {
			x[i] *= 20
		}
	}
	return x
}

// dequantQ8K expands a Q8_K activation to float64.
func dequantQ8K(a *Activation) []float64 {
	y := make([]float64, a.N)
	for i := range y {
		y[i] = float64(a.D[i/QKK]) * float64(a.Qs[i])
	}
	return y
}

func TestKQuantDotMatchesDequant(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		var a Activation
		for _, typ := range kTypes {
			for _, n := range []int{256, 512, 768, 1024, 2048, 4096, 8192} {
				for seed := range uint64(12) {
					rng := rand.New(rand.NewPCG(seed, uint64(n)*31+uint64(typ)))
					nb := n / QKK
					w := randomKRow(rng, typ, nb)
					QuantizeActivation(&a, Q8_K, randomActivation(rng, n))
					got := DotRow(typ, w, &a)

					full := make([]float32, n)   // d·scale·q − dmin·min
					scaled := make([]float32, n) // d·scale·q
					DequantizeRow(typ, w, full)
					DequantizeRow(typ, zeroMins(typ, w), scaled)
					x := dequantQ8K(&a)
					var want, mag float64
					for i := range x {
						want += float64(full[i]) * x[i]
						mag += (math.Abs(float64(scaled[i])) + math.Abs(float64(scaled[i]-full[i]))) * math.Abs(x[i])
					}
					// float32 rounding of two products and one sum per super-block,
					// plus the float32 dequantized values of the reference.
					tol := float64(nb+4) * 0x1p-23 * mag
					if diff := math.Abs(float64(got) - want); diff > tol || math.IsNaN(float64(got)) {
						t.Errorf("%v n=%d seed=%d: dot = %v, want %v (diff %.3g > tol %.3g)", typ, n, seed, got, want, diff, tol)
					}
				}
			}
		}
	})
}

// TestKQuantDotIntegerExact checks the integer part of the dots, including the
// mins applied through the bsums, exactly: with d = dmin = 1 and activation
// scales of 1 every dequantized weight, every product and every partial sum is
// an integer below 2^24, so the float32 dot must equal the float64 reference.
func TestKQuantDotIntegerExact(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		const n = 1024
		var a Activation
		for _, typ := range kTypes {
			for seed := range uint64(8) {
				rng := rand.New(rand.NewPCG(seed, 77))
				w := randomKRow(rng, typ, n/QKK)
				for i := 0; i < len(w); i += typ.BlockBytes() {
					for _, off := range kFactorOffsets[typ] {
						if off >= 0 {
							putHalf(w, i+off, halfOne)
						}
					}
				}
				a.Reset(Q8_K, n)
				for i := range a.Qs {
					a.Qs[i] = int8(rng.IntN(63) - 31) // small enough for exact sums
				}
				for j := range a.BSums {
					var s int16
					for _, v := range a.Qs[16*j : 16*j+16] {
						s += int16(v)
					}
					a.BSums[j] = s
				}
				for b := range a.D {
					a.D[b] = 1
				}
				full, scaled := make([]float32, n), make([]float32, n)
				DequantizeRow(typ, w, full)
				DequantizeRow(typ, zeroMins(typ, w), scaled)
				var want float64
				for b := range n / QKK {
					var block, mag float64
					for i := b * QKK; i < (b+1)*QKK; i++ {
						block += float64(full[i]) * float64(a.Qs[i])
						mag += (math.Abs(float64(scaled[i])) + math.Abs(float64(scaled[i]-full[i]))) * math.Abs(float64(a.Qs[i]))
					}
					if mag >= 1<<24 {
						t.Fatalf("%v seed %d: test data too large for exact float32 sums", typ, seed)
					}
					want += block
				}
				if got := DotRow(typ, w, &a); float64(got) != want {
					t.Errorf("%v seed %d: dot = %v, want exactly %v", typ, seed, got, want)
				}
			}
		}
	})
}

// refOrderKDot recomputes a K-quant dot in the float32 operation order of the
// reference's x86 AVX2 kernels, with every fused multiply-add rounded once
// (computed exactly with math/big). The integer weights are recovered by
// dequantizing copies of the row with d = 1, dmin = 0 (giving scale·q per value)
// and d = 0, dmin = 1 (giving −min per value). Per super-block:
//
//	lane t = Σ over runs c of 32 values of Σ_{j=4t}^{4t+3} (scale·q)[32c+j]·qa[32c+j]
//	Q2_K:       acc[t] = fma(−d_a·dmin, min[2t]·bsum[2t] + min[2t+1]·bsum[2t+1], acc[t])
//	all:        acc[t] = fma(d_a·d, lane t, acc[t])
//	Q5_K:       summs = fma(−d_a·dmin, Σ over all sub-blocks of min·bsum, summs)
//
// and at the end ((acc0+acc4)+(acc2+acc6)) + ((acc1+acc5)+(acc3+acc7)), plus
// summs for Q5_K. Q4_K follows the reference's repacked kernels instead, two
// scalar chains over the super-blocks:
//
//	Q4_K:       acc = fma(d_a·d, Σ_j (scale·q)[j]·qa[j], acc)
//	            accm = fma(d_a·dmin, Σ over all sub-blocks of min·bsum, accm)
//
// and the result acc − accm.
func refOrderKDot(typ Type, w []byte, a *Activation) float32 {
	n, bb := a.N, typ.BlockBytes()
	offs := kFactorOffsets[typ]
	withFactors := func(d, dmin uint16) []float32 {
		c := append([]byte(nil), w...)
		for i := 0; i < len(c); i += bb {
			putHalf(c, i+offs[0], d)
			if offs[1] >= 0 {
				putHalf(c, i+offs[1], dmin)
			}
		}
		out := make([]float32, n)
		DequantizeRow(typ, c, out)
		return out
	}
	sq := withFactors(halfOne, 0)
	var negMin []float32
	if offs[1] >= 0 {
		negMin = withFactors(0, halfOne)
	}
	var (
		acc         [8]float32
		summs       float32
		acc4, accm4 float32 // Q4_K
	)
	for i := range n / QKK {
		blk := w[i*bb : (i+1)*bb]
		da := a.D[i]
		d := da * FP16ToFP32(binary.LittleEndian.Uint16(blk[offs[0]:]))
		var dmin float32
		// minOf returns the min of the 16-value run r of the super-block and
		// bsum its activation sum.
		minOf := func(r int) int32 { return -int32(negMin[i*QKK+16*r]) }
		bsum := func(r int) int32 { return int32(a.BSums[i*16+r]) }
		if offs[1] >= 0 {
			dmin = -(da * FP16ToFP32(binary.LittleEndian.Uint16(blk[offs[1]:])))
		}
		if typ == Q4_K {
			var is, im int32
			for j := range QKK {
				is += int32(sq[i*QKK+j]) * int32(a.Qs[i*QKK+j])
			}
			for s := range 8 {
				im += minOf(2*s) * (bsum(2*s) + bsum(2*s+1))
			}
			acc4 = exactFMA32(da*FP16ToFP32(binary.LittleEndian.Uint16(blk[offs[0]:])), float32(is), acc4)
			accm4 = exactFMA32(-dmin, float32(im), accm4)
			continue
		}
		switch typ {
		case Q2_K:
			for t := range acc {
				acc[t] = exactFMA32(dmin, float32(minOf(2*t)*bsum(2*t)+minOf(2*t+1)*bsum(2*t+1)), acc[t])
			}
		case Q5_K:
			var m int32
			for s := range 8 {
				m += minOf(2*s) * (bsum(2*s) + bsum(2*s+1))
			}
			summs = exactFMA32(dmin, float32(m), summs)
		}
		var lanes [8]int32
		for j := range QKK {
			lanes[j%32/4] += int32(sq[i*QKK+j]) * int32(a.Qs[i*QKK+j])
		}
		for t := range acc {
			acc[t] = exactFMA32(d, float32(lanes[t]), acc[t])
		}
	}
	if typ == Q4_K {
		return acc4 - accm4
	}
	sum := ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
	if typ == Q5_K {
		sum += summs
	}
	return sum
}

// TestKQuantDotReferenceOrder requires bit-exact agreement with refOrderKDot, on
// random rows and on rows whose activation follows the weights' signs, where
// the integer lane sums are large and every rounding of the float operations
// shows.
func TestKQuantDotReferenceOrder(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		var a Activation
		for _, typ := range kTypes {
			for _, n := range []int{256, 768, 4096, 8192} {
				for seed := range uint64(16) {
					rng := rand.New(rand.NewPCG(seed, uint64(n)*7+uint64(typ)))
					w := randomKRow(rng, typ, n/QKK)
					x := randomActivation(rng, n)
					if seed%2 == 1 {
						full := make([]float32, n)
						DequantizeRow(typ, w, full)
						for i := range x {
							x[i] = float32(math.Copysign(0.5+rng.Float64(), float64(full[i])))
						}
					}
					QuantizeActivation(&a, Q8_K, x)
					if got, want := DotRow(typ, w, &a), refOrderKDot(typ, w, &a); got != want {
						t.Fatalf("%v n=%d seed=%d: dot = %v, reference-order dot = %v", typ, n, seed, got, want)
					}
				}
			}
		}
	})
}

func TestQuantizeQ8_K(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		var a Activation
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 99))
			n := QKK * (1 + rng.IntN(16))
			x := randomActivation(rng, n)
			if seed%4 == 1 {
				fill(x, QKK, min(QKK, n-QKK), 0) // an all-zero block when n allows
			}
			QuantizeActivation(&a, Q8_K, x)
			if a.Kind != Q8_K || a.N != n || len(a.Qs) != n || len(a.D) != n/QKK || len(a.BSums) != n/16 {
				t.Fatalf("seed %d: activation shape kind=%v N=%d Qs=%d D=%d BSums=%d", seed, a.Kind, a.N, len(a.Qs), len(a.D), len(a.BSums))
			}
			for b := range n / QKK {
				xb, qb, d := x[b*QKK:(b+1)*QKK], a.Qs[b*QKK:(b+1)*QKK], a.D[b]
				var amax, max float32
				for _, v := range xb {
					if av := float32(math.Abs(float64(v))); av > amax {
						amax, max = av, v
					}
				}
				if amax == 0 {
					if d != 0 {
						t.Errorf("seed %d block %d: zero block has d = %v", seed, b, d)
					}
				} else {
					if want := float32(1) / (-127 / max); d != want {
						t.Errorf("seed %d block %d: d = %v, want %v", seed, b, d, want)
					}
				}
				for i, v := range xb {
					if qb[i] == -128 {
						t.Errorf("seed %d: quant %d is -128", seed, b*QKK+i)
					}
					// Rounding error at most half a step, up to float32 rounding of
					// the scale and of iscale·x.
					err := math.Abs(float64(v) - float64(d)*float64(qb[i]))
					if lim := math.Abs(float64(d))*(0.5+1e-5) + 1e-6*math.Abs(float64(v)); err > lim {
						t.Errorf("seed %d value %d: x=%v d=%v q=%d error %v > %v", seed, b*QKK+i, v, d, qb[i], err, lim)
					}
					if v == max && amax != 0 && qb[i] != -127 {
						t.Errorf("seed %d block %d: the largest value quantized to %d, want -127", seed, b, qb[i])
					}
				}
			}
			for j := range n / 16 {
				var s int
				for _, v := range a.Qs[16*j : 16*j+16] {
					s += int(v)
				}
				if int(a.BSums[j]) != s {
					t.Errorf("seed %d: bsums[%d] = %d, want %d", seed, j, a.BSums[j], s)
				}
			}
		}
	})
}

func TestQuantizeQ8_KZero(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		var a Activation
		// Fill a with non-zero data first: a zero vector must overwrite all of it.
		QuantizeActivation(&a, Q8_K, randomActivation(rand.New(rand.NewPCG(1, 2)), 512))
		QuantizeActivation(&a, Q8_K, make([]float32, 512))
		for i, d := range a.D {
			if d != 0 {
				t.Errorf("d[%d] = %v, want 0", i, d)
			}
		}
		for i, q := range a.Qs {
			if q != 0 {
				t.Fatalf("qs[%d] = %d, want 0", i, q)
			}
		}
		for i, s := range a.BSums {
			if s != 0 {
				t.Fatalf("bsums[%d] = %d, want 0", i, s)
			}
		}
	})
}

func TestQuantizeQ8_KRounding(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		// max = -127 gives iscale = 1, so the quants are x rounded, ties to even.
		x := make([]float32, QKK)
		x[0] = -127
		x[1], x[2], x[3], x[4], x[5] = 2.5, 3.5, -2.5, 0.49999997, 126.5
		want := []int8{-127, 2, 4, -2, 0, 126}
		var a Activation
		QuantizeActivation(&a, Q8_K, x)
		if a.D[0] != 1 {
			t.Errorf("d = %v, want 1", a.D[0])
		}
		for i, w := range want {
			if a.Qs[i] != w {
				t.Errorf("q[%d] = %d for x = %v, want %d", i, a.Qs[i], x[i], w)
			}
		}
		if s := int(a.BSums[0]); s != -127+2+4-2+0+126 {
			t.Errorf("bsums[0] = %d", s)
		}
	})
}

func TestKQuantAllocs(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		const n = 4096
		rng := rand.New(rand.NewPCG(3, 4))
		x := randomActivation(rng, n)
		var a Activation
		QuantizeActivation(&a, Q8_K, x)
		if allocs := testing.AllocsPerRun(20, func() { QuantizeActivation(&a, Q8_K, x) }); allocs != 0 {
			t.Errorf("QuantizeActivation(Q8_K) allocates %v times", allocs)
		}
		dst := make([]float32, n)
		for _, typ := range kTypes {
			w := randomKRow(rng, typ, n/QKK)
			if allocs := testing.AllocsPerRun(20, func() { DotRow(typ, w, &a) }); allocs != 0 {
				t.Errorf("DotRow(%v) allocates %v times", typ, allocs)
			}
			if allocs := testing.AllocsPerRun(20, func() { DequantizeRow(typ, w, dst) }); allocs != 0 {
				t.Errorf("DequantizeRow(%v) allocates %v times", typ, allocs)
			}
		}
	})
}

func BenchmarkKQuantDequant(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(5, 6))
	dst := make([]float32, n)
	for _, typ := range kTypes {
		w := randomKRow(rng, typ, n/QKK)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				DequantizeRow(typ, w, dst)
			}
		})
	}
}

// TestKQuantBlockBytes checks the layout constants against the type table.
func TestKQuantBlockBytes(t *testing.T) {
	want := map[Type]int{Q2_K: q2KBytes, Q3_K: q3KBytes, Q4_K: q4KBytes, Q5_K: q5KBytes, Q6_K: q6KBytes, Q8_K: 4 + QKK + 2*QKK/16}
	for typ, n := range want {
		if got := typ.BlockBytes(); got != n {
			t.Errorf("%v: BlockBytes = %d, layout has %d", typ, got, n)
		}
	}
}

// walkDequant is a second, deliberately different decoder of the K-quant
// layouts: it walks each block in the order of the reference's scalar loops
// (sequential output pointer, running shifts and masks, 32-bit word unpacking of
// the packed 6-bit scales) instead of computing positions from value indices.
func walkDequant(typ Type, w []byte, n int) []float32 {
	y := make([]float32, 0, n)
	u32 := func(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
	h := func(b []byte, off int) float32 { return FP16ToFP32(binary.LittleEndian.Uint16(b[off:])) }
	bb := typ.BlockBytes()
	for blk := range n / QKK {
		b := w[blk*bb : (blk+1)*bb]
		switch typ {
		case Q2_K:
			d, dmin, sc, q := h(b, 80), h(b, 82), b[:16], b[16:80]
			is := 0
			for half := 0; half < 2; half++ {
				for shift := 0; shift < 8; shift += 2 {
					for part := 0; part < 2; part++ {
						dl, ml := d*float32(sc[is]&0xF), dmin*float32(sc[is]>>4)
						is++
						for l := 0; l < 16; l++ {
							y = append(y, float32(dl*float32(q[16*part+l]>>shift&3))-ml)
						}
					}
				}
				q = q[32:]
			}
		case Q3_K:
			hm, q, d := b[:32], b[32:96], h(b, 108)
			a0, a1, a2 := u32(b[96:], 0), u32(b[96:], 1), u32(b[96:], 2)
			words := [4]uint32{
				a0&0x0f0f0f0f | (a2>>0&0x03030303)<<4,
				a1&0x0f0f0f0f | (a2>>2&0x03030303)<<4,
				a0>>4&0x0f0f0f0f | (a2>>4&0x03030303)<<4,
				a1>>4&0x0f0f0f0f | (a2>>6&0x03030303)<<4,
			}
			var scales [16]int8
			for i := range scales {
				scales[i] = int8(words[i/4]>>(8*(i%4))) - 32
			}
			is, m := 0, byte(1)
			for half := 0; half < 2; half++ {
				for shift := 0; shift < 8; shift += 2 {
					for part := 0; part < 2; part++ {
						dl := d * float32(scales[is])
						is++
						for l := 16 * part; l < 16*part+16; l++ {
							v := int8(q[l] >> shift & 3)
							if hm[l]&m == 0 {
								v -= 4
							}
							y = append(y, dl*float32(v))
						}
					}
					m <<= 1
				}
				q = q[32:]
			}
		case Q4_K, Q5_K:
			d, dmin := h(b, 0), h(b, 2)
			u0, u1, u2 := u32(b[4:], 0), u32(b[4:], 1), u32(b[4:], 2)
			words := [4]uint32{ // scales 0-3, 4-7, mins 0-3, 4-7
				u0 & 0x3f3f3f3f,
				u2&0x0f0f0f0f | (u0>>6&0x03030303)<<4,
				u1 & 0x3f3f3f3f,
				u2>>4&0x0f0f0f0f | (u1>>6&0x03030303)<<4,
			}
			get := func(i int) byte { return byte(words[i/4] >> (8 * (i % 4))) }
			q, qh := b[16:], []byte(nil)
			if typ == Q5_K {
				q, qh = b[48:], b[16:48]
			}
			u := byte(1)
			for c := 0; c < 4; c++ {
				for part := 0; part < 2; part++ {
					s := 2*c + part
					dl, ml := d*float32(get(s)), dmin*float32(get(8+s))
					for l := 0; l < 32; l++ {
						v := q[l] >> (4 * part) & 0xF
						if qh != nil && qh[l]&u != 0 {
							v += 16
						}
						y = append(y, float32(dl*float32(v))-ml)
					}
					u <<= 1
				}
				q = q[32:]
			}
		case Q6_K:
			d, ql, qh, sc := h(b, 208), b[:128], b[128:192], b[192:208]
			var out [128]float32
			for half := 0; half < 2; half++ {
				for l := 0; l < 32; l++ {
					is := l / 16
					q1 := int8(ql[l]&0xF|(qh[l]&3)<<4) - 32
					q2 := int8(ql[l+32]&0xF|(qh[l]>>2&3)<<4) - 32
					q3 := int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
					q4 := int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
					out[l] = d * float32(int8(sc[is])) * float32(q1)
					out[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
					out[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
					out[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
				}
				y = append(y, out[:]...)
				ql, qh, sc = ql[64:], qh[32:], sc[8:]
			}
		}
	}
	return y
}

func TestDequantKMatchesReferenceWalk(t *testing.T) {
	for _, typ := range kTypes {
		for seed := range uint64(10) {
			rng := rand.New(rand.NewPCG(seed, 1234))
			const n = 1024
			w := randomKRow(rng, typ, n/QKK)
			got := make([]float32, n)
			DequantizeRow(typ, w, got)
			want := walkDequant(typ, w, n)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%v seed %d: value %d = %v, reference walk gives %v", typ, seed, i, got[i], want[i])
				}
			}
		}
	}
}

package kernels

import "encoding/binary"

// K-quant weight types
//
// The K-quants store QKK = 256 values per super-block, split into sub-blocks of 16
// (Q2_K, Q3_K, Q6_K) or 32 (Q4_K, Q5_K) values that each have their own small
// integer scale (and, for Q2_K, Q4_K and Q5_K, an integer minimum). The sub-block
// scales and minimums are themselves multiplied by float16 super-block factors d
// and dmin, so value i of sub-block s is
//
//	d·scale[s]·q[i] − dmin·min[s]    (Q2_K, Q4_K, Q5_K; q unsigned)
//	d·scale[s]·q[i]                  (Q3_K, Q6_K; q and scale signed)
//
// All layouts are GGML's, little-endian, with IEEE half-precision factors. The
// byte offsets of each field within a block are the constants below.
//
// The portable kernels in this file first unpack the quants of a whole
// super-block into a [QKK]int8 in value order, then work sub-block by
// sub-block. The dot products multiply those quants with the Q8_K activation
// quants in int32 and weight each sub-block's integer sum by its integer scale;
// the minimums are applied once per sub-block through the Q8_K bsums (the sums
// of the activation quants of each 16 values):
//
//	Σ_s [ (d_w·d_a)·scale[s]·Σ q_w·q_a  −  (dmin_w·d_a)·min[s]·bsum[s] ]
//
// The float32 operations follow the reference implementation's x86 AVX2 kernels
// (ggml_vec_dot_*_K_q8_K), which produced our conformance data, so that results
// match it bit for bit (a last-bit difference can flip the rounding of an 8-bit
// quant of the next matmul's activation). Those kernels keep eight integer lanes
// per super-block: lane t sums, over every run of 32 values, the products of
// values 4t…4t+3 of the run times their sub-block's scale (see kLanes). Each lane
// is then scaled by d_w·d_a and accumulated across super-blocks with a fused
// multiply-add, and the lanes are added pairwise at the end (hsum8). The
// minimums are accumulated per type as the reference does: in the same lanes
// (Q2_K) or in one float (Q5_K), with fused multiply-adds. Q4_K instead
// follows the reference build's repacked kernels (llama.cpp 3f545be, which
// made the conformance data of the newer architectures): one exact integer
// per super-block for the scales and one for the minimums, each taken into
// one scalar float chain (see dotQ4_KGeneric). Every other product that is
// added to something is rounded to float32 explicitly, so results are
// bit-identical on every GOARCH (see float.go).

// Q2_K block layout (84 bytes).
const (
	q2KScales = 0  // [16]: low nibble scale, high nibble min of each 16 values
	q2KQs     = 16 // [64]: 2-bit quants
	q2KD      = 80 // f16 super-block scale
	q2KDmin   = 82 // f16 super-block min scale
	q2KBytes  = 84
)

// Q3_K block layout (110 bytes).
const (
	q3KHmask  = 0   // [32]: high (third) bit of each quant
	q3KQs     = 32  // [64]: low 2 bits of each quant
	q3KScales = 96  // [12]: 16 packed 6-bit scales, stored with offset 32
	q3KD      = 108 // f16 super-block scale
	q3KBytes  = 110
)

// Q4_K block layout (144 bytes).
const (
	q4KD      = 0  // f16 super-block scale
	q4KDmin   = 2  // f16 super-block min scale
	q4KScales = 4  // [12]: 8 packed 6-bit scales and 8 packed 6-bit mins
	q4KQs     = 16 // [128]: 4-bit quants
	q4KBytes  = 144
)

// Q5_K block layout (176 bytes).
const (
	q5KD      = 0  // f16 super-block scale
	q5KDmin   = 2  // f16 super-block min scale
	q5KScales = 4  // [12]: as Q4_K
	q5KQh     = 16 // [32]: fifth bit of each quant
	q5KQs     = 48 // [128]: low 4 bits of each quant
	q5KBytes  = 176
)

// Q6_K block layout (210 bytes).
const (
	q6KQl     = 0   // [128]: low 4 bits of each quant
	q6KQh     = 128 // [64]: high 2 bits of each quant
	q6KScales = 192 // [16]: int8 scale of each 16 values
	q6KD      = 208 // f16 super-block scale
	q6KBytes  = 210
)

// halfAt reads the little-endian IEEE half at b[off:] as a float32.
func halfAt(b []byte, off int) float32 {
	return FP16ToFP32(binary.LittleEndian.Uint16(b[off:]))
}

// ---------------------------------------------------------------------------
// Unpacking quants and sub-block scales

// unpackQ2_K expands the 2-bit quants qs (64 bytes) into q in value order. Each
// half of 128 values uses 32 bytes; value 32·j+l of a half is bits 2j…2j+1 of
// byte l.
func unpackQ2_K(qs []byte, q *[QKK]int8) {
	for h := range 2 {
		src := (*[32]byte)(qs[32*h:])
		for j := range 4 {
			dst := (*[32]int8)(q[128*h+32*j:])
			shift := 2 * j
			for l, b := range src {
				dst[l] = int8(b >> shift & 3)
			}
		}
	}
}

// unpackQ3_K expands the 3-bit quants into q in value order, as signed values
// in −4…3. The low two bits are laid out as in Q2_K; the high bit of value
// 32·g+l (g = 0…7) is bit g of hmask[l], and a clear high bit means −4.
func unpackQ3_K(hmask, qs []byte, q *[QKK]int8) {
	unpackQ2_K(qs, q)
	hm := (*[32]byte)(hmask)
	for g := range 8 {
		dst := (*[32]int8)(q[32*g:])
		for l, b := range hm {
			dst[l] -= int8(4 * (1 - b>>g&1))
		}
	}
}

// scalesQ3_K unpacks the 16 6-bit scales of a Q3_K block (12 bytes) and removes
// their offset of 32. The low 4 bits of scale j are nibble j/8 of byte j%8; the
// high 2 bits are bits 2·(j/4)… of byte 8 + j%4.
func scalesQ3_K(sc []byte, out *[16]int8) {
	sc = sc[:12]
	for j := range out {
		lo := sc[j%8] >> (4 * (j / 8)) & 0xF
		hi := sc[8+j%4] >> (2 * (j / 4)) & 3
		out[j] = int8(lo|hi<<4) - 32
	}
}

// unpackQ4_K expands the 4-bit quants qs (128 bytes) into q in value order. Each
// run of 64 values uses 32 bytes: the low nibbles give the first 32 values, the
// high nibbles the next 32.
func unpackQ4_K(qs []byte, q *[QKK]int8) {
	for c := range 4 {
		src := (*[32]byte)(qs[32*c:])
		lo := (*[32]int8)(q[64*c:])
		hi := (*[32]int8)(q[64*c+32:])
		for l, b := range src {
			lo[l] = int8(b & 0xF)
			hi[l] = int8(b >> 4)
		}
	}
}

// unpackQ5_K expands the 5-bit quants into q in value order: the low 4 bits are
// laid out as in Q4_K, and the fifth bit of value 32·s+l (s = 0…7) is bit s of
// qh[l].
func unpackQ5_K(qh, qs []byte, q *[QKK]int8) {
	unpackQ4_K(qs, q)
	hb := (*[32]byte)(qh)
	for s := range 8 {
		dst := (*[32]int8)(q[32*s:])
		for l, b := range hb {
			dst[l] |= int8(b >> s & 1 << 4)
		}
	}
}

// scalesMinsK4 unpacks the 8 6-bit scales and 8 6-bit mins that Q4_K and Q5_K
// pack into 12 bytes. Sub-blocks 0…3 keep theirs in the low 6 bits of bytes
// 0…3 (scales) and 4…7 (mins); sub-blocks 4…7 keep the low 4 bits in the two
// nibbles of bytes 8…11 and the high 2 bits in the top bits of bytes 0…7.
func scalesMinsK4(sc []byte, scales, mins *[8]uint8) {
	sc = sc[:12]
	for j := range 4 {
		scales[j] = sc[j] & 63
		mins[j] = sc[j+4] & 63
	}
	for j := 4; j < 8; j++ {
		scales[j] = sc[j+4]&0xF | sc[j-4]>>6<<4
		mins[j] = sc[j+4]>>4 | sc[j]>>6<<4
	}
}

// unpackQ6_K expands the 6-bit quants into q in value order, as signed values in
// −32…31. Each half of 128 values uses 64 bytes of ql and 32 bytes of qh; value
// 32·k+l of a half (k = 0…3) takes its low 4 bits from nibble k/2 of
// ql[32·(k%2)+l] and its high 2 bits from bits 2k…2k+1 of qh[l].
func unpackQ6_K(ql, qh []byte, q *[QKK]int8) {
	for h := range 2 {
		lo := (*[64]byte)(ql[64*h:])
		hi := (*[32]byte)(qh[32*h:])
		dst := (*[128]int8)(q[128*h:])
		for l, b := range hi {
			dst[l] = int8(lo[l]&0xF|(b&3)<<4) - 32
			dst[l+32] = int8(lo[l+32]&0xF|(b>>2&3)<<4) - 32
			dst[l+64] = int8(lo[l]>>4|(b>>4&3)<<4) - 32
			dst[l+96] = int8(lo[l+32]>>4|(b>>6)<<4) - 32
		}
	}
}

// ---------------------------------------------------------------------------
// Dequantization

// dequantQ2_K expands len(dst) Q2_K values from src into dst.
func dequantQ2_K(src []byte, dst []float32) {
	var q [QKK]int8
	for i := range len(dst) / QKK {
		b := src[i*q2KBytes : (i+1)*q2KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d, dmin := halfAt(b, q2KD), halfAt(b, q2KDmin)
		unpackQ2_K(b[q2KQs:], &q)
		for s, sc := range b[q2KScales : q2KScales+16] {
			dl, ml := d*float32(sc&0xF), dmin*float32(sc>>4)
			dequantSub(y[16*s:16*s+16], q[16*s:16*s+16], dl, ml)
		}
	}
}

// dequantQ3_K expands len(dst) Q3_K values from src into dst.
func dequantQ3_K(src []byte, dst []float32) {
	var (
		q      [QKK]int8
		scales [16]int8
	)
	for i := range len(dst) / QKK {
		b := src[i*q3KBytes : (i+1)*q3KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d := halfAt(b, q3KD)
		unpackQ3_K(b[q3KHmask:], b[q3KQs:], &q)
		scalesQ3_K(b[q3KScales:], &scales)
		for s, sc := range scales {
			dequantSub(y[16*s:16*s+16], q[16*s:16*s+16], d*float32(sc), 0)
		}
	}
}

// dequantQ4_K expands len(dst) Q4_K values from src into dst.
func dequantQ4_K(src []byte, dst []float32) {
	var (
		q            [QKK]int8
		scales, mins [8]uint8
	)
	for i := range len(dst) / QKK {
		b := src[i*q4KBytes : (i+1)*q4KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d, dmin := halfAt(b, q4KD), halfAt(b, q4KDmin)
		unpackQ4_K(b[q4KQs:], &q)
		scalesMinsK4(b[q4KScales:], &scales, &mins)
		for s := range 8 {
			dequantSub(y[32*s:32*s+32], q[32*s:32*s+32], d*float32(scales[s]), dmin*float32(mins[s]))
		}
	}
}

// dequantQ5_K expands len(dst) Q5_K values from src into dst.
func dequantQ5_K(src []byte, dst []float32) {
	var (
		q            [QKK]int8
		scales, mins [8]uint8
	)
	for i := range len(dst) / QKK {
		b := src[i*q5KBytes : (i+1)*q5KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d, dmin := halfAt(b, q5KD), halfAt(b, q5KDmin)
		unpackQ5_K(b[q5KQh:], b[q5KQs:], &q)
		scalesMinsK4(b[q5KScales:], &scales, &mins)
		for s := range 8 {
			dequantSub(y[32*s:32*s+32], q[32*s:32*s+32], d*float32(scales[s]), dmin*float32(mins[s]))
		}
	}
}

// dequantQ6_K expands len(dst) Q6_K values from src into dst.
func dequantQ6_K(src []byte, dst []float32) {
	var q [QKK]int8
	for i := range len(dst) / QKK {
		b := src[i*q6KBytes : (i+1)*q6KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d := halfAt(b, q6KD)
		unpackQ6_K(b[q6KQl:], b[q6KQh:], &q)
		for s, sc := range b[q6KScales : q6KScales+16] {
			dequantSub(y[16*s:16*s+16], q[16*s:16*s+16], d*float32(int8(sc)), 0)
		}
	}
}

// dequantSub writes y[i] = dl·q[i] − ml for one sub-block. The product is rounded
// to float32 before the subtraction, as in the reference (no fused multiply-add).
func dequantSub(y []float32, q []int8, dl, ml float32) {
	y = y[:len(q)]
	for i, v := range q {
		y[i] = float32(dl*float32(v)) - ml
	}
}

// ---------------------------------------------------------------------------
// Fused dot products with a Q8_K activation

// kLanes sets l to the integer sums of one super-block in the reference's eight
// lanes: lane t = Σ_c sc[sub(32c+4t)]·Σ_{j=32c+4t}^{32c+4t+3} q[j]·qa[j] over the
// eight runs c of 32 values, where sc holds the scale of each 16 values (runs
// of 32 values with one scale repeat it). This is the grouping of the
// reference's AVX2 multiply-add instructions; the sums are exact.
func kLanes(q, qa *[QKK]int8, sc *[16]int32, l *[8]int32) {
	*l = [8]int32{}
	for c := range 8 {
		x := (*[32]int8)(q[32*c:])
		y := (*[32]int8)(qa[32*c:])
		for t := range l {
			j := 4 * t
			p := int32(x[j])*int32(y[j]) + int32(x[j+1])*int32(y[j+1]) +
				int32(x[j+2])*int32(y[j+2]) + int32(x[j+3])*int32(y[j+3])
			l[t] += sc[2*c+t/4] * p
		}
	}
}

// scales16K4 spreads the 8 scales of a Q4_K/Q5_K super-block (one per 32 values)
// over the 16 runs of 16 values that kLanes expects.
func scales16K4(scales *[8]uint8, sc *[16]int32) {
	for s, v := range scales {
		sc[2*s], sc[2*s+1] = int32(v), int32(v)
	}
}

// dotQ2_K returns the dot product of the Q2_K row w with the Q8_K activation a.
// As in the reference, each lane first accumulates its share of the minimums,
// Σ min·bsum over the 16-value runs 2t and 2t+1, then its share of the scaled
// quants.
func dotQ2_K(w []byte, a *Activation) float32 {
	var (
		q   [QKK]int8
		sc  [16]int32
		acc [8]float32
		l   [8]int32
	)
	for i := range a.N / QKK {
		b := w[i*q2KBytes : (i+1)*q2KBytes]
		bsums := (*[16]int16)(a.BSums[i*16:])
		scales := (*[16]byte)(b[q2KScales:])
		unpackQ2_K(b[q2KQs:], &q)
		d := float32(a.D[i] * halfAt(b, q2KD))
		dmin := -float32(a.D[i] * halfAt(b, q2KDmin))
		for t := range acc {
			m := int32(scales[2*t]>>4)*int32(bsums[2*t]) + int32(scales[2*t+1]>>4)*int32(bsums[2*t+1])
			acc[t] = fma32(dmin, float32(m), acc[t])
		}
		for s, v := range scales {
			sc[s] = int32(v & 0xF)
		}
		kLanes(&q, (*[QKK]int8)(a.Qs[i*QKK:]), &sc, &l)
		for t := range acc {
			acc[t] = fma32(d, float32(l[t]), acc[t])
		}
	}
	return hsum8(&acc)
}

// dotQ3_K returns the dot product of the Q3_K row w with the Q8_K activation a.
func dotQ3_K(w []byte, a *Activation) float32 {
	var (
		q      [QKK]int8
		scales [16]int8
		sc     [16]int32
		acc    [8]float32
		l      [8]int32
	)
	for i := range a.N / QKK {
		b := w[i*q3KBytes : (i+1)*q3KBytes]
		unpackQ3_K(b[q3KHmask:], b[q3KQs:], &q)
		scalesQ3_K(b[q3KScales:], &scales)
		for s, v := range scales {
			sc[s] = int32(v)
		}
		kLanes(&q, (*[QKK]int8)(a.Qs[i*QKK:]), &sc, &l)
		d := float32(a.D[i] * halfAt(b, q3KD))
		for t := range acc {
			acc[t] = fma32(d, float32(l[t]), acc[t])
		}
	}
	return hsum8(&acc)
}

// dotQ4_KGeneric returns the dot product of the Q4_K row w with the Q8_K activation a.
//
// It follows the reference build's repacked Q4_K kernels (llama.cpp 3f545be,
// the 8×8 "repack" path), not the eight-lane arithmetic of the other K-quant
// dots: each super-block i gives two exact integers,
//
//	is = Σ_s scale[s]·Σ_{j in sub-block s} q[j]·qa[j]
//	im = Σ_s min[s]·(bsum[2s] + bsum[2s+1])
//
// and two scalar float32 chains take them over the super-blocks in order,
// acc = fma(float32(d_w·d_a), float32(is), acc) and
// accm = fma(float32(dmin_w·d_a), float32(im), accm); the result is acc − accm.
// The integers cannot overflow int32: scale, min ≤ 63, |Σ q·qa| ≤ 32·15·127
// per sub-block and |bsum[2s] + bsum[2s+1]| ≤ 32·127, so |is| ≤ 8·63·60960
// < 2^25 and |im| ≤ 8·63·4064 < 2^21. Because they are exact, the SIMD
// kernels may form them in any order; only the two float chains are ordered.
func dotQ4_KGeneric(w []byte, a *Activation) float32 {
	var (
		scales, mins [8]uint8
		acc, accm    float32
	)
	for i := range a.N / QKK {
		b := w[i*q4KBytes : (i+1)*q4KBytes]
		bsums := (*[16]int16)(a.BSums[i*16:])
		scalesMinsK4(b[q4KScales:], &scales, &mins)
		qa := (*[QKK]int8)(a.Qs[i*QKK:])
		var is, im int32
		for c := range 4 {
			src := (*[32]byte)(b[q4KQs+32*c:])
			lo := (*[32]int8)(qa[64*c:])
			hi := (*[32]int8)(qa[64*c+32:])
			var dl, dh int32
			for l, v := range src {
				dl += int32(v&0xF) * int32(lo[l])
				dh += int32(v>>4) * int32(hi[l])
			}
			is += int32(scales[2*c])*dl + int32(scales[2*c+1])*dh
		}
		for s, m := range mins {
			im += int32(m) * (int32(bsums[2*s]) + int32(bsums[2*s+1]))
		}
		acc = fma32(float32(a.D[i]*halfAt(b, q4KD)), float32(is), acc)
		accm = fma32(float32(a.D[i]*halfAt(b, q4KDmin)), float32(im), accm)
	}
	return acc - accm
}

// dotQ5_KGeneric returns the dot product of the Q5_K row w with the Q8_K activation a.
// The minimums of a super-block are summed in one integer and accumulated in
// one float, added at the end.
func dotQ5_KGeneric(w []byte, a *Activation) float32 {
	var (
		q            [QKK]int8
		scales, mins [8]uint8
		sc           [16]int32
		acc          [8]float32
		l            [8]int32
		summs        float32
	)
	for i := range a.N / QKK {
		b := w[i*q5KBytes : (i+1)*q5KBytes]
		bsums := (*[16]int16)(a.BSums[i*16:])
		unpackQ5_K(b[q5KQh:], b[q5KQs:], &q)
		scalesMinsK4(b[q5KScales:], &scales, &mins)
		d := float32(a.D[i] * halfAt(b, q5KD))
		dmin := -float32(a.D[i] * halfAt(b, q5KDmin))
		var m int32
		for s, v := range mins {
			m += int32(v) * (int32(bsums[2*s]) + int32(bsums[2*s+1]))
		}
		summs = fma32(dmin, float32(m), summs)
		scales16K4(&scales, &sc)
		kLanes(&q, (*[QKK]int8)(a.Qs[i*QKK:]), &sc, &l)
		for t := range acc {
			acc[t] = fma32(d, float32(l[t]), acc[t])
		}
	}
	return hsum8(&acc) + summs
}

// dotQ6_KGeneric returns the dot product of the Q6_K row w with the Q8_K activation a.
func dotQ6_KGeneric(w []byte, a *Activation) float32 {
	var (
		q   [QKK]int8
		sc  [16]int32
		acc [8]float32
		l   [8]int32
	)
	for i := range a.N / QKK {
		b := w[i*q6KBytes : (i+1)*q6KBytes]
		unpackQ6_K(b[q6KQl:], b[q6KQh:], &q)
		for s, v := range b[q6KScales : q6KScales+16] {
			sc[s] = int32(int8(v))
		}
		kLanes(&q, (*[QKK]int8)(a.Qs[i*QKK:]), &sc, &l)
		d := float32(a.D[i] * halfAt(b, q6KD))
		for t := range acc {
			acc[t] = fma32(d, float32(l[t]), acc[t])
		}
	}
	return hsum8(&acc)
}

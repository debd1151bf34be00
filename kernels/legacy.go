package kernels

import (
	"encoding/binary"
	"math"
)

// The 32-value block types, exactly as in GGML/GGUF (all little-endian, f16 is an
// IEEE half):
//
//	Q4_0  18 B: d f16, qs[16]                 x = (q-8)*d,  q 4 bits
//	Q4_1  20 B: d f16, m f16, qs[16]          x = q*d + m,  q 4 bits
//	Q5_0  22 B: d f16, qh[4], qs[16]          x = (q-16)*d, q 5 bits
//	Q5_1  24 B: d f16, m f16, qh[4], qs[16]   x = q*d + m,  q 5 bits
//	Q8_0  34 B: d f16, qs[32] int8            x = q*d
//
// In the 4- and 5-bit types value j (0…15) of a block is the low nibble of qs[j]
// and value j+16 is its high nibble. The 5-bit types take the fifth bit of value j
// (0…31) from bit j of qh read as a little-endian uint32.
//
// The fused dots multiply a weight row with an activation quantized to Q8_0 (for
// Q4_0, Q5_0, Q8_0) or Q8_1 (for Q4_1, Q5_1). They follow the float32 operations
// of the reference implementation's x86 AVX2 kernels (ggml_vec_dot_*_q8_*), the
// code that produced our conformance data, so that results match it bit for bit:
// a block of 32 products is summed exactly in integers in eight lanes of four
// consecutive values (lane t holds values 4t…4t+3), and each lane is scaled and
// accumulated across blocks with a fused multiply-add,
//
//	acc[t] = fma(d_w·d_a, lane[t], acc[t])
//
// after which the eight lanes are added pairwise (hsum8); Q4_0 is the exception
// (see dotQ4_0). The types with an offset (Q4_1, Q5_1) accumulate summs += m_w·s_a
// over the blocks in one float32 and add it at the very end; the reference's
// compiler turns that line into a fused multiply-add, but m_w and s_a are both
// halves, so their product is exact in float32 and a plain addition rounds the
// same. Matching the rounding of every operation matters beyond the last bit of
// each dot: the outputs are quantized again for the next matmul, and a last-bit
// difference can flip the rounding of an 8-bit quant.

// Block sizes in bytes of the 32-value types.
const (
	q4_0Bytes = 2 + QK/2
	q4_1Bytes = 4 + QK/2
	q5_0Bytes = 2 + 4 + QK/2
	q5_1Bytes = 4 + 4 + QK/2
	q8_0Bytes = 2 + QK
)

// f16at decodes the little-endian half-precision value at b[off:].
func f16at(b []byte, off int) float32 {
	return FP16ToFP32(binary.LittleEndian.Uint16(b[off:]))
}

// blocks returns the number of 32-value blocks in n values.
func blocks(n int) int { return n / QK }

// ---------------------------------------------------------------------------
// Dequantization

// dequantQ4_0 expands len(dst)/32 Q4_0 blocks from src into dst.
func dequantQ4_0(src []byte, dst []float32) {
	for b := range blocks(len(dst)) {
		blk := (*[q4_0Bytes]byte)(src[b*q4_0Bytes:])
		d := f16at(blk[:], 0)
		qs := (*[16]byte)(blk[2:])
		y := (*[QK]float32)(dst[b*QK:])
		for j, q := range qs {
			y[j] = float32(int32(q&0x0f)-8) * d
			y[j+16] = float32(int32(q>>4)-8) * d
		}
	}
}

// dequantQ4_1 expands len(dst)/32 Q4_1 blocks from src into dst.
func dequantQ4_1(src []byte, dst []float32) {
	for b := range blocks(len(dst)) {
		blk := (*[q4_1Bytes]byte)(src[b*q4_1Bytes:])
		d, m := f16at(blk[:], 0), f16at(blk[:], 2)
		qs := (*[16]byte)(blk[4:])
		y := (*[QK]float32)(dst[b*QK:])
		for j, q := range qs {
			y[j] = float32(float32(q&0x0f)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

// dequantQ5_0 expands len(dst)/32 Q5_0 blocks from src into dst.
func dequantQ5_0(src []byte, dst []float32) {
	for b := range blocks(len(dst)) {
		blk := (*[q5_0Bytes]byte)(src[b*q5_0Bytes:])
		d := f16at(blk[:], 0)
		qh := binary.LittleEndian.Uint32(blk[2:])
		qs := (*[16]byte)(blk[6:])
		y := (*[QK]float32)(dst[b*QK:])
		for j, q := range qs {
			lo, hi := q5Pair(q, qh)
			qh >>= 1
			y[j] = float32(lo-16) * d
			y[j+16] = float32(hi-16) * d
		}
	}
}

// dequantQ5_1 expands len(dst)/32 Q5_1 blocks from src into dst.
func dequantQ5_1(src []byte, dst []float32) {
	for b := range blocks(len(dst)) {
		blk := (*[q5_1Bytes]byte)(src[b*q5_1Bytes:])
		d, m := f16at(blk[:], 0), f16at(blk[:], 2)
		qh := binary.LittleEndian.Uint32(blk[4:])
		qs := (*[16]byte)(blk[8:])
		y := (*[QK]float32)(dst[b*QK:])
		for j, q := range qs {
			lo, hi := q5Pair(q, qh)
			qh >>= 1
			y[j] = float32(float32(lo)*d) + m
			y[j+16] = float32(float32(hi)*d) + m
		}
	}
}

// dequantQ8_0 expands len(dst)/32 Q8_0 blocks from src into dst.
func dequantQ8_0(src []byte, dst []float32) {
	for b := range blocks(len(dst)) {
		blk := (*[q8_0Bytes]byte)(src[b*q8_0Bytes:])
		d := f16at(blk[:], 0)
		qs := (*[QK]byte)(blk[2:])
		y := (*[QK]float32)(dst[b*QK:])
		for j, q := range qs {
			y[j] = float32(int8(q)) * d
		}
	}
}

// q5Pair returns the unsigned 5-bit quants j and j+16 (0…31) of a Q5 block: the
// nibbles of q = qs[j] with the fifth bits j and j+16 of the block's qh, which
// the caller passes shifted right by j (so they are bits 0 and 16 here).
func q5Pair(q byte, qhj uint32) (lo, hi int32) {
	lo = int32(q&0x0f) | int32(qhj&1)<<4
	hi = int32(q>>4) | int32(qhj>>16&1)<<4
	return lo, hi
}

// ---------------------------------------------------------------------------
// Activation quantization

// quantizeQ8_0Generic quantizes x into a (already Reset to Q8_0, len(x) values) like
// ggml's quantize_row_q8_0_ref: per block of 32, d = max|x|/127 and
// q = round(x/d) with ties away from zero. The scale is stored as fp16 in the
// reference format, so a.D holds d rounded to half precision (the quants were
// computed with the unrounded d, as in the reference).
func quantizeQ8_0Generic(x []float32, a *Activation) {
	for b := range blocks(len(x)) {
		xs := (*[QK]float32)(x[b*QK:])
		qs := (*[QK]int8)(a.Qs[b*QK:])
		d, _ := quantizeBlock8(xs, qs)
		a.D[b] = roundFP16(d)
	}
}

// quantizeQ8_1 quantizes x into a (already Reset to Q8_1, len(x) values) like
// ggml's quantize_row_q8_1_ref: the quants and a.D as in quantizeQ8_0, and a.Sum
// holds d·Σq of each block (the float32 d times the integer sum), rounded to half
// precision as the reference stores it.
func quantizeQ8_1(x []float32, a *Activation) {
	for b := range blocks(len(x)) {
		xs := (*[QK]float32)(x[b*QK:])
		qs := (*[QK]int8)(a.Qs[b*QK:])
		d, sum := quantizeBlock8(xs, qs)
		a.D[b] = roundFP16(d)
		a.Sum[b] = roundFP16(float32(sum) * d)
	}
}

// quantizeBlock8 quantizes one block of 32 values to int8 with the absmax scale
// d = max|x|/127 and returns d (in float32, before any fp16 rounding) and the sum
// of the quants. A block of zeros gives d = 0 and zero quants. Non-finite inputs
// give unspecified quants.
//
// It follows the reference implementation's x86 path (the one that produced our
// conformance data): values are multiplied by 127/max, not by 1/d, and rounded
// to nearest with ties to even. The two scalings differ in the last bit, which
// flips the rounding of values near a half often enough to matter: inputs that
// are FP16 values (attention outputs read from an FP16 KV cache) have short
// mantissas and land on such boundaries.
func quantizeBlock8(x *[QK]float32, q *[QK]int8) (d float32, sum int32) {
	var amax float32
	for _, v := range x {
		if av := abs32(v); av > amax {
			amax = av
		}
	}
	d = amax / 127
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for j, v := range x {
		qi := roundToEvenInt32(v * id)
		q[j] = int8(qi)
		sum += qi
	}
	return d, sum
}

// abs32 returns |v| by clearing the sign bit.
func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// roundFP16 rounds f to the nearest half-precision value and returns it as float32.
func roundFP16(f float32) float32 { return FP16ToFP32(FP32ToFP16(f)) }

// ---------------------------------------------------------------------------
// Fused dots

// The lane helpers below set l to the products of one block of weight quants and
// activation quants y summed exactly in the reference's eight lanes: lane t is
// Σ w[j]·y[j] for j = 4t…4t+3 (the grouping of its AVX2 multiply-add
// instructions). Values j < 16 of the 4- and 5-bit types are the low nibbles of
// qs[j], values j+16 the high nibbles.

// nibbleLanes computes the lanes of a Q4_1 block with nibbles qs (quants 0…15).
func nibbleLanes(qs *[16]byte, y *[QK]int8, l *[8]int32) {
	for k := range 4 {
		x := (*[4]byte)(qs[4*k:])
		lo, hi := (*[4]int8)(y[4*k:]), (*[4]int8)(y[16+4*k:])
		l[k] = int32(x[0]&15)*int32(lo[0]) + int32(x[1]&15)*int32(lo[1]) +
			int32(x[2]&15)*int32(lo[2]) + int32(x[3]&15)*int32(lo[3])
		l[k+4] = int32(x[0]>>4)*int32(hi[0]) + int32(x[1]>>4)*int32(hi[1]) +
			int32(x[2]>>4)*int32(hi[2]) + int32(x[3]>>4)*int32(hi[3])
	}
}

// q5Lanes computes the lanes of a Q5_0 or Q5_1 block with nibbles qs and fifth
// bits qh, its quants taken minus off (16 for Q5_0, 0 for Q5_1).
func q5Lanes(qs *[16]byte, qh uint32, off int32, y *[QK]int8, l *[8]int32) {
	for k := range 4 {
		x := (*[4]byte)(qs[4*k:])
		lo, hi := (*[4]int8)(y[4*k:]), (*[4]int8)(y[16+4*k:])
		h := qh >> (4 * k)
		var sl, sh int32
		for i, b := range x {
			ql, qhi := q5Pair(b, h>>i)
			sl += (ql - off) * int32(lo[i])
			sh += (qhi - off) * int32(hi[i])
		}
		l[k], l[k+4] = sl, sh
	}
}

// q8Lanes computes the lanes of a Q8_0 block with quants qs.
func q8Lanes(qs *[QK]byte, y *[QK]int8, l *[8]int32) {
	for t := range l {
		x, z := (*[4]byte)(qs[4*t:]), (*[4]int8)(y[4*t:])
		l[t] = int32(int8(x[0]))*int32(z[0]) + int32(int8(x[1]))*int32(z[1]) +
			int32(int8(x[2]))*int32(z[2]) + int32(int8(x[3]))*int32(z[3])
	}
}

// accumulateLanes adds the lane sums l scaled by d to acc, one fused
// multiply-add per lane, as the reference's AVX2 kernels do.
func accumulateLanes(acc *[8]float32, d float32, l *[8]int32) {
	d64 := float64(d)
	for t, v := range l {
		// fma32(d, float32(v), acc[t]), with its fast path written out so
		// that it is inlined. The product is exact in float64.
		p := float64(d64 * float64(v))
		s := float64(p + float64(acc[t]))
		if fma32Fast(s) {
			acc[t] = float32(s)
		} else {
			acc[t] = fma32Slow(p, float64(acc[t]), s)
		}
	}
}

// dotQ4_0Generic returns the dot product of a Q4_0 row with a Q8_0 activation.
//
// Unlike the other types it does not use the lanes: the reference's x86 build
// repacks Q4_0 matrices whose row count is a multiple of 8 (practically all) into
// interleaved blocks of eight rows, and its kernel for one activation row
// (ggml_gemv_q4_0_8x8_q8_0) sums the 32 products of a block in one integer and
// accumulates sum = fma(sumi, d_w·d_a, sum) block by block. (Matrices with
// other row counts take the lane kernel there; a row's dot does not know the
// matrix, so this follows the repacked kernel always.)
func dotQ4_0Generic(w []byte, a *Activation) float32 {
	var sum float32
	for b := range blocks(a.N) {
		blk := (*[q4_0Bytes]byte)(w[b*q4_0Bytes:])
		qs := (*[16]byte)(blk[2:])
		y := (*[QK]int8)(a.Qs[b*QK:])
		var sumi int32
		for j, q := range qs {
			sumi += (int32(q&0x0f) - 8) * int32(y[j])
			sumi += (int32(q>>4) - 8) * int32(y[j+16])
		}
		sum = fma32(float32(sumi), float32(f16at(blk[:], 0)*a.D[b]), sum)
	}
	return sum
}

// dotQ4_1 returns the dot product of a Q4_1 row with a Q8_1 activation.
func dotQ4_1(w []byte, a *Activation) float32 {
	var acc [8]float32
	var summs float32
	for b := range blocks(a.N) {
		blk := (*[q4_1Bytes]byte)(w[b*q4_1Bytes:])
		var l [8]int32
		nibbleLanes((*[16]byte)(blk[4:]), (*[QK]int8)(a.Qs[b*QK:]), &l)
		accumulateLanes(&acc, float32(f16at(blk[:], 0)*a.D[b]), &l)
		summs += float32(f16at(blk[:], 2) * a.Sum[b]) // exact product (see the top of the file)
	}
	return hsum8(&acc) + summs
}

// dotQ5_0Generic returns the dot product of a Q5_0 row with a Q8_0 activation.
func dotQ5_0Generic(w []byte, a *Activation) float32 {
	var acc [8]float32
	for b := range blocks(a.N) {
		blk := (*[q5_0Bytes]byte)(w[b*q5_0Bytes:])
		var l [8]int32
		q5Lanes((*[16]byte)(blk[6:]), binary.LittleEndian.Uint32(blk[2:]), 16, (*[QK]int8)(a.Qs[b*QK:]), &l)
		accumulateLanes(&acc, float32(f16at(blk[:], 0)*a.D[b]), &l)
	}
	return hsum8(&acc)
}

// dotQ5_1 returns the dot product of a Q5_1 row with a Q8_1 activation.
func dotQ5_1(w []byte, a *Activation) float32 {
	var acc [8]float32
	var summs float32
	for b := range blocks(a.N) {
		blk := (*[q5_1Bytes]byte)(w[b*q5_1Bytes:])
		var l [8]int32
		q5Lanes((*[16]byte)(blk[8:]), binary.LittleEndian.Uint32(blk[4:]), 0, (*[QK]int8)(a.Qs[b*QK:]), &l)
		accumulateLanes(&acc, float32(f16at(blk[:], 0)*a.D[b]), &l)
		summs += float32(f16at(blk[:], 2) * a.Sum[b]) // exact product (see the top of the file)
	}
	return hsum8(&acc) + summs
}

// dotQ8_0Generic returns the dot product of a Q8_0 row with a Q8_0 activation.
func dotQ8_0Generic(w []byte, a *Activation) float32 {
	var acc [8]float32
	for b := range blocks(a.N) {
		blk := (*[q8_0Bytes]byte)(w[b*q8_0Bytes:])
		var l [8]int32
		q8Lanes((*[QK]byte)(blk[2:]), (*[QK]int8)(a.Qs[b*QK:]), &l)
		accumulateLanes(&acc, float32(f16at(blk[:], 0)*a.D[b]), &l)
	}
	return hsum8(&acc)
}

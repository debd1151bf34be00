package kernels

import (
	"encoding/binary"
	"math"
)

// Floating-point conventions of the portable kernels
//
// Every product that is added to something is rounded to float32 explicitly
// (float32(x*y)) before the addition. Go may otherwise fuse x*y+z into one FMA
// instruction on some architectures (arm64, ppc64, s390x) but not on others
// (amd64), and the portable kernels are meant to give bit-identical results on
// every GOARCH so that they can serve as the reference for optimised kernels.

// FP16ToFP32 converts an IEEE 754 half-precision value, given by its bits, to
// float32. The conversion is exact: subnormal halves become normal float32 values,
// infinities stay infinities and NaNs stay NaNs with their payload kept.
func FP16ToFP32(h uint16) float32 {
	// Kept small enough for the compiler to inline: it sits in the inner loop of
	// the F16 dots.
	sign := uint32(h&0x8000) << 16
	switch h & 0x7c00 {
	case 0: // zero or subnormal: mant · 2^-24, exact in float32
		return math.Float32frombits(math.Float32bits(float32(h&0x3ff)*0x1p-24) | sign)
	case 0x7c00: // infinity or NaN
		return math.Float32frombits(sign | 0x7f800000 | uint32(h&0x3ff)<<13)
	}
	// Normal: move exponent and mantissa into place and rebias 15 -> 127.
	return math.Float32frombits(sign | (uint32(h&0x7fff)<<13 + (127-15)<<23))
}

// FP32ToFP16 converts f to the nearest IEEE 754 half-precision value, rounding
// ties to even, and returns its bits. Values too small for the smallest subnormal
// half round to (signed) zero, values of magnitude 65520 or more become infinity,
// and NaNs become quiet NaNs that keep the sign and the top payload bits.
func FP32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff

	switch {
	case exp == 0xff:
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13) // quiet NaN
		}
		return sign | 0x7c00
	case exp >= 143:
		// |f| >= 2^16: beyond the largest half even before rounding.
		return sign | 0x7c00
	case exp >= 113:
		// Normal half range (2^-14 <= |f| < 2^16). Drop 13 mantissa bits and
		// round; a carry out of the mantissa correctly bumps the exponent, up to
		// infinity (0x7c00) for 65520 <= |f| < 65536.
		h := uint32(exp-112)<<10 | mant>>13
		h += roundBit(mant, 13, h)
		return sign | uint16(h)
	case exp >= 102:
		// Subnormal half: |f| = m * 2^(exp-150) with the implicit bit in m;
		// in units of 2^-24 that is m >> (126-exp). Rounding up from the
		// largest subnormal yields the smallest normal (0x400), as it should.
		m := mant | 0x800000
		shift := uint(126 - exp) // 14 … 24
		h := m >> shift
		h += roundBit(m, shift, h)
		return sign | uint16(h)
	default:
		// |f| < 2^-25: below half of the smallest subnormal, rounds to zero.
		return sign
	}
}

// roundBit returns 1 when v with its low shift bits dropped (giving kept) must be
// rounded up under round-to-nearest-even, else 0.
func roundBit(v uint32, shift uint, kept uint32) uint32 {
	rem := v & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && kept&1 == 1) {
		return 1
	}
	return 0
}

// BF16ToFP32 converts a bfloat16 value, given by its bits, to float32. The
// conversion is exact: bfloat16 is the top half of a float32.
func BF16ToFP32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// FP32ToBF16 converts f to the nearest bfloat16 value, rounding ties to even,
// and returns its bits. Subnormals are kept (rounded like any other value),
// values that round beyond the largest bfloat16 become infinity, and NaNs
// become quiet NaNs that keep the sign and the top payload bits.
func FP32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // NaN: keep it a NaN, quiet
	}
	return uint16(b>>16 + roundBit(b, 16, b>>16))
}

// quantizeFloat rounds x to a.Kind (F16 or BF16) into a.F, as float32 values.
func quantizeFloat(x []float32, a *Activation) {
	if a.Kind == F16 {
		for i, v := range x {
			a.F[i] = roundFP16(v)
		}
		return
	}
	for i, v := range x {
		a.F[i] = BF16ToFP32(FP32ToBF16(v))
	}
}

// fma32 returns a·b + c rounded once to float32, as a fused multiply-add
// instruction computes it. The product of two float32 values is exact in
// float64; the float64 sum is then rounded a second time to float32, which is
// only wrong when the first rounding lands exactly halfway between two float32
// values. That case (and float32 subnormals, whose halfway points lie
// elsewhere) takes a slow path that rounds the float64 sum to odd, which makes
// the final rounding correct.
func fma32(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b)) // exact: 24+24 significant bits
	s := float64(p + float64(c))
	if fma32Fast(s) {
		return float32(s)
	}
	return fma32Slow(p, float64(c), s)
}

// fma32Fast reports whether rounding s, the float64 rounding of an exact sum,
// to float32 rounds the exact sum correctly: s is not halfway between two float32
// values (low 29 of its 52 mantissa bits 100…0) and is zero or not in the
// float32 subnormal range (biased float64 exponent below 1023-126).
func fma32Fast(s float64) bool {
	b := math.Float64bits(s)
	return b&(1<<29-1) != 1<<28 && (b&(0x7ff<<52) >= (1023-126)<<52 || s == 0)
}

// fma32Slow rounds the exact sum p + c to float32, given its float64 rounding s.
func fma32Slow(p, c, s float64) float32 {
	// Exact error of the float64 addition (Knuth's TwoSum).
	bv := float64(s - p)
	e := float64(p-float64(s-bv)) + float64(c-bv)
	if e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// FP32ToFP16Slice converts src to half precision into dst (see FP32ToFP16),
// bit for bit as FP32ToFP16 converts each value. dst must be at least as long
// as src.
func FP32ToFP16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i := fp32ToFP16Accel(dst, src); i < len(src); i++ {
		dst[i] = FP32ToFP16(src[i])
	}
}

// FP16ToFP32Slice converts the half-precision values in src to float32 into dst.
// dst must be at least as long as src.
func FP16ToFP32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = FP16ToFP32(h)
	}
}

// dequantF32 copies little-endian float32 values from src into dst.
func dequantF32(src []byte, dst []float32) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = f32le(src[4*i:])
	}
}

// dequantF16 expands little-endian half-precision values from src into dst.
func dequantF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = f16le(src[2*i:])
	}
}

// dequantBF16 expands little-endian bfloat16 values from src into dst.
func dequantBF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = bf16le(src[2*i:])
	}
}

// The float weight dots below read a.N weights and multiply them with the float32
// activations a.F.
//
// dotF32 accumulates in float32 with eight independent accumulators: value i goes
// to accumulator i%8 (the tail after the last whole group of eight to accumulator
// 0), and the accumulators are summed pairwise at the end:
// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)). Independent accumulators let the CPU
// overlap the additions and keep the rounding error growth lower than a single
// running sum.
//
// dotF16 and dotBF16 expect an activation of kind F16 or BF16, whose values the
// quantization has rounded to that precision, so every product of a weight and
// an activation value is exact in float32 (11+11 resp. 8+8 significant bits) and
// only the order of the additions matters. They follow the reference
// implementation's x86 AVX-512 kernels (ggml_vec_dot_f16, ggml_vec_dot_bf16),
// which produced our conformance data, so that results match it bit for bit
// (a last-bit difference can flip the rounding of the next matmul's
// activation); see each function.

// dotF32Generic returns the dot product of a row of little-endian float32 weights with a.F.
func dotF32Generic(w []byte, a *Activation) float32 {
	x := a.F[:a.N]
	w = w[:4*len(x)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		ws := (*[32]byte)(w[4*i:])
		xs := (*[8]float32)(x[i:])
		s0 += float32(f32le(ws[0:]) * xs[0])
		s1 += float32(f32le(ws[4:]) * xs[1])
		s2 += float32(f32le(ws[8:]) * xs[2])
		s3 += float32(f32le(ws[12:]) * xs[3])
		s4 += float32(f32le(ws[16:]) * xs[4])
		s5 += float32(f32le(ws[20:]) * xs[5])
		s6 += float32(f32le(ws[24:]) * xs[6])
		s7 += float32(f32le(ws[28:]) * xs[7])
	}
	for ; i < len(x); i++ {
		s0 += float32(f32le(w[4*i:]) * x[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// dotF16Generic returns the dot product of a row of little-endian half-precision weights
// with a.F, an activation of kind F16.
//
// The reference's AVX-512 kernel keeps four vectors of 16 float32 lanes: value i
// of each whole group of 64 goes to lane i%64 (vector i%64/16). It then adds the
// vectors as (v0+v2)+(v1+v3), reduces the 16 lanes of the result (hsum16), and
// adds the remaining products one by one in float64, converting to float32 at
// the end.
func dotF16Generic(w []byte, a *Activation) float32 {
	x := a.F[:a.N]
	w = w[:2*len(x)]
	var acc [64]float32
	i := 0
	for ; i+64 <= len(x); i += 64 {
		ws := (*[128]byte)(w[2*i:])
		xs := (*[64]float32)(x[i:])
		for l := range acc {
			acc[l] += float32(f16le(ws[2*l:]) * xs[l]) // exact product
		}
	}
	var v [16]float32
	for l := range v {
		v[l] = (acc[l] + acc[32+l]) + (acc[16+l] + acc[48+l])
	}
	sum := float64(hsum16(&v))
	for ; i < len(x); i++ {
		sum += float64(float32(f16le(w[2*i:]) * x[i]))
	}
	return float32(sum)
}

// dotBF16 returns the dot product of a row of little-endian bfloat16 weights with
// a.F, an activation of kind BF16.
//
// It follows the reference's kernel for CPUs with the AVX512-BF16 extension,
// which produced our conformance data (the plain AVX-512 variant orders the sums
// differently and does not match it). That kernel keeps two vectors of 16
// float32 lanes and feeds them pairs with the VDPBF16PS instruction: lane l of
// the first vector takes values 2l+1 and then 2l of each whole group of 64 (of
// the second vector, values 32+2l+1 and 32+2l), each product added with its own
// rounding. It reduces each vector (hsum16), adds the two results in float64,
// adds the remaining products one by one in float64 and converts to float32 at
// the end. (The instruction also treats subnormal inputs and results as zero;
// values that small do not occur in practice and are not reproduced.)
func dotBF16(w []byte, a *Activation) float32 {
	x := a.F[:a.N]
	w = w[:2*len(x)]
	var c1, c2 [16]float32
	i := 0
	for ; i+64 <= len(x); i += 64 {
		ws := (*[128]byte)(w[2*i:])
		xs := (*[64]float32)(x[i:])
		for l := range c1 {
			j := 2 * l // exact products
			c1[l] += float32(bf16le(ws[2*j+2:]) * xs[j+1])
			c1[l] += float32(bf16le(ws[2*j:]) * xs[j])
			c2[l] += float32(bf16le(ws[2*j+66:]) * xs[j+33])
			c2[l] += float32(bf16le(ws[2*j+64:]) * xs[j+32])
		}
	}
	sum := float64(hsum16(&c1)) + float64(hsum16(&c2))
	for ; i < len(x); i++ {
		sum += float64(float32(bf16le(w[2*i:]) * x[i]))
	}
	return float32(sum)
}

// hsum16 adds 16 float32 lanes in the order of the reference's x86 build
// (_mm512_reduce_add_ps as GCC implements it): lanes l and l+8, then l and l+4,
// then l and l+2, then the last two: ((h0+h4)+(h2+h6)) + ((h1+h5)+(h3+h7)) with
// h[l] = x[l]+x[l+8].
func hsum16(x *[16]float32) float32 {
	var h [8]float32
	for l := range h {
		h[l] = x[l] + x[l+8]
	}
	q0, q1, q2, q3 := h[0]+h[4], h[1]+h[5], h[2]+h[6], h[3]+h[7]
	return (q0 + q2) + (q1 + q3)
}

// hsum8 adds 8 float32 lanes in the order of the reference's hsum_float_8 (x86
// AVX): ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)).
func hsum8(x *[8]float32) float32 {
	q0, q1, q2, q3 := x[0]+x[4], x[1]+x[5], x[2]+x[6], x[3]+x[7]
	return (q0 + q2) + (q1 + q3)
}

// f32le decodes the little-endian float32 at the start of b.
func f32le(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// f16le decodes the little-endian half-precision value at the start of b.
func f16le(b []byte) float32 { return FP16ToFP32(binary.LittleEndian.Uint16(b)) }

// bf16le decodes the little-endian bfloat16 value at the start of b.
func bf16le(b []byte) float32 { return BF16ToFP32(binary.LittleEndian.Uint16(b)) }

// RoundFP16 sets dst[i] to src[i] rounded to half precision and back,
// FP16ToFP32(FP32ToFP16(src[i])), bit for bit (attention rounds its query
// and its softmax weights so, as the reference does). dst must be at least
// as long as src; it may be src.
func RoundFP16(dst, src []float32) {
	dst = dst[:len(src)]
	for i := roundFP16Accel(dst, src); i < len(src); i++ {
		dst[i] = FP16ToFP32(FP32ToFP16(src[i]))
	}
}

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

// FP32ToFP16Slice converts src to half precision into dst (see FP32ToFP16).
// dst must be at least as long as src.
func FP32ToFP16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = FP32ToFP16(v)
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
// activations a.F. They accumulate in float32 with eight independent accumulators:
// value i goes to accumulator i%8 (the tail after the last whole group of eight to
// accumulator 0), and the accumulators are summed pairwise at the end: ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)). Independent
// accumulators let the CPU overlap the additions and keep the rounding error
// growth lower than a single running sum.

// dotF32 returns the dot product of a row of little-endian float32 weights with a.F.
func dotF32(w []byte, a *Activation) float32 {
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

// dotF16 returns the dot product of a row of little-endian half-precision weights
// with a.F.
func dotF16(w []byte, a *Activation) float32 {
	x := a.F[:a.N]
	w = w[:2*len(x)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		ws := (*[16]byte)(w[2*i:])
		xs := (*[8]float32)(x[i:])
		s0 += float32(f16le(ws[0:]) * xs[0])
		s1 += float32(f16le(ws[2:]) * xs[1])
		s2 += float32(f16le(ws[4:]) * xs[2])
		s3 += float32(f16le(ws[6:]) * xs[3])
		s4 += float32(f16le(ws[8:]) * xs[4])
		s5 += float32(f16le(ws[10:]) * xs[5])
		s6 += float32(f16le(ws[12:]) * xs[6])
		s7 += float32(f16le(ws[14:]) * xs[7])
	}
	for ; i < len(x); i++ {
		s0 += float32(f16le(w[2*i:]) * x[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// dotBF16 returns the dot product of a row of little-endian bfloat16 weights with
// a.F.
func dotBF16(w []byte, a *Activation) float32 {
	x := a.F[:a.N]
	w = w[:2*len(x)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		ws := (*[16]byte)(w[2*i:])
		xs := (*[8]float32)(x[i:])
		s0 += float32(bf16le(ws[0:]) * xs[0])
		s1 += float32(bf16le(ws[2:]) * xs[1])
		s2 += float32(bf16le(ws[4:]) * xs[2])
		s3 += float32(bf16le(ws[6:]) * xs[3])
		s4 += float32(bf16le(ws[8:]) * xs[4])
		s5 += float32(bf16le(ws[10:]) * xs[5])
		s6 += float32(bf16le(ws[12:]) * xs[6])
		s7 += float32(bf16le(ws[14:]) * xs[7])
	}
	for ; i < len(x); i++ {
		s0 += float32(bf16le(w[2*i:]) * x[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// f32le decodes the little-endian float32 at the start of b.
func f32le(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// f16le decodes the little-endian half-precision value at the start of b.
func f16le(b []byte) float32 { return FP16ToFP32(binary.LittleEndian.Uint16(b)) }

// bf16le decodes the little-endian bfloat16 value at the start of b.
func bf16le(b []byte) float32 { return BF16ToFP32(binary.LittleEndian.Uint16(b)) }

package kernels

import "math"

// Q8_K activation quantization
//
// Q8_K is the activation format of the K-quant dot products. Every super-block of
// QKK values is stored as one float32 scale d, QKK int8 quants q with x ≈ d·q,
// and the sum of each run of 16 quants (the "bsums"), which lets the dot
// products of the types with a per-sub-block minimum (Q2_K, Q4_K, Q5_K) apply
// the minimum once per sub-block instead of once per value.
//
// The scale follows the reference quantizer exactly: it is derived from the
// value of largest magnitude, max, as iscale = -127/max and d = 1/iscale, so d
// has the opposite sign of max and max itself quantizes to -127. Quants are
// rounded to the nearest integer with ties to even and clamped to at most 127.

// quantizeQ8_KGeneric quantizes x into a, which the caller has Reset to Q8_K for
// len(x) values; len(x) must be a multiple of QKK.
func quantizeQ8_KGeneric(x []float32, a *Activation) {
	nb := len(x) / QKK
	qs, d, bsums := a.Qs[:nb*QKK], a.D[:nb], a.BSums[:nb*QKK/16]
	for i := range nb {
		d[i] = quantizeBlockQ8_K(
			(*[QKK]float32)(x[i*QKK:]),
			(*[QKK]int8)(qs[i*QKK:]),
			(*[QKK / 16]int16)(bsums[i*QKK/16:]),
		)
	}
}

// quantizeBlockQ8_K quantizes one super-block x into q and its 16-value sums
// into bsums, and returns the scale d. An all-zero block gives d = 0 and zero
// quants and sums.
func quantizeBlockQ8_K(x *[QKK]float32, q *[QKK]int8, bsums *[QKK / 16]int16) float32 {
	var amax, max float32
	for _, v := range x {
		if av := float32(math.Abs(float64(v))); av > amax {
			amax, max = av, v
		}
	}
	if amax == 0 {
		*q = [QKK]int8{}
		*bsums = [QKK / 16]int16{}
		return 0
	}
	iscale := -127 / max
	for j, v := range x {
		q[j] = int8(min(127, roundToEvenInt32(float32(iscale*v))))
	}
	for j := range bsums {
		var s int16
		for _, v := range q[16*j : 16*j+16] {
			s += int16(v)
		}
		bsums[j] = s
	}
	return 1 / iscale
}

// roundToEvenInt32 rounds f to the nearest integer, ties to even, as the reference
// quantizers do (they add 1.5·2^23 in float32 arithmetic, which rounds the same
// way for |f| < 2^22; larger magnitudes cannot occur there).
func roundToEvenInt32(f float32) int32 {
	return int32(math.RoundToEven(float64(f)))
}

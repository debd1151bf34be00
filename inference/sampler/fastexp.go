package sampler

import "math"

// expf returns e**x in float32 for x <= 0 (including -Inf, which yields 0).
// It is a Cephes-style range reduction plus a degree-6 polynomial, accurate
// to about 2 ulp (measured max relative error below 1e-7), monotone, and
// several times faster than math.Exp; sampling weights need no more than
// that. Inputs below about -87.34, where the result would leave the normal
// float32 range, return 0.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	if !(x >= -87.33654) { // also catches -Inf and NaN
		return 0
	}
	// n = round(x*log2e), ties upward, via truncation of a non-positive value.
	n := float32(int32(x*log2e - 0.5))
	r := x - n*ln2hi
	r -= n * ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	// 2**n for n in [-126, 0] is a normal float32.
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}

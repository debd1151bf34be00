package kernels

import "math"

// The float helpers of a transformer layer. They follow the float32 arithmetic of
// the reference implementation (ggml's CPU ops) where it is cheap to do so, and
// like the rest of the package round every product to float32 before adding it,
// so results are the same on every GOARCH (see float.go).

// expf is e^x rounded to float32 (C's expf).
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// RMSNorm sets out[i] = x[i] / sqrt(mean(x²) + eps) * weight[i] for i < len(x).
// out and weight must be at least as long as x; out may alias x.
//
// As in the reference, the squares are rounded to float32 and summed in float64,
// the mean and scale = 1/sqrt(mean+eps) are float32, and each output is
// (x[i]*scale)*weight[i]. The reference sums the squares in order; here square
// i goes to float64 lane i%8 (the tail after the last group of eight to lane
// 0) and the lanes are added pairwise, so that the vector kernels
// (sumSquaresAccel, scaleMulAccel) give the same bits as this loop. Either
// way the float64 sum is far more precise than the float32 mean it is
// rounded to.
func RMSNorm(out, x, weight []float32, eps float32) {
	if len(x) == 0 {
		return
	}
	out, weight = out[:len(x)], weight[:len(x)]
	var lanes [8]float64
	sumSquares(&lanes, x, sumSquaresAccel(&lanes, x))
	scale := rmsScale(&lanes, len(x), eps)
	scaleMul(out, x, weight, scale, scaleMulAccel(out, x, weight, scale))
}

// rmsNormGeneric is RMSNorm without the vector kernels.
func rmsNormGeneric(out, x, weight []float32, eps float32) {
	if len(x) == 0 {
		return
	}
	var lanes [8]float64
	sumSquares(&lanes, x, 0)
	scaleMul(out[:len(x)], x, weight[:len(x)], rmsScale(&lanes, len(x), eps), 0)
}

// sumSquares adds the squares of x[i:] (i a multiple of eight) to lanes:
// square j to lane j%8, the tail after the last group of eight to lane 0.
func sumSquares(lanes *[8]float64, x []float32, i int) {
	for ; i+8 <= len(x); i += 8 {
		for l, v := range (*[8]float32)(x[i:]) {
			lanes[l] += float64(v * v)
		}
	}
	for _, v := range x[i:] {
		lanes[0] += float64(v * v)
	}
}

// rmsScale returns 1/sqrt(mean+eps) for the squares of n values summed in
// lanes.
func rmsScale(lanes *[8]float64, n int, eps float32) float32 {
	sum := ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
	mean := float32(sum / float64(n))
	return 1 / float32(math.Sqrt(float64(mean+eps)))
}

// scaleMul sets out[j] = (x[j]·scale)·weight[j] for j ≥ i.
func scaleMul(out, x, weight []float32, scale float32, i int) {
	for ; i < len(x); i++ {
		out[i] = float32(x[i]*scale) * weight[i]
	}
}

// Softmax replaces x by softmax(x) = exp(x - max) / Σ exp(x - max). The
// exponentials are float32, their sum is accumulated in float64 and the final
// scaling uses 1/sum rounded to float32, as in the reference. x must contain at
// least one value greater than -Inf; an empty x is left alone.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	maxv := x[0]
	for _, v := range x[1:] {
		if v > maxv {
			maxv = v
		}
	}
	var sum float64
	for i, v := range x {
		e := expf(v - maxv)
		x[i] = e
		sum += float64(e)
	}
	ScaleF32(x, float32(1/sum))
}

// SiLU returns x * sigmoid(x), computed as x / (1 + e^-x) in float32 like the
// reference, with e^-x from expApprox (as the reference's vector code, which
// also uses a polynomial there, within two units in the last place).
func SiLU(x float32) float32 {
	return x / float32(1+expApprox(-x))
}

// The constants of expApprox: the clamp, the rounding shift 1.5·2²³, log₂e,
// ln 2 in two parts (Cody and Waite) and the polynomial for e^r on
// |r| ≤ ln2/2 (Cephes' expf).
const (
	expLo    = -86.0
	expHi    = 88.0
	expShift = 12582912.0
	expLog2e = 1.44269504088896341
	expLn2Hi = 0.693359375
	expLn2Lo = -2.12194440e-4
	expC0    = 1.9875691500e-4
	expC1    = 1.3981999507e-3
	expC2    = 8.3334519073e-3
	expC3    = 4.1665795894e-2
	expC4    = 1.6666665459e-1
	expC5    = 5.0000001201e-1
)

// expApprox returns e^y in float32 within two units in the last place for
// expLo ≤ y ≤ expHi, e^expLo below that range and +Inf above it: y = n·ln2 + r
// with n an integer, e^r from a degree-7 polynomial, and 2^n added to the
// exponent bits. Every step is a float32 operation (fused where written as
// fma32) or an integer one, which the assembly kernels repeat exactly.
func expApprox(y float32) float32 {
	if y > expHi {
		return float32(math.Inf(1))
	}
	if y < expLo {
		y = expLo
	}
	z := fma32(y, expLog2e, expShift) // expShift + n, n = round(y·log₂e)
	n := z - expShift
	r := fma32(n, -expLn2Hi, y)
	r = fma32(n, -expLn2Lo, r)
	r2 := float32(r * r)
	p := fma32(expC0, r, expC1)
	p = fma32(p, r, expC2)
	p = fma32(p, r, expC3)
	p = fma32(p, r, expC4)
	p = fma32(p, r, expC5)
	p = fma32(p, r2, r)
	p = float32(p + 1)
	return math.Float32frombits(math.Float32bits(p) + math.Float32bits(z)<<23)
}

// ExpSub sets x[i] = e^(x[i]−m) for every i, with expApprox (within two
// units in the last place; +Inf above e^88), as the softmax of attention
// needs it: m is the running maximum of the scores.
func ExpSub(x []float32, m float32) {
	done := expSubAccel(x, m)
	for i, v := range x[done:] {
		x[done+i] = expApprox(v - m)
	}
}

// SiLUs sets x[i] = SiLU(x[i]) for every i: SwiGLU's kernels with up = 1,
// whose products by 1 are exact, so the values are SiLU's bit for bit.
func SiLUs(x []float32) {
	var one [64]float32
	for i := range one {
		one[i] = 1
	}
	for len(x) > 0 {
		n := min(len(x), len(one))
		SwiGLU(x[:n], one[:n])
		x = x[n:]
	}
}

// SwiGLU sets gate[i] = SiLU(gate[i]) * up[i] for i < len(gate). up must be at
// least as long as gate.
func SwiGLU(gate, up []float32) {
	up = up[:len(gate)]
	done := swiGLUAccel(gate, up)
	for i, g := range gate[done:] {
		gate[done+i] = float32(SiLU(g) * up[done+i])
	}
}

// RopeTable fills cos[i] and sin[i], i < ropeDim/2, with the cosine and sine of
// theta_i = pos · scale · base^(-2i/ropeDim) / factors[i] for one position.
// scale is the linear frequency scale (1: none); factors are per-pair divisors
// (Llama 3's rope_freqs; nil: none). YaRN is not supported. cos and sin must
// hold at least ropeDim/2 values.
//
// The angles are computed as in the reference (ggml_rope_cache_init): theta starts
// at float32(pos) and is multiplied, in float32, by
// theta_scale = powf(base, -2/ropeDim) once per pair, so the tables match the
// reference's bit for bit up to the last-ulp accuracy of the float64 math
// library rounded to float32.
func RopeTable(cos, sin []float32, pos int, ropeDim int, base, scale float32, factors []float32) {
	n := ropeDim / 2
	cos, sin = cos[:n], sin[:n]
	thetaScale := float32(math.Pow(float64(base), float64(float32(-2)/float32(ropeDim))))
	theta := float32(pos)
	for i := range n {
		th := scale * theta
		if factors != nil {
			th /= factors[i]
		}
		c, s := math.Cos(float64(th)), math.Sin(float64(th))
		cos[i], sin[i] = float32(c), float32(s)
		theta *= thetaScale
	}
}

// RopeNorm applies rotary position embedding in the "normal" (GPT-J, original
// LLaMA) layout to nHeads heads of headDim values stored one after another in x:
// in each head the pair (x[2i], x[2i+1]) is rotated by the angle whose cosine and
// sine are cos[i] and sin[i], for i < len(cos).
//
// The tables are those of RopeTable for one position; their length is ropeDim/2.
// When ropeDim < headDim (partial rotary embedding) only the first ropeDim values
// of each head are rotated and the rest are left unchanged, as in the reference.
// len(cos) must not exceed headDim/2 and sin must be at least as long as cos.
//
// Each rotated value is rotatePair's: one product rounded, the other fused.
func RopeNorm(x []float32, nHeads, headDim int, cos, sin []float32) {
	n := ropeCheck(headDim, cos, sin)
	sin = sin[:n]
	for h := range nHeads {
		head := x[h*headDim : (h+1)*headDim]
		for i, c := range cos {
			s := sin[i]
			x0, x1 := head[2*i], head[2*i+1]
			head[2*i], head[2*i+1] = rotatePair(x0, x1, c, s)
		}
	}
}

// RopeNeox applies rotary position embedding in the NeoX layout (used by GPT-NeoX,
// Qwen, Phi, Gemma, …): in each head the pair (x[i], x[i+ropeDim/2]) is rotated by
// the angle with cosine cos[i] and sine sin[i], for i < ropeDim/2 = len(cos). With
// ropeDim = headDim these are the pairs (x[i], x[i+headDim/2]). Values from
// ropeDim on are left unchanged. Arguments are as for RopeNorm.
func RopeNeox(x []float32, nHeads, headDim int, cos, sin []float32) {
	n := ropeCheck(headDim, cos, sin)
	if nHeads <= 0 || n == 0 {
		return
	}
	x, cos, sin = x[:nHeads*headDim], cos[:n], sin[:n]
	done := ropeNeoxAccel(x, nHeads, headDim, cos, sin)
	for h := range nHeads {
		head := x[h*headDim : (h+1)*headDim]
		lo, hi := head[:n], head[n:2*n]
		for i := done; i < n; i++ {
			lo[i], hi[i] = rotatePair(lo[i], hi[i], cos[i], sin[i])
		}
	}
}

// rotatePair rotates (x0, x1) by the angle with cosine c and sine s as the
// reference's compiled rotation does: its C expressions x0·c − x1·s and
// x0·s + x1·c are contracted into fused multiply-adds (GCC does so by default
// when the target has FMA, as the reference's x86 builds do), so x1·s and
// x1·c are rounded to float32 and the other product is added to them exactly,
// with one rounding. Rounding both products, as the expressions read, differs
// in the last bit for about a fifth of the values, which attention's FP16
// rounding of the query and keys passes on now and then.
func rotatePair(x0, x1, c, s float32) (float32, float32) {
	return fma32(x0, c, -float32(x1*s)), fma32(x0, s, float32(x1*c))
}

// ropeCheck validates the RoPE table lengths and returns the number of pairs.
func ropeCheck(headDim int, cos, sin []float32) int {
	n := len(cos)
	if 2*n > headDim || len(sin) < n {
		panic("kernels: RoPE tables longer than half a head or sin shorter than cos")
	}
	return n
}

// DotF32 returns Σ a[i]*b[i] over i < len(a); b must be at least as long as a.
// It uses eight float32 accumulators (value i to accumulator i%8, the tail to
// accumulator 0) summed pairwise at the end.
func DotF32(a, b []float32) float32 { return dotF32Slice(a, b) }

// dotF32SliceGeneric is the portable DotF32.
func dotF32SliceGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := (*[8]float32)(a[i:]), (*[8]float32)(b[i:])
		s0 += float32(x[0] * y[0])
		s1 += float32(x[1] * y[1])
		s2 += float32(x[2] * y[2])
		s3 += float32(x[3] * y[3])
		s4 += float32(x[4] * y[4])
		s5 += float32(x[5] * y[5])
		s6 += float32(x[6] * y[6])
		s7 += float32(x[7] * y[7])
	}
	for ; i < len(a); i++ {
		s0 += float32(a[i] * b[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// DotF32F16 returns Σ a[i]*b[i] over i < len(a), where b holds half-precision
// values (e.g. a row of an FP16 KV cache); b must be at least as long as a. The
// accumulation is as in DotF32.
func DotF32F16(a []float32, b []uint16) float32 { return dotF32F16(a, b) }

// dotF32F16Generic is the portable DotF32F16.
func dotF32F16Generic(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := (*[8]float32)(a[i:]), (*[8]uint16)(b[i:])
		s0 += float32(x[0] * FP16ToFP32(y[0]))
		s1 += float32(x[1] * FP16ToFP32(y[1]))
		s2 += float32(x[2] * FP16ToFP32(y[2]))
		s3 += float32(x[3] * FP16ToFP32(y[3]))
		s4 += float32(x[4] * FP16ToFP32(y[4]))
		s5 += float32(x[5] * FP16ToFP32(y[5]))
		s6 += float32(x[6] * FP16ToFP32(y[6]))
		s7 += float32(x[7] * FP16ToFP32(y[7]))
	}
	for ; i < len(a); i++ {
		s0 += float32(a[i] * FP16ToFP32(b[i]))
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// AxpyF32F16 sets y[i] += alpha*x[i] for i < len(y), where x holds half-precision
// values (e.g. a row of an FP16 KV cache); x must be at least as long as y.
func AxpyF32F16(y []float32, alpha float32, x []uint16) { axpyF32F16(y, alpha, x) }

// axpyF32F16Generic is the portable AxpyF32F16.
func axpyF32F16Generic(y []float32, alpha float32, x []uint16) {
	x = x[:len(y)]
	for i, h := range x {
		y[i] += float32(alpha * FP16ToFP32(h))
	}
}

// DotsF32F16 sets out[t] to DotF32F16(a, b[t·stride:]) for t < len(out),
// bit for bit: the scores of a query against consecutive rows of an FP16 KV
// cache, stride values apart, in one call rather than one per row. b must hold
// at least (len(out)-1)·stride + len(a) values.
func DotsF32F16(out, a []float32, b []uint16, stride int) {
	if len(out) == 0 {
		return
	}
	dotsF32F16(out, a, b[:(len(out)-1)*stride+len(a)], stride)
}

// dotsEach is DotsF32F16 one row at a time.
func dotsEach(out, a []float32, b []uint16, stride int) {
	for t := range out {
		out[t] = dotF32F16(a, b[t*stride:])
	}
}

// AxpysF32F16 adds alpha[t]·x[t·stride:] to y for t = 0, 1, … < len(alpha),
// in that order, as that many calls of AxpyF32F16 would, bit for bit: the
// values of attention weighted by their scores. x must hold at least
// (len(alpha)-1)·stride + len(y) values.
func AxpysF32F16(y, alpha []float32, x []uint16, stride int) {
	if len(alpha) == 0 {
		return
	}
	axpysF32F16(y, alpha, x[:(len(alpha)-1)*stride+len(y)], stride)
}

// axpysEach is AxpysF32F16 one row at a time.
func axpysEach(y, alpha []float32, x []uint16, stride int) {
	for t, a := range alpha {
		axpyF32F16(y, a, x[t*stride:])
	}
}

// AxpyF32 sets y[i] += alpha*x[i] for i < len(y); x must be at least as long as y.
func AxpyF32(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] += float32(alpha * v)
	}
}

// ScaleF32 multiplies every element of x by s.
func ScaleF32(x []float32, s float32) {
	for i := scaleF32Accel(x, s); i < len(x); i++ {
		x[i] *= s
	}
}

// AddF32 sets dst[i] += a[i] for i < len(dst); a must be at least as long as dst.
func AddF32(dst, a []float32) {
	a = a[:len(dst)]
	for i, v := range a {
		dst[i] += v
	}
}

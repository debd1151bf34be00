//go:build !purego

package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Kernels for arm64 in NEON assembly (legacy_arm64.s, kquants_arm64.s,
// float_arm64.s, gelu_arm64.s), in two tiers above the portable twins
// (tiers.go); every kernel gives the same bits as its twin (twins_test.go,
// gelu_test.go).
//
//	tierNEON: every kernel, the integer dots with widening multiplies
//	(Cortex-A53/A72, Raspberry Pi 3 and 4).
//	tierSDOT: the integer dots with the Armv8.2 dot-product instruction SDOT
//	(Cortex-A76 and later, e.g. Raspberry Pi 5).
//
// GODEBUG=cpu.asimddp=off hides SDOT from any CPU (the runtime prints that it
// does not know the option, but golang.org/x/sys/cpu does).
const (
	tierNEON = tierVector
	tierSDOT = tierDot
)

// archTiers returns the tiers of arm64, best first, and whether this CPU can
// run them (NEON is part of every arm64 CPU).
func archTiers() []tierInfo {
	return []tierInfo{
		{tierSDOT, "SDOT", cpu.ARM64.HasASIMDDP},
		{tierNEON, "NEON", true},
		{tierGeneric, "generic", true},
	}
}

func dotQ4_0(w []byte, a *Activation) float32 {
	return dotLegacy(w, a, q4_0Bytes, dotQ4_0SDOT, dotQ4_0NEON, dotQ4_0Generic)
}

func dotQ5_0(w []byte, a *Activation) float32 {
	return dotLegacy(w, a, q5_0Bytes, dotQ5_0SDOT, dotQ5_0NEON, dotQ5_0Generic)
}

func dotQ8_0(w []byte, a *Activation) float32 {
	return dotLegacy(w, a, q8_0Bytes, dotQ8_0SDOT, dotQ8_0NEON, dotQ8_0Generic)
}

func dotQ4_K(w []byte, a *Activation) float32 {
	return dotK(w, a, q4KBytes, dotQ4_KSDOT, dotQ4_KNEON, dotQ4_KGeneric)
}

func dotQ5_K(w []byte, a *Activation) float32 {
	return dotK(w, a, q5KBytes, dotQ5_KSDOT, dotQ5_KNEON, dotQ5_KGeneric)
}

func dotQ6_K(w []byte, a *Activation) float32 {
	return dotK(w, a, q6KBytes, dotQ6_KSDOT, dotQ6_KNEON, dotQ6_KGeneric)
}

func dotF16(w []byte, a *Activation) float32 {
	n := a.N
	if active < tierNEON || n == 0 {
		return dotF16Generic(w, a)
	}
	w, x := w[:2*n], a.F[:n]
	return dotF16NEON(&w[0], &x[0], n)
}

func dotF32(w []byte, a *Activation) float32 {
	n := a.N
	if active < tierNEON || n == 0 {
		return dotF32Generic(w, a)
	}
	w, x := w[:4*n], a.F[:n]
	return dotF32NEON((*float32)(unsafe.Pointer(&w[0])), &x[0], n)
}

func quantizeQ8_0(x []float32, a *Activation) {
	nb := len(x) / QK
	if active < tierNEON || nb == 0 {
		quantizeQ8_0Generic(x, a)
		return
	}
	x, qs, d := x[:nb*QK], a.Qs[:nb*QK], a.D[:nb]
	quantizeQ8_0NEON(&x[0], &qs[0], &d[0], nb)
}

func quantizeQ8_K(x []float32, a *Activation) {
	nb := len(x) / QKK
	if active < tierNEON || nb == 0 {
		quantizeQ8_KGeneric(x, a)
		return
	}
	x, qs, d, bsums := x[:nb*QKK], a.Qs[:nb*QKK], a.D[:nb], a.BSums[:nb*QKK/16]
	quantizeQ8_KNEON(&x[0], &qs[0], &d[0], &bsums[0], nb)
}

func dotF32Slice(a, b []float32) float32 {
	if active < tierNEON || len(a) == 0 {
		return dotF32SliceGeneric(a, b)
	}
	b = b[:len(a)]
	return dotF32NEON(&a[0], &b[0], len(a))
}

func dotF32F16(a []float32, b []uint16) float32 {
	if active < tierNEON || len(a) == 0 {
		return dotF32F16Generic(a, b)
	}
	b = b[:len(a)]
	return dotF32F16NEON(&a[0], &b[0], len(a))
}

func axpyF32F16(y []float32, alpha float32, x []uint16) {
	if active < tierNEON || len(y) == 0 {
		axpyF32F16Generic(y, alpha, x)
		return
	}
	x = x[:len(y)]
	axpyF32F16NEON(&y[0], alpha, &x[0], len(y))
}

// deltaRuleF32 takes the kernel for states whose side is a multiple of
// eight (the models' are 128), the portable twin otherwise.
func deltaRuleF32(M []float32, S int, k, q, v []float32, decay, beta, scale float32) {
	if active < tierNEON || S%8 != 0 {
		deltaRuleF32Generic(M, S, k, q, v, decay, beta, scale)
		return
	}
	deltaRuleF32NEON(&M[0], S, &k[0], &q[0], &v[0], decay, beta, scale)
}

// dotsF32F16 and axpysF32F16 loop over the rows in assembly for rows whose
// length is a multiple of eight (head sizes are); b and x have been cut to
// what the rows span.
func dotsF32F16(out, a []float32, b []uint16, stride int) {
	if active < tierNEON || len(a) == 0 || len(a)%8 != 0 {
		dotsEach(out, a, b, stride)
		return
	}
	dotsF32F16NEON(&out[0], &a[0], &b[0], stride, len(a), len(out))
}

func axpysF32F16(y, alpha []float32, x []uint16, stride int) {
	if active < tierNEON || len(y) == 0 || len(y)%8 != 0 {
		axpysEach(y, alpha, x, stride)
		return
	}
	axpysF32F16NEON(&y[0], &alpha[0], &x[0], stride, len(y), len(alpha))
}

// axpysQ8_0 takes the NEON kernel for whole blocks (len(y) is a multiple
// of 32); x has been cut to what the rows span.
func axpysQ8_0(y, alpha []float32, x []byte, stride int) {
	nb := len(y) / QK
	if active < tierNEON || nb == 0 || len(y)%QK != 0 {
		axpysQ8_0Generic(y, alpha, x, stride)
		return
	}
	axpysQ8_0NEON(&y[0], &alpha[0], &x[0], stride, nb, len(alpha))
}

// axpysQ8_0NEON adds alpha[t] times the nb dequantized Q8_0 blocks at
// x + t·stride to y, for t = 0 … keys-1 (keys > 0, nb > 0), as
// axpysQ8_0Generic.
//
//go:noescape
func axpysQ8_0NEON(y, alpha *float32, x *byte, stride, nb, keys int)

// dotQ4_0NEON returns the dot product of nb Q4_0 blocks at w with the Q8_0
// activation quants qs and scales d, as dotQ4_0Generic, without SDOT.
//
//go:noescape
func dotQ4_0NEON(w *byte, qs *int8, d *float32, nb int) float32

// dotQ4_0SDOT is dotQ4_0NEON with the dot-product instructions.
//
//go:noescape
func dotQ4_0SDOT(w *byte, qs *int8, d *float32, nb int) float32

// dotQ5_0NEON returns the dot product of nb Q5_0 blocks at w with the Q8_0
// activation quants qs and scales d, as dotQ5_0Generic, without SDOT.
//
//go:noescape
func dotQ5_0NEON(w *byte, qs *int8, d *float32, nb int) float32

// dotQ5_0SDOT is dotQ5_0NEON with the dot-product instructions.
//
//go:noescape
func dotQ5_0SDOT(w *byte, qs *int8, d *float32, nb int) float32

// dotQ8_0NEON returns the dot product of nb Q8_0 blocks at w with the Q8_0
// activation quants qs and scales d, as dotQ8_0Generic, without SDOT.
//
//go:noescape
func dotQ8_0NEON(w *byte, qs *int8, d *float32, nb int) float32

// dotQ8_0SDOT is dotQ8_0NEON with the dot-product instructions.
//
//go:noescape
func dotQ8_0SDOT(w *byte, qs *int8, d *float32, nb int) float32

// quantizeQ8_0NEON quantizes nb blocks of 32 values at x to Q8_0, writing
// the quants to qs and the scales to d, as quantizeQ8_0Generic. (A signaling
// NaN in x, which no arithmetic produces, can change the block's scale: the
// maximum instruction turns it into a quiet NaN instead of skipping it.)
//
//go:noescape
func quantizeQ8_0NEON(x *float32, qs *int8, d *float32, nb int)

// dotQ4_KNEON returns the dot product of nb Q4_K super-blocks at w with the
// Q8_K activation quants qs, scales d and sums bsums, as dotQ4_KGeneric,
// without SDOT.
//
//go:noescape
func dotQ4_KNEON(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ4_KSDOT is dotQ4_KNEON with the dot-product instructions.
//
//go:noescape
func dotQ4_KSDOT(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ5_KNEON returns the dot product of nb Q5_K super-blocks at w with the
// Q8_K activation quants qs, scales d and sums bsums, as dotQ5_KGeneric,
// without SDOT.
//
//go:noescape
func dotQ5_KNEON(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ5_KSDOT is dotQ5_KNEON with the dot-product instructions.
//
//go:noescape
func dotQ5_KSDOT(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ6_KNEON returns the dot product of nb Q6_K super-blocks at w with the
// Q8_K activation quants qs and scales d, as dotQ6_KGeneric, without SDOT
// (bsums is not read).
//
//go:noescape
func dotQ6_KNEON(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ6_KSDOT is dotQ6_KNEON with the dot-product instructions.
//
//go:noescape
func dotQ6_KSDOT(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// quantizeQ8_KNEON quantizes nb super-blocks of 256 values at x to Q8_K,
// writing the quants to qs, the scales to d and the sums of 16 quants to
// bsums, as quantizeQ8_KGeneric (signaling NaNs as in quantizeQ8_0NEON).
//
//go:noescape
func quantizeQ8_KNEON(x *float32, qs *int8, d *float32, bsums *int16, nb int)

// dotF32NEON returns Σ a[i]·b[i] for i < n > 0 with the accumulation of
// dotF32SliceGeneric (and of dotF32Generic, with a the weights).
//
//go:noescape
func dotF32NEON(a, b *float32, n int) float32

// dotF32F16NEON returns Σ a[i]·b[i] for i < n > 0, b half-precision values,
// as dotF32F16Generic.
//
//go:noescape
func dotF32F16NEON(a *float32, b *uint16, n int) float32

// axpyF32F16NEON sets y[i] += alpha·x[i] for i < n > 0, x half-precision
// values, as axpyF32F16Generic.
//
//go:noescape
func axpyF32F16NEON(y *float32, alpha float32, x *uint16, n int)

// deltaRuleF32NEON is deltaRuleF32Generic for an S×S state at M, S a
// positive multiple of 8, with NEON.
//
//go:noescape
func deltaRuleF32NEON(M *float32, S int, k, q, v *float32, decay, beta, scale float32)

// dotsF32F16NEON sets out[t] to dotF32F16NEON(a, b + t·stride, n) for
// t < keys (keys > 0); n is a positive multiple of 8.
//
//go:noescape
func dotsF32F16NEON(out, a *float32, b *uint16, stride, n, keys int)

// axpysF32F16NEON does axpyF32F16NEON(y, alpha[t], x + t·stride, n) for
// t = 0 … keys-1 (keys > 0); n is a positive multiple of 8.
//
//go:noescape
func axpysF32F16NEON(y, alpha *float32, x *uint16, stride, n, keys int)

// dotF16NEON returns the dot product of n > 0 little-endian half-precision
// weights at w with the floats x, as dotF16Generic.
//
//go:noescape
func dotF16NEON(w *byte, x *float32, n int) float32

// sumSquaresAccel adds the squares of the first values of x (a multiple of
// eight) to lanes as RMSNorm's loop does, with NEON, and returns how many it
// did.
func sumSquaresAccel(lanes *[8]float64, x []float32) int {
	n := len(x) &^ 7
	if active < tierNEON || n == 0 {
		return 0
	}
	sumSquaresNEON(lanes, &x[0], n)
	return n
}

// sumSquaresNEON adds float64(x[i]·x[i]), the product rounded to float32,
// to lanes[i%8] for n values, a multiple of eight.
//
//go:noescape
func sumSquaresNEON(lanes *[8]float64, x *float32, n int)

// scaleMulAccel sets out[i] = (x[i]·scale)·weight[i] for the first values of
// x (a multiple of four) with NEON and returns how many it did.
func scaleMulAccel(out, x, weight []float32, scale float32) int {
	n := len(x) &^ 3
	if active < tierNEON || n == 0 {
		return 0
	}
	out, weight = out[:n], weight[:n]
	scaleMulNEON(&out[0], &x[0], &weight[0], scale, n)
	return n
}

// scaleF32Accel multiplies the first values of x (a multiple of four) by s
// with NEON and returns how many it did.
func scaleF32Accel(x []float32, s float32) int {
	n := len(x) &^ 3
	if active < tierNEON || n == 0 {
		return 0
	}
	scaleF32NEON(&x[0], s, n)
	return n
}

// scaleF32NEON sets x[i] ×= s for n values, a multiple of four.
//
//go:noescape
func scaleF32NEON(x *float32, s float32, n int)

// scaleMulNEON sets out[i] = (x[i]·scale)·weight[i], each product rounded,
// for n values, a multiple of four.
//
//go:noescape
func scaleMulNEON(out, x, weight *float32, scale float32, n int)

// fp32ToFP16Accel converts the first values of src (a multiple of eight)
// with NEON and returns how many it did.
func fp32ToFP16Accel(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if active < tierNEON || n == 0 {
		return 0
	}
	dst = dst[:n]
	fp32ToFP16NEON(&dst[0], &src[0], n)
	return n
}

// fp32ToFP16NEON converts n float32 values at src, a multiple of eight, to
// half precision at dst with FCVTN, rounding to nearest even (the FPCR
// default), which is what FP32ToFP16 does, NaNs included.
//
//go:noescape
func fp32ToFP16NEON(dst *uint16, src *float32, n int)

// swiGLUAccel does SwiGLU's work for the first values of gate (a multiple of
// four) with NEON and returns how many it did.
func swiGLUAccel(gate, up []float32) int {
	n := len(gate) &^ 3
	if active < tierNEON || n == 0 {
		return 0
	}
	up = up[:n]
	swiGLUNEON(&gate[0], &up[0], n)
	return n
}

// swiGLUNEON sets gate[i] = SiLU(gate[i])·up[i] for n values, a multiple of
// four, with NEON.
//
//go:noescape
func swiGLUNEON(gate, up *float32, n int)

// sumWords reads with the portable loop on arm64, whose kernels do not
// prefetch in software either.
func sumWords(b []uint64) uint64 { return sumWordsGeneric(b) }

// matVecAccel computes every row of out with its type's dot of the active
// tier called directly (without DotRow's dispatch and slicing per row, which
// was 4 % of a decode on amd64) and returns how many it did: all of them, or
// 0 at tierGeneric or for a type without an assembly dot.
func matVecAccel(t Type, w []byte, rowBytes int, a *Activation, out []float32) int {
	switch t {
	case Q4_0:
		return matVecQ4_0(w, rowBytes, a, out)
	case Q5_0:
		return matVecLegacy(pickLegacy(dotQ5_0SDOT, dotQ5_0NEON), w, rowBytes, q5_0Bytes, a, out)
	case Q8_0:
		return matVecLegacy(pickLegacy(dotQ8_0SDOT, dotQ8_0NEON), w, rowBytes, q8_0Bytes, a, out)
	case Q4_K:
		return matVecSuper(pickK(dotQ4_KSDOT, dotQ4_KNEON), w, rowBytes, q4KBytes, a, out)
	case Q5_K:
		return matVecSuper(pickK(dotQ5_KSDOT, dotQ5_KNEON), w, rowBytes, q5KBytes, a, out)
	case Q6_K:
		return matVecSuper(pickK(dotQ6_KSDOT, dotQ6_KNEON), w, rowBytes, q6KBytes, a, out)
	}
	return 0
}

// matVecQ4_0 is matVecAccel for Q4_0: four streams, one row from each
// quarter of the rows at a time (dotQ4_0Rows4SDOT or …NEON), the rows left
// over alone.
func matVecQ4_0(w []byte, rowBytes int, a *Activation, out []float32) int {
	nb := a.N / QK
	if active < tierNEON || nb == 0 || len(out) == 0 {
		return 0
	}
	qs, d := a.Qs[:nb*QK], a.D[:nb]
	_ = w[(len(out)-1)*rowBytes+nb*q4_0Bytes-1]
	sdot := active == tierSDOT
	n := len(out) / 4
	var o [4]float32
	for r := range n {
		if sdot {
			dotQ4_0Rows4SDOT(&w[r*rowBytes], n*rowBytes, &qs[0], &d[0], nb, &o)
		} else {
			dotQ4_0Rows4NEON(&w[r*rowBytes], n*rowBytes, &qs[0], &d[0], nb, &o)
		}
		scatterStreams(out, o[:], r, n)
	}
	one := pickLegacy(dotQ4_0SDOT, dotQ4_0NEON)
	for r := 4 * n; r < len(out); r++ {
		out[r] = one(&w[r*rowBytes], &qs[0], &d[0], nb)
	}
	return len(out)
}

// dotQ4_0Rows4SDOT sets out[k] to dotQ4_0SDOT of the row at w + k·stride
// (k < 4): four streams, whose chains run in the lanes of one vector.
//
//go:noescape
func dotQ4_0Rows4SDOT(w *byte, stride int, qs *int8, d *float32, nb int, out *[4]float32)

// dotQ4_0Rows4NEON is dotQ4_0Rows4SDOT without SDOT, giving dotQ4_0NEON's
// results.
//
//go:noescape
func dotQ4_0Rows4NEON(w *byte, stride int, qs *int8, d *float32, nb int, out *[4]float32)

// dotRowActsAccel sets out[b·stride] to DotRow(t, w, &acts[b]) for every b, as
// dotRowActs does, with a kernel that unpacks the row once for all four
// activations, and reports whether it did: it handles four activations of a
// Q4_0, Q5_0, Q8_0, Q4_K or Q6_K row at tierNEON and tierSDOT, and returns
// false otherwise.
func dotRowActsAccel(t Type, w []byte, acts []Activation, out []float32, stride int) bool {
	if active < tierNEON || len(acts) != 4 {
		return false
	}
	sdot := active == tierSDOT
	var r [4]float32
	switch t {
	case Q4_0, Q5_0, Q8_0:
		p, nb, ok := legacyActs4(acts)
		if !ok {
			return false
		}
		w = w[:nb*t.BlockBytes()]
		switch {
		case t == Q4_0 && sdot:
			dotQ4_0Acts4SDOT(&w[0], &p, nb, &r)
		case t == Q4_0:
			dotQ4_0Acts4NEON(&w[0], &p, nb, &r)
		case t == Q5_0 && sdot:
			dotQ5_0Acts4SDOT(&w[0], &p, nb, &r)
		case t == Q5_0:
			dotQ5_0Acts4NEON(&w[0], &p, nb, &r)
		case sdot:
			dotQ8_0Acts4SDOT(&w[0], &p, nb, &r)
		default:
			dotQ8_0Acts4NEON(&w[0], &p, nb, &r)
		}
	case Q4_K, Q6_K:
		p, nb, ok := kActs4(acts, t == Q4_K)
		if !ok {
			return false
		}
		w = w[:nb*t.BlockBytes()]
		// Direct calls, not a function value: through one, p and r would
		// escape to the heap.
		switch {
		case t == Q4_K && sdot:
			dotQ4_KActs4SDOT(&w[0], &p, nb, &r)
		case t == Q4_K:
			dotQ4_KActs4NEON(&w[0], &p, nb, &r)
		case sdot:
			dotQ6_KActs4SDOT(&w[0], &p, nb, &r)
		default:
			dotQ6_KActs4NEON(&w[0], &p, nb, &r)
		}
	default:
		return false
	}
	putActs4(out, stride, &r)
	return true
}

// rowsActsAccel sets out[b·stride + k] to DotRow(t, row k of w, &acts[b])
// for the first rows k (rowBytes apart in w, rows of them) and the four
// activations of acts, and returns the number of rows it did: Q4_0 rows two
// at a time at tierNEON and tierSDOT (an odd last row is left to
// dotRowActsAccel), none for the other types.
func rowsActsAccel(t Type, w []byte, rowBytes, rows int, acts []Activation, _ []byte, out []float32, stride int) int {
	if active < tierNEON || t != Q4_0 || rows < 2 || len(acts) != 4 {
		return 0
	}
	p, nb, ok := legacyActs4(acts)
	if !ok {
		return 0
	}
	rows &^= 1
	_ = w[(rows-1)*rowBytes+nb*q4_0Bytes-1]
	_ = out[3*stride+rows-1]
	sdot := active == tierSDOT
	var r [8]float32
	for k := 0; k < rows; k += 2 {
		// Direct calls, not a function value: through one, p and r would
		// escape to the heap.
		if sdot {
			dotQ4_0Rows2Acts4SDOT(&w[k*rowBytes], rowBytes, &p, nb, &r)
		} else {
			dotQ4_0Rows2Acts4NEON(&w[k*rowBytes], rowBytes, &p, nb, &r)
		}
		for b := range 4 {
			out[b*stride+k], out[b*stride+k+1] = r[b], r[4+b]
		}
	}
	return rows
}

// dotQ4_0Rows2Acts4SDOT sets out[4k + b] to dotQ4_0SDOT of the row at
// w + k·rowBytes (k < 2) with activation b of p (b < 4): each activation's
// block loaded once for the two rows, each row's four chains in the lanes
// of one vector.
//
//go:noescape
func dotQ4_0Rows2Acts4SDOT(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[8]float32)

// dotQ4_0Rows2Acts4NEON is dotQ4_0Rows2Acts4SDOT without SDOT, giving
// dotQ4_0NEON's results.
//
//go:noescape
func dotQ4_0Rows2Acts4NEON(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[8]float32)

// padsActs4 reports whether MatMul gives the kernels of four activations a
// last group of n padded to four (MatMulJob.padActs): a group of three,
// for the types dotRowActsAccel has kernels of four for, at tierNEON and
// above. Two are not padded: what four cost against two passes of one has
// not been measured on these cores.
func padsActs4(t Type, n int) bool {
	if active < tierNEON || n != 3 {
		return false
	}
	switch t {
	case Q4_0, Q5_0, Q8_0, Q4_K, Q6_K:
		return true
	}
	return false
}

// packsActs4 reports that no kernel reads packed activations (packActs4).
func packsActs4(Type) bool { return false }

// dotQ4_0Acts4SDOT sets out[b] to dotQ4_0SDOT of the nb blocks at w with
// activation b of p (b < 4), unpacking each block once for the four.
//
//go:noescape
func dotQ4_0Acts4SDOT(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ4_0Acts4NEON is dotQ4_0Acts4SDOT without SDOT, giving dotQ4_0NEON's
// results.
//
//go:noescape
func dotQ4_0Acts4NEON(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ5_0Acts4SDOT sets out[b] to dotQ5_0SDOT of the nb blocks at w with
// activation b of p (b < 4), unpacking each block once for the four.
//
//go:noescape
func dotQ5_0Acts4SDOT(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ5_0Acts4NEON is dotQ5_0Acts4SDOT without SDOT, giving dotQ5_0NEON's
// results.
//
//go:noescape
func dotQ5_0Acts4NEON(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ8_0Acts4SDOT sets out[b] to dotQ8_0SDOT of the nb blocks at w with
// activation b of p (b < 4), loading each block's quants and scale once for
// the four.
//
//go:noescape
func dotQ8_0Acts4SDOT(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ8_0Acts4NEON is dotQ8_0Acts4SDOT without SDOT, giving dotQ8_0NEON's
// results.
//
//go:noescape
func dotQ8_0Acts4NEON(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ4_KActs4SDOT sets out[b] to dotQ4_KSDOT of the nb super-blocks at w
// with activation b of p (b < 4), unpacking each super-block's scales, mins
// and quants once for the four.
//
//go:noescape
func dotQ4_KActs4SDOT(w *byte, p *actPtrs4, nb int, out *[4]float32)

// dotQ4_KActs4NEON is dotQ4_KActs4SDOT without SDOT, giving dotQ4_KNEON's
// results.
//
//go:noescape
func dotQ4_KActs4NEON(w *byte, p *actPtrs4, nb int, out *[4]float32)

// dotQ6_KActs4SDOT sets out[b] to dotQ6_KSDOT of the nb super-blocks at w
// with activation b of p (b < 4; bsums is not read), unpacking each
// super-block's quants once, into a buffer on the stack, for the four.
//
//go:noescape
func dotQ6_KActs4SDOT(w *byte, p *actPtrs4, nb int, out *[4]float32)

// dotQ6_KActs4NEON is dotQ6_KActs4SDOT without SDOT, giving dotQ6_KNEON's
// results.
//
//go:noescape
func dotQ6_KActs4NEON(w *byte, p *actPtrs4, nb int, out *[4]float32)

// expSubAccel does ExpSub's work for the first values of x (a multiple of
// four) with NEON and returns how many it did.
func expSubAccel(x []float32, m float32) int {
	n := len(x) &^ 3
	if active < tierNEON || n == 0 {
		return 0
	}
	expSubNEON(&x[0], m, n)
	return n
}

// expSubNEON sets x[i] = expApprox(x[i]−m) for n values, a multiple of four,
// with NEON.
//
//go:noescape
func expSubNEON(x *float32, m float32, n int)

// geluMulAccel does GELUMul's work with the table t for the first values of
// gate (a multiple of eight) with NEON and returns how many it did.
func geluMulAccel(gate, up []float32, t *[1 << 16]uint16) int {
	n := len(gate) &^ 7
	if active < tierNEON || n == 0 {
		return 0
	}
	up = up[:n]
	geluMulNEON(&gate[0], &up[0], t, n)
	return n
}

// geluMulNEON sets gate[i] = GELU(gate[i])·up[i] for n values, a multiple of
// eight, as geluMulGeneric does with the table t: 0 at or below −10,
// gate[i]·up[i] at or above 10, and otherwise the entry of t at the half
// that FCVTN rounds gate[i] to (FP32ToFP16's, NaNs included), loaded lane by
// lane and widened with FCVTL, times up[i].
//
//go:noescape
func geluMulNEON(gate, up *float32, t *[1 << 16]uint16, n int)

// mulAccel does MulF32's work for the first values of dst (a multiple of
// four) with NEON and returns how many it did.
func mulAccel(dst, a, b []float32) int {
	n := len(dst) &^ 3
	if active < tierNEON || n == 0 {
		return 0
	}
	a, b = a[:n], b[:n]
	mulNEON(&dst[0], &a[0], &b[0], n)
	return n
}

// mulNEON sets dst[i] = a[i]·b[i] for n values, a multiple of four; dst may
// be a or b.
//
//go:noescape
func mulNEON(dst, a, b *float32, n int)

// mulAddAccel does MulAddF32's work for the first values of dst (a multiple
// of four) with NEON and returns how many it did.
func mulAddAccel(dst, a, b []float32) int {
	n := len(dst) &^ 3
	if active < tierNEON || n == 0 {
		return 0
	}
	a, b = a[:n], b[:n]
	mulAddNEON(&dst[0], &a[0], &b[0], n)
	return n
}

// mulAddNEON sets dst[i] += a[i]·b[i] for n values, a multiple of four, the
// product rounded before it is added (FMUL, then FADD: no FMLA).
//
//go:noescape
func mulAddNEON(dst, a, b *float32, n int)

// roundFP16Accel does RoundFP16's work for the first values of src (a
// multiple of four) with NEON and returns how many it did.
func roundFP16Accel(dst, src []float32) int {
	n := len(src) &^ 3
	if active < tierNEON || n == 0 {
		return 0
	}
	dst = dst[:n]
	roundFP16NEON(&dst[0], &src[0], n)
	return n
}

// roundFP16NEON sets dst[i] to src[i] rounded to half precision and back for
// n values, a multiple of four, with FCVTN (rounding to nearest even, the
// FPCR default, what FP32ToFP16 does, NaNs included) and FCVTL (exact, as
// FP16ToFP32); dst may be src.
//
//go:noescape
func roundFP16NEON(dst, src *float32, n int)

// packsActs8 reports that no kernel takes eight packed activations.
func packsActs8(Type) bool { return false }

// rowsActs8 is never called: packsActs8 is false.
func rowsActs8(Type, []byte, int, int, []byte, int, []float32, int) {
	panic("kernels: no kernel of eight activations")
}

// ropeNeoxAccel rotates the first pairs of every head of x (a multiple of
// four of the len(cos) pairs, nHeads > 0) as RopeNeox does, and returns how
// many pairs per head it did.
func ropeNeoxAccel(x []float32, nHeads, headDim int, cos, sin []float32) int {
	m := len(cos) &^ 3
	if active < tierNEON || m == 0 {
		return 0
	}
	ropeNeoxNEON(&x[0], nHeads, headDim, &cos[0], &sin[0], len(cos), m)
	return m
}

// ropeNeoxNEON is ropeNeoxAVX2 for m a positive multiple of four.
//
//go:noescape
func ropeNeoxNEON(x *float32, nHeads, headDim int, cos, sin *float32, n, m int)

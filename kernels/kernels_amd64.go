//go:build !purego

package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Kernels for amd64, in two tiers above the portable twins (tiers.go); the
// assembly gives bit-identical results (twins_test.go).
//
//	tierAVX2: AVX2, FMA and F16C (Haswell and later): every kernel but
//	those of several rows at once; one row with four activations included.
//	tierAVX512: also AVX512F, BW, VL and VNNI (Ice Lake, Zen 4 and later):
//	VPDPBUSD and VPDPWSSD for the integer products (Q4_0, Q5_0, Q8_0 and
//	Q5_K on 256-bit registers), Q6_K on 512-bit registers (for the other
//	one-row dots 512-bit registers measured no faster), and the kernels that
//	multiply several rows (with one activation or four) at once. Q4_K runs
//	the AVX2 kernels at this tier too (its AVX-512 kernels followed the
//	older eight-lane arithmetic and were removed when Q4_K moved to the
//	reference's repacked arithmetic; see dotQ4_KGeneric).
const (
	tierAVX2   = tierVector
	tierAVX512 = tierDot
)

// archTiers returns the tiers of amd64, best first, and whether this CPU can
// run them.
func archTiers() []tierInfo {
	avx2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C
	avx512 := avx2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW &&
		cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI
	return []tierInfo{
		{tierAVX512, "AVX-512", avx512},
		{tierAVX2, "AVX2", avx2},
		{tierGeneric, "generic", true},
	}
}

func dotQ4_0(w []byte, a *Activation) float32 {
	return dotLegacy(w, a, q4_0Bytes, dotQ4_0AVX512, dotQ4_0AVX2, dotQ4_0Generic)
}

func dotQ5_0(w []byte, a *Activation) float32 {
	return dotLegacy(w, a, q5_0Bytes, dotQ5_0AVX512, dotQ5_0AVX2, dotQ5_0Generic)
}

func dotQ8_0(w []byte, a *Activation) float32 {
	return dotLegacy(w, a, q8_0Bytes, dotQ8_0AVX512, dotQ8_0AVX2, dotQ8_0Generic)
}

func dotQ4_K(w []byte, a *Activation) float32 {
	return dotK(w, a, q4KBytes, dotQ4_KAVX2, dotQ4_KAVX2, dotQ4_KGeneric)
}

func dotQ5_K(w []byte, a *Activation) float32 {
	return dotK(w, a, q5KBytes, dotQ5_KAVX512, dotQ5_KAVX2, dotQ5_KGeneric)
}

func dotQ6_K(w []byte, a *Activation) float32 {
	return dotK(w, a, q6KBytes, dotQ6_KAVX512, dotQ6_KAVX2, dotQ6_KGeneric)
}

func dotF16(w []byte, a *Activation) float32 {
	n := a.N
	if active < tierAVX2 || n == 0 {
		return dotF16Generic(w, a)
	}
	w, x := w[:2*n], a.F[:n]
	return dotF16AVX2(&w[0], &x[0], n)
}

func dotF32(w []byte, a *Activation) float32 {
	n := a.N
	if active < tierAVX2 || n == 0 {
		return dotF32Generic(w, a)
	}
	w, x := w[:4*n], a.F[:n]
	return dotF32AVX2((*float32)(unsafe.Pointer(&w[0])), &x[0], n)
}

func quantizeQ8_0(x []float32, a *Activation) {
	nb := len(x) / QK
	if active < tierAVX2 || nb == 0 {
		quantizeQ8_0Generic(x, a)
		return
	}
	x, qs, d := x[:nb*QK], a.Qs[:nb*QK], a.D[:nb]
	quantizeQ8_0AVX2(&x[0], &qs[0], &d[0], nb)
}

func quantizeQ8_K(x []float32, a *Activation) {
	nb := len(x) / QKK
	if active < tierAVX2 || nb == 0 {
		quantizeQ8_KGeneric(x, a)
		return
	}
	x, qs, d, bsums := x[:nb*QKK], a.Qs[:nb*QKK], a.D[:nb], a.BSums[:nb*QKK/16]
	quantizeQ8_KAVX2(&x[0], &qs[0], &d[0], &bsums[0], nb)
}

func dotF32Slice(a, b []float32) float32 {
	if active < tierAVX2 || len(a) == 0 {
		return dotF32SliceGeneric(a, b)
	}
	b = b[:len(a)]
	return dotF32AVX2(&a[0], &b[0], len(a))
}

func dotF32F16(a []float32, b []uint16) float32 {
	if active < tierAVX2 || len(a) == 0 {
		return dotF32F16Generic(a, b)
	}
	b = b[:len(a)]
	return dotF32F16AVX2(&a[0], &b[0], len(a))
}

func axpyF32F16(y []float32, alpha float32, x []uint16) {
	if active < tierAVX2 || len(y) == 0 {
		axpyF32F16Generic(y, alpha, x)
		return
	}
	x = x[:len(y)]
	axpyF32F16AVX2(&y[0], alpha, &x[0], len(y))
}

// deltaRuleF32 takes the kernel for states whose side is a multiple of
// eight (the models' are 128), the portable twin otherwise.
func deltaRuleF32(M []float32, S int, k, q, v []float32, decay, beta, scale float32) {
	if active < tierAVX2 || S%8 != 0 {
		deltaRuleF32Generic(M, S, k, q, v, decay, beta, scale)
		return
	}
	deltaRuleF32AVX2(&M[0], S, &k[0], &q[0], &v[0], decay, beta, scale)
}

// dotsF32F16 and axpysF32F16 take the multi-row kernels for rows whose
// length is a multiple of eight (head sizes are); b and x have been cut to
// what the rows span.
func dotsF32F16(out, a []float32, b []uint16, stride int) {
	if active < tierAVX2 || len(a) == 0 || len(a)%8 != 0 {
		dotsEach(out, a, b, stride)
		return
	}
	dotsF32F16AVX2(&out[0], &a[0], &b[0], stride, len(a), len(out))
}

func axpysF32F16(y, alpha []float32, x []uint16, stride int) {
	if active < tierAVX2 || len(y) == 0 || len(y)%8 != 0 {
		axpysEach(y, alpha, x, stride)
		return
	}
	axpysF32F16AVX2(&y[0], &alpha[0], &x[0], stride, len(y), len(alpha))
}

// axpysQ8_0 takes the AVX2 kernel for whole blocks (len(y) is a multiple
// of 32); x has been cut to what the rows span.
func axpysQ8_0(y, alpha []float32, x []byte, stride int) {
	nb := len(y) / QK
	if active < tierAVX2 || nb == 0 || len(y)%QK != 0 {
		axpysQ8_0Generic(y, alpha, x, stride)
		return
	}
	axpysQ8_0AVX2(&y[0], &alpha[0], &x[0], stride, nb, len(alpha))
}

// The assembly kernels (see legacyKernel and kKernel for the arguments of the
// one-row dots).

// axpysQ8_0AVX2 adds alpha[t] times the nb dequantized Q8_0 blocks at
// x + t·stride to y, for t = 0 … keys-1 (keys > 0, nb > 0), as
// axpysQ8_0Generic.
//
//go:noescape
func axpysQ8_0AVX2(y, alpha *float32, x *byte, stride, nb, keys int)

// dotQ4_0AVX2 is dotQ4_0Generic for nb blocks, with AVX2.
//
//go:noescape
func dotQ4_0AVX2(w *byte, qs *int8, d *float32, nb int) float32

// dotQ4_0AVX512 is dotQ4_0Generic for nb blocks, with AVX512-VNNI.
//
//go:noescape
func dotQ4_0AVX512(w *byte, qs *int8, d *float32, nb int) float32

// dotQ5_0AVX2 is dotQ5_0Generic for nb blocks, with AVX2.
//
//go:noescape
func dotQ5_0AVX2(w *byte, qs *int8, d *float32, nb int) float32

// dotQ5_0AVX512 is dotQ5_0Generic for nb blocks, with AVX512-VNNI and
// AVX512BW.
//
//go:noescape
func dotQ5_0AVX512(w *byte, qs *int8, d *float32, nb int) float32

// dotQ8_0AVX2 is dotQ8_0Generic for nb blocks, with AVX2.
//
//go:noescape
func dotQ8_0AVX2(w *byte, qs *int8, d *float32, nb int) float32

// dotQ8_0AVX512 is dotQ8_0Generic for nb blocks, with AVX512-VNNI.
//
//go:noescape
func dotQ8_0AVX512(w *byte, qs *int8, d *float32, nb int) float32

// quantizeQ8_0AVX2 is quantizeQ8_0Generic for nb blocks of x into qs and d.
//
//go:noescape
func quantizeQ8_0AVX2(x *float32, qs *int8, d *float32, nb int)

// dotQ4_KAVX2 is dotQ4_KGeneric for nb super-blocks, with AVX2.
//
//go:noescape
func dotQ4_KAVX2(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ6_KRows4AVX512 sets out[k] to dotQ6_KAVX512 of the row at w + k·stride
// (k < 4), reading the four rows side by side.
//
//go:noescape
func dotQ6_KRows4AVX512(w *byte, stride int, qs *int8, d *float32, bsums *int16, nb int, out *[4]float32)

// dotQ5_KAVX2 is dotQ5_KGeneric for nb super-blocks, with AVX2.
//
//go:noescape
func dotQ5_KAVX2(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ5_KAVX512 is dotQ5_KGeneric for nb super-blocks, with AVX512-VNNI.
//
//go:noescape
func dotQ5_KAVX512(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ6_KAVX2 is dotQ6_KGeneric for nb super-blocks, with AVX2.
//
//go:noescape
func dotQ6_KAVX2(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// dotQ6_KAVX512 is dotQ6_KGeneric for nb super-blocks, with AVX-512 and VNNI.
//
//go:noescape
func dotQ6_KAVX512(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// quantizeQ8_KAVX2 is quantizeQ8_KGeneric for nb super-blocks of x into qs, d
// and bsums.
//
//go:noescape
func quantizeQ8_KAVX2(x *float32, qs *int8, d *float32, bsums *int16, nb int)

// The float kernels take n ≥ 1 values.

// dotF32AVX2 is dotF32SliceGeneric (and dotF32Generic) for n values, with AVX2.
//
//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

// dotF32F16AVX2 is dotF32F16Generic for n values, with AVX2 and F16C.
//
//go:noescape
func dotF32F16AVX2(a *float32, b *uint16, n int) float32

// axpyF32F16AVX2 is axpyF32F16Generic for n values, with AVX2 and F16C.
//
//go:noescape
func axpyF32F16AVX2(y *float32, alpha float32, x *uint16, n int)

// deltaRuleF32AVX2 is deltaRuleF32Generic for an S×S state at M, S a
// positive multiple of 8, with AVX2.
//
//go:noescape
func deltaRuleF32AVX2(M *float32, S int, k, q, v *float32, decay, beta, scale float32)

// dotsF32F16AVX2 sets out[t] to dotF32F16AVX2(a, b + t·stride, n) for
// t < keys, four rows side by side; n is a positive multiple of 8.
//
//go:noescape
func dotsF32F16AVX2(out, a *float32, b *uint16, stride, n, keys int)

// axpysF32F16AVX2 does axpyF32F16AVX2(y, alpha[t], x + t·stride, n) for
// t = 0 … keys-1 (keys > 0), with y held in registers 32 values at a time; n
// is a positive multiple of 8.
//
//go:noescape
func axpysF32F16AVX2(y, alpha *float32, x *uint16, stride, n, keys int)

// dotF16AVX2 is dotF16Generic for n values (2n bytes of w), with AVX2 and
// F16C.
//
//go:noescape
func dotF16AVX2(w *byte, x *float32, n int) float32

// dotRowActsAccel sets out[b·stride] to DotRow(t, w, &acts[b]) for every b, as
// dotRowActs does, with a kernel that unpacks the row once for all the
// activations, and reports whether it did (see rowsActs4 for the kernels).
func dotRowActsAccel(t Type, w []byte, acts []Activation, out []float32, stride int) bool {
	return rowsActs4(t, w, len(w), 1, acts, nil, out, stride) == 1
}

// padsActs4 reports whether MatMul gives the kernels of four activations a
// last group of n (2 or 3) padded to four (MatMulJob.padActs): for three,
// whenever tierAVX2 has such kernels for t; for two, only for Q4_K and
// Q8_0 (at tierAVX2), whose kernels of four cost less than two passes of
// one (0.34 against 0.59 ms and 0.46 against 0.50 for 2048 × 2048 on one
// core here, with the matrix in the cache; from memory, the two passes
// read it twice); for Q6_K four cost more than two: 0.66 against 0.57.
func padsActs4(t Type, n int) bool {
	if active < tierAVX2 {
		return false
	}
	switch t {
	case Q4_K:
		return n == 2 || n == 3
	case Q8_0:
		return n == 3 || (n == 2 && active == tierAVX2)
	case Q4_0, Q5_0, Q5_K, Q6_K:
		return n == 3
	}
	return false
}

// packsActs4 reports whether the active tier's kernels of rows × four
// activations of type t read the activations packed (packActs4): Q4_K's
// side data (kPack4) at tierAVX2 and tierAVX512, Q8_0's blocks
// (q8Pack4Bytes) and Q4_0's (q4Pack4Bytes) at tierAVX2 (tierAVX512 has its
// tiles of rows × four).
func packsActs4(t Type) bool {
	return (t == Q4_K && active >= tierAVX2) || ((t == Q8_0 || t == Q4_0) && active == tierAVX2)
}

// packsActs8 reports whether the active tier has a kernel of rows × eight
// activations packed by packActs8 for t: Q8_0, Q5_0 and Q4_0 at tierAVX2
// (tierAVX512 has its tiles of rows × four), Q4_K and Q6_K at tierAVX2 and
// tierAVX512.
func packsActs8(t Type) bool {
	return ((t == Q8_0 || t == Q4_0 || t == Q5_0) && active == tierAVX2) || ((t == Q4_K || t == Q6_K) && active >= tierAVX2)
}

// rowsActs8 sets out[b·stride + k] to DotRow(t, row k of w, activation b)
// for the rows k < rows (rowBytes apart in w) and the eight activations
// packed in pk by packActs8 (nb blocks); packsActs8(t) must hold.
func rowsActs8(t Type, w []byte, rowBytes, rows int, pk []byte, nb int, out []float32, stride int) {
	if rows <= 0 {
		return
	}
	_ = w[(rows-1)*rowBytes+nb*t.BlockBytes()-1]
	_ = pk[nb*pack8Bytes(t)-1]
	_ = out[7*stride+rows-1]
	switch t {
	case Q4_K:
		dotQ4_KRowsActs8AVX2(&w[0], rowBytes, rows, &pk[0], nb, &out[0], stride)
	case Q6_K:
		dotQ6_KRowsActs8AVX2(&w[0], rowBytes, rows, &pk[0], nb, &out[0], stride)
	case Q4_0:
		dotQ4_0RowsActs8AVX2(&w[0], rowBytes, rows, &pk[0], nb, &out[0], stride)
	case Q5_0:
		dotQ5_0RowsActs8AVX2(&w[0], rowBytes, rows, &pk[0], nb, &out[0], stride)
	default:
		dotQ8_0RowsActs8AVX2(&w[0], rowBytes, rows, &pk[0], nb, &out[0], stride)
	}
}

// dotQ4_0RowsActs8AVX2 sets out[b·stride + k] to dotQ4_0Generic of the row
// of nb blocks at w + k·rowBytes with activation b of the group packed at pk
// (packQ4Acts), for k < rows and b < 8, with AVX2: two rows at a time.
//
//go:noescape
func dotQ4_0RowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)

// dotQ5_0RowsActs8AVX2 sets out[b·stride + k] to dotQ5_0Generic of the row
// of nb blocks at w + k·rowBytes with activation b of the group packed at pk
// (as for Q8_0), for k < rows and b < 8, with AVX2.
//
//go:noescape
func dotQ5_0RowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)

// dotQ6_KRowsActs8AVX2 sets out[b·stride + k] to dotQ6_KGeneric of the row
// of nb super-blocks at w + k·rowBytes with activation b of the group packed
// at pk (q6Pack8 each), for k < rows and b < 8, with AVX2.
//
//go:noescape
func dotQ6_KRowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)

// The Q8_0 and Q5_0 kernels of eight activations read a packed block as 288
// bytes: the quants at 0 (activation b at 32b), the scales at 256; the Q8_0
// kernel of four as 144 bytes, the scales at 128; the Q4_0 kernels of eight
// and four as 320 and 160 bytes, those 288 or 144 and then the corrections.
var _ = [1]struct{}{}[q8Pack8Bytes-288]
var _ = [1]struct{}{}[q8Pack4Bytes-144]
var _ = [1]struct{}{}[q4Pack8Bytes-320]
var _ = [1]struct{}{}[q4Pack4Bytes-160]

// dotQ4_0Rows2Acts4AVX2 sets out[b·stride + k] to dotQ4_0Generic of the row
// of nb blocks at w + k·rowBytes with activation b of the four packed at pk
// (packQ4Acts), for k < rows and b < 4, with AVX2: two rows at a time.
//
//go:noescape
func dotQ4_0Rows2Acts4AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)

// The Q6_K kernel of eight activations reads a q6Pack8 as 4128 bytes: the
// scales at 0, the quants at 32 (run c of activation b at 32 + 256c + 32b),
// the offsets at 2080 (2080 + 256c + 32b).
var _ = [1]struct{}{}[unsafe.Sizeof(q6Pack8{})-4128]

// dotQ4_KRowsActs8AVX2 sets out[b·stride + k] to dotQ4_KGeneric of the row
// of nb super-blocks at w + k·rowBytes with activation b of the group packed
// at pk (packKActs8), for k < rows and b < 8, with AVX2.
//
//go:noescape
func dotQ4_KRowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)

// The Q4_K kernel of eight activations reads a kPack8 as 2208 bytes: the
// scales at 0, the pairs at 32 and 96, the quants at 160 (run c of
// activation b at 160 + 256c + 32b).
var _ = [1]struct{}{}[unsafe.Sizeof(kPack8{})-2208]

// dotQ8_0RowsActs8AVX2 sets out[b·stride + k] to dotQ8_0Generic of the row
// of nb blocks at w + k·rowBytes with activation b of the group packed at pk
// (packActs8), for k < rows and b < 8, with AVX2.
//
//go:noescape
func dotQ8_0RowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)

// dotQ4_KRowsActs4AVX2 reads a kPack4 as 80 bytes, the scales at 0 and the
// pairs at 16; this fails to compile if the layout changes.
var _ = [1]struct{}{}[unsafe.Sizeof(kPack4{})-80]

// stackPackBlocks is the most super-blocks rowsQ4_KActs4Packing packs on
// its stack (rows of 8192 values).
const stackPackBlocks = 32

// rowsQ4_KActs4Packing is rowsActs4 for Q4_K rows at tierAVX2 when the
// activations come unpacked (dotRowActs): it packs their side data on its
// stack, and returns 0 (no rows done) for rows longer than stackPackBlocks
// super-blocks.
func rowsQ4_KActs4Packing(w []byte, rowBytes, rows int, acts []Activation, kp *actPtrs4, nb int, out []float32, stride int) int {
	var pk [stackPackBlocks]kPack4
	if nb > len(pk) {
		return 0
	}
	packKActs4(pk[:nb], acts)
	dotQ4_KRowsActs4AVX2(&w[0], rowBytes, rows, kp, &pk[0], nb, &out[0], stride)
	return rows
}

// rowsActs4 sets out[b·stride + k] to DotRow(t, row k of w, &acts[b]) for
// the rows k < rows (rowBytes apart in w) and the four activations of acts,
// with the kernels that unpack a row once for four activations, and returns
// rows; or 0 when acts does not hold four activations of one length or the
// active tier has no such kernel for t (or, for Q8_0 from packed
// activations, returns an even number of rows: the odd last row comes on
// the next call). There are kernels for Q4_0, Q5_0, Q8_0, Q4_K, Q5_K and
// Q6_K rows at tierAVX2 and tierAVX512. The pointers to the activations are
// made once for all the rows. pk is the activations packed (packActs4) when
// MatMul made it, else nil: the Q4_K and Q8_0 kernels of tierAVX2 read it
// and loop over the rows themselves (without pk, rowsQ4_KActs4Packing packs
// Q4_K's side data for the call, and Q8_0 goes through the kernel that
// reads the activations in place).
func rowsActs4(t Type, w []byte, rowBytes, rows int, acts []Activation, pk []byte, out []float32, stride int) int {
	if active < tierAVX2 || len(acts) != 4 || rows <= 0 {
		return 0
	}
	var (
		lp legacyPtrs4 // Q4_0, Q5_0, Q8_0
		kp actPtrs4    // Q4_K, Q5_K, Q6_K
		nb int
		ok bool
	)
	switch t {
	case Q4_0, Q5_0, Q8_0:
		lp, nb, ok = legacyActs4(acts)
	case Q4_K, Q5_K, Q6_K:
		kp, nb, ok = kActs4(acts, t != Q6_K)
	}
	if !ok {
		return 0
	}
	_ = w[(rows-1)*rowBytes+nb*t.BlockBytes()-1]
	_ = out[3*stride+rows-1]
	avx512 := active >= tierAVX512
	if t == Q8_0 && !avx512 {
		if len(pk) == nb*q8Pack4Bytes && rows >= 2 {
			rows &^= 1
			dotQ8_0Rows2Acts4AVX2(&w[0], rowBytes, rows, &pk[0], nb, &out[0], stride)
			return rows
		}
		dotQ8_0RowsActs4AVX2(&w[0], rowBytes, rows, &lp, nb, &out[0], stride)
		return rows
	}
	if t == Q4_0 && !avx512 && len(pk) == nb*q4Pack4Bytes {
		dotQ4_0Rows2Acts4AVX2(&w[0], rowBytes, rows, &pk[0], nb, &out[0], stride)
		return rows
	}
	if t == Q4_K {
		if len(pk) != nb*int(unsafe.Sizeof(kPack4{})) {
			return rowsQ4_KActs4Packing(w, rowBytes, rows, acts, &kp, nb, out, stride)
		}
		dotQ4_KRowsActs4AVX2(&w[0], rowBytes, rows, &kp, (*kPack4)(unsafe.Pointer(&pk[0])), nb, &out[0], stride)
		return rows
	}
	// Direct calls, not function values, through which the pointers and r
	// would escape to the heap.
	var r [4]float32
	for k := range rows {
		wk := &w[k*rowBytes]
		switch {
		case t == Q4_0 && avx512:
			dotQ4_0Acts4AVX512(wk, &lp, nb, &r)
		case t == Q4_0:
			dotQ4_0Acts4AVX2(wk, &lp, nb, &r)
		case t == Q5_0 && avx512:
			dotQ5_0Acts4AVX512(wk, &lp, nb, &r)
		case t == Q5_0:
			dotQ5_0Acts4AVX2(wk, &lp, nb, &r)
		case t == Q8_0:
			dotQ8_0Acts4AVX512(wk, &lp, nb, &r)
		case t == Q5_K && avx512:
			dotQ5_KActs4AVX512(wk, &kp, nb, &r)
		case t == Q5_K:
			dotQ5_KActs4AVX2(wk, &kp, nb, &r)
		case avx512:
			dotQ6_KActs4AVX512(wk, &kp, nb, &r)
		default:
			dotQ6_KActs4AVX2(wk, &kp, nb, &r)
		}
		putActs4(out[k:], stride, &r)
	}
	return rows
}

// matVecAccel computes out[r] = DotRow(t, row r of w, a) for the first rows of
// out that it has a kernel for, and returns how many it did. The rows of w
// are rowBytes apart. With AVX-512, Q4_0 and Q8_0 rows go four or eight at a
// time to kernels that share each 512-bit instruction between rows and load
// the activation once for them (a multiple of four rows); from 16 rows on,
// the eight rows of a call come one from each eighth of the matrix, so that a
// core reads eight streams. The other rows of the types with a kernel go
// straight to their one-row kernels (matVecK, matVecLegacy), without
// DotRow's dispatch and slicing per row (a few percent of a decode).
func matVecAccel(t Type, w []byte, rowBytes int, a *Activation, out []float32) int {
	switch t {
	case Q4_K, Q5_K, Q6_K:
		return matVecK(t, w, rowBytes, a, out)
	case Q5_0:
		return matVecLegacy(pickLegacy(dotQ5_0AVX512, dotQ5_0AVX2), w, rowBytes, q5_0Bytes, a, out)
	case Q4_0, Q8_0:
	default:
		return 0
	}
	if active < tierAVX512 {
		return matVecStreamsAVX2(t, w, rowBytes, a, out)
	}
	k := rows4Kernel(dotQ8_0Rows4AVX512)
	if t == Q4_0 {
		k = dotQ4_0Rows4AVX512
	}
	nb := a.N / QK
	rows := len(out) &^ 3
	if nb == 0 || rows == 0 {
		return 0
	}
	qs, d := a.Qs[:nb*QK], a.D[:nb]
	_ = w[(rows-1)*rowBytes+nb*t.BlockBytes()-1]
	r := 0
	if rows >= 16 {
		// Eight streams, one row from each eighth of the matrix, each
		// prefetched 1 KiB ahead; the rest, and smaller matrices, go four
		// neighbouring rows at a time.
		n := rows / 8
		var o [8]float32
		for ; r < n; r++ {
			if t == Q4_0 {
				dotQ4_0Rows8AVX512(&w[r*rowBytes], n*rowBytes, &qs[0], &d[0], nb, &o)
			} else {
				dotQ8_0Rows8AVX512(&w[r*rowBytes], n*rowBytes, &qs[0], &d[0], nb, &o)
			}
			scatterStreams(out, o[:], r, n)
		}
		r = 8 * n
	}
	for ; r < rows; r += 4 {
		k(&w[r*rowBytes], rowBytes, &qs[0], &d[0], nb, (*[4]float32)(out[r:]))
	}
	return rows
}

// rowsActsAccel sets out[b·stride + k] to DotRow(t, row k of w, &acts[b])
// for the first rows k (rowBytes apart in w, rows of them) and the four
// activations of acts, and returns the number of rows it did: with AVX-512,
// Q4_0 and Q8_0 rows go to kernels that compute the products of four or
// eight rows and four activations at once (a multiple of four rows); other
// rows, types and tiers go to rowsActs4 (with pk, the activations packed
// or nil), which does them all, none, or (Q8_0 from pk) all but an odd last
// one.
func rowsActsAccel(t Type, w []byte, rowBytes, rows int, acts []Activation, pk []byte, out []float32, stride int) int {
	if active < tierAVX512 || rows < 4 || len(acts) != 4 || (t != Q4_0 && t != Q8_0) {
		return rowsActs4(t, w, rowBytes, rows, acts, pk, out, stride)
	}
	p, nb, ok := legacyActs4(acts)
	if !ok {
		return 0
	}
	rows &^= 3
	_ = w[(rows-1)*rowBytes+nb*t.BlockBytes()-1]
	_ = out[3*stride+rows-1]
	r0 := 0
	if rows >= 8 {
		// Direct calls, not a function value: through one, p and r would
		// escape to the heap.
		var r [32]float32
		for ; r0+8 <= rows; r0 += 8 {
			if t == Q4_0 {
				dotQ4_0Rows8Acts4AVX512(&w[r0*rowBytes], rowBytes, &p, nb, &r)
			} else {
				dotQ8_0Rows8Acts4AVX512(&w[r0*rowBytes], rowBytes, &p, nb, &r)
			}
			scatterTile(out, r[:], r0, stride)
		}
	}
	var r [16]float32
	for ; r0 < rows; r0 += 4 {
		if t == Q4_0 {
			dotQ4_0Rows4Acts4AVX512(&w[r0*rowBytes], rowBytes, &p, nb, &r)
		} else {
			dotQ8_0Rows4Acts4AVX512(&w[r0*rowBytes], rowBytes, &p, nb, &r)
		}
		scatterTile(out, r[:], r0, stride)
	}
	return rows
}

// scatterTile copies a tile kernel's results, r[4k+b] for row k and
// activation b, to out[b·stride + r0 + k].
func scatterTile(out, r []float32, r0, stride int) {
	for k := range len(r) / 4 {
		for b := range 4 {
			out[b*stride+r0+k] = r[4*k+b]
		}
	}
}

// dotQ4_0Rows4Acts4AVX512 sets out[4k+b] to dotQ4_0Generic of the row of nb
// blocks at w + k·rowBytes with activation b of p (k, b < 4), with AVX-512
// (F, BW, VL) and VNNI.
//
//go:noescape
func dotQ4_0Rows4Acts4AVX512(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[16]float32)

// dotQ8_0Rows4Acts4AVX512 is dotQ4_0Rows4Acts4AVX512 for Q8_0 rows, giving
// dotQ8_0Generic's results.
//
//go:noescape
func dotQ8_0Rows4Acts4AVX512(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[16]float32)

// dotQ4_0Rows8Acts4AVX512 is dotQ4_0Rows4Acts4AVX512 for eight rows (out[4k+b]
// for k < 8).
//
//go:noescape
func dotQ4_0Rows8Acts4AVX512(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[32]float32)

// dotQ8_0Rows8Acts4AVX512 is dotQ8_0Rows4Acts4AVX512 for eight rows (out[4k+b]
// for k < 8).
//
//go:noescape
func dotQ8_0Rows8Acts4AVX512(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[32]float32)

// matVecK is matVecAccel for the K-quant types: every row with the type's
// one-row kernel of the active tier (none at tierGeneric), except that with
// AVX-512 Q6_K rows go four at a time, one from each quarter (from 8 rows
// on), and Q4_K rows two at a time, one from each half, so that the core
// reads several streams.
func matVecK(t Type, w []byte, rowBytes int, a *Activation, out []float32) int {
	var k kKernel
	switch t {
	case Q4_K:
		k = pickK(dotQ4_KAVX2, dotQ4_KAVX2)
	case Q5_K:
		k = pickK(dotQ5_KAVX512, dotQ5_KAVX2)
	default:
		k = pickK(dotQ6_KAVX512, dotQ6_KAVX2)
	}
	nb := a.N / QKK
	if k == nil || nb == 0 || len(out) == 0 {
		return 0
	}
	r := 0
	if active == tierAVX512 && t == Q6_K && len(out) >= 8 {
		qs, d, bsums := a.Qs[:nb*QKK], a.D[:nb], a.BSums[:nb*QKK/16]
		_ = w[(len(out)-1)*rowBytes+nb*t.BlockBytes()-1]
		// Four streams: rows r, r+n, r+2n and r+3n of the four quarters.
		n := len(out) / 4
		var o [4]float32
		for ; r < n; r++ {
			dotQ6_KRows4AVX512(&w[r*rowBytes], n*rowBytes, &qs[0], &d[0], &bsums[0], nb, &o)
			scatterStreams(out, o[:], r, n)
		}
		r = 4 * n
	}
	if t == Q4_K && len(out) >= 2 {
		// Two streams, one row from each half of the rows.
		qs, d, bsums := a.Qs[:nb*QKK], a.D[:nb], a.BSums[:nb*QKK/16]
		_ = w[(len(out)-1)*rowBytes+nb*t.BlockBytes()-1]
		n := len(out) / 2
		var o [2]float32
		for ; r < n; r++ {
			dotQ4_KRows2AVX2(&w[r*rowBytes], n*rowBytes, &qs[0], &d[0], &bsums[0], nb, &o)
			out[r], out[r+n] = o[0], o[1]
		}
		r = 2 * n
	}
	if r == len(out) {
		return r
	}
	return r + matVecSuper(k, w[r*rowBytes:], rowBytes, t.BlockBytes(), a, out[r:])
}

// dotQ4_KRows2AVX2 sets out[k] to dotQ4_KAVX2 of the row at w + k·stride
// (k < 2): two streams.
//
//go:noescape
func dotQ4_KRows2AVX2(w *byte, stride int, qs *int8, d *float32, bsums *int16, nb int, out *[2]float32)

// dotQ8_0Rows2AVX2 sets out[k] to dotQ8_0AVX2 of the row at w + k·stride
// (k < 2): two streams.
//
//go:noescape
func dotQ8_0Rows2AVX2(w *byte, stride int, qs *int8, d *float32, nb int, out *[2]float32)

// matVecStreamsAVX2 is matVecAccel for Q8_0 and Q4_0 at tierAVX2: one row
// from each part of the rows at a time, two streams for Q8_0
// (dotQ8_0Rows2AVX2), four for Q4_0 (dotQ4_0Rows4AVX2), the rows left over
// alone.
func matVecStreamsAVX2(t Type, w []byte, rowBytes int, a *Activation, out []float32) int {
	nb := a.N / QK
	if active < tierAVX2 || nb == 0 || len(out) == 0 {
		return 0
	}
	qs, d := a.Qs[:nb*QK], a.D[:nb]
	_ = w[(len(out)-1)*rowBytes+nb*t.BlockBytes()-1]
	streams, one := 2, legacyKernel(dotQ8_0AVX2)
	if t == Q4_0 {
		streams, one = 4, dotQ4_0AVX2
	}
	n := len(out) / streams
	var o [4]float32
	for r := range n {
		// Direct calls, not function values: through one, o would escape to
		// the heap.
		if t == Q4_0 {
			dotQ4_0Rows4AVX2(&w[r*rowBytes], n*rowBytes, &qs[0], &d[0], nb, &o)
		} else {
			dotQ8_0Rows2AVX2(&w[r*rowBytes], n*rowBytes, &qs[0], &d[0], nb, (*[2]float32)(o[:2]))
		}
		scatterStreams(out, o[:streams], r, n)
	}
	for r := streams * n; r < len(out); r++ {
		out[r] = one(&w[r*rowBytes], &qs[0], &d[0], nb)
	}
	return len(out)
}

// dotQ4_0Rows4AVX2 sets out[k] to dotQ4_0AVX2 of the row at w + k·stride
// (k < 4): four streams.
//
//go:noescape
func dotQ4_0Rows4AVX2(w *byte, stride int, qs *int8, d *float32, nb int, out *[4]float32)

// rows4Kernel is the signature of the kernels that set out[k] to the dot of
// the row of nb blocks at w + k·rowBytes (k < 4) with the activation quants
// qs and scales d.
type rows4Kernel func(w *byte, rowBytes int, qs *int8, d *float32, nb int, out *[4]float32)

// dotQ4_0Rows4AVX512 is a rows4Kernel giving dotQ4_0Generic's results, with
// AVX-512 (F, BW, VL) and VNNI.
//
//go:noescape
func dotQ4_0Rows4AVX512(w *byte, rowBytes int, qs *int8, d *float32, nb int, out *[4]float32)

// dotQ4_0Rows8AVX512 is dotQ4_0Rows4AVX512 for the eight rows at w + k·stride
// (far apart: each is prefetched 1 KiB ahead into L2 as a stream of its own).
//
//go:noescape
func dotQ4_0Rows8AVX512(w *byte, stride int, qs *int8, d *float32, nb int, out *[8]float32)

// dotQ8_0Rows8AVX512 is dotQ8_0Rows4AVX512 for the eight rows at w + k·stride
// (far apart: each is prefetched 1 KiB ahead into L2 as a stream of its own).
//
//go:noescape
func dotQ8_0Rows8AVX512(w *byte, stride int, qs *int8, d *float32, nb int, out *[8]float32)

// dotQ8_0Rows4AVX512 is a rows4Kernel giving dotQ8_0Generic's results, with
// AVX-512 (F, BW, VL) and VNNI.
//
//go:noescape
func dotQ8_0Rows4AVX512(w *byte, rowBytes int, qs *int8, d *float32, nb int, out *[4]float32)

// dotQ4_0Acts4AVX512 sets out[b] to dotQ4_0Generic of the nb blocks at w with
// activation b of p, with AVX512-VNNI.
//
//go:noescape
func dotQ4_0Acts4AVX512(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ5_0Acts4AVX512 sets out[b] to dotQ5_0Generic of the nb blocks at w with
// activation b of p, with AVX512-VNNI and AVX512BW.
//
//go:noescape
func dotQ5_0Acts4AVX512(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ8_0Acts4AVX512 sets out[b] to dotQ8_0Generic of the nb blocks at w with
// activation b of p, with AVX512-VNNI.
//
//go:noescape
func dotQ8_0Acts4AVX512(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ4_0Acts4AVX2 is dotQ4_0Acts4AVX512 with AVX2.
//
//go:noescape
func dotQ4_0Acts4AVX2(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ5_0Acts4AVX2 is dotQ5_0Acts4AVX512 with AVX2.
//
//go:noescape
func dotQ5_0Acts4AVX2(w *byte, p *legacyPtrs4, nb int, out *[4]float32)

// dotQ8_0RowsActs4AVX2 sets out[b·stride + k] to dotQ8_0Generic of the row
// of nb blocks at w + k·rowBytes with activation b of p (k < rows, b < 4),
// with AVX2.
//
//go:noescape
func dotQ8_0RowsActs4AVX2(w *byte, rowBytes, rows int, p *legacyPtrs4, nb int, out *float32, stride int)

// dotQ8_0Rows2Acts4AVX2 is dotQ8_0RowsActs4AVX2 with the activations packed
// at pk (nb blocks of q8Pack4Bytes, packQ8Acts) and rows even, two rows per
// pass: about a fifth faster (0.46 against 0.59 ms for 2048 × 2048 on one
// core here).
//
//go:noescape
func dotQ8_0Rows2Acts4AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)

// dotQ4_KRowsActs4AVX2 sets out[b·stride + k] to dotQ4_KGeneric of the row
// of nb super-blocks at w + k·rowBytes with activation b of p (k < rows,
// b < 4), with AVX2: the quants of the activations are read through p, their
// scales and bsums from pk (nb super-blocks, packKActs4).
//
//go:noescape
func dotQ4_KRowsActs4AVX2(w *byte, rowBytes, rows int, p *actPtrs4, pk *kPack4, nb int, out *float32, stride int)

// dotQ5_KActs4AVX2 is dotQ5_KActs4AVX512 with AVX2.
//
//go:noescape
func dotQ5_KActs4AVX2(w *byte, p *actPtrs4, nb int, out *[4]float32)

// dotQ6_KActs4AVX2 is dotQ6_KActs4AVX512 with AVX2.
//
//go:noescape
func dotQ6_KActs4AVX2(w *byte, p *actPtrs4, nb int, out *[4]float32)

// dotQ5_KActs4AVX512 sets out[b] to dotQ5_KGeneric of the nb super-blocks at
// w with activation b of p, with AVX-512 and VNNI.
//
//go:noescape
func dotQ5_KActs4AVX512(w *byte, p *actPtrs4, nb int, out *[4]float32)

// dotQ6_KActs4AVX512 sets out[b] to dotQ6_KGeneric of the nb super-blocks at
// w with activation b of p, with AVX-512 and VNNI.
//
//go:noescape
func dotQ6_KActs4AVX512(w *byte, p *actPtrs4, nb int, out *[4]float32)

// sumSquaresAccel adds the squares of the first values of x (a multiple of
// eight) to lanes as RMSNorm's loop does, with AVX2, and returns how many it
// did.
func sumSquaresAccel(lanes *[8]float64, x []float32) int {
	n := len(x) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	sumSquaresAVX2(lanes, &x[0], n)
	return n
}

// sumSquaresAVX2 adds float64(x[i]·x[i]), the product rounded to float32,
// to lanes[i%8] for n values, a multiple of eight.
//
//go:noescape
func sumSquaresAVX2(lanes *[8]float64, x *float32, n int)

// scaleMulAccel sets out[i] = (x[i]·scale)·weight[i] for the first values of
// x (a multiple of eight) with AVX2 and returns how many it did.
func scaleMulAccel(out, x, weight []float32, scale float32) int {
	n := len(x) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	out, weight = out[:n], weight[:n]
	scaleMulAVX2(&out[0], &x[0], &weight[0], scale, n)
	return n
}

// scaleF32Accel multiplies the first values of x (a multiple of eight) by s
// with AVX2 and returns how many it did.
func scaleF32Accel(x []float32, s float32) int {
	n := len(x) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	scaleF32AVX2(&x[0], s, n)
	return n
}

// scaleF32AVX2 sets x[i] ×= s for n values, a multiple of eight.
//
//go:noescape
func scaleF32AVX2(x *float32, s float32, n int)

// scaleMulAVX2 sets out[i] = (x[i]·scale)·weight[i], each product rounded,
// for n values, a multiple of eight.
//
//go:noescape
func scaleMulAVX2(out, x, weight *float32, scale float32, n int)

// fp32ToFP16Accel converts the first values of src (a multiple of eight)
// with F16C and returns how many it did.
func fp32ToFP16Accel(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	dst = dst[:n]
	fp32ToFP16AVX2(&dst[0], &src[0], n)
	return n
}

// fp32ToFP16AVX2 converts n float32 values at src, a multiple of eight, to
// half precision at dst, rounding to nearest even (VCVTPS2PH), which is what
// FP32ToFP16 does, NaNs included.
//
//go:noescape
func fp32ToFP16AVX2(dst *uint16, src *float32, n int)

// swiGLUAccel does SwiGLU's work for the first values of gate (a multiple of
// eight) with AVX2 and returns how many it did.
func swiGLUAccel(gate, up []float32) int {
	n := len(gate) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	up = up[:n]
	swiGLUAVX2(&gate[0], &up[0], n)
	return n
}

// swiGLUAVX2 sets gate[i] = SiLU(gate[i])·up[i] for n values, a multiple of
// eight, with AVX2 and FMA.
//
//go:noescape
func swiGLUAVX2(gate, up *float32, n int)

// sumWords is sumWordsGeneric with AVX2 and prefetching for the four streams.
func sumWords(b []uint64) uint64 {
	q := len(b) / 4 &^ 7
	if active < tierAVX2 || q == 0 {
		return sumWordsGeneric(b)
	}
	b4 := b[:4*q]
	return sumQuartersAVX2(&b4[0], q) + sumTail(b[4*q:])
}

// sumQuartersAVX2 is sumQuarters for q ≥ 8 words per stream, with AVX2.
//
//go:noescape
func sumQuartersAVX2(p *uint64, q int) uint64

// expSubAccel does ExpSub's work for the first values of x (a multiple of
// eight) with AVX2 and returns how many it did.
func expSubAccel(x []float32, m float32) int {
	n := len(x) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	expSubAVX2(&x[0], m, n)
	return n
}

// expSubAVX2 sets x[i] = expApprox(x[i]−m) for n values, a multiple of eight,
// with AVX2 and FMA.
//
//go:noescape
func expSubAVX2(x *float32, m float32, n int)

// geluMulAccel does GELUMul's work with the table t for the first values of
// gate (a multiple of eight) with AVX2 and F16C and returns how many it did.
func geluMulAccel(gate, up []float32, t *[1 << 16]uint16) int {
	n := len(gate) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	up = up[:n]
	geluMulAVX2(&gate[0], &up[0], t, n)
	return n
}

// geluMulAVX2 sets gate[i] = GELU(gate[i])·up[i] for n values, a multiple of
// eight, as geluMulGeneric does with the table t: 0 at or below −10,
// gate[i]·up[i] at or above 10, and otherwise the entry of t at the half
// that VCVTPS2PH rounds gate[i] to (FP32ToFP16's, NaNs included), gathered
// and converted back with VCVTPH2PS, times up[i].
//
//go:noescape
func geluMulAVX2(gate, up *float32, t *[1 << 16]uint16, n int)

// mulAccel does MulF32's work for the first values of dst (a multiple of
// eight) with AVX2 and returns how many it did.
func mulAccel(dst, a, b []float32) int {
	n := len(dst) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	a, b = a[:n], b[:n]
	mulAVX2(&dst[0], &a[0], &b[0], n)
	return n
}

// mulAVX2 sets dst[i] = a[i]·b[i] for n values, a multiple of eight; dst may
// be a or b.
//
//go:noescape
func mulAVX2(dst, a, b *float32, n int)

// mulAddAccel does MulAddF32's work for the first values of dst (a multiple
// of eight) with AVX2 and returns how many it did.
func mulAddAccel(dst, a, b []float32) int {
	n := len(dst) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	a, b = a[:n], b[:n]
	mulAddAVX2(&dst[0], &a[0], &b[0], n)
	return n
}

// mulAddAVX2 sets dst[i] += a[i]·b[i] for n values, a multiple of eight, the
// product rounded before it is added (VMULPS, then VADDPS: no FMA).
//
//go:noescape
func mulAddAVX2(dst, a, b *float32, n int)

// roundFP16Accel does RoundFP16's work for the first values of src (a
// multiple of eight) with F16C and returns how many it did.
func roundFP16Accel(dst, src []float32) int {
	n := len(src) &^ 7
	if active < tierAVX2 || n == 0 {
		return 0
	}
	dst = dst[:n]
	roundFP16AVX2(&dst[0], &src[0], n)
	return n
}

// roundFP16AVX2 sets dst[i] to src[i] rounded to half precision and back for
// n values, a multiple of eight, with VCVTPS2PH (round to nearest even, what
// FP32ToFP16 does, NaNs included) and VCVTPH2PS (exact, as FP16ToFP32); dst
// may be src.
//
//go:noescape
func roundFP16AVX2(dst, src *float32, n int)

// ropeNeoxAccel rotates the first pairs of every head of x (a multiple of
// eight of the len(cos) pairs, nHeads > 0) as RopeNeox does, and returns how
// many pairs per head it did.
func ropeNeoxAccel(x []float32, nHeads, headDim int, cos, sin []float32) int {
	m := len(cos) &^ 7
	if active < tierAVX2 || m == 0 {
		return 0
	}
	ropeNeoxAVX2(&x[0], nHeads, headDim, &cos[0], &sin[0], len(cos), m)
	return m
}

// ropeNeoxAVX2 rotates pairs i < m (a positive multiple of eight) of each of
// nHeads heads of headDim values at x, value i with value n+i, by cos[i] and
// sin[i], with rotatePair's operations: x1·s and x1·c rounded, then one fused
// multiply-add (subtract) each.
//
//go:noescape
func ropeNeoxAVX2(x *float32, nHeads, headDim int, cos, sin *float32, n, m int)

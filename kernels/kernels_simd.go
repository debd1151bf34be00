//go:build !purego && (amd64 || arm64)

package kernels

// The dispatch of the integer dots, shared by the architectures with
// assembly kernels: each dot has a tierDot kernel (AVX-512 with VNNI, SDOT)
// and a tierVector one (AVX2, NEON), and the portable twin at tierGeneric.
// The Go functions check the slice lengths, so that the assembly can trust
// its pointers and block counts.

// legacyKernel is the signature of the assembly dots of the 32-value block
// types: nb blocks of weights at w, 32·nb activation quants qs and nb
// activation scales d (nb ≥ 1).
type legacyKernel func(w *byte, qs *int8, d *float32, nb int) float32

// kKernel is the signature of the assembly dots of the K-quants: nb
// super-blocks of weights at w, 256·nb activation quants qs, nb activation
// scales d and 16·nb bsums (nb ≥ 1; Q6_K does not read bsums).
type kKernel func(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32

// pickLegacy returns the kernel of the active tier, dot or vector, or nil at
// tierGeneric.
func pickLegacy(dot, vector legacyKernel) legacyKernel {
	switch active {
	case tierDot:
		return dot
	case tierVector:
		return vector
	}
	return nil
}

// pickK returns the kernel of the active tier, dot or vector, or nil at
// tierGeneric.
func pickK(dot, vector kKernel) kKernel {
	switch active {
	case tierDot:
		return dot
	case tierVector:
		return vector
	}
	return nil
}

// dotLegacy returns the dot of the row w of a 32-value block type
// (blockBytes per block) with a: with the kernel of the active tier, dot or
// vector, or with generic, the twin.
func dotLegacy(w []byte, a *Activation, blockBytes int, dot, vector legacyKernel, generic func([]byte, *Activation) float32) float32 {
	k := pickLegacy(dot, vector)
	if k == nil {
		return generic(w, a)
	}
	nb := a.N / QK
	if nb == 0 {
		return 0
	}
	w, qs, d := w[:nb*blockBytes], a.Qs[:nb*QK], a.D[:nb]
	return k(&w[0], &qs[0], &d[0], nb)
}

// dotK is dotLegacy for a K-quant row (blockBytes per super-block).
func dotK(w []byte, a *Activation, blockBytes int, dot, vector kKernel, generic func([]byte, *Activation) float32) float32 {
	k := pickK(dot, vector)
	if k == nil {
		return generic(w, a)
	}
	nb := a.N / QKK
	if nb == 0 {
		return 0
	}
	w, qs, d, bsums := w[:nb*blockBytes], a.Qs[:nb*QKK], a.D[:nb], a.BSums[:nb*QKK/16]
	return k(&w[0], &qs[0], &d[0], &bsums[0], nb)
}

// matVecLegacy sets every row of out with the one-row kernel k of a 32-value
// block type (blockBytes per block; the rows of w rowBytes apart), called
// directly rather than through DotRow's dispatch and slicing per row, and
// returns how many rows it did: all, or 0 when k is nil.
func matVecLegacy(k legacyKernel, w []byte, rowBytes, blockBytes int, a *Activation, out []float32) int {
	nb := a.N / QK
	if k == nil || nb == 0 || len(out) == 0 {
		return 0
	}
	qs, d := a.Qs[:nb*QK], a.D[:nb]
	_ = w[(len(out)-1)*rowBytes+nb*blockBytes-1]
	for r := range out {
		out[r] = k(&w[r*rowBytes], &qs[0], &d[0], nb)
	}
	return len(out)
}

// matVecSuper is matVecLegacy for a K-quant type (blockBytes per
// super-block).
func matVecSuper(k kKernel, w []byte, rowBytes, blockBytes int, a *Activation, out []float32) int {
	nb := a.N / QKK
	if k == nil || nb == 0 || len(out) == 0 {
		return 0
	}
	qs, d, bsums := a.Qs[:nb*QKK], a.D[:nb], a.BSums[:nb*QKK/16]
	_ = w[(len(out)-1)*rowBytes+nb*blockBytes-1]
	for r := range out {
		out[r] = k(&w[r*rowBytes], &qs[0], &d[0], &bsums[0], nb)
	}
	return len(out)
}

// scatterStreams copies a multi-stream kernel's results, o[k] for row
// r + k·n (the row r of each of the len(o) parts of n rows), to out.
func scatterStreams(out, o []float32, r, n int) {
	for k, v := range o {
		out[r+k*n] = v
	}
}

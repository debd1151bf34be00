//go:build !purego

package kernels

import "unsafe"

// Interleaves reports whether the active tier has kernels for t's
// interleaved layout, so that interleaving a matrix of t pays: Q4_0
// (Q4_0x8) and Q4_K (Q4_Kx8) at tierAVX2 and tierAVX512, whose kernels are
// the AVX2 ones.
func Interleaves(t Type) bool { return (t == Q4_0 || t == Q4_K) && active >= tierAVX2 }

// interleavedAct is interleavedActGeneric of the only activation with the
// active tier's kernels. Two streams from memory read faster than one: the
// first half of the groups goes beside the second, an odd last group beside
// itself.
func interleavedAct(w []byte, groups int, j *MatMulJob, out []float32) {
	if active < tierAVX2 {
		interleavedActGeneric(w, groups, j, 0, out)
		return
	}
	nb, qs := j.nb, j.acts[0].Qs
	gb := nb * interleavedBlockBytes(j.t)
	_ = w[groups*gb-1]
	_ = out[8*groups-1]
	var side unsafe.Pointer
	if j.t == Q4_Kx8 {
		_ = qs[nb*QKK-1]
		side = unsafe.Pointer(&j.kside[:nb][0])
	} else {
		_ = qs[nb*QK-1]
		side = unsafe.Pointer(&j.side[:nb][0])
	}
	// Direct calls: through a func value the arguments would escape.
	k := func(w, w2 *byte, groups int, out, out2 *float32) {
		if j.t == Q4_Kx8 {
			dotQ4_Kx8x2AVX2(w, w2, groups, nb, &qs[0], side, out, out2)
		} else {
			dotQ4_0x8x2AVX2(w, w2, groups, nb, &qs[0], side, out, out2)
		}
	}
	half := groups / 2
	if half > 0 {
		k(&w[0], &w[half*gb], half, &out[0], &out[8*half])
	}
	if groups%2 != 0 {
		var twice [8]float32
		last := (groups - 1) * gb
		k(&w[last], &w[last], 1, &out[8*(groups-1)], &twice[0])
	}
}

// interleavedActs4 is interleavedActs4Generic with the active tier's
// kernels.
func interleavedActs4(w []byte, groups int, j *MatMulJob, sel [4]int, col int) {
	if active < tierAVX2 {
		interleavedActs4Generic(w, groups, j, sel, col)
		return
	}
	nb := j.nb
	_ = w[groups*nb*interleavedBlockBytes(j.t)-1]
	var p x8Ptrs4
	for k, b := range sel {
		_ = j.out[b*j.rows+col+8*groups-1]
		p.out[k] = &j.out[b*j.rows+col]
		if j.t == Q4_Kx8 {
			_ = j.acts[b].Qs[nb*QKK-1]
			p.side[k] = unsafe.Pointer(&j.kside[b*nb : (b+1)*nb][0])
		} else {
			_ = j.acts[b].Qs[nb*QK-1]
			p.side[k] = unsafe.Pointer(&j.side[b*nb : (b+1)*nb][0])
		}
		p.qs[k] = &j.acts[b].Qs[0]
	}
	if j.t == Q4_Kx8 {
		dotQ4_Kx8Acts4AVX2(&w[0], groups, nb, &p)
	} else {
		dotQ4_0x8Acts4AVX2(&w[0], groups, nb, &p)
	}
}

// x8Ptrs4 points to the quants, block side data (x8Side or k8Side) and
// results of four activations for the interleaved kernels of four (the
// layout the assembly expects).
type x8Ptrs4 struct {
	qs   [4]*int8
	side [4]unsafe.Pointer
	out  [4]*float32
}

// dotQ4_0x8x2AVX2 is dotQ4_0x8Generic with AVX2 for the groups at w
// (results at out) and as many at w2 (results at out2), a block of each in
// turn (qs, side: nb blocks of the activation, side an *x8Side).
//
//go:noescape
func dotQ4_0x8x2AVX2(w, w2 *byte, groups, nb int, qs *int8, side unsafe.Pointer, out, out2 *float32)

// dotQ4_0x8Acts4AVX2 is dotQ4_0x8Generic with AVX2 for the four
// activations of p, each one's results from p.out[b] on.
//
//go:noescape
func dotQ4_0x8Acts4AVX2(w *byte, groups, nb int, p *x8Ptrs4)

// dotQ4_Kx8x2AVX2 is dotQ4_0x8x2AVX2 for Q4_Kx8 groups (dotQ4_Kx8Generic;
// side a *k8Side).
//
//go:noescape
func dotQ4_Kx8x2AVX2(w, w2 *byte, groups, nb int, qs *int8, side unsafe.Pointer, out, out2 *float32)

// dotQ4_Kx8Acts4AVX2 is dotQ4_0x8Acts4AVX2 for Q4_Kx8 groups.
//
//go:noescape
func dotQ4_Kx8Acts4AVX2(w *byte, groups, nb int, p *x8Ptrs4)

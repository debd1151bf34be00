//go:build !purego

package kernels

// Interleaves reports whether the active tier has kernels for t's
// interleaved layout, so that interleaving a matrix of t pays: Q4_0
// (Q4_0x8) at tierAVX2 and tierAVX512, whose kernels are the AVX2 ones.
func Interleaves(t Type) bool { return t == Q4_0 && active >= tierAVX2 }

// q4_0x8Act is dotQ4_0x8Generic with the active tier's kernel.
func q4_0x8Act(w []byte, groups, nb int, qs []int8, side []x8Side, out []float32) {
	if active < tierAVX2 {
		dotQ4_0x8Generic(w, groups, nb, qs, side, out)
		return
	}
	_ = w[groups*nb*q4_0x8Bytes-1]
	_ = qs[nb*QK-1]
	_ = side[nb-1]
	_ = out[8*groups-1]
	// Two streams from memory read faster than one: the first half of the
	// groups beside the second.
	if half := groups / 2; half > 0 {
		g := half * 8 * nb * q4_0Bytes
		dotQ4_0x8x2AVX2(&w[0], &w[g], half, nb, &qs[0], &side[0], &out[0], &out[8*half])
		if groups%2 == 0 {
			return
		}
		w, out, groups = w[2*g:], out[16*half:], 1
	}
	dotQ4_0x8AVX2(&w[0], groups, nb, &qs[0], &side[0], &out[0])
}

// q4_0x8Acts4 sets out[b·stride + 8g + r] to row r of group g with acts[b]
// for the four activations (sides: nb per activation, in order), as
// dotQ4_0x8Generic.
func q4_0x8Acts4(w []byte, groups, nb int, acts []Activation, sides []x8Side, out []float32, stride int) {
	if active < tierAVX2 {
		dotQ4_0x8Acts4Generic(w, groups, nb, acts, sides, out, stride)
		return
	}
	_ = w[groups*nb*q4_0x8Bytes-1]
	_ = sides[4*nb-1]
	_ = out[3*stride+8*groups-1]
	var p x8Ptrs4
	for b := range 4 {
		_ = acts[b].Qs[nb*QK-1]
		p.qs[b], p.side[b] = &acts[b].Qs[0], &sides[b*nb]
	}
	dotQ4_0x8Acts4AVX2(&w[0], groups, nb, &p, &out[0], stride)
}

// x8Ptrs4 points to the quants and block sides of four Q8_0 activations for
// dotQ4_0x8Acts4AVX2 (the layout the assembly expects).
type x8Ptrs4 struct {
	qs   [4]*int8
	side [4]*x8Side
}

// dotQ4_0x8AVX2 is dotQ4_0x8Generic with AVX2 (qs, side: nb blocks of the
// activation; out: 8·groups values).
//
//go:noescape
func dotQ4_0x8AVX2(w *byte, groups, nb int, qs *int8, side *x8Side, out *float32)

// dotQ4_0x8x2AVX2 is dotQ4_0x8AVX2 for the groups at w (results at out)
// and as many at w2 (results at out2), a block of each in turn.
//
//go:noescape
func dotQ4_0x8x2AVX2(w, w2 *byte, groups, nb int, qs *int8, side *x8Side, out, out2 *float32)

// dotQ4_0x8Acts4AVX2 is dotQ4_0x8AVX2 for the four activations of p, the
// results of activation b from out + b·stride.
//
//go:noescape
func dotQ4_0x8Acts4AVX2(w *byte, groups, nb int, p *x8Ptrs4, out *float32, stride int)

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
	// groups beside the second; an odd last group beside itself.
	half := groups / 2
	if half > 0 {
		g := half * 8 * nb * q4_0Bytes
		dotQ4_0x8x2AVX2(&w[0], &w[g], half, nb, &qs[0], &side[0], &out[0], &out[8*half])
	}
	if groups%2 != 0 {
		var twice [8]float32
		last := (groups - 1) * 8 * nb * q4_0Bytes
		dotQ4_0x8x2AVX2(&w[last], &w[last], 1, nb, &qs[0], &side[0], &out[8*(groups-1)], &twice[0])
	}
}

// q4_0x8Acts4 is q4_0x8Acts4Generic with the active tier's kernel.
func q4_0x8Acts4(w []byte, groups, nb int, j *MatMulJob, sel [4]int, col int) {
	if active < tierAVX2 {
		q4_0x8Acts4Generic(w, groups, nb, j, sel, col)
		return
	}
	_ = w[groups*nb*q4_0x8Bytes-1]
	var p x8Ptrs4
	for k, b := range sel {
		_ = j.acts[b].Qs[nb*QK-1]
		_ = j.side[(b+1)*nb-1]
		_ = j.out[b*j.rows+col+8*groups-1]
		p.qs[k], p.side[k], p.out[k] = &j.acts[b].Qs[0], &j.side[b*nb], &j.out[b*j.rows+col]
	}
	dotQ4_0x8Acts4AVX2(&w[0], groups, nb, &p)
}

// x8Ptrs4 points to the quants, block sides and results of four Q8_0
// activations for dotQ4_0x8Acts4AVX2 (the layout the assembly expects).
type x8Ptrs4 struct {
	qs   [4]*int8
	side [4]*x8Side
	out  [4]*float32
}

// dotQ4_0x8x2AVX2 is dotQ4_0x8Generic with AVX2 for the groups at w
// (results at out) and as many at w2 (results at out2), a block of each in
// turn (qs, side: nb blocks of the activation).
//
//go:noescape
func dotQ4_0x8x2AVX2(w, w2 *byte, groups, nb int, qs *int8, side *x8Side, out, out2 *float32)

// dotQ4_0x8Acts4AVX2 is dotQ4_0x8Generic with AVX2 for the four
// activations of p, each one's results from p.out[b] on.
//
//go:noescape
func dotQ4_0x8Acts4AVX2(w *byte, groups, nb int, p *x8Ptrs4)

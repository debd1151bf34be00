//go:build purego || !amd64

package kernels

// Interleaves reports whether the active tier has kernels for t's
// interleaved layout: none without amd64's assembly (NEON kernels for
// Q4_0x8 are not written), so nothing is interleaved there.
func Interleaves(Type) bool { return false }

// q4_0x8Act is dotQ4_0x8Generic.
func q4_0x8Act(w []byte, groups, nb int, qs []int8, side []x8Side, out []float32) {
	dotQ4_0x8Generic(w, groups, nb, qs, side, out)
}

// q4_0x8Acts4 is q4_0x8Acts4Generic.
func q4_0x8Acts4(w []byte, groups, nb int, j *MatMulJob, sel [4]int, col int) {
	q4_0x8Acts4Generic(w, groups, nb, j, sel, col)
}

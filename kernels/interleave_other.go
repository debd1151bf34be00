//go:build purego || !amd64

package kernels

// Interleaves reports whether the active tier has kernels for t's
// interleaved layout: none without amd64's assembly (NEON kernels for
// Q4_0x8 and Q4_Kx8 are not written), so nothing is interleaved there.
func Interleaves(Type) bool { return false }

// interleavedAct is interleavedActGeneric of the only activation.
func interleavedAct(w []byte, groups int, j *MatMulJob, out []float32) {
	interleavedActGeneric(w, groups, j, 0, out)
}

// interleavedActs4 is interleavedActs4Generic.
func interleavedActs4(w []byte, groups int, j *MatMulJob, sel [4]int, col int) {
	interleavedActs4Generic(w, groups, j, sel, col)
}

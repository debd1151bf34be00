//go:build purego || !(amd64 || arm64)

package kernels

// Without multi-activation assembly kernels (the purego build tag, or an
// architecture without assembly kernels), MatMul loops over DotRow.

// dotRowActsAccel reports that no kernel handled the row × activations.
func dotRowActsAccel(Type, []byte, []Activation, []float32, int) bool { return false }

// rowsActsAccel computes no rows; MatMul goes row by row.
func rowsActsAccel(Type, []byte, int, int, []Activation, []byte, []float32, int) int { return 0 }

// padsActs4 reports that no group of activations is padded: there are no
// kernels of four.
func padsActs4(Type, int) bool { return false }

// packsActs4 reports that no kernel reads packed activations (packActs4).
func packsActs4(Type) bool { return false }

// packsActs8 reports that no kernel takes eight packed activations.
func packsActs8(Type) bool { return false }

// rowsActs8 is never called: packsActs8 is false.
func rowsActs8(Type, []byte, int, int, []byte, int, []float32, int) {
	panic("kernels: no kernel of eight activations")
}

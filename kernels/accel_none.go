//go:build purego || !amd64

package kernels

// Without multi-activation assembly kernels, MatMul loops over DotRow (and
// MatVec does too, except on arm64, whose matVecAccel calls the NEON dots
// row by row directly).

// dotRowActsAccel reports that no kernel handled the row × activations.
func dotRowActsAccel(Type, []byte, []Activation, []float32, int) bool { return false }

// rowsActsAccel computes no rows; MatMul goes row by row.
func rowsActsAccel(Type, []byte, int, int, []Activation, []float32, int) int { return 0 }

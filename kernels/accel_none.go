//go:build purego || !amd64

package kernels

// Without multi-row or multi-activation assembly kernels, MatVec and MatMul
// loop over DotRow.

// dotRowActsAccel reports that no kernel handled the row × activations.
func dotRowActsAccel(Type, []byte, []Activation, []float32, int) bool { return false }

// matVecAccel computes no rows; MatVec does them all.
func matVecAccel(Type, []byte, int, *Activation, []float32) int { return 0 }

// rowsActsAccel computes no rows; MatMul goes row by row.
func rowsActsAccel(Type, []byte, int, int, []Activation, []float32, int) int { return 0 }

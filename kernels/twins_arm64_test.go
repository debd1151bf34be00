//go:build !purego

package kernels

import "testing"

// TestTwinWeightDotsNEON reruns the weight dot twins with the assembly
// kernels for CPUs without the dot-product instructions, which the feature
// check does not select on a CPU that has them (Cortex-A76, e.g. Raspberry Pi
// 5, or qemu's default CPU), so that one run covers both variants. (Without
// SDOT it repeats TestTwinWeightDots.)
func TestTwinWeightDotsNEON(t *testing.T) {
	defer func(sdot bool) { hasSDOT = sdot }(hasSDOT)
	hasSDOT = false
	TestTwinWeightDots(t)
}

//go:build purego || !(amd64 || arm64)

package kernels

// Without assembly (the purego build tag, or an architecture without
// assembly kernels) every accelerated kernel is its portable twin.

// archTiers returns the one tier of builds without assembly.
func archTiers() []tierInfo { return []tierInfo{{tierGeneric, "generic", true}} }

func dotQ4_0(w []byte, a *Activation) float32 { return dotQ4_0Generic(w, a) }
func dotQ5_0(w []byte, a *Activation) float32 { return dotQ5_0Generic(w, a) }
func dotQ8_0(w []byte, a *Activation) float32 { return dotQ8_0Generic(w, a) }
func dotQ4_K(w []byte, a *Activation) float32 { return dotQ4_KGeneric(w, a) }
func dotQ5_K(w []byte, a *Activation) float32 { return dotQ5_KGeneric(w, a) }
func dotQ6_K(w []byte, a *Activation) float32 { return dotQ6_KGeneric(w, a) }
func dotF16(w []byte, a *Activation) float32  { return dotF16Generic(w, a) }
func dotF32(w []byte, a *Activation) float32  { return dotF32Generic(w, a) }

func quantizeQ8_0(x []float32, a *Activation) { quantizeQ8_0Generic(x, a) }
func quantizeQ8_K(x []float32, a *Activation) { quantizeQ8_KGeneric(x, a) }

func dotF32Slice(a, b []float32) float32                { return dotF32SliceGeneric(a, b) }
func dotF32F16(a []float32, b []uint16) float32         { return dotF32F16Generic(a, b) }
func axpyF32F16(y []float32, alpha float32, x []uint16) { axpyF32F16Generic(y, alpha, x) }

func deltaRuleF32(M []float32, S int, k, q, v []float32, decay, beta, scale float32) {
	deltaRuleF32Generic(M, S, k, q, v, decay, beta, scale)
}

func dotsF32F16(out, a []float32, b []uint16, stride int)    { dotsEach(out, a, b, stride) }
func axpysF32F16(y, alpha []float32, x []uint16, stride int) { axpysEach(y, alpha, x, stride) }
func axpysQ8_0(y, alpha []float32, x []byte, stride int)     { axpysQ8_0Generic(y, alpha, x, stride) }

func swiGLUAccel(gate, up []float32) int { return 0 }

func fp32ToFP16Accel(dst []uint16, src []float32) int { return 0 }

func sumSquaresAccel(lanes *[8]float64, x []float32) int                     { return 0 }
func scaleMulAccel(out, x, weight []float32, scale float32) int              { return 0 }
func scaleF32Accel(x []float32, s float32) int                               { return 0 }
func ropeNeoxAccel(x []float32, nHeads, headDim int, cos, sin []float32) int { return 0 }

func expSubAccel(x []float32, m float32) int { return 0 }

func sumWords(b []uint64) uint64 { return sumWordsGeneric(b) }

// matVecAccel computes no rows; MatVec does them all.
func matVecAccel(Type, []byte, int, *Activation, []float32) int { return 0 }

func geluMulAccel(gate, up []float32, t *[1 << 16]uint16) int { return 0 }
func mulAccel(dst, a, b []float32) int                        { return 0 }
func mulAddAccel(dst, a, b []float32) int                     { return 0 }

func roundFP16Accel(dst, src []float32) int { return 0 }

package kernels

// PLACEHOLDER owned by the legacy/float kernels helper: replace every body, then delete this file.

func dequantF32(src []byte, dst []float32)    { panic("unimplemented") }
func dequantF16(src []byte, dst []float32)    { panic("unimplemented") }
func dequantBF16(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ4_0(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ4_1(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ5_0(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ5_1(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ8_0(src []byte, dst []float32)   { panic("unimplemented") }
func quantizeQ8_0(x []float32, a *Activation) { panic("unimplemented") }
func quantizeQ8_1(x []float32, a *Activation) { panic("unimplemented") }
func dotF32(w []byte, a *Activation) float32  { panic("unimplemented") }
func dotF16(w []byte, a *Activation) float32  { panic("unimplemented") }
func dotBF16(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ4_0(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ4_1(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ5_0(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ5_1(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ8_0(w []byte, a *Activation) float32 { panic("unimplemented") }

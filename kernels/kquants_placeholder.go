package kernels

// PLACEHOLDER owned by the K-quant kernels helper: replace every body, then delete this file.

func dequantQ2_K(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ3_K(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ4_K(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ5_K(src []byte, dst []float32)   { panic("unimplemented") }
func dequantQ6_K(src []byte, dst []float32)   { panic("unimplemented") }
func quantizeQ8_K(x []float32, a *Activation) { panic("unimplemented") }
func dotQ2_K(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ3_K(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ4_K(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ5_K(w []byte, a *Activation) float32 { panic("unimplemented") }
func dotQ6_K(w []byte, a *Activation) float32 { panic("unimplemented") }

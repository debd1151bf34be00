// Package kernels holds the numeric building blocks of the engine: the GGUF tensor
// types and their block layouts, row dequantization, activation quantization, fused
// dequantize+dot products, and the float helpers of a transformer layer (RMSNorm,
// RoPE, softmax, SiLU, FP16 conversion).
//
// Weights stay in their on-disk block format. A matrix-vector product quantizes the
// activation vector once (Q8_0, Q8_1 or Q8_K, or rounds it to F16 or BF16, as the
// weight type asks, following the reference implementation) and then every weight
// row is multiplied with integer products per block, without materialising a
// dequantized row. The float operations of the dot products follow the reference's
// x86 kernels, which produced the conformance data, so that results match it bit
// for bit.
package kernels

import "fmt"

// Type is a GGUF/GGML tensor type; the numeric values are the file format's.
type Type uint32

// The tensor types. Values are fixed by the GGUF format.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q5_0 Type = 6
	Q5_1 Type = 7
	Q8_0 Type = 8
	Q8_1 Type = 9
	Q2_K Type = 10
	Q3_K Type = 11
	Q4_K Type = 12
	Q5_K Type = 13
	Q6_K Type = 14
	Q8_K Type = 15
	BF16 Type = 30
)

// QK is the number of values in a block of the 32-element types (Q4_0 … Q8_1).
const QK = 32

// QKK is the number of values in a super-block of the K-quant types (Q2_K … Q8_K).
const QKK = 256

type typeInfo struct {
	name       string
	blockSize  int // values per block
	blockBytes int // bytes per block
}

// typeInfos is indexed by Type (an array, not a map: the kernels' wrappers
// look block sizes up per call).
var typeInfos = [...]typeInfo{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", QK, 2 + QK/2},
	Q4_1: {"Q4_1", QK, 4 + QK/2},
	Q5_0: {"Q5_0", QK, 2 + 4 + QK/2},
	Q5_1: {"Q5_1", QK, 4 + 4 + QK/2},
	Q8_0: {"Q8_0", QK, 2 + QK},
	Q8_1: {"Q8_1", QK, 4 + QK},
	Q2_K: {"Q2_K", QKK, QKK/16 + QKK/4 + 4},
	Q3_K: {"Q3_K", QKK, QKK/8 + QKK/4 + 12 + 2},
	Q4_K: {"Q4_K", QKK, 4 + 12 + QKK/2},
	Q5_K: {"Q5_K", QKK, 4 + 12 + QKK/8 + QKK/2},
	Q6_K: {"Q6_K", QKK, QKK/2 + QKK/4 + QKK/16 + 2},
	Q8_K: {"Q8_K", QKK, 4 + QKK + QKK/16*2},
}

// info returns the layout of t and whether t is known.
func (t Type) info() (typeInfo, bool) {
	if uint64(t) >= uint64(len(typeInfos)) || typeInfos[t].name == "" {
		return typeInfo{}, false
	}
	return typeInfos[t], true
}

// Known reports whether t is a type this package knows the layout of.
func (t Type) Known() bool { _, ok := t.info(); return ok }

// String returns the GGML name of the type, e.g. "Q4_K".
func (t Type) String() string {
	if ti, ok := t.info(); ok {
		return ti.name
	}
	switch t {
	case Q4_0x8:
		return "Q4_0x8"
	case Q4_Kx8:
		return "Q4_Kx8"
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of values one block of t holds (1 for float types).
// It is 0 for unknown types.
func (t Type) BlockSize() int { ti, _ := t.info(); return ti.blockSize }

// BlockBytes is the size in bytes of one block of t. It is 0 for unknown types.
func (t Type) BlockBytes() int { ti, _ := t.info(); return ti.blockBytes }

// RowBytes returns the bytes taken by n values of type t, or an error when t is
// unknown or n is not a whole number of blocks.
func (t Type) RowBytes(n int) (int, error) {
	ti, ok := t.info()
	if !ok {
		return 0, fmt.Errorf("kernels: unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%ti.blockSize != 0 {
		return 0, fmt.Errorf("kernels: %s row of %d values is not a whole number of %d-value blocks", ti.name, n, ti.blockSize)
	}
	return n / ti.blockSize * ti.blockBytes, nil
}

// ActivationKind is the format the activation vector is quantized to before it is
// multiplied with weights of type t: Q8_0 for Q4_0 (and Q4_0x8), Q5_0 and Q8_0, Q8_1 for Q4_1
// and Q5_1, Q8_K for the K-quants, F16 for F16 weights and BF16 for BF16 weights
// (the activation rounded to that precision, kept as float32 values), and F32
// otherwise. It is the reference implementation's choice (its vec_dot_type), so
// the products per block match it.
func (t Type) ActivationKind() Type {
	switch t {
	case Q4_0, Q5_0, Q8_0, Q4_0x8:
		return Q8_0
	case Q4_1, Q5_1:
		return Q8_1
	case Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q4_Kx8:
		return Q8_K
	case F16, BF16:
		return t
	default:
		return F32
	}
}

// Supported reports whether t can be used as a weight type: it can be dequantized
// and has a fused dot product.
func (t Type) Supported() bool {
	switch t {
	case F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K:
		return true
	}
	return false
}

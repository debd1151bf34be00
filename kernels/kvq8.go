package kernels

import (
	"encoding/binary"
	"unsafe"
)

// A Q8_0 KV cache (the reference's -ctk q8_0 -ctv q8_0) holds each key and
// value row as GGUF Q8_0 blocks: per 32 values one FP16 scale and 32 int8
// quants (34 bytes). Rows are quantized as the matmul activations are
// (QuantizeActivation to Q8_0, the reference's quantize_row_q8_0, which also
// fills its quantized caches); a query is quantized to Q8_0 the same way and
// its scores are the Q8_0 dots of DotRow; the values are dequantized and
// added, weighted, to the output in float32.

// QuantizeQ8_0Blocks quantizes x into len(x)/32 Q8_0 blocks at dst (34
// bytes each), with the quants and the FP16 scales QuantizeActivation
// computes for kind Q8_0. len(x) must be a multiple of 32 and dst must hold
// the blocks.
func QuantizeQ8_0Blocks(dst []byte, x []float32) {
	nb := blocks(len(x))
	dst = dst[:nb*q8_0Bytes]
	for b := range nb {
		blk := (*[q8_0Bytes]byte)(dst[b*q8_0Bytes:])
		d, _ := quantizeBlock8((*[QK]float32)(x[b*QK:]), (*[QK]int8)(unsafe.Pointer(&blk[2])))
		binary.LittleEndian.PutUint16(blk[:], FP32ToFP16(d))
	}
}

// DotsQ8_0 sets out[t] to DotRow(Q8_0, x[t·stride:], a) for t < len(out):
// the scores of a query quantized to Q8_0 against consecutive rows of a
// Q8_0 KV cache, stride bytes apart. x must hold at least
// (len(out)-1)·stride + the bytes of a.N values.
func DotsQ8_0(out []float32, a *Activation, x []byte, stride int) {
	if len(out) == 0 {
		return
	}
	row := blocks(a.N) * q8_0Bytes
	x = x[:(len(out)-1)*stride+row]
	for t := range out {
		out[t] = dotQ8_0(x[t*stride:t*stride+row], a)
	}
}

// AxpysQ8_0 adds alpha[t]·x_t to y for t = 0, 1, … < len(alpha), in that
// order, where x_t is the row of len(y) values in Q8_0 blocks at
// x[t·stride:], each value dequantized as DequantizeRow does (q·d) before it
// is scaled by alpha[t] and added: the values of attention weighted by their
// scores. len(y) must be a multiple of 32 and x must hold at least
// (len(alpha)-1)·stride + the bytes of len(y) values.
func AxpysQ8_0(y, alpha []float32, x []byte, stride int) {
	if len(alpha) == 0 {
		return
	}
	row := blocks(len(y)) * q8_0Bytes
	axpysQ8_0(y, alpha, x[:(len(alpha)-1)*stride+row], stride)
}

// axpysQ8_0Generic is the portable AxpysQ8_0.
func axpysQ8_0Generic(y, alpha []float32, x []byte, stride int) {
	nb := blocks(len(y))
	for t, a := range alpha {
		r := x[t*stride:]
		for b := range nb {
			blk := (*[q8_0Bytes]byte)(r[b*q8_0Bytes:])
			d := f16at(blk[:], 0)
			qs := (*[QK]byte)(blk[2:])
			ys := (*[QK]float32)(y[b*QK:])
			for j, q := range qs {
				ys[j] += float32(a * float32(float32(int8(q))*d))
			}
		}
	}
}

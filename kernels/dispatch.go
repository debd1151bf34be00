package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// DequantizeRow expands len(dst) values of type t from src into dst. len(dst) must
// be a multiple of t's block size and src must hold at least that many blocks.
func DequantizeRow(t Type, src []byte, dst []float32) {
	switch t {
	case F32:
		dequantF32(src, dst)
	case F16:
		dequantF16(src, dst)
	case BF16:
		dequantBF16(src, dst)
	case Q4_0:
		dequantQ4_0(src, dst)
	case Q4_1:
		dequantQ4_1(src, dst)
	case Q5_0:
		dequantQ5_0(src, dst)
	case Q5_1:
		dequantQ5_1(src, dst)
	case Q8_0:
		dequantQ8_0(src, dst)
	case Q2_K:
		dequantQ2_K(src, dst)
	case Q3_K:
		dequantQ3_K(src, dst)
	case Q4_K:
		dequantQ4_K(src, dst)
	case Q5_K:
		dequantQ5_K(src, dst)
	case Q6_K:
		dequantQ6_K(src, dst)
	default:
		panic(fmt.Sprintf("kernels: DequantizeRow: unsupported type %v", t))
	}
}

// QuantizeActivation quantizes x into a in the given kind (see
// Type.ActivationKind). len(x) must be a multiple of the kind's block size.
func QuantizeActivation(a *Activation, kind Type, x []float32) {
	a.Reset(kind, len(x))
	switch kind {
	case F32:
		copy(a.F, x)
	case F16, BF16:
		// The reference converts the activation to the weights' type before
		// the dot (its vec_dot_type), rounding to nearest even; on x86 with
		// AVX512-BF16, which produced our conformance data, the BF16
		// conversion also flushes subnormals to zero, which is not reproduced
		// (values below 2^-126 do not occur in practice).
		quantizeFloat(x, a)
	case Q8_0:
		quantizeQ8_0(x, a)
	case Q8_1:
		quantizeQ8_1(x, a)
	case Q8_K:
		quantizeQ8_K(x, a)
	default:
		panic(fmt.Sprintf("kernels: QuantizeActivation: unsupported kind %v", kind))
	}
}

// DotRow returns the dot product of one weight row w of type t with the activation
// a, which must have been quantized to t.ActivationKind(). The row is never
// dequantized into memory.
func DotRow(t Type, w []byte, a *Activation) float32 {
	switch t {
	case F32:
		return dotF32(w, a)
	case F16:
		return dotF16(w, a)
	case BF16:
		return dotBF16(w, a)
	case Q4_0:
		return dotQ4_0(w, a)
	case Q4_1:
		return dotQ4_1(w, a)
	case Q5_0:
		return dotQ5_0(w, a)
	case Q5_1:
		return dotQ5_1(w, a)
	case Q8_0:
		return dotQ8_0(w, a)
	case Q2_K:
		return dotQ2_K(w, a)
	case Q3_K:
		return dotQ3_K(w, a)
	case Q4_K:
		return dotQ4_K(w, a)
	case Q5_K:
		return dotQ5_K(w, a)
	case Q6_K:
		return dotQ6_K(w, a)
	default:
		panic(fmt.Sprintf("kernels: DotRow: unsupported type %v", t))
	}
}

// MatVec computes out[r] = row r of w · a for r < len(out). w holds len(out) rows
// of rowBytes bytes each, in type t.
func MatVec(t Type, w []byte, rowBytes int, a *Activation, out []float32) {
	for r := matVecAccel(t, w, rowBytes, a, out); r < len(out); r++ {
		out[r] = DotRow(t, w[r*rowBytes:(r+1)*rowBytes], a)
	}
}

// actPtrs4 points to the data of four Q8_K activations for the kernels that
// multiply one weight row with all four (the layout the assembly expects).
type actPtrs4 struct {
	qs    [4]*int8
	d     [4]*float32
	bsums [4]*int16
}

// legacyPtrs4 points to the quants and scales of four Q8_0 activations for the
// kernels that multiply one weight row with all four.
type legacyPtrs4 struct {
	qs [4]*int8
	d  [4]*float32
}

// legacyActs4 gathers the quants and scales of the four Q8_0 activations of
// acts for a kernel of four activations, and returns their block count; ok
// is false when they differ in length or hold no block.
func legacyActs4(acts []Activation) (p legacyPtrs4, nb int, ok bool) {
	return gatherActs4(acts, QK)
}

// kActs4 is legacyActs4 for four Q8_K activations, with their bsums when the
// kernel reads them (all K-quants but Q6_K); nb counts super-blocks.
func kActs4(acts []Activation, bsums bool) (p actPtrs4, nb int, ok bool) {
	lp, nb, ok := gatherActs4(acts, QKK)
	if !ok {
		return p, 0, false
	}
	p.qs, p.d = lp.qs, lp.d
	if bsums {
		for b := range acts[:4] {
			bs := acts[b].BSums[:nb*QKK/16]
			p.bsums[b] = &bs[0]
		}
	}
	return p, nb, true
}

// gatherActs4 is legacyActs4 for blocks of block values.
func gatherActs4(acts []Activation, block int) (p legacyPtrs4, nb int, ok bool) {
	n := acts[0].N
	nb = n / block
	if nb == 0 {
		return p, 0, false
	}
	for b := range acts[:4] {
		a := &acts[b]
		if a.N != n {
			return p, 0, false
		}
		qs, d := a.Qs[:nb*block], a.D[:nb]
		p.qs[b], p.d[b] = &qs[0], &d[0]
	}
	return p, nb, true
}

// kPack4 is the side data of one super-block of four Q8_K activations laid
// out for the kernels of Q4_K rows × four activations (packKActs4), which
// read it in place of the activations' scales and bsums.
type kPack4 struct {
	d [4]float32 // the scales of activations 0…3
	// pairs holds activation b's sum of the 32 quants of sub-block s
	// (bsums 2s and 2s+1; at most 32·127, an int16) at 16v + 2(b+4h) + t
	// for s = 4h + 2v + t: in each 32-byte half v, int32 lane b (low
	// 128-bit lane) or b+4 (high lane) holds the pair of sub-blocks that
	// dotQ4_KRowsActs4AVX2 multiplies with one pair of mins.
	pairs [32]int16
}

// packKActs4 sets pack[i] to the side data of super-block i of the four Q8_K
// activations acts, for every i < len(pack) (at most their super-blocks).
func packKActs4(pack []kPack4, acts []Activation) {
	for b := range acts[:4] {
		a := &acts[b]
		d, bsums := a.D[:len(pack)], a.BSums[:16*len(pack)]
		for i := range pack {
			k := &pack[i]
			k.d[b] = d[i]
			putPairs(&k.pairs, b, (*[16]int16)(bsums[16*i:]))
		}
	}
}

// putPairs stores the sub-block pair sums of activation b (of four) with
// the bsums bs of one super-block in pairs, laid out as kPack4.pairs.
func putPairs(pairs *[32]int16, b int, bs *[16]int16) {
	p := (*[26]int16)(pairs[2*b:])              // b = 0…3
	p[0], p[1] = bs[0]+bs[1], bs[2]+bs[3]       // s = 0, 1
	p[16], p[17] = bs[4]+bs[5], bs[6]+bs[7]     // s = 2, 3
	p[8], p[9] = bs[8]+bs[9], bs[10]+bs[11]     // s = 4, 5
	p[24], p[25] = bs[12]+bs[13], bs[14]+bs[15] // s = 6, 7
}

// kPack8 is one super-block of eight Q8_K activations laid out for the
// kernels of Q4_K rows × eight activations (packKActs8): their scales side
// by side, the sub-block pair sums of activations 0…3 and 4…7 each laid out
// as kPack4.pairs, and the quants run by run (32 values), the eight
// activations' runs one after the other, so that one pointer walks them.
type kPack8 struct {
	d     [8]float32
	pairs [2][32]int16
	qs    [QKK / 32][8][32]int8
}

// packKActs8 sets pack[i] to super-block i of the eight Q8_K activations
// acts, for every i < len(pack) (at most their super-blocks).
func packKActs8(pack []kPack8, acts []Activation) {
	for b := range acts[:8] {
		a := &acts[b]
		d, bsums, qs := a.D[:len(pack)], a.BSums[:16*len(pack)], a.Qs[:QKK*len(pack)]
		for i := range pack {
			k := &pack[i]
			k.d[b] = d[i]
			putPairs(&k.pairs[b/4], b%4, (*[16]int16)(bsums[16*i:]))
			for c := range k.qs {
				copy(k.qs[c][b][:], qs[QKK*i+32*c:])
			}
		}
	}
}

// putActs4 copies a kernel's results for four activations to out[b·stride].
func putActs4(out []float32, stride int, r *[4]float32) {
	_ = out[3*stride]
	for b, v := range r {
		out[b*stride] = v
	}
}

// q6Pack8 is one super-block of eight Q8_K activations laid out for the
// kernels of Q6_K rows × eight activations (packQ6Acts8): their scales side
// by side, the quants run by run (32 values; the eight activations' runs one
// after the other) and, in the same order, 32 times the sum of each pair of
// neighbouring quants (the pair sums that Q6_K's offset of 32 takes off, the
// work the four-activation kernel does with VPMADDUBSW per row).
type q6Pack8 struct {
	d   [8]float32
	qs  [QKK / 32][8][32]int8
	off [QKK / 32][8][16]int16
}

// packQ6Acts8 sets pack[i] to super-block i of the eight Q8_K activations
// acts, for every i < len(pack) (at most their super-blocks).
func packQ6Acts8(pack []q6Pack8, acts []Activation) {
	for b := range acts[:8] {
		a := &acts[b]
		d, qs := a.D[:len(pack)], a.Qs[:QKK*len(pack)]
		for i := range pack {
			k := &pack[i]
			k.d[b] = d[i]
			for c := range k.qs {
				run := qs[QKK*i+32*c:][:32]
				copy(k.qs[c][b][:], run)
				for t := range k.off[c][b] {
					k.off[c][b][t] = 32 * (int16(run[2*t]) + int16(run[2*t+1]))
				}
			}
		}
	}
}

// A block of four or eight Q8_0 activations laid out for the kernels of
// Q8_0, Q5_0 and Q4_0 rows × those activations (packQ8Acts) takes
// q8Pack4Bytes or q8Pack8Bytes: their quants one after the other (32 bytes
// each), then their float32 scales side by side, so that a kernel
// multiplies them with the weight block's scale in one vector product.
const (
	q8Pack4Bytes = 4 * (QK + 4)
	q8Pack8Bytes = 8 * (QK + 4)
)

// A block of four or eight Q8_0 activations laid out for the AVX2 kernels
// of Q4_0 rows × those activations (packQ4Acts) takes q4Pack4Bytes or
// q4Pack8Bytes: the layout of packQ8Acts (their quants one after the other,
// then their float32 scales), then one int32 correction per activation, 8
// times the sum of its quants, which the kernels take off the products of
// the nibbles taken unsigned (the quants are q+8).
const (
	q4Pack4Bytes = 4 * (QK + 4 + 4)
	q4Pack8Bytes = 8 * (QK + 4 + 4)
)

// packQ4Acts lays the Q8_0 activations acts (four or eight) out block by
// block in pack (q4Pack4Bytes or q4Pack8Bytes per block), for every whole
// block that fits in pack (at most their blocks).
func packQ4Acts(pack []byte, acts []Activation) {
	n := len(acts)
	size := n * (QK + 4 + 4)
	blocks := packQ8ActsAt(pack, acts, size)
	for b := range acts {
		qs := acts[b].Qs
		for i := range blocks {
			var sum int32
			for _, v := range (*[QK]int8)(qs[QK*i:]) {
				sum += int32(v)
			}
			binary.LittleEndian.PutUint32(pack[i*size+(QK+4)*n+4*b:], uint32(8*sum))
		}
	}
}

// packQ8Acts lays the Q8_0 activations acts (four or eight) out block by
// block in pack (q8Pack4Bytes or q8Pack8Bytes per block), for every whole
// block that fits in pack (at most their blocks).
func packQ8Acts(pack []byte, acts []Activation) {
	packQ8ActsAt(pack, acts, len(acts)*(QK+4))
}

// packQ8ActsAt writes packQ8Acts' layout of acts into the first bytes of
// each block of size bytes in pack, for every whole block that fits (at
// most their blocks), and returns how many blocks it wrote.
func packQ8ActsAt(pack []byte, acts []Activation, size int) int {
	n := len(acts)
	blocks := len(pack) / size
	for b := range acts {
		a := &acts[b]
		d, qs := a.D[:blocks], a.Qs[:QK*blocks]
		qb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(qs))), len(qs))
		for i := range blocks {
			p := pack[i*size : (i+1)*size]
			copy(p[QK*b:QK*(b+1)], qb[QK*i:])
			binary.LittleEndian.PutUint32(p[QK*n+4*b:], math.Float32bits(d[i]))
		}
	}
	return blocks
}

package kernels

import (
	"errors"
	"fmt"
)

// Q4_0 and Q4_K weights interleaved eight rows at a time (Q4_0x8, Q4_Kx8).
//
// A Q4_0 row's blocks each end in one integer sum that one scalar fused
// multiply-add adds to the row's total, so a kernel reading the file's
// layout reduces every block's lanes to one sum and runs one row's chain of
// multiply-adds at a time. Interleaved, eight rows share each vector: lane r
// of a product is row r's, and a block of eight rows ends in one vector
// conversion and one vector multiply-add. The results are the same bits as
// dotQ4_0Generic's, row by row.
//
// Layout: groups of eight rows, one after the other; a group holds its
// blocks in order, each of q4_0x8Bytes bytes: the eight rows' fp16 scales
// (row 0 first), then four 32-byte parts, part m holding bytes 4m…4m+3 of
// the quants of row 0, then of row 1, … of row 7. A quant byte j keeps the
// values j (low nibble) and j+16 (high nibble), so the low nibbles of part m
// are values 4m…4m+3 of each row and its high nibbles values 16+4m…19+4m:
// each 32-bit lane r of a part's nibbles is four consecutive values of row
// r, multiplied with the same four activation bytes broadcast to all lanes.

// Q4_K (Q4_Kx8) likewise: its reference arithmetic (dotQ4_KGeneric) ends
// each super-block in two exact integers and two scalar fused multiply-adds
// per row, which eight rows do in the lanes of one vector. A group's
// super-block takes q4Kx8Bytes: the rows' fp16 d (16 bytes) and dmin (16),
// their eight 6-bit scales unpacked to bytes, sub-block-major (scale s of
// row r at 32+8s+r), their mins unpacked to bytes in pairs (mins 2p and
// 2p+1 of row r at 96+16p+2r), then the quants: for each 32-byte chunk c of
// a row's quants, eight 32-byte parts, part m holding bytes 4m…4m+3 of chunk
// c of row 0, … row 7 (low nibbles: values 64c+4m…, sub-block 2c; high
// nibbles: values 64c+32+4m…, sub-block 2c+1). Unpacked scales make a group
// 1184 bytes per super-block where the file's eight rows take 1152.

// Q4_0x8 is not a GGUF type: it marks a matrix of Q4_0 rows interleaved by
// InterleaveQ4_0, which only MatMul takes (its rows are not DotRow's). It
// has no block layout of its own (Known is false); its activations are
// Q8_0, and its rowBytes in MatMul are those of a Q4_0 row.
const Q4_0x8 Type = 1<<16 | Q4_0

// Q4_Kx8 marks a matrix of Q4_K rows interleaved by InterleaveQ4_K, as
// Q4_0x8 does for Q4_0; its activations are Q8_K.
const Q4_Kx8 Type = 1<<16 | Q4_K

// Interleaved returns the type of t's rows interleaved (Q4_0x8, Q4_Kx8), or
// 0 when t has no interleaved layout.
func Interleaved(t Type) Type {
	switch t {
	case Q4_0:
		return Q4_0x8
	case Q4_K:
		return Q4_Kx8
	}
	return 0
}

// q4_0x8Bytes is the size of one block of a group of eight interleaved rows.
const q4_0x8Bytes = 8 * q4_0Bytes

// q4Kx8Bytes is the size of one super-block of a group of eight interleaved
// Q4_K rows, and q4Kx8Qs the offset of its quants.
const (
	q4Kx8Bytes = 160 + 8*128
	q4Kx8Qs    = 160
)

// InterleavedBytes is the size of rows×rowBytes of type t (Q4_0 or Q4_K)
// interleaved.
func InterleavedBytes(t Type, rows, rowBytes int) int {
	if t == Q4_K {
		return rows / 8 * rowBytes / q4KBytes * q4Kx8Bytes
	}
	return rows * rowBytes
}

// x8Side holds what the interleaved kernels need of one block of a Q8_0
// activation besides its quants: its scale, and c = 8·Σ quants, which the
// kernels subtract from the sums of unsigned nibbles × quants to get the
// products with the signed values (nibble − 8).
type x8Side struct {
	d float32
	c int32
}

// Interleave writes the rows×rowBytes matrix src of type t (Q4_0 or Q4_K)
// into dst interleaved (InterleaveQ4_0, InterleaveQ4_K).
func Interleave(t Type, dst, src []byte, rows, rowBytes int) error {
	switch t {
	case Q4_0:
		return InterleaveQ4_0(dst, src, rows, rowBytes)
	case Q4_K:
		return InterleaveQ4_K(dst, src, rows, rowBytes)
	}
	return fmt.Errorf("kernels: %v rows have no interleaved layout", t)
}

// k8Side holds what the interleaved Q4_K kernels need of one super-block
// of a Q8_K activation besides its quants: the sums of its sub-blocks'
// quants, bs[s] = bsums[2s] + bsums[2s+1] (the minimums' multipliers), and
// its scale; 32 bytes, as the assembly indexes them.
type k8Side struct {
	bs [8]int16
	d  float32
	_  [3]uint32
}

// InterleaveQ4_0 writes the rows×rowBytes Q4_0 matrix src into dst in the
// Q4_0x8 layout (same size). rows must be a multiple of eight and rowBytes
// a multiple of a block's size.
func InterleaveQ4_0(dst, src []byte, rows, rowBytes int) error {
	if rows <= 0 || rows%8 != 0 || rowBytes <= 0 || rowBytes%q4_0Bytes != 0 {
		return fmt.Errorf("kernels: cannot interleave %d Q4_0 rows of %d bytes: need a multiple of 8 rows of whole blocks", rows, rowBytes)
	}
	if len(src) != rows*rowBytes || len(dst) != len(src) {
		return errors.New("kernels: InterleaveQ4_0: dst and src must both hold rows×rowBytes bytes")
	}
	nb := rowBytes / q4_0Bytes
	for g := range rows / 8 {
		grp := dst[g*8*rowBytes : (g+1)*8*rowBytes]
		for b := range nb {
			out := grp[b*q4_0x8Bytes : (b+1)*q4_0x8Bytes]
			for r := range 8 {
				blk := src[(8*g+r)*rowBytes+b*q4_0Bytes:]
				copy(out[2*r:2*r+2], blk[:2])
				for m := range 4 {
					copy(out[16+32*m+4*r:16+32*m+4*r+4], blk[2+4*m:2+4*m+4])
				}
			}
		}
	}
	return nil
}

// InterleaveQ4_K writes the rows×rowBytes Q4_K matrix src into dst in the
// Q4_Kx8 layout (InterleavedBytes(Q4_K, rows, rowBytes) bytes). rows must
// be a multiple of eight and rowBytes a multiple of a super-block's size.
func InterleaveQ4_K(dst, src []byte, rows, rowBytes int) error {
	if rows <= 0 || rows%8 != 0 || rowBytes <= 0 || rowBytes%q4KBytes != 0 {
		return fmt.Errorf("kernels: cannot interleave %d Q4_K rows of %d bytes: need a multiple of 8 rows of whole super-blocks", rows, rowBytes)
	}
	if len(src) != rows*rowBytes || len(dst) != InterleavedBytes(Q4_K, rows, rowBytes) {
		return errors.New("kernels: InterleaveQ4_K: src must hold rows×rowBytes bytes and dst InterleavedBytes")
	}
	nb := rowBytes / q4KBytes
	var sc, mn [8]uint8
	for g := range rows / 8 {
		for i := range nb {
			out := dst[(g*nb+i)*q4Kx8Bytes : (g*nb+i+1)*q4Kx8Bytes]
			for r := range 8 {
				blk := src[(8*g+r)*rowBytes+i*q4KBytes:]
				copy(out[2*r:2*r+2], blk[q4KD:q4KD+2])
				copy(out[16+2*r:16+2*r+2], blk[q4KDmin:q4KDmin+2])
				scalesMinsK4(blk[q4KScales:], &sc, &mn)
				for s := range 8 {
					out[32+8*s+r] = sc[s]
					out[96+16*(s/2)+2*r+s%2] = mn[s]
				}
				for c := range 4 {
					for m := range 8 {
						copy(out[q4Kx8Qs+256*c+32*m+4*r:][:4], blk[q4KQs+32*c+4*m:])
					}
				}
			}
		}
	}
	return nil
}

// dotQ4_Kx8Generic sets out[8g + r] to dotQ4_KGeneric of row r of each
// group g of the interleaved Q4_K rows at w (groups groups of nb
// super-blocks) with the Q8_K activation whose quants are qs and scales and
// sub-block sums side: the same exact integers and the same two fused
// multiply-add chains per row.
func dotQ4_Kx8Generic(w []byte, groups, nb int, qs []int8, side []k8Side, out []float32) {
	for g := range groups {
		var acc, accm [8]float32
		for i := range nb {
			blk := w[(g*nb+i)*q4Kx8Bytes : (g*nb+i+1)*q4Kx8Bytes]
			qa := (*[QKK]int8)(qs[i*QKK:])
			for r := range acc {
				var is, im int32
				for c := range 4 {
					var dl, dh int32
					for m := range 8 {
						for k := range 4 {
							q := blk[q4Kx8Qs+256*c+32*m+4*r+k]
							dl += int32(q&0x0f) * int32(qa[64*c+4*m+k])
							dh += int32(q>>4) * int32(qa[64*c+32+4*m+k])
						}
					}
					is += int32(blk[32+8*(2*c)+r])*dl + int32(blk[32+8*(2*c+1)+r])*dh
				}
				for s := range 8 {
					im += int32(blk[96+16*(s/2)+2*r+s%2]) * int32(side[i].bs[s])
				}
				acc[r] = fma32(float32(side[i].d*halfAt(blk, 2*r)), float32(is), acc[r])
				accm[r] = fma32(float32(side[i].d*halfAt(blk, 16+2*r)), float32(im), accm[r])
			}
		}
		for r := range acc {
			out[8*g+r] = acc[r] - accm[r]
		}
	}
}

// k8Sides fills side with each super-block's scale and sub-block sums of
// the Q8_K activation a (nb super-blocks).
func k8Sides(side []k8Side, a *Activation, nb int) {
	for i := range nb {
		side[i].d = a.D[i]
		for s := range side[i].bs {
			side[i].bs[s] = a.BSums[16*i+2*s] + a.BSums[16*i+2*s+1]
		}
	}
}

// dotQ4_0x8Generic sets out[8g + r] to dotQ4_0Generic of row r of each
// group g of the interleaved rows at w (groups groups of nb blocks) with
// the activation whose quants are qs, scales and sums side. Its fused
// multiply-adds are dotQ4_0Generic's, in the same order, row by row.
func dotQ4_0x8Generic(w []byte, groups, nb int, qs []int8, side []x8Side, out []float32) {
	for g := range groups {
		var acc [8]float32
		for b := range nb {
			blk := w[(g*nb+b)*q4_0x8Bytes : (g*nb+b+1)*q4_0x8Bytes]
			y := (*[QK]int8)(qs[b*QK:])
			for r := range acc {
				var sumi int32
				for j := range 16 {
					q := blk[16+32*(j/4)+4*r+j%4]
					sumi += int32(q&0x0f) * int32(y[j])
					sumi += int32(q>>4) * int32(y[j+16])
				}
				sumi -= side[b].c
				acc[r] = fma32(float32(sumi), f16at(blk, 2*r)*side[b].d, acc[r])
			}
		}
		copy(out[8*g:8*g+8], acc[:])
	}
}

// interleavedActs4Generic sets the products of the groups of interleaved
// rows at w (those of column col onwards) with the activations
// j.acts[sel[k]], as dotQ4_0x8Generic or dotQ4_Kx8Generic does for each.
func interleavedActs4Generic(w []byte, groups int, j *MatMulJob, sel [4]int, col int) {
	for k, b := range sel {
		if k == 0 || b != sel[k-1] {
			interleavedActGeneric(w, groups, j, b, j.out[b*j.rows+col:])
		}
	}
}

// interleavedActGeneric is dotQ4_0x8Generic or dotQ4_Kx8Generic, as j.t
// says, of activation b.
func interleavedActGeneric(w []byte, groups int, j *MatMulJob, b int, out []float32) {
	nb := j.nb
	if j.t == Q4_Kx8 {
		dotQ4_Kx8Generic(w, groups, nb, j.acts[b].Qs, j.kside[b*nb:(b+1)*nb], out)
	} else {
		dotQ4_0x8Generic(w, groups, nb, j.acts[b].Qs, j.side[b*nb:(b+1)*nb], out)
	}
}

// x8Sides fills side with each block's scale and 8·Σ quants of the Q8_0
// activation a (nb blocks).
func x8Sides(side []x8Side, a *Activation, nb int) {
	for b := range nb {
		var s int32
		for _, q := range a.Qs[b*QK : (b+1)*QK] {
			s += int32(q)
		}
		side[b] = x8Side{a.D[b], 8 * s}
	}
}

// doInterleaved is MatMulJob.Do for interleaved rows (Q4_0x8, Q4_Kx8): lo
// and hi are multiples of eight (MatMul runs the job in chunks of 16 rows,
// and an interleaved matrix has a multiple of eight rows). One activation
// (decode) goes through the rows in one pass; a batch goes through tiles of
// groups small enough to stay in L1 four activations at a time, a last
// group of one to three padded with its last activation repeated (which
// writes the same values to the same place again): one pass over the
// weights costs less than one per activation.
func (j *MatMulJob) doInterleaved(lo, hi int) {
	gb := j.nb * interleavedBlockBytes(j.t) // bytes of a group of eight rows
	if len(j.acts) == 1 {
		interleavedAct(j.w[lo/8*gb:hi/8*gb], (hi-lo)/8, j, j.out[lo:hi])
		return
	}
	tile := max(1, matMulTileBytes/gb)
	for g0 := lo / 8; g0 < hi/8; g0 += tile {
		groups := min(tile, hi/8-g0)
		w := j.w[g0*gb : (g0+groups)*gb]
		for b := 0; b < len(j.acts); b += 4 {
			var sel [4]int
			for k := range sel {
				sel[k] = min(b+k, len(j.acts)-1)
			}
			interleavedActs4(w, groups, j, sel, 8*g0)
		}
	}
}

// interleavedBlockBytes is the size of one block (Q4_0x8) or super-block
// (Q4_Kx8) of a group of eight interleaved rows.
func interleavedBlockBytes(t Type) int {
	if t == Q4_Kx8 {
		return q4Kx8Bytes
	}
	return q4_0x8Bytes
}

// prepareInterleaved checks an interleaved product's shape and fills the
// side data of its activations (side or kside, reusing their memory).
func (j *MatMulJob) prepareInterleaved() {
	base, kind, block, blockBytes := Q4_0, Q8_0, QK, q4_0Bytes
	if j.t == Q4_Kx8 {
		base, kind, block, blockBytes = Q4_K, Q8_K, QKK, q4KBytes
	}
	if j.rows%8 != 0 || j.rowBytes%blockBytes != 0 || len(j.w) != InterleavedBytes(base, j.rows, j.rowBytes) {
		panic("kernels: MatMul: an interleaved matrix has a multiple of eight rows of whole blocks, interleaved")
	}
	j.nb = j.rowBytes / blockBytes
	for b := range j.acts {
		if j.acts[b].Kind != kind || j.acts[b].N != j.nb*block {
			panic("kernels: MatMul: interleaved rows take activations of their kind and length")
		}
	}
	if j.t == Q4_Kx8 {
		j.kside = grow(j.kside, len(j.acts)*j.nb)
		for b := range j.acts {
			k8Sides(j.kside[b*j.nb:(b+1)*j.nb], &j.acts[b], j.nb)
		}
		return
	}
	j.side = grow(j.side, len(j.acts)*j.nb)
	for b := range j.acts {
		x8Sides(j.side[b*j.nb:(b+1)*j.nb], &j.acts[b], j.nb)
	}
}

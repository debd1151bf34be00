package kernels

import (
	"errors"
	"fmt"
)

// Q4_0 weights interleaved eight rows at a time (Q4_0x8).
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

// Q4_0x8 is not a GGUF type: it marks a matrix of Q4_0 rows interleaved by
// InterleaveQ4_0, which only MatMul takes (its rows are not DotRow's). It
// has no block layout of its own (Known is false); its activations are
// Q8_0, and its rowBytes in MatMul are those of a Q4_0 row.
const Q4_0x8 Type = 1<<16 | Q4_0

// q4_0x8Bytes is the size of one block of a group of eight interleaved rows.
const q4_0x8Bytes = 8 * q4_0Bytes

// x8Side holds what the interleaved kernels need of one block of a Q8_0
// activation besides its quants: its scale, and c = 8·Σ quants, which the
// kernels subtract from the sums of unsigned nibbles × quants to get the
// products with the signed values (nibble − 8).
type x8Side struct {
	d float32
	c int32
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

// q4_0x8Acts4Generic sets the products of the groups of interleaved rows
// at w (those of column col onwards) with the activations j.acts[sel[k]],
// as dotQ4_0x8Generic does for each.
func q4_0x8Acts4Generic(w []byte, groups, nb int, j *MatMulJob, sel [4]int, col int) {
	for k, b := range sel {
		if k == 0 || b != sel[k-1] {
			dotQ4_0x8Generic(w, groups, nb, j.acts[b].Qs, j.side[b*nb:(b+1)*nb], j.out[b*j.rows+col:])
		}
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

// doQ4_0x8 is MatMulJob.Do for interleaved Q4_0 rows: lo and hi are
// multiples of eight (MatMul runs the job in chunks of 16 rows, and an
// interleaved matrix has a multiple of eight rows). One activation (decode)
// goes through the rows in one pass; a batch goes through tiles of groups
// small enough to stay in L1 four activations at a time, a last group of
// one to three padded with its last activation repeated (which writes the
// same values to the same place again): one pass over the weights costs
// less than one per activation.
func (j *MatMulJob) doQ4_0x8(lo, hi int) {
	nb := j.rowBytes / q4_0Bytes
	if len(j.acts) == 1 {
		q4_0x8Act(j.w[lo*j.rowBytes:hi*j.rowBytes], (hi-lo)/8, nb, j.acts[0].Qs, j.side, j.out[lo:hi])
		return
	}
	tile := max(1, matMulTileBytes/(8*j.rowBytes))
	for g0 := lo / 8; g0 < hi/8; g0 += tile {
		groups := min(tile, hi/8-g0)
		w := j.w[g0*8*j.rowBytes : (g0+groups)*8*j.rowBytes]
		for b := 0; b < len(j.acts); b += 4 {
			var sel [4]int
			for k := range sel {
				sel[k] = min(b+k, len(j.acts)-1)
			}
			q4_0x8Acts4(w, groups, nb, j, sel, 8*g0)
		}
	}
}

// prepareQ4_0x8 checks an interleaved product's shape and fills j.side for
// its activations.
func (j *MatMulJob) prepareQ4_0x8(side []x8Side) {
	if j.rows%8 != 0 || j.rowBytes%q4_0Bytes != 0 {
		panic("kernels: MatMul: a Q4_0x8 matrix has a multiple of eight rows of whole Q4_0 blocks")
	}
	nb := j.rowBytes / q4_0Bytes
	j.side = grow(side, len(j.acts)*nb)
	for b := range j.acts {
		if j.acts[b].Kind != Q8_0 || j.acts[b].N != nb*QK {
			panic("kernels: MatMul: Q4_0x8 takes Q8_0 activations of the rows' length")
		}
		x8Sides(j.side[b*nb:(b+1)*nb], &j.acts[b], nb)
	}
}

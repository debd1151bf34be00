package kernels

import (
	"encoding/binary"
	"math"
)

// Matrix × matrix products for batches of activations (prompt prefill): each
// weight row is brought into cache once and multiplied with every activation
// of the batch, so a batch of B tokens reads the weights from memory once
// instead of B times.

const (
	// matMulTileBytes is the size of the tile of weight rows that is
	// multiplied with the whole batch before moving on: small enough to stay
	// in L1 (or at worst L2) while the activations stream past it.
	matMulTileBytes = 16 << 10
	// matMulActGroup is the number of activations multiplied with each row
	// of a tile in one go. Kept small so that they stay in L1 across the
	// tile's rows; a kernel dotting one row with this many activations at
	// once can replace the loop in dotRowActs.
	matMulActGroup = 4
	// matMulActGroup8 is the group size of the kernels that take eight
	// activations packed together (packsActs8): the rows of a tile go
	// through them eight activations at a time, the rest four at a time.
	matMulActGroup8 = 8
	// matMulRowGroup is the number of rows that kernels multiplying several
	// rows with the group of activations at once take; a tile has a multiple
	// of it (at least one group, even when that exceeds matMulTileBytes).
	matMulRowGroup = 8
)

// MatMulJob is the reusable state of Pool.MatMul: one per caller, so that a
// parallel matrix product allocates nothing.
type MatMulJob struct {
	t        Type
	w        []byte
	rowBytes int
	rows     int
	acts     []Activation
	out      []float32
	// pack holds the side data of each full group of four activations
	// (packActs4), packBlocks super-blocks per group, when the active
	// tier's kernels for t read it (packBlocks 0 otherwise).
	pack       []kPack4
	packBlocks int
	// pack8 (Q8_0) or kpack8 (Q4_K) holds each full group of eight
	// activations interleaved (packActs8), pack8Blocks blocks or
	// super-blocks per group, when the active tier has kernels of eight
	// activations for t (pack8Blocks 0 otherwise).
	pack8       []byte
	kpack8      []kPack8
	pack8Blocks int
}

// Do computes rows [lo, hi) of the weight matrix against every activation.
func (j *MatMulJob) Do(lo, hi int) {
	if len(j.acts) == 1 {
		MatVec(j.t, j.w[lo*j.rowBytes:hi*j.rowBytes], j.rowBytes, &j.acts[0], j.out[lo:hi])
		return
	}
	tile := max(matMulRowGroup, matMulTileBytes/j.rowBytes) &^ (matMulRowGroup - 1)
	for r0 := lo; r0 < hi; r0 += tile {
		r1 := min(r0+tile, hi)
		for b0 := 0; b0 < len(j.acts); {
			if nb := j.pack8Blocks; nb > 0 && b0+matMulActGroup8 <= len(j.acts) {
				g := b0 / matMulActGroup8
				var pk []byte
				var kp []kPack8
				if j.t == Q4_K {
					kp = j.kpack8[g*nb : (g+1)*nb]
				} else {
					pk = j.pack8[g*nb*pack8BlockBytes : (g+1)*nb*pack8BlockBytes]
				}
				rowsActs8(j.t, j.w[r0*j.rowBytes:], j.rowBytes, r1-r0, pk, kp, nb, j.out[b0*j.rows+r0:], j.rows)
				b0 += matMulActGroup8
				continue
			}
			acts := j.acts[b0:min(b0+matMulActGroup, len(j.acts))]
			var pk []kPack4
			if nb := j.packBlocks; nb > 0 && len(acts) == matMulActGroup {
				g := b0 / matMulActGroup
				pk = j.pack[g*nb : (g+1)*nb]
			}
			for r := r0; r < r1; {
				if k := rowsActsAccel(j.t, j.w[r*j.rowBytes:], j.rowBytes, r1-r, acts, pk, j.out[b0*j.rows+r:], j.rows); k > 0 {
					r += k
					continue
				}
				dotRowActs(j.t, j.w[r*j.rowBytes:(r+1)*j.rowBytes], acts, j.out[b0*j.rows+r:], j.rows)
				r++
			}
			b0 += len(acts)
		}
	}
}

// dotRowActs sets out[b·stride] to the dot product of the weight row w of type
// t with acts[b], for every b. It is the seam for kernels that dot one row with
// several activations at once; each result equals DotRow(t, w, &acts[b]).
func dotRowActs(t Type, w []byte, acts []Activation, out []float32, stride int) {
	if dotRowActsAccel(t, w, acts, out, stride) {
		return
	}
	for b := range acts {
		out[b*stride] = DotRow(t, w, &acts[b])
	}
}

// MatMul multiplies the weight matrix w (rows of rowBytes bytes in type t) with
// every activation in acts, which must have been quantized to
// t.ActivationKind(): out holds len(acts) rows of n = len(out)/len(acts) values,
// and out[b·n + r] = row r of w · acts[b], exactly DotRow's value. The weight
// rows are split over the pool's threads in contiguous chunks.
func (p *Pool) MatMul(job *MatMulJob, t Type, w []byte, rowBytes int, acts []Activation, out []float32) {
	if len(acts) == 0 {
		return
	}
	rows := len(out) / len(acts)
	if rows*len(acts) != len(out) {
		panic("kernels: MatMul: output length is not a multiple of the batch size")
	}
	pack, pack8, kpack8 := job.pack, job.pack8, job.kpack8
	*job = MatMulJob{t: t, w: w, rowBytes: rowBytes, rows: rows, acts: acts, out: out}
	job.pack, job.packBlocks = packActs4(t, acts, pack)
	job.pack8, job.kpack8, job.pack8Blocks = packActs8(t, acts, pack8, kpack8)
	p.Run(rows, 16, job)
}

// packActs4 fills pack with the side data of each full group of four
// activations of acts (kPack4 per super-block, packKActs4) when the active
// tier's kernels for t read it (packsActs4), and returns it with the number
// of super-blocks per group; otherwise pack emptied and 0. It runs once per
// product, before the rows are split over the threads.
func packActs4(t Type, acts []Activation, pack []kPack4) ([]kPack4, int) {
	groups := len(acts) / matMulActGroup
	if groups == 0 || !packsActs4(t) {
		return pack[:0], 0
	}
	nb := packableBlocks(acts, Q8_K, QKK)
	if nb == 0 {
		return pack[:0], 0
	}
	pack = grow(pack, groups*nb)
	for g := range groups {
		packKActs4(pack[g*nb:(g+1)*nb], acts[g*matMulActGroup:(g+1)*matMulActGroup])
	}
	return pack, nb
}

// pack8BlockBytes is the size of one block of a group of eight Q8_0
// activations interleaved (packActs8): the eight activations' 32 quants, one
// after the other, then their eight scales as float32.
const pack8BlockBytes = matMulActGroup8*QK + matMulActGroup8*4

// packActs8 fills pack (Q8_0) or kpack (Q4_K) with each full group of
// eight activations of acts interleaved block by block when the active tier
// has kernels of eight activations for t (packsActs8), and returns them with
// the number of blocks (Q4_K: super-blocks) per group; otherwise both
// emptied and 0. A Q8_0 block takes pack8BlockBytes: the eight activations'
// 32 quants one after the other, then their eight scales, side by side so
// that a kernel multiplies them with the weight block's scale in one vector
// product; one pointer walks all eight activations. A Q4_K super-block is a
// kPack8. It runs once per product, before the rows are split over the
// threads.
func packActs8(t Type, acts []Activation, pack []byte, kpack []kPack8) ([]byte, []kPack8, int) {
	groups := len(acts) / matMulActGroup8
	if groups == 0 || !packsActs8(t) {
		return pack[:0], kpack[:0], 0
	}
	if t == Q4_K {
		nb := packableBlocks(acts, Q8_K, QKK)
		if nb == 0 {
			return pack[:0], kpack[:0], 0
		}
		kpack = grow(kpack, groups*nb)
		for g := range groups {
			packKActs8(kpack[g*nb:(g+1)*nb], acts[g*matMulActGroup8:(g+1)*matMulActGroup8])
		}
		return pack[:0], kpack, nb
	}
	nb := packableBlocks(acts, Q8_0, QK)
	if nb == 0 {
		return pack[:0], kpack[:0], 0
	}
	pack = grow(pack, groups*nb*pack8BlockBytes)
	for g := range groups {
		group := acts[g*matMulActGroup8 : (g+1)*matMulActGroup8]
		for i := range nb {
			blk := pack[(g*nb+i)*pack8BlockBytes:][:pack8BlockBytes]
			for b := range group {
				a := &group[b]
				for k, q := range a.Qs[i*QK : (i+1)*QK] {
					blk[b*QK+k] = byte(q)
				}
				binary.LittleEndian.PutUint32(blk[matMulActGroup8*QK+4*b:], math.Float32bits(a.D[i]))
			}
		}
	}
	return pack, kpack[:0], nb
}

// packableBlocks returns the number of blocks of block values of the
// activations of acts when they all have one length and the kind kind, else 0.
func packableBlocks(acts []Activation, kind Type, block int) int {
	n := acts[0].N
	for i := range acts {
		if acts[i].N != n || acts[i].Kind != kind {
			return 0
		}
	}
	return n / block
}

package kernels

import "unsafe"

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
	// pack holds each full group of four activations packed (packActs4),
	// packBlocks blocks of pack4Bytes(t) per group, when the active tier's
	// kernels for t read them so (packBlocks 0 otherwise).
	pack       []byte
	packBlocks int
	// pack8 holds each full group of eight activations interleaved
	// (packActs8), pack8Blocks blocks of pack8Bytes(t) per group, when the
	// active tier has kernels of eight activations for t (pack8Blocks 0
	// otherwise).
	pack8       []byte
	pack8Blocks int
	// padN is the size of the last group of activations (2 or 3) when the
	// kernels of four take it padded (padsActs4): pad holds it and then
	// copies of its last activation, padPack their side data when the
	// kernels read them packed, and padOut their products (4 × rows), of
	// which the first padN rows are copied into out.
	padN    int
	pad     [matMulActGroup]Activation
	padPack []byte
	padOut  []float32
	// nb is the blocks per row of interleaved rows (Q4_0x8, Q4_Kx8), and
	// side or kside each activation's side data per block (nb per
	// activation, in order) for them.
	nb    int
	side  []x8Side
	kside []k8Side
}

// Do computes rows [lo, hi) of the weight matrix against every activation.
func (j *MatMulJob) Do(lo, hi int) {
	if j.t == Q4_0x8 || j.t == Q4_Kx8 {
		j.doInterleaved(lo, hi)
		return
	}
	if len(j.acts) == 1 {
		MatVec(j.t, j.w[lo*j.rowBytes:hi*j.rowBytes], j.rowBytes, &j.acts[0], j.out[lo:hi])
		return
	}
	tile := max(matMulRowGroup, matMulTileBytes/j.rowBytes) &^ (matMulRowGroup - 1)
	for r0 := lo; r0 < hi; r0 += tile {
		r1 := min(r0+tile, hi)
		for b0 := 0; b0 < len(j.acts); {
			if nb := j.pack8Blocks; nb > 0 && b0+matMulActGroup8 <= len(j.acts) {
				size := nb * pack8Bytes(j.t)
				g := b0 / matMulActGroup8
				rowsActs8(j.t, j.w[r0*j.rowBytes:], j.rowBytes, r1-r0, j.pack8[g*size:(g+1)*size], nb, j.out[b0*j.rows+r0:], j.rows)
				b0 += matMulActGroup8
				continue
			}
			acts := j.acts[b0:min(b0+matMulActGroup, len(j.acts))]
			n := len(acts)
			var pk []byte
			if nb := j.packBlocks; nb > 0 && n == matMulActGroup {
				size := nb * pack4Bytes(j.t)
				g := b0 / matMulActGroup
				pk = j.pack[g*size : (g+1)*size]
			}
			out := j.out[b0*j.rows:]
			if n < matMulActGroup && n == j.padN {
				acts, pk, out = j.pad[:], j.padPack, j.padOut
			}
			for r := r0; r < r1; {
				if k := rowsActsAccel(j.t, j.w[r*j.rowBytes:], j.rowBytes, r1-r, acts, pk, out[r:], j.rows); k > 0 {
					r += k
					continue
				}
				dotRowActs(j.t, j.w[r*j.rowBytes:(r+1)*j.rowBytes], acts, out[r:], j.rows)
				r++
			}
			if len(acts) != n {
				for b := range n {
					copy(j.out[(b0+b)*j.rows+r0:(b0+b)*j.rows+r1], out[b*j.rows+r0:b*j.rows+r1])
				}
			}
			b0 += n
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
	// The buffers stay with the job whichever kernels this product takes.
	*job = MatMulJob{t: t, w: w, rowBytes: rowBytes, rows: rows, acts: acts, out: out,
		pack: job.pack, pack8: job.pack8, padPack: job.padPack[:0], padOut: job.padOut[:0], side: job.side, kside: job.kside}
	if t == Q4_0x8 || t == Q4_Kx8 {
		job.prepareInterleaved()
		p.Run(rows, 16, job)
		return
	}
	job.pack, job.packBlocks = packActs4(t, acts, job.pack)
	job.pack8, job.pack8Blocks = packActs8(t, acts, job.pack8)
	job.padActs()
	p.Run(rows, 16, job)
}

// padActs prepares the last group of activations, when it has two or three
// and the kernels of four take it padded (padsActs4), as a group of four:
// its activations, then its last one repeated (see MatMulJob.padN). Four
// activations through a kernel that unpacks each row once for all of them
// cost less than two or three passes over the rows one activation at a
// time; the results are the same, each being DotRow's value.
func (j *MatMulJob) padActs() {
	n := len(j.acts)
	if j.pack8Blocks > 0 {
		n -= n / matMulActGroup8 * matMulActGroup8
	}
	n %= matMulActGroup
	if n < 2 || !padsActs4(j.t, n) {
		return
	}
	tail := j.acts[len(j.acts)-n:]
	for b := range j.pad {
		j.pad[b] = tail[min(b, n-1)]
	}
	if packsActs4(j.t) {
		kind, block := packKind(j.t)
		if nb := packableBlocks(j.pad[:], kind, block); nb > 0 {
			j.padPack = grow(j.padPack, nb*pack4Bytes(j.t))
			packGroup(j.t, j.padPack, nb, j.pad[:])
		}
	}
	j.padOut = grow(j.padOut, matMulActGroup*j.rows)
	j.padN = n
}

// packActs4 fills pack with each full group of four activations of acts
// packed when the active tier's kernels for t read them so (packsActs4):
// for Q4_K their side data (kPack4 per super-block, packKActs4), for Q8_0
// their blocks interleaved (packQ8Acts). It returns pack with the number of
// blocks (K-quants: super-blocks) per group; otherwise pack emptied and 0.
// It runs once per product, before the rows are split over the threads.
func packActs4(t Type, acts []Activation, pack []byte) ([]byte, int) {
	groups := len(acts) / matMulActGroup
	if groups == 0 || !packsActs4(t) {
		return pack[:0], 0
	}
	kind, block := packKind(t)
	nb := packableBlocks(acts, kind, block)
	if nb == 0 {
		return pack[:0], 0
	}
	size := nb * pack4Bytes(t)
	pack = grow(pack, groups*size)
	// The groups that the kernels of eight activations take are not read.
	start := 0
	if packsActs8(t) {
		start = len(acts) / matMulActGroup8 * matMulActGroup8 / matMulActGroup
	}
	for g := start; g < groups; g++ {
		packGroup(t, pack[g*size:(g+1)*size], nb, acts[g*matMulActGroup:(g+1)*matMulActGroup])
	}
	return pack, nb
}

// packKind returns the kind of activation and the values per block that the
// packed layouts of activations for weights of type t hold: Q8_K
// super-blocks for the K-quants, Q8_0 blocks for the others.
func packKind(t Type) (Type, int) {
	if t == Q4_K || t == Q6_K {
		return Q8_K, QKK
	}
	return Q8_0, QK
}

// pack4Bytes is the size of one block (Q8_0) or super-block (Q4_K) of four
// activations packed for weights of type t (packActs4).
func pack4Bytes(t Type) int {
	switch t {
	case Q4_K:
		return int(unsafe.Sizeof(kPack4{}))
	case Q4_0:
		return q4Pack4Bytes
	}
	return q8Pack4Bytes
}

// packGroup packs nb blocks (K-quants: super-blocks) of the group of four
// or eight activations acts for weights of type t into dst.
func packGroup(t Type, dst []byte, nb int, acts []Activation) {
	switch {
	case t == Q4_K && len(acts) == matMulActGroup:
		packKActs4(unsafe.Slice((*kPack4)(unsafe.Pointer(&dst[0])), nb), acts)
	case t == Q4_K:
		packKActs8(unsafe.Slice((*kPack8)(unsafe.Pointer(&dst[0])), nb), acts)
	case t == Q6_K:
		packQ6Acts8(unsafe.Slice((*q6Pack8)(unsafe.Pointer(&dst[0])), nb), acts)
	case t == Q4_0:
		packQ4Acts(dst, acts)
	default:
		packQ8Acts(dst, acts)
	}
}

// pack8Bytes is the size of one block (Q8_0) or super-block (Q4_K, Q6_K) of
// eight activations packed for weights of type t (packActs8).
func pack8Bytes(t Type) int {
	switch t {
	case Q4_K:
		return int(unsafe.Sizeof(kPack8{}))
	case Q6_K:
		return int(unsafe.Sizeof(q6Pack8{}))
	case Q4_0:
		return q4Pack8Bytes
	}
	return q8Pack8Bytes
}

// packActs8 fills pack with each full group of eight activations of acts
// interleaved block by block when the active tier has kernels of eight
// activations for t (packsActs8), and returns it with the number of blocks
// (K-quants: super-blocks) per group; otherwise pack emptied and 0. A Q8_0
// block takes q8Pack8Bytes for Q8_0 and Q5_0 weights, q4Pack8Bytes for Q4_0
// ones (packQ4Acts), a Q4_K super-block a kPack8, a Q6_K one a q6Pack8: one pointer walks
// all eight activations. It runs once per product, before the rows are split over the
// threads.
func packActs8(t Type, acts []Activation, pack []byte) ([]byte, int) {
	groups := len(acts) / matMulActGroup8
	if groups == 0 || !packsActs8(t) {
		return pack[:0], 0
	}
	kind, block := packKind(t)
	nb := packableBlocks(acts, kind, block)
	if nb == 0 {
		return pack[:0], 0
	}
	size := nb * pack8Bytes(t)
	pack = grow(pack, groups*size)
	for g := range groups {
		packGroup(t, pack[g*size:(g+1)*size], nb, acts[g*matMulActGroup8:(g+1)*matMulActGroup8])
	}
	return pack, nb
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

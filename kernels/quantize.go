package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Weight quantization
//
// QuantizeRow turns float32 weights into the block formats, following the
// reference implementation's quantizers for model files (quantize_row_*_ref,
// used when no importance matrix is given) operation by operation, so that a
// row quantized here is byte for byte the row the reference's quantize tool
// writes. Every float32 product that is added to something is rounded
// explicitly (float32(x*y)) so that no architecture fuses it into an FMA: the
// reference's quantizers are compiled for baseline x86-64, without FMA.
//
// The searches of the K-quants for the best scale (and minimum) of every
// sub-block are the costly part: the reference tries some twenty scales per
// sub-block, each with a least-squares fit and an error sum. They are kept
// exact and made cheaper only by skipping work whose outcome is known (see
// makeQKX2 and makeQXQuants16): a candidate whose quants equal the previous
// candidate's is not evaluated again, a candidate whose exact least-squares
// error (from float64 sums kept up to date as quants change) is clearly above
// the best one's is not evaluated in float32, and an error sum stops once it
// reaches the best error (its terms are not negative). Tests compare the
// searches with and without these shortcuts on many inputs.

// groupMaxEps is the reference's GROUP_MAX_EPS: blocks whose largest magnitude
// is below it are quantized as zeros.
const groupMaxEps = 1e-15

// blockQuantizers quantize one block of each block type.
var blockQuantizers = map[Type]func(x []float32, y []byte){
	Q4_0: quantizeBlockQ4_0,
	Q4_1: quantizeBlockQ4_1,
	Q5_0: quantizeBlockQ5_0,
	Q5_1: quantizeBlockQ5_1,
	Q8_0: quantizeBlockQ8_0,
	Q4_K: quantizeBlockQ4_K,
	Q5_K: quantizeBlockQ5_K,
	Q6_K: quantizeBlockQ6_K,
}

// CanQuantize reports whether QuantizeRow supports the type t.
func CanQuantize(t Type) bool {
	_, ok := blockQuantizers[t]
	return ok || t == F32 || t == F16 || t == BF16
}

// QuantizeRow quantizes the values of src into dst in type t. len(src) must be a
// multiple of t's block size and dst must hold t.RowBytes(len(src)) bytes; t must
// be a type CanQuantize accepts. The result does not depend on the
// architecture. Non-finite values give unspecified (but memory-safe) results.
func QuantizeRow(t Type, src []float32, dst []byte) {
	n, err := t.RowBytes(len(src))
	if err != nil || len(dst) < n {
		panic(fmt.Sprintf("kernels: QuantizeRow: %d values of %v into %d bytes", len(src), t, len(dst)))
	}
	switch t {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], FP32ToFP16(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], FP32ToBF16(v))
		}
	default:
		quant, ok := blockQuantizers[t]
		if !ok {
			panic(fmt.Sprintf("kernels: QuantizeRow: unsupported type %v", t))
		}
		size, bytes := t.BlockSize(), t.BlockBytes()
		for b := range len(src) / size {
			quant(src[b*size:(b+1)*size], dst[b*bytes:(b+1)*bytes])
		}
	}
}

// nearestInt rounds f to the nearest integer, ties to even, as the reference's
// nearest_int does (by adding 1.5·2^23); |f| must be below 2^22.
func nearestInt(f float32) int32 {
	// float32(f) keeps a product passed as f from being fused with the addition.
	return int32(math.Float32bits(float32(f)+12582912)&0x7fffff) - 0x400000
}

// storeHalf stores f rounded to half precision at b[off:] and returns the stored
// value as float32.
func storeHalf(b []byte, off int, f float32) float32 {
	h := FP32ToFP16(f)
	binary.LittleEndian.PutUint16(b[off:], h)
	return FP16ToFP32(h)
}

// ---------------------------------------------------------------------------
// The 32-value types

// absMax returns the value of largest magnitude in x (the first one on ties) and
// that magnitude.
func absMax(x []float32) (max, amax float32) {
	for _, v := range x {
		if av := abs32(v); amax < av {
			amax, max = av, v
		}
	}
	return max, amax
}

// minMax returns the smallest and largest value of x.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		// Comparisons as the reference makes them, not min and max, which
		// order −0 before +0 and are slower.
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// inverse returns 1/d, or 0 for d = 0.
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// quantizeBlockQ4_0 is quantize_row_q4_0_ref for one block: d = max/−8 where max
// is the value of largest magnitude, q = min(15, trunc(x/d + 8.5)).
func quantizeBlockQ4_0(x []float32, y []byte) {
	x = x[:QK]
	max, _ := absMax(x)
	d := max / -8
	id := inverse(d)
	storeHalf(y, 0, d)
	qs := y[2 : 2+QK/2]
	for j := range qs {
		lo := min(15, int32(float32(x[j]*id)+8.5))
		hi := min(15, int32(float32(x[j+QK/2]*id)+8.5))
		qs[j] = byte(lo) | byte(hi)<<4
	}
}

// quantizeBlockQ4_1 is quantize_row_q4_1_ref for one block: d = (max−min)/15,
// m = min, q = min(15, trunc((x−min)/d + 0.5)).
func quantizeBlockQ4_1(x []float32, y []byte) {
	x = x[:QK]
	lo, hi := minMax(x)
	d := (hi - lo) / 15
	id := inverse(d)
	storeHalf(y, 0, d)
	storeHalf(y, 2, lo)
	qs := y[4 : 4+QK/2]
	for j := range qs {
		q0 := min(15, int32(float32((x[j]-lo)*id)+0.5))
		q1 := min(15, int32(float32((x[j+QK/2]-lo)*id)+0.5))
		qs[j] = byte(q0) | byte(q1)<<4
	}
}

// quantizeBlockQ5_0 is quantize_row_q5_0_ref for one block: d = max/−16,
// q = min(31, trunc(x/d + 16.5)).
func quantizeBlockQ5_0(x []float32, y []byte) {
	x = x[:QK]
	max, _ := absMax(x)
	d := max / -16
	id := inverse(d)
	storeHalf(y, 0, d)
	var q [QK]int32
	for j, v := range x {
		q[j] = min(31, int32(float32(v*id)+16.5))
	}
	packQ5(&q, y[2:6], y[6:6+QK/2])
}

// quantizeBlockQ5_1 is quantize_row_q5_1_ref for one block: d = (max−min)/31,
// m = min, q = trunc((x−min)/d + 0.5).
func quantizeBlockQ5_1(x []float32, y []byte) {
	x = x[:QK]
	lo, hi := minMax(x)
	d := (hi - lo) / 31
	id := inverse(d)
	storeHalf(y, 0, d)
	storeHalf(y, 2, lo)
	var q [QK]int32
	for j, v := range x {
		q[j] = int32(float32((v-lo)*id) + 0.5)
	}
	packQ5(&q, y[4:8], y[8:8+QK/2])
}

// packQ5 stores 32 5-bit quants: the low nibbles in qs (value j and j+16 share
// byte j) and the fifth bits in the little-endian uint32 qh.
func packQ5(q *[QK]int32, qh, qs []byte) {
	var h uint32
	for j := range QK / 2 {
		lo, hi := q[j], q[j+QK/2]
		qs[j] = byte(lo&0xf) | byte(hi&0xf)<<4
		h |= uint32(lo>>4&1)<<j | uint32(hi>>4&1)<<(j+QK/2)
	}
	binary.LittleEndian.PutUint32(qh, h)
}

// quantizeBlockQ8_0 is quantize_row_q8_0_ref for one block: d = max|x|/127,
// q = round(x/d) with ties away from zero.
func quantizeBlockQ8_0(x []float32, y []byte) {
	x = x[:QK]
	_, amax := absMax(x)
	d := amax / 127
	id := inverse(d)
	storeHalf(y, 0, d)
	for j, v := range x {
		y[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

// ---------------------------------------------------------------------------
// Q4_K and Q5_K

// quantizeBlockQ4_K is quantize_row_q4_K_ref for one super-block.
func quantizeBlockQ4_K(x []float32, y []byte) {
	var L [QKK]uint8
	quantizeScaleMinK(x, y[q4KD:], y[q4KScales:q4KScales+12], &L, 15, -1, 0.1, 20)
	qs := y[q4KQs : q4KQs+QKK/2]
	for c := range 4 {
		for l := range 32 {
			qs[32*c+l] = L[64*c+l] | L[64*c+32+l]<<4
		}
	}
}

// quantizeBlockQ5_K is quantize_row_q5_K_ref for one super-block.
func quantizeBlockQ5_K(x []float32, y []byte) {
	var L [QKK]uint8
	quantizeScaleMinK(x, y[q5KD:], y[q5KScales:q5KScales+12], &L, 31, -0.5, 0.1, 15)
	qh := y[q5KQh : q5KQh+QKK/8]
	qs := y[q5KQs : q5KQs+QKK/2]
	clear(qh)
	for c := range 4 {
		for l := range 32 {
			lo, hi := L[64*c+l], L[64*c+32+l]
			qh[l] |= (lo>>4)<<(2*c) | (hi>>4)<<(2*c+1)
			qs[32*c+l] = lo&0xf | (hi&0xf)<<4
		}
	}
}

// quantizeScaleMinK does the common part of the Q4_K and Q5_K quantizers for
// one super-block x: it finds a scale and a minimum for each of the 8 sub-blocks
// of 32 values (makeQKX2 with the given search parameters), quantizes them to 6
// bits against the super-block factors d and dmin, which it stores as halves at
// dd[0:2] and dd[2:4], packs them into scales (12 bytes), and sets L to the
// quants (0…nmax) of every value against the rounded scales.
func quantizeScaleMinK(x []float32, dd, scales []byte, L *[QKK]uint8, nmax int32, rmin, rdelta float32, nstep int) {
	x = x[:QKK]
	var sc, mn [QKK / 32]float32
	var maxScale, maxMin float32
	for j := range QKK / 32 {
		xs := (*[32]float32)(x[32*j:])
		var w [32]float32
		kWeights(xs, &w)
		sc[j], mn[j] = makeQKX2(xs, &w, (*[32]uint8)(L[32*j:]), nmax, rmin, rdelta, nstep, true)
		if sc[j] > maxScale {
			maxScale = sc[j]
		}
		if mn[j] > maxMin {
			maxMin = mn[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [QKK / 32]uint8
	for j := range ls {
		ls[j] = min(63, uint8(nearestInt(invScale*sc[j])))
		lm[j] = min(63, uint8(nearestInt(invMin*mn[j])))
	}
	packScalesMinsK4(scales, &ls, &lm)
	d := storeHalf(dd, 0, maxScale/63)
	dmin := storeHalf(dd, 2, maxMin/63)
	for j := range QKK / 32 {
		ds := d * float32(ls[j])
		if ds == 0 {
			continue
		}
		dm := float32(dmin * float32(lm[j]))
		for i, v := range x[32*j : 32*j+32] {
			L[32*j+i] = uint8(max(0, min(nmax, nearestInt((v+dm)/ds))))
		}
	}
}

// kWeights sets w to the weights of the errors in a sub-block x of Q4_K or
// Q5_K: the root mean square of x plus |x|.
func kWeights(x, w *[32]float32) {
	var sumX2 float32
	for _, v := range x {
		sumX2 += float32(v * v)
	}
	avX := float32(math.Sqrt(float64(sumX2 / 32)))
	for l, v := range x {
		w[l] = avX + abs32(v)
	}
}

// packScalesMinsK4 packs 8 6-bit scales and mins into 12 bytes, the layout
// scalesMinsK4 reads.
func packScalesMinsK4(sc []byte, ls, lm *[8]uint8) {
	sc = sc[:12]
	for j := range 4 {
		sc[j] = ls[j] | (ls[j+4]>>4)<<6
		sc[j+4] = lm[j] | (lm[j+4]>>4)<<6
		sc[j+8] = ls[j+4]&0xf | (lm[j+4]&0xf)<<4
	}
}

// makeQKX2 is the reference's make_qkx2_quants for 32 values (without the
// absolute-error option): it chooses a scale and a minimum for x, with
// x ≈ scale·L − min, L in 0…nmax, that minimise the error weighted by w. It
// starts from the range of x and tries nstep+1 other scales
// (nmax + rmin + rdelta·is)/(max − min), each followed by a weighted
// least-squares fit of scale and minimum. It returns the scale and the minimum
// (as a non-negative amount to subtract) and sets L.
//
// Without prune it does exactly what the reference does. With prune it gives
// the same result with less work: it skips a candidate whose quants equal the
// previous candidate's (the same quants give the same fit, which did not win
// before, or winning again changes nothing), and candidates that provably
// cannot beat the best one so far (see fitBound).
func makeQKX2(x, w *[32]float32, L *[32]uint8, nmax int32, rmin, rdelta float32, nstep int, prune bool) (scale, theMin float32) {
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < 32; i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		*L = [32]uint8{}
		return 0, -lo
	}
	fmax := float32(nmax)
	iscale := fmax / (hi - lo)
	fit := qkx2Fit{x: x, w: w, L: L, sumW: sumW, sumX: sumX, scale: 1 / iscale, lo: lo}
	for i, v := range x {
		l := max(0, min(nmax, nearestInt(iscale*(v-lo))))
		L[i] = uint8(l)
		diff := float32(fit.scale*float32(l)) + lo - v
		fit.mad += float32(w[i] * float32(diff*diff))
	}
	var laux [32]uint8
	if !prune {
		for is := 0; is <= nstep; is++ {
			// The reference computes max − min and x − min with the
			// current minimum, which changes when a candidate wins.
			iscale := (rmin + float32(rdelta*float32(is)) + fmax) / (hi - fit.lo)
			for i, v := range x {
				laux[i] = uint8(max(0, min(nmax, nearestInt(iscale*(v-fit.lo)))))
			}
			fit.try(&laux)
		}
		return fit.scale, -fit.lo
	}
	bound := newFitBound(x[:], w[:])
	var sums lsqSums // float64 sums over laux for the bound
	// raw holds the bits of iscale·(x − min) + 1.5·2^23, from which
	// nearestInt takes the rounded value: when they are the same as for the
	// previous candidate, so is the quant.
	var raw [32]uint32
	var xm [32]float32
	shift := func() {
		for i, v := range x {
			xm[i] = v - fit.lo
		}
	}
	shift()
	for is := 0; is <= nstep; is++ {
		iscale := (rmin + float32(rdelta*float32(is)) + fmax) / (hi - fit.lo)
		changed := is == 0
		for i := range xm {
			r := math.Float32bits(float32(iscale*xm[i]) + 12582912)
			if r == raw[i] {
				continue
			}
			raw[i] = r
			l := uint8(max(0, min(nmax, int32(r&0x7fffff)-0x400000)))
			if l != laux[i] {
				sums.move(w[i], x[i], laux[i], l)
				laux[i], changed = l, true
			}
		}
		if !changed || bound.cannotBeat(&sums, fit.mad) {
			continue
		}
		if fit.try(&laux) {
			shift()
		}
	}
	return fit.scale, -fit.lo
}

// qkx2Fit is the best candidate of makeQKX2 so far: its quants L, scale,
// minimum lo (not positive) and weighted squared error mad.
type qkx2Fit struct {
	x, w           *[32]float32
	L              *[32]uint8
	sumW, sumX     float32
	scale, lo, mad float32
}

// try evaluates the candidate quants laux as the reference does, a weighted
// least-squares fit of scale and minimum, and makes it the best one when its
// error is below the best so far. It reports whether it did.
func (f *qkx2Fit) try(laux *[32]uint8) bool {
	x, w := f.x, f.w
	var sumL, sumL2, sumXL float32
	for i := range laux {
		wl := float32(w[i] * float32(laux[i]))
		sumL += wl
		sumL2 += float32(wl * float32(laux[i]))
		sumXL += float32(wl * x[i])
	}
	D := float32(f.sumW*sumL2) - float32(sumL*sumL)
	if !(D > 0) {
		return false
	}
	thisScale := (float32(f.sumW*sumXL) - float32(f.sumX*sumL)) / D
	thisMin := (float32(sumL2*f.sumX) - float32(sumL*sumXL)) / D
	if thisMin > 0 {
		thisMin = 0
		thisScale = sumXL / sumL2
	}
	mad, ok := madBelow(x, w, laux, thisScale, thisMin, f.mad)
	if ok {
		*f.L = *laux
		f.mad, f.scale, f.lo = mad, thisScale, thisMin
	}
	return ok
}

// lsqSums are the sums Σw·l, Σw·l² and Σw·x·l over the quants l of a
// candidate, kept in float64 and updated as quants change.
type lsqSums struct{ l, l2, xl float64 }

// move changes one quant with weight w and value x from l0 to l1.
func (s *lsqSums) move(w, x float32, l0, l1 uint8) {
	d := float64(l1) - float64(l0)
	wd := float64(w) * d
	s.l += wd
	s.l2 += wd * (float64(l1) + float64(l0))
	s.xl += wd * float64(x)
}

// fitBound decides cheaply, from float64 sums, that a candidate of makeQKX2
// cannot win. The reference evaluates a candidate's error in float32 at some
// scale s and offset m; that error, computed exactly, is at least E*, the
// least-squares minimum over every s and m. Rounding makes the float32 sum
// differ from the exact value by at most about 40ε·E + 2ε·sqrt(E·B) (ε = 2^-24,
// B = Σw·(2|x| + |m|)² ≤ 8·Σw·(x² + m²); the terms are not negative), a bound
// that grows with E.
// So when E* minus a margin far larger than that bound is still at least the
// best error so far, the float32 error is too, and the candidate loses.
type fitBound struct{ w, x, xx float64 }

func newFitBound(x, w []float32) fitBound {
	var b fitBound
	for i, v := range x {
		wx := float64(w[i]) * float64(v)
		b.w += float64(w[i])
		b.x += wx
		b.xx += wx * float64(v)
	}
	return b
}

// cannotBeat reports whether the candidate with sums q surely has an error of
// at least best. It answers false whenever the fit is ill-conditioned.
func (b *fitBound) cannotBeat(q *lsqSums, best float32) bool {
	D := b.w*q.l2 - q.l*q.l
	if !(D > 1e-3*b.w*q.l2) || !(b.xx < 1e30) { // ill-conditioned, or near overflow
		return false
	}
	s := (b.w*q.xl - b.x*q.l) / D
	m := (q.l2*b.x - q.l*q.xl) / D
	e := b.xx - s*q.xl - m*b.x
	B := 8 * (b.xx + m*m*b.w)
	if !(e > 1e-10*B) {
		return false
	}
	return e*(1-1e-4)-1e-5*math.Sqrt(e*B) >= float64(best)
}

// madBelow returns Σ w·(scale·L + min − x)² summed in order, and whether it is
// below best. It stops early once the partial sum reaches best: the terms are
// not negative, so the sum cannot fall below best again.
func madBelow(x, w *[32]float32, L *[32]uint8, scale, min, best float32) (float32, bool) {
	var mad float32
	for k := 0; k < 32; k += 8 {
		for i := k; i < k+8; i++ {
			diff := float32(scale*float32(L[i])) + min - x[i]
			mad += float32(w[i] * float32(diff*diff))
		}
		if !(mad < best) {
			return mad, false
		}
	}
	return mad, true
}

// ---------------------------------------------------------------------------
// Q6_K

// quantizeBlockQ6_K is quantize_row_q6_K_ref for one super-block.
func quantizeBlockQ6_K(x []float32, y []byte) {
	x = x[:QKK]
	var L [QKK]int8 // quants plus 32: 0…63
	var scales [QKK / 16]float32
	var maxScale, maxAbsScale float32
	for ib := range scales {
		s := makeQXQuants16(x[16*ib:], L[16*ib:], true)
		scales[ib] = s
		if as := abs32(s); as > maxAbsScale {
			maxAbsScale, maxScale = as, s
		}
	}
	blk := y[:q6KBytes]
	if maxAbsScale < groupMaxEps {
		clear(blk)
		return
	}
	iscale := -128 / maxScale
	d := storeHalf(blk, q6KD, 1/iscale)
	sc := blk[q6KScales : q6KScales+QKK/16]
	for ib := range sc {
		sc[ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
	}
	for j := range QKK / 16 {
		ds := d * float32(int8(sc[j]))
		if ds == 0 {
			continue
		}
		for i, v := range x[16*j : 16*j+16] {
			L[16*j+i] = int8(max(-32, min(31, nearestInt(v/ds))) + 32)
		}
	}
	ql := blk[q6KQl : q6KQl+QKK/2]
	qh := blk[q6KQh : q6KQh+QKK/4]
	for h := range 2 {
		q := L[128*h : 128*h+128]
		for l := range 32 {
			q1, q2, q3, q4 := byte(q[l]), byte(q[l+32]), byte(q[l+64]), byte(q[l+96])
			ql[64*h+l] = q1&0xf | (q3&0xf)<<4
			ql[64*h+l+32] = q2&0xf | (q4&0xf)<<4
			qh[32*h+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}

// makeQXQuants16 is the reference's make_qx_quants for 16 values with nmax 32
// and weights x² (rmse_type 1), as Q6_K uses it: it tries the scales
// −(32 + 0.1·is)/max for is = −9…9 and keeps the one whose least-squares fit has
// the smallest weighted error, that is the largest (Σw·x·l)²/Σw·l². It sets
// L[i] to the quants plus 32 (0…63) and returns the scale.
//
// Without prune it does exactly what the reference does. With prune it skips
// a candidate whose quants equal the previous one's (same sums, same verdict,
// and winning again changes nothing) and candidates whose ratio, computed in
// float64, is clearly not above the best one's. Every term of either sum has
// the same sign (w·x·l = x³·l, and l has the sign of x·iscale), so the float32
// sums are within about 20ε of the exact ones and the float32 comparison
// cannot turn out otherwise. The result is the same.
func makeQXQuants16(xs []float32, Ls []int8, prune bool) float32 {
	x := (*[16]float32)(xs)
	L := (*[16]int8)(Ls)
	mx, amax := absMax(x[:])
	if amax < groupMaxEps {
		*L = [16]int8{}
		return 0
	}
	var w, wx [16]float32
	for i, v := range x {
		w[i] = float32(v * v)
		wx[i] = float32(w[i] * v)
	}
	prune = prune && amax < 1e9 // far from float32 overflow of x³
	var cur [16]int8            // the candidate's quants
	// raw holds the bits of iscale·x + 1.5·2^23, which nearestInt rounds
	// with: when they are the same as for the previous candidate, so is the
	// quant.
	var raw [16]uint32
	var exact struct{ xl, l2 float64 } // float64 sums over cur
	// quants sets cur to the quants at iscale, keeps the float64 sums up to
	// date and reports whether any quant changed.
	quants := func(iscale float32) bool {
		changed := false
		for i, v := range x {
			r := math.Float32bits(float32(iscale*v) + 12582912)
			if r == raw[i] {
				continue
			}
			raw[i] = r
			q := int8(max(-32, min(31, int32(r&0x7fffff)-0x400000)))
			if q != cur[i] {
				d := float64(q) - float64(cur[i])
				exact.xl += float64(wx[i]) * d
				exact.l2 += float64(w[i]) * d * (float64(q) + float64(cur[i]))
				cur[i], changed = q, true
			}
		}
		return changed
	}
	// sums returns Σ w·x·l and Σ w·l² over cur, in float32 as the reference.
	sums := func() (sumlx, suml2 float32) {
		for i, q := range cur {
			fq := float32(q)
			sumlx += float32(wx[i] * fq)
			suml2 += float32(float32(w[i]*fq) * fq)
		}
		return sumlx, suml2
	}
	quants(-32 / mx)
	sumlx, suml2 := sums()
	for i, q := range cur {
		L[i] = q + 32
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		changed := quants(-(32 + float32(0.1*float32(is))) / mx)
		if prune && (!changed || exact.xl*exact.xl <= float64(best)*exact.l2*(1-1e-4)) {
			continue
		}
		sumlx, suml2 = sums()
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, q := range cur {
				L[i] = q + 32
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

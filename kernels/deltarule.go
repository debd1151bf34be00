package kernels

// DeltaRuleF32 runs one token of the gated delta rule (Gated DeltaNet) on the
// S×S state M, whose row r is M[r·S:(r+1)·S], with the key k, query q and
// value v (each of at least S values; v must not overlap k or q), in one
// pass over the state: for each row r in turn,
//
//	M[r] ← M[r]·decay                  (ScaleF32(M[r], decay))
//	d    ← (v[r] − DotF32(M[r], k))·β
//	M[r] ← M[r] + d·k                  (AxpyF32(M[r], d, k))
//	v[r] ← DotF32(M[r], q)·scale
//
// Each row's update reads only that row and v[r], so this equals, bit for
// bit, the four passes of ScaleF32(M, decay); the deltas of every row; the
// AxpyF32 of every row; then the readouts: the same float32 operations in
// the same order on every value (the dots with DotF32's eight accumulators,
// the products of the update rounded before they are added).
func DeltaRuleF32(M []float32, S int, k, q, v []float32, decay, beta, scale float32) {
	if S <= 0 {
		return
	}
	deltaRuleF32(M[:S*S], S, k[:S], q[:S], v[:S], decay, beta, scale)
}

// deltaRuleF32Generic is the portable DeltaRuleF32 (the slices cut to S·S
// and S values): the unfused kernels' operations row by row, while the row
// is in cache.
func deltaRuleF32Generic(M []float32, S int, k, q, v []float32, decay, beta, scale float32) {
	for r := range S {
		row := M[r*S : (r+1)*S]
		for i := range row {
			row[i] *= decay
		}
		d := (v[r] - dotF32SliceGeneric(row, k)) * beta
		for i, x := range k {
			row[i] += float32(d * x)
		}
		v[r] = dotF32SliceGeneric(row, q) * scale
	}
}

package kernels

// Activation is a float vector quantized once per matrix-vector product so that
// every weight row can be multiplied with integer arithmetic per block.
//
// Which fields are filled depends on the kind the weight type asks for (see
// Type.ActivationKind): F holds the float values for F32 weights, and for F16 and
// BF16 weights the values rounded to half precision or bfloat16 (stored as the
// float32 values they represent exactly). For the 8-bit kinds Qs and D hold int8
// values and one scale per 32 values (Q8_0), plus Sum, d·Σq of each block (Q8_1);
// for K-quants Qs and D hold int8 values and one scale per 256 values (Q8_K) and
// BSums holds the sum of each run of 16 quantized values.
//
// The slices are sized by Reset and reused across calls: quantizing into an
// Activation never allocates once it has grown to the largest row.
type Activation struct {
	Kind  Type      // F32, F16, BF16, Q8_0, Q8_1 or Q8_K
	N     int       // number of values
	F     []float32 // Kind F32, F16, BF16: the values (rounded to the kind)
	Qs    []int8    // Kind Q8_*: N quantized values
	D     []float32 // Kind Q8_*: scale of each block (N/32 or N/256 entries)
	Sum   []float32 // Kind Q8_1: D[b] * Σ Qs of block b
	BSums []int16   // Kind Q8_K: Σ Qs of each 16 values (N/16 entries)
}

// Reset sizes a for n values of the given kind, growing the slices only when
// they are too small.
func (a *Activation) Reset(kind Type, n int) {
	a.Kind, a.N = kind, n
	switch kind {
	case F32, F16, BF16:
		a.F = grow(a.F, n)
		return
	}
	a.Qs = grow(a.Qs, n)
	switch kind {
	case Q8_K:
		a.D = grow(a.D, n/QKK)
		a.BSums = grow(a.BSums, n/16)
	default:
		a.D = grow(a.D, n/QK)
		if kind == Q8_1 {
			a.Sum = grow(a.Sum, n/QK)
		}
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

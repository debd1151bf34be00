package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// weightTypes are every supported weight type.
var weightTypes = []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}

// randomMatrix returns rows random valid rows of n values of type t.
func randomMatrix(r *rand.Rand, t Type, rows, n int) (w []byte, rowBytes int) {
	for range rows {
		var row []byte
		switch t {
		case F32, F16, BF16:
			row, _ = floatRow(r, t, n)
		case Q2_K, Q3_K, Q4_K, Q5_K, Q6_K:
			row = randomKRow(r, t, n/QKK)
		default:
			row = randomLegacyRow(r, t, n)
		}
		w = append(w, row...)
		rowBytes = len(row)
	}
	return w, rowBytes
}

// randomActivations quantizes b random vectors of n values to kind.
func randomActivations(r *rand.Rand, kind Type, b, n int) []Activation {
	acts := make([]Activation, b)
	for i := range acts {
		QuantizeActivation(&acts[i], kind, randomActivation(r, n))
	}
	return acts
}

// TestMatMulMatchesDotRow checks every element of the product against DotRow,
// bit for bit, for every weight type, batch sizes around the activation group
// and thread counts that split the rows unevenly; with 512 columns the F32
// rows are 2 KiB, so the rows also span several tiles.
func TestMatMulMatchesDotRow(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		const rows, n = 77, 512
		r := rand.New(rand.NewPCG(1, 2))
		for _, threads := range []int{1, 2, 3} {
			p := NewPool(threads)
			defer p.Close()
			for _, typ := range weightTypes {
				w, rowBytes := randomMatrix(r, typ, rows, n)
				// 8 and more: the kernels of eight activations where the tier
				// has them; a last group of 2 or 3: padded to four where
				// padsActs4 says so.
				for _, b := range []int{1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 16} {
					acts := randomActivations(r, typ.ActivationKind(), b, n)
					out := make([]float32, b*rows)
					for i := range out {
						out[i] = float32(math.NaN())
					}
					var job MatMulJob
					p.MatMul(&job, typ, w, rowBytes, acts, out)
					tail := b
					if job.pack8Blocks > 0 {
						tail %= matMulActGroup8
					}
					tail %= matMulActGroup
					if want := tail >= 2 && padsActs4(typ, tail); (job.padN != 0) != want || (want && job.padN != tail) {
						t.Fatalf("%v, batch %d: last group of %d: padN %d, padded wanted: %v", typ, b, tail, job.padN, want)
					}
					for i := range b {
						for row := range rows {
							want := DotRow(typ, w[row*rowBytes:(row+1)*rowBytes], &acts[i])
							if got := out[i*rows+row]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%v, %d threads, batch %d: out[%d][%d] = %v, DotRow %v", typ, threads, b, i, row, got, want)
							}
						}
					}
				}
			}
		}
	})
}

// TestMatMulQ4_0ExtremeSums: the Q4_0 kernels add the products of a block
// in 16-bit lanes (up to 16 products of an unsigned nibble and a quant) and
// take 8 times the activation's sum off in 32 bits; with every nibble 15 or
// 0 and every activation quant ±127 the sums reach their bounds, and each
// product still equals DotRow bit for bit, for one, four and eight
// activations (the kernels of four rows, of two rows × four and × eight).
func TestMatMulQ4_0ExtremeSums(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		const rows, n = 10, 256
		p := NewPool(2)
		defer p.Close()
		w := make([]byte, 0, rows*n/QK*q4_0Bytes)
		for r := range rows {
			for range n / QK {
				nib := byte(0xff) // every value 15 - 8 = 7
				if r%2 == 1 {
					nib = 0 // every value -8
				}
				block := []byte{0x00, 0x3c} // scale 1.0
				for range 16 {
					block = append(block, nib)
				}
				w = append(w, block...)
			}
		}
		rowBytes := n / QK * q4_0Bytes
		for _, b := range []int{1, 4, 8} {
			acts := make([]Activation, b)
			for i := range acts {
				x := make([]float32, n)
				for j := range x {
					x[j] = 1 // quantized to 127
					if i%2 == 1 {
						x[j] = -1 // -127
					}
				}
				QuantizeActivation(&acts[i], Q8_0, x)
			}
			out := make([]float32, b*rows)
			var job MatMulJob
			p.MatMul(&job, Q4_0, w, rowBytes, acts, out)
			for i := range b {
				for row := range rows {
					want := DotRow(Q4_0, w[row*rowBytes:(row+1)*rowBytes], &acts[i])
					if want != float32(7-15*(row%2))*127*float32(n)*acts[i].D[0]*float32(1-2*(i%2)) {
						t.Fatalf("batch %d: DotRow(row %d, activation %d) = %v: not the extreme sum", b, row, i, want)
					}
					if got := out[i*rows+row]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("batch %d: out[%d][%d] = %v, DotRow %v", b, i, row, got, want)
					}
				}
			}
		}
	})
}

// TestMatMulNoAlloc checks that a product with a reused job allocates
// nothing, for every weight type and for one activation as for a batch
// (whichever kernels serve them).
func TestMatMulNoAlloc(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		p := NewPool(2)
		defer p.Close()
		for _, typ := range weightTypes {
			w, rowBytes := randomMatrix(r, typ, 64, 512)
			for _, b := range []int{1, 3, 8} { // 1: the matrix-vector kernels; 3: padded to four where padsActs4 says so
				acts := randomActivations(r, typ.ActivationKind(), b, 512)
				out := make([]float32, b*64)
				var job MatMulJob
				if a := testing.AllocsPerRun(20, func() { p.MatMul(&job, typ, w, rowBytes, acts, out) }); a != 0 {
					t.Errorf("%v, batch %d: %v allocations per MatMul", typ, b, a)
				}
			}
		}
	})
}

// BenchmarkMatMul compares one batch product with the same work done as
// matrix-vector products, one activation at a time, for the weight types of
// Q4_K_M (Q4_K, Q6_K, and Q5_0 where rows are not a multiple of 256) and of
// Q8_0 and Q4_0 models.
func BenchmarkMatMul(b *testing.B) {
	const rows, n, batch = 2048, 2048, 32
	r := rand.New(rand.NewPCG(5, 6))
	p := NewPool(1)
	defer p.Close()
	for _, typ := range []Type{Q4_K, Q6_K, Q8_0, Q4_0, Q5_0, Q5_K} {
		w, rowBytes := randomMatrix(r, typ, rows, n)
		acts := randomActivations(r, typ.ActivationKind(), batch, n)
		out := make([]float32, batch*rows)
		b.Run(typ.String()+"/matmul", func(b *testing.B) {
			var job MatMulJob
			for b.Loop() {
				p.MatMul(&job, typ, w, rowBytes, acts, out)
			}
		})
		b.Run(typ.String()+"/matvec", func(b *testing.B) {
			var job MatVecJob
			for b.Loop() {
				for i := range acts {
					p.MatVec(&job, typ, w, rowBytes, &acts[i], out[i*rows:(i+1)*rows])
				}
			}
		})
	}
}

// BenchmarkMatMulFromMemory times four activations against one on matrices
// far larger than the last-level cache, as in a decode step of four
// sequences: the weights come from memory once for the four, and the
// kernels of four cost little more than one where they keep up with it.
func BenchmarkMatMulFromMemory(b *testing.B) {
	const rows, n = 8192, 16384
	r := rand.New(rand.NewPCG(5, 6))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range []Type{Q8_0, Q4_K, Q6_K, Q4_0, Q5_0} {
		w, rowBytes := randomMatrix(r, typ, rows, n)
		acts := randomActivations(r, typ.ActivationKind(), matMulActGroup, n)
		out := make([]float32, matMulActGroup*rows)
		b.Run(typ.String()+"/4", func(b *testing.B) {
			var job MatMulJob
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				p.MatMul(&job, typ, w, rowBytes, acts, out)
			}
		})
		b.Run(typ.String()+"/1", func(b *testing.B) {
			var job MatVecJob
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				p.MatVec(&job, typ, w, rowBytes, &acts[0], out[:rows])
			}
		})
	}
}

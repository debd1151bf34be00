package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatMulQ4_0x8MatchesDotRow checks products with interleaved Q4_0 rows
// against DotRow of the rows as the file holds them, bit for bit, on every
// tier: batches of one (decode) to sixteen (groups of four and the rest),
// thread counts that split the groups unevenly, rows short enough that a
// tile holds many groups and long enough that it holds one, and the
// extremes of the int16 block sums (nibbles 15 with quants −128 and 127).
func TestMatMulQ4_0x8MatchesDotRow(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, shape := range []struct{ rows, n int }{{8, 32}, {136, 64}, {24, 2048}} {
			w, rowBytes := randomMatrix(r, Q4_0, shape.rows, shape.n)
			x8 := interleaveForTest(t, Q4_0, w, shape.rows, rowBytes)
			for _, threads := range []int{1, 2, 3} {
				p := NewPool(threads)
				defer p.Close()
				for _, b := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16} {
					acts := randomActivations(r, Q8_0, b, shape.n)
					checkInterleaved(t, p, Q4_0, w, x8, rowBytes, acts)
				}
			}
		}
		// Every nibble 15 with quants of one sign: the largest block sums.
		const rows, n = 16, 256
		w, rowBytes := randomMatrix(r, Q4_0, rows, n)
		for i := range w {
			if i%q4_0Bytes >= 2 {
				w[i] = 0xff
			}
		}
		x8 := interleaveForTest(t, Q4_0, w, rows, rowBytes)
		acts := randomActivations(r, Q8_0, 5, n)
		for i := range acts {
			for k := range acts[i].Qs {
				acts[i].Qs[k] = []int8{-128, 127, -128, 127, 0}[i]
			}
		}
		p := NewPool(2)
		defer p.Close()
		checkInterleaved(t, p, Q4_0, w, x8, rowBytes, acts)
	})
}

// checkInterleaved compares MatMul of x8, w's rows of type base
// interleaved, with DotRow of w's rows.
func checkInterleaved(t *testing.T, p *Pool, base Type, w, x8 []byte, rowBytes int, acts []Activation) {
	t.Helper()
	rows := len(w) / rowBytes
	out := make([]float32, len(acts)*rows)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	var job MatMulJob
	p.MatMul(&job, Interleaved(base), x8, rowBytes, acts, out)
	for b := range acts {
		for row := range rows {
			want := DotRow(base, w[row*rowBytes:(row+1)*rowBytes], &acts[b])
			if got := out[b*rows+row]; math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%d rows of %d bytes, batch %d: out[%d][%d] = %v, DotRow %v", rows, rowBytes, len(acts), b, row, got, want)
			}
		}
	}
}

// TestMatMulQ4_Kx8MatchesDotRow is TestMatMulQ4_0x8MatchesDotRow for
// interleaved Q4_K rows: random super-blocks (scales and mins of every
// size), then the largest int16 sums (nibbles 15, quants −128 or 127).
func TestMatMulQ4_Kx8MatchesDotRow(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, shape := range []struct{ rows, n int }{{8, 256}, {136, 512}, {24, 2048}} {
			w, rowBytes := randomMatrix(r, Q4_K, shape.rows, shape.n)
			x8 := interleaveForTest(t, Q4_K, w, shape.rows, rowBytes)
			for _, threads := range []int{1, 2, 3} {
				p := NewPool(threads)
				defer p.Close()
				for _, b := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16} {
					acts := randomActivations(r, Q8_K, b, shape.n)
					checkInterleaved(t, p, Q4_K, w, x8, rowBytes, acts)
				}
			}
		}
		const rows, n = 16, 512
		w, rowBytes := randomMatrix(r, Q4_K, rows, n)
		for i := range w {
			if i%q4KBytes >= q4KQs {
				w[i] = 0xff
			}
		}
		x8 := interleaveForTest(t, Q4_K, w, rows, rowBytes)
		acts := randomActivations(r, Q8_K, 5, n)
		for i := range acts {
			v := []int8{-128, 127, -128, 127, 0}[i]
			for k := range acts[i].Qs {
				acts[i].Qs[k] = v
			}
			for k := range acts[i].BSums {
				acts[i].BSums[k] = 16 * int16(v)
			}
		}
		p := NewPool(2)
		defer p.Close()
		checkInterleaved(t, p, Q4_K, w, x8, rowBytes, acts)
	})
}

// interleaveForTest returns the rows×rowBytes matrix w of type t
// interleaved.
func interleaveForTest(t *testing.T, typ Type, w []byte, rows, rowBytes int) []byte {
	t.Helper()
	x8 := make([]byte, InterleavedBytes(typ, rows, rowBytes))
	if err := Interleave(typ, x8, w, rows, rowBytes); err != nil {
		t.Fatal(err)
	}
	return x8
}

// TestMatMulQ4_0x8NoAlloc checks that interleaved products (Q4_0x8 and
// Q4_Kx8) with a reused job allocate nothing, for one activation and for a
// batch, also between products of other matrices.
func TestMatMulQ4_0x8NoAlloc(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		p := NewPool(2)
		defer p.Close()
		for _, typ := range []Type{Q4_0, Q4_K} {
			w, rowBytes := randomMatrix(r, typ, 64, 512)
			x8 := interleaveForTest(t, typ, w, 64, rowBytes)
			for _, b := range []int{1, 5} {
				acts := randomActivations(r, typ.ActivationKind(), b, 512)
				out := make([]float32, b*64)
				var job MatMulJob
				// A product of the file's layout between two keeps the
				// job's side data.
				if a := testing.AllocsPerRun(20, func() {
					p.MatMul(&job, Interleaved(typ), x8, rowBytes, acts, out)
					p.MatMul(&job, typ, w, rowBytes, acts, out)
				}); a != 0 {
					t.Errorf("%v, batch %d: %v allocations per MatMul", typ, b, a)
				}
			}
		}
	})
}

// TestInterleaveQ4_0Shapes checks that shapes the layout cannot hold are
// refused, not written.
func TestInterleaveQ4_0Shapes(t *testing.T) {
	for _, c := range []struct{ rows, rowBytes, len int }{
		{7, 18, 7 * 18},   // not a multiple of eight rows
		{8, 17, 8 * 17},   // not whole blocks
		{8, 18, 8*18 - 1}, // wrong size
		{0, 18, 0},
	} {
		src := make([]byte, c.len)
		if err := InterleaveQ4_0(make([]byte, c.len), src, c.rows, c.rowBytes); err == nil {
			t.Errorf("%d rows of %d bytes in %d: interleaved", c.rows, c.rowBytes, c.len)
		}
	}
	for _, c := range []struct{ rows, rowBytes, len int }{
		{7, 144, 7 * 144}, {8, 143, 8 * 143}, {8, 144, 8 * 144}, // the last: dst must be InterleavedBytes
	} {
		if err := InterleaveQ4_K(make([]byte, c.len), make([]byte, c.len), c.rows, c.rowBytes); err == nil {
			t.Errorf("Q4_K: %d rows of %d bytes in %d: interleaved", c.rows, c.rowBytes, c.len)
		}
	}
	if n := InterleavedBytes(Q4_K, 16, 2*144); n != 2*2*1184 {
		t.Errorf("InterleavedBytes(Q4_K, 16 rows of 2 super-blocks) = %d", n)
	}
	if Q4_Kx8.Known() || Q4_Kx8.String() != "Q4_Kx8" || Q4_Kx8.ActivationKind() != Q8_K || Interleaved(Q6_K) != 0 {
		t.Errorf("Q4_Kx8: Known %v, String %q, ActivationKind %v; Interleaved(Q6_K) %v", Q4_Kx8.Known(), Q4_Kx8, Q4_Kx8.ActivationKind(), Interleaved(Q6_K))
	}
	if Q4_0x8.Known() || Q4_0x8.Supported() || Q4_0x8.String() != "Q4_0x8" || Q4_0x8.ActivationKind() != Q8_0 {
		t.Errorf("Q4_0x8: Known %v, Supported %v, String %q, ActivationKind %v", Q4_0x8.Known(), Q4_0x8.Supported(), Q4_0x8, Q4_0x8.ActivationKind())
	}
}

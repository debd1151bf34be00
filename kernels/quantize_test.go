package kernels_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/kernels"
)

const quantModels = "../testdata/models/"

// The reference's quantize tool made every tiny-TYPE.gguf from tiny-f32.gguf
// ("pure": every 2-D tensor in TYPE, norms kept in F32). Quantizing the F32
// tensors again must give the same bytes.
func TestQuantizeRowMatchesReferenceFiles(t *testing.T) {
	src, err := gguf.Open(quantModels + "tiny-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, name := range []string{"f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k_s", "q5_k_s", "q6_k", "q4_k_m"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(quantModels + "tiny-" + name + ".gguf")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			quantized := 0
			for i := range f.Tensors {
				want := &f.Tensors[i]
				orig, ok := src.Tensor(want.Name)
				if !ok {
					t.Fatalf("%s: not in tiny-f32.gguf", want.Name)
				}
				if want.Type == kernels.F32 {
					if !bytes.Equal(want.Data, orig.Data) {
						t.Errorf("%s: F32 tensor differs from the original", want.Name)
					}
					continue
				}
				checkQuantizedTensor(t, want, orig)
				quantized++
			}
			if quantized < 30 {
				t.Fatalf("only %d quantized tensors", quantized)
			}
		})
	}
}

// checkQuantizedTensor quantizes the F32 tensor orig to want's type row by row
// and compares the bytes with want's.
func checkQuantizedTensor(t *testing.T, want, orig *gguf.Tensor) {
	t.Helper()
	cols := int(orig.Dims[0])
	rowBytes, err := want.Type.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, cols)
	got := make([]byte, rowBytes)
	bad := 0
	for r := range int(orig.Rows()) {
		kernels.DequantizeRow(kernels.F32, orig.Data[r*cols*4:], x)
		kernels.QuantizeRow(want.Type, x, got)
		if exp := want.Data[r*rowBytes : (r+1)*rowBytes]; !bytes.Equal(got, exp) {
			if bad == 0 {
				at := firstDiff(got, exp)
				t.Errorf("%s (%v) row %d: first difference at byte %d: %#x, reference %#x", want.Name, want.Type, r, at, got[at], exp[at])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s (%v): %d of %d rows differ", want.Name, want.Type, bad, orig.Rows())
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// quantTypes are the types QuantizeRow supports, with the largest error of a
// dequantized value relative to the largest magnitude of its block
// (maxErr), and the largest root-mean-square error of a row of normal values
// relative to their standard deviation (maxNRMSE).
var quantTypes = []struct {
	typ      kernels.Type
	maxErr   float64
	maxNRMSE float64
}{
	{kernels.F32, 0, 0},
	{kernels.F16, 1.0 / 2048, 1.0 / 2048},
	{kernels.BF16, 1.0 / 256, 1.0 / 256},
	{kernels.Q8_0, 0.5/127 + 1.0/1024, 0.012},
	{kernels.Q4_0, 1.0/8 + 1.0/1024, 0.12},
	{kernels.Q4_1, 1.0/15 + 1.0/512, 0.1},
	{kernels.Q5_0, 1.0/16 + 1.0/1024, 0.06},
	{kernels.Q5_1, 1.0/31 + 1.0/512, 0.05},
	{kernels.Q4_K, 0.25, 0.11},
	{kernels.Q5_K, 0.125, 0.055},
	{kernels.Q6_K, 0.07, 0.03},
}

func TestQuantizeRowRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, qt := range quantTypes {
		bs := qt.typ.BlockSize()
		if bs == 1 {
			bs = kernels.QK
		}
		for _, blocks := range []int{1, 2, 3, 5, 8, 13} {
			for _, scale := range []float64{1e-3, 0.02, 1, 300} {
				n := blocks * bs
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * scale)
				}
				if blocks == 3 {
					x[n/2] *= 40 // an outlier
				}
				checkRoundTrip(t, qt.typ, x, qt.maxErr, qt.maxNRMSE, fmt.Sprintf("%d blocks, scale %g", blocks, scale))
			}
		}
	}
}

// checkRoundTrip quantizes and dequantizes x and checks the errors (see
// quantTypes); the NRMSE bound applies only to rows without an outlier.
func checkRoundTrip(t *testing.T, typ kernels.Type, x []float32, maxErr, maxNRMSE float64, what string) {
	t.Helper()
	n, err := typ.RowBytes(len(x))
	if err != nil {
		t.Fatal(err)
	}
	q := make([]byte, n)
	kernels.QuantizeRow(typ, x, q)
	y := make([]float32, len(x))
	kernels.DequantizeRow(typ, q, y)
	bs := typ.BlockSize()
	if bs == 1 { // float types: relative to the largest magnitude of 32 values
		bs = kernels.QK
	}
	var se, sx float64
	worst := 0.0
	for b := 0; b < len(x); b += bs {
		amax := 0.0
		for _, v := range x[b : b+bs] {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		for i := b; i < b+bs; i++ {
			d := math.Abs(float64(y[i]) - float64(x[i]))
			if amax > 0 {
				worst = math.Max(worst, d/amax)
			}
			se += d * d
			sx += float64(x[i]) * float64(x[i])
		}
	}
	if worst > maxErr {
		t.Errorf("%v, %s: error %.4g of the block's largest magnitude, want ≤ %.4g", typ, what, worst, maxErr)
	}
	if nrmse := math.Sqrt(se / sx); nrmse > maxNRMSE && !hasOutlier(x) {
		t.Errorf("%v, %s: NRMSE %.4g, want ≤ %.4g", typ, what, nrmse, maxNRMSE)
	}
}

func hasOutlier(x []float32) bool {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	rms := math.Sqrt(s / float64(len(x)))
	for _, v := range x {
		if math.Abs(float64(v)) > 8*rms {
			return true
		}
	}
	return false
}

func TestQuantizeRowSpecialBlocks(t *testing.T) {
	for _, qt := range quantTypes {
		n := max(qt.typ.BlockSize(), kernels.QK)
		cases := map[string][]float32{
			"zeros":    make([]float32, n),
			"constant": constRow(n, 0.75),
			"negative": constRow(n, -3),
			"tiny":     constRow(n, 1e-20),
			"one":      oneHot(n, 5, -2.5),
		}
		for name, x := range cases {
			nb, _ := qt.typ.RowBytes(n)
			q := make([]byte, nb)
			kernels.QuantizeRow(qt.typ, x, q)
			y := make([]float32, n)
			kernels.DequantizeRow(qt.typ, q, y)
			_, amax := minMaxAbs(x)
			for i := range x {
				if d := math.Abs(float64(y[i] - x[i])); d > 1e-3*amax && name != "tiny" {
					t.Errorf("%v %s: value %d = %v, want %v", qt.typ, name, i, y[i], x[i])
					break
				}
				if math.IsNaN(float64(y[i])) || math.IsInf(float64(y[i]), 0) {
					t.Fatalf("%v %s: value %d = %v", qt.typ, name, i, y[i])
				}
			}
		}
	}
}

func minMaxAbs(x []float32) (lo, amax float64) {
	lo = math.Inf(1)
	for _, v := range x {
		lo = math.Min(lo, float64(v))
		amax = math.Max(amax, math.Abs(float64(v)))
	}
	return lo, amax
}

func constRow(n int, v float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = v
	}
	return x
}

func oneHot(n, at int, v float32) []float32 {
	x := make([]float32, n)
	x[at] = v
	return x
}

func TestQuantizeRowNoAlloc(t *testing.T) {
	x := make([]float32, 4*kernels.QKK)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	for _, qt := range quantTypes {
		nb, _ := qt.typ.RowBytes(len(x))
		q := make([]byte, nb)
		if a := testing.AllocsPerRun(3, func() { kernels.QuantizeRow(qt.typ, x, q) }); a != 0 {
			t.Errorf("%v: %v allocations", qt.typ, a)
		}
	}
}

func TestQuantizeRowRejects(t *testing.T) {
	for _, c := range []struct {
		typ kernels.Type
		n   int
		dst int
	}{
		{kernels.Q4_K, 128, 72},  // not a whole super-block
		{kernels.Q8_0, 32, 33},   // destination too small
		{kernels.Q2_K, 256, 84},  // not supported
		{kernels.Type(99), 1, 4}, // unknown
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v: %d values into %d bytes did not panic", c.typ, c.n, c.dst)
				}
			}()
			kernels.QuantizeRow(c.typ, make([]float32, c.n), make([]byte, c.dst))
		}()
	}
	if kernels.CanQuantize(kernels.Q2_K) || !kernels.CanQuantize(kernels.Q6_K) {
		t.Error("CanQuantize")
	}
}

func BenchmarkQuantizeRow(b *testing.B) {
	x := make([]float32, 4096)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 0.02)
	}
	for _, typ := range []kernels.Type{kernels.Q8_0, kernels.Q4_0, kernels.Q4_K, kernels.Q5_K, kernels.Q6_K} {
		nb, _ := typ.RowBytes(len(x))
		q := make([]byte, nb)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				kernels.QuantizeRow(typ, x, q)
			}
		})
	}
}

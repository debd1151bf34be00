package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// kvRows returns rows random rows of n values, some blocks all zero and
// some with a large magnitude.
func kvRows(rng *rand.Rand, rows, n int) []float32 {
	x := make([]float32, rows*n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for b := 0; b < len(x)/QK; b += 7 {
		clear(x[b*QK : (b+1)*QK])
	}
	for b := 3; b < len(x)/QK; b += 11 {
		for j := range QK {
			x[b*QK+j] *= 1000
		}
	}
	return x
}

// q8Cache returns rows random rows of width values in Q8_0 blocks, and the
// bytes of a row.
func q8Cache(rng *rand.Rand, rows, width int) (kv []byte, stride int) {
	stride = width / QK * q8_0Bytes
	kv = make([]byte, rows*stride)
	x := kvRows(rng, rows, width)
	for r := range rows {
		QuantizeQ8_0Blocks(kv[r*stride:], x[r*width:(r+1)*width])
	}
	return kv, stride
}

// TestQuantizeQ8_0Blocks checks that the blocks hold the quants and scales
// of QuantizeActivation, every tier, and that they dequantize within half a
// step of the input.
func TestQuantizeQ8_0Blocks(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, n := range []int{32, 64, 128, 256} {
			x := kvRows(rng, 1, n)
			dst := make([]byte, n/QK*q8_0Bytes+5)
			QuantizeQ8_0Blocks(dst, x)
			var a Activation
			QuantizeActivation(&a, Q8_0, x)
			for b := range n / QK {
				if d := f16at(dst, b*q8_0Bytes); d != a.D[b] {
					t.Fatalf("n %d block %d: scale %g, QuantizeActivation's %g", n, b, d, a.D[b])
				}
				for j := range QK {
					if q := int8(dst[b*q8_0Bytes+2+j]); q != a.Qs[b*QK+j] {
						t.Fatalf("n %d value %d: quant %d, QuantizeActivation's %d", n, b*QK+j, q, a.Qs[b*QK+j])
					}
				}
			}
			y := make([]float32, n)
			DequantizeRow(Q8_0, dst, y)
			for i := range x {
				d := f16at(dst, i/QK*q8_0Bytes)
				if e := math.Abs(float64(y[i] - x[i])); e > 0.51*float64(d)+1e-3*math.Abs(float64(x[i])) {
					t.Fatalf("n %d value %d: %g dequantizes to %g (step %g)", n, i, x[i], y[i], d)
				}
			}
		}
	})
}

// TestDotsQ8_0 checks DotsQ8_0 against DotRow row by row, bit for bit, on
// every tier, with a stride longer than a row (a head's part of a row).
func TestDotsQ8_0(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		const rows, width, hd = 9, 256, 64
		kv, stride := q8Cache(rng, rows, width)
		var q Activation
		QuantizeActivation(&q, Q8_0, kvRows(rng, 1, hd))
		for _, off := range []int{0, hd / QK * q8_0Bytes, 3 * hd / QK * q8_0Bytes} {
			out := make([]float32, rows)
			DotsQ8_0(out, &q, kv[off:], stride)
			for r := range rows {
				if want := DotRow(Q8_0, kv[off+r*stride:], &q); out[r] != want {
					t.Errorf("offset %d row %d: %g, DotRow %g", off, r, out[r], want)
				}
			}
		}
		DotsQ8_0(nil, &q, nil, stride) // no rows: nothing read
	})
}

// TestAxpysQ8_0 checks AxpysQ8_0 against dequantizing each row and adding
// it, weighted, in order, bit for bit.
func TestAxpysQ8_0(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows, width, hd = 7, 128, 64
	kv, stride := q8Cache(rng, rows, width)
	alpha := make([]float32, rows)
	for i := range alpha {
		alpha[i] = rng.Float32()
	}
	off := hd / QK * q8_0Bytes // the second head
	got, want := make([]float32, hd), make([]float32, hd)
	for i := range got {
		got[i] = float32(i)
		want[i] = float32(i)
	}
	AxpysQ8_0(got, alpha, kv[off:], stride)
	v := make([]float32, hd)
	for r, a := range alpha {
		DequantizeRow(Q8_0, kv[off+r*stride:], v)
		for i := range want {
			want[i] += float32(a * v[i])
		}
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("value %d: %g, want %g", i, got[i], want[i])
		}
	}
	AxpysQ8_0(got, nil, nil, stride) // no rows: nothing read
}

// TestTwinAxpysQ8_0 compares AxpysQ8_0 with its portable twin bit for bit,
// every tier: head sizes of one to eight blocks, row counts around the
// loops' steps, strides wider than a head (a cache row holds every head),
// half scales of every style (zero, the largest, subnormal, mixed), weights
// that include 0, unaligned slices, and output slices followed by guard
// values.
func TestTwinAxpysQ8_0(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		for _, hd := range []int{32, 64, 96, 128, 256} {
			for _, rows := range []int{1, 2, 3, 4, 5, 8, 9, 33} {
				for _, style := range twinScaleStyles {
					stride := (hd/QK)*q8_0Bytes*(1+rows%3) + 7*(rows%2)
					kv := make([]byte, (rows-1)*stride+hd/QK*q8_0Bytes)
					for i := range kv {
						kv[i] = byte(r.Uint32())
					}
					for k := range rows {
						for b := range hd / QK {
							h := twinScale(r, style)
							kv[k*stride+b*q8_0Bytes], kv[k*stride+b*q8_0Bytes+1] = byte(h), byte(h>>8)
						}
					}
					alpha := make([]float32, rows)
					for k := range alpha {
						alpha[k] = float32(r.Float64())
					}
					alpha[rows/2] = 0
					y := make([]float32, hd)
					for i := range y {
						y[i] = float32(r.NormFloat64())
					}
					want := append([]float32(nil), y...)
					axpysQ8_0Generic(want, alpha, kv, stride)
					got := guarded(make([]float32, hd), rows%8, guardD)
					copy(got, y)
					AxpysQ8_0(got, atOffset(alpha, rows%8), atOffset(kv, rows%16), stride)
					for j := range want {
						if !sameBits(got[j], want[j]) {
							t.Fatalf("hd=%d rows=%d %s: y[%d] = %v, twin %v", hd, rows, style, j, got[j], want[j])
						}
					}
					if err := checkGuard(got, guardD, "y"); err != nil {
						t.Fatalf("hd=%d rows=%d %s: %v", hd, rows, style, err)
					}
				}
			}
		}
	})
}

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// Benchmarks of the kernels on the shapes of decoding. Every benchmark sets the
// bytes of weights (or of KV cache, or of activation input) read per operation,
// so that MB/s shows regressions; compare with -tags purego for the portable
// twins.

// benchRowLen is the length of one weight row (the hidden size of a 7B model).
const benchRowLen = 4096

// benchTypes are the weight types benchmarked, those with a fused dot.
var benchTypes = []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}

// benchMatVecTypes are the weight types of the matrix-vector benchmarks: those
// of the models decoding cares about.
var benchMatVecTypes = []Type{F16, Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K}

// fillWeights turns random bytes w into a valid row (or rows) of type t: every
// half-precision factor is set to a random normal scale, and float weights to
// random normal values, so no NaNs or subnormals distort the timing.
func fillWeights(r *rand.Rand, t Type, w []byte) {
	switch t {
	case F32:
		for i := 0; i+4 <= len(w); i += 4 {
			binary.LittleEndian.PutUint32(w[i:], math.Float32bits(float32(r.NormFloat64()*0.05)))
		}
		return
	case F16:
		for i := 0; i+2 <= len(w); i += 2 {
			binary.LittleEndian.PutUint16(w[i:], FP32ToFP16(float32(r.NormFloat64()*0.05)))
		}
		return
	case BF16:
		for i := 0; i+2 <= len(w); i += 2 {
			binary.LittleEndian.PutUint16(w[i:], FP32ToBF16(float32(r.NormFloat64()*0.05)))
		}
		return
	}
	var offs []int
	switch t {
	case Q4_0, Q5_0, Q8_0:
		offs = []int{0}
	case Q4_1, Q5_1:
		offs = []int{0, 2}
	case Q2_K:
		offs = []int{q2KD, q2KDmin}
	case Q3_K:
		offs = []int{q3KD}
	case Q4_K, Q5_K:
		offs = []int{q4KD, q4KDmin}
	case Q6_K:
		offs = []int{q6KD}
	}
	bb := t.BlockBytes()
	for b := 0; b+bb <= len(w); b += bb {
		for _, off := range offs {
			binary.LittleEndian.PutUint16(w[b+off:], twinScale(r, "normal"))
		}
	}
}

// benchRow returns one random row of benchRowLen values of type t.
func benchRow(r *rand.Rand, t Type) []byte {
	rowBytes, err := t.RowBytes(benchRowLen)
	if err != nil {
		panic(err)
	}
	w := make([]byte, rowBytes)
	randomBytes(r, w)
	fillWeights(r, t, w)
	return w
}

// randomBytes fills b with random bytes.
func randomBytes(r *rand.Rand, b []byte) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
}

// benchActivation returns a random activation of benchRowLen values quantized for
// weights of type t.
func benchActivation(r *rand.Rand, t Type) *Activation {
	a := new(Activation)
	QuantizeActivation(a, t.ActivationKind(), twinInput(r, "outliers", benchRowLen))
	return a
}

// benchSink keeps results alive.
var benchSink float32

// BenchmarkDotRow is one row of 4096 values in cache, per weight type: the
// speed of the kernel itself.
func BenchmarkDotRow(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, t := range benchTypes {
		w, a := benchRow(r, t), benchActivation(r, t)
		b.Run(t.String(), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			var s float32
			for b.Loop() {
				s += DotRow(t, w, a)
			}
			benchSink = s
		})
	}
}

// BenchmarkMatVecCached multiplies a matrix of 64 rows that stays in the L2
// cache with a vector: the kernels' speed on whole matrices (where kernels
// that take several rows at once can help), without the memory's limit.
func BenchmarkMatVecCached(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, t := range benchMatVecTypes {
		rowBytes, _ := t.RowBytes(benchRowLen)
		w := make([]byte, 64*rowBytes)
		randomBytes(r, w)
		fillWeights(r, t, w)
		a := benchActivation(r, t)
		out := make([]float32, 64)
		b.Run(t.String(), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				MatVec(t, w, rowBytes, a, out)
			}
		})
	}
}

// BenchmarkDotRowActs multiplies one row with a group of four activations, as
// the prompt prefill does (where kernels that unpack the row once for all four
// can help). The bytes are those of the row, once per activation.
func BenchmarkDotRowActs(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, t := range benchMatVecTypes {
		w := benchRow(r, t)
		acts := make([]Activation, 4)
		for k := range acts {
			acts[k] = *benchActivation(r, t)
		}
		out := make([]float32, len(acts))
		b.Run(t.String(), func(b *testing.B) {
			b.SetBytes(int64(len(acts) * len(w)))
			for b.Loop() {
				dotRowActs(t, w, acts, out, 1)
			}
		})
	}
}

// benchMatrixBytes is the size of the matrix of the MatVec benchmarks, larger
// than the last-level caches so that the weights stream from memory as in the
// decoding of a real model.
const benchMatrixBytes = 512 << 20

// benchMatrix returns a matrix of rows of benchRowLen values of type t taking
// about benchMatrixBytes, reusing buf, and the row size.
func benchMatrix(r *rand.Rand, t Type, buf []byte) (w []byte, rowBytes int, rows int) {
	rowBytes, err := t.RowBytes(benchRowLen)
	if err != nil {
		panic(err)
	}
	rows = len(buf) / rowBytes
	w = buf[:rows*rowBytes]
	fillWeights(r, t, w)
	return w, rowBytes, rows
}

// BenchmarkMatVec multiplies a matrix larger than the caches with a vector on
// one thread: the single-core bandwidth the kernels reach.
func BenchmarkMatVec(b *testing.B) {
	benchMatVec(b, nil)
}

// BenchmarkMatVecPool is BenchmarkMatVec split over a Pool of GOMAXPROCS
// threads, as decoding runs it.
func BenchmarkMatVecPool(b *testing.B) {
	p := NewPool(runtime.GOMAXPROCS(0))
	defer p.Close()
	benchMatVec(b, p)
}

func benchMatVec(b *testing.B, p *Pool) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, benchMatrixBytes)
	randomBytes(r, buf)
	var job MatVecJob
	for _, t := range benchMatVecTypes {
		w, rowBytes, rows := benchMatrix(r, t, buf)
		a := benchActivation(r, t)
		out := make([]float32, rows)
		b.Run(t.String(), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				if p == nil {
					MatVec(t, w, rowBytes, a, out)
				} else {
					p.MatVec(&job, t, w, rowBytes, a, out)
				}
			}
		})
	}
}

// BenchmarkQuantizeActivation quantizes 4096 values to each activation kind;
// the bytes are those of the float input.
func BenchmarkQuantizeActivation(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x := twinInput(r, "outliers", benchRowLen)
	var a Activation
	for _, kind := range []Type{Q8_0, Q8_1, Q8_K, F16, BF16} {
		b.Run(kind.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				QuantizeActivation(&a, kind, x)
			}
		})
	}
}

// benchHeadDim is the head size of the attention benchmarks (TinyLlama, Llama 2
// 7B use 64 and 128).
const benchHeadDim = 64

// benchAttRows is the number of cache rows of the multi-row attention
// benchmarks: a block of scores (the engine's attBlock).
const benchAttRows = 64

// BenchmarkAttention runs the FP16 KV cache kernels of attention on one head:
// the score of a query with one cached key (DotF32F16) and the weighted sum
// of one cached value (AxpyF32F16), then the same over a block of
// benchAttRows cache rows of four heads each (DotsF32F16, AxpysF32F16), as
// attention calls them. The bytes are those of the head's part of the rows.
func BenchmarkAttention(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, hd := range []int{benchHeadDim, 2 * benchHeadDim} {
		q := randNormal32(r, hd, 1)
		kv := make([]uint16, benchAttRows*4*hd)
		FP32ToFP16Slice(kv, randNormal32(r, len(kv), 1))
		out := make([]float32, hd)
		scores := make([]float32, benchAttRows)
		for i := range scores {
			scores[i] = 1e-3
		}
		b.Run("DotsF32F16/"+strconv.Itoa(hd), func(b *testing.B) {
			b.SetBytes(int64(2 * hd * benchAttRows))
			for b.Loop() {
				DotsF32F16(scores, q, kv, 4*hd)
			}
		})
		b.Run("AxpysF32F16/"+strconv.Itoa(hd), func(b *testing.B) {
			b.SetBytes(int64(2 * hd * benchAttRows))
			for b.Loop() {
				AxpysF32F16(out, scores, kv, 4*hd)
			}
		})
		b.Run("DotF32F16/"+strconv.Itoa(hd), func(b *testing.B) {
			b.SetBytes(int64(2 * hd))
			var s float32
			for b.Loop() {
				s += DotF32F16(q, kv)
			}
			benchSink = s
		})
		b.Run("AxpyF32F16/"+strconv.Itoa(hd), func(b *testing.B) {
			b.SetBytes(int64(2 * hd))
			for b.Loop() {
				AxpyF32F16(out, 1e-3, kv)
			}
		})
	}
}

// BenchmarkDotF32Slice is DotF32 on a row of 4096 values.
func BenchmarkDotF32Slice(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x, y := randNormal32(r, benchRowLen, 1), randNormal32(r, benchRowLen, 1)
	b.SetBytes(4 * benchRowLen)
	var s float32
	for b.Loop() {
		s += DotF32(x, y)
	}
	benchSink = s
}

// BenchmarkRMSNorm normalises a TinyLlama-sized residual (2048 values); the
// bytes are those of x.
func BenchmarkRMSNorm(b *testing.B) {
	benchElementwise(b, 4, func(out, x, w []float32) { RMSNorm(out, x, w, 1e-5) })
}

// BenchmarkFP32ToFP16Slice converts a TinyLlama key or value row (256
// values) into the FP16 KV cache; the bytes are those of the float32 input.
func BenchmarkFP32ToFP16Slice(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	x := randNormal32(r, 256, 1)
	h := make([]uint16, len(x))
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		FP32ToFP16Slice(h, x)
	}
}

// BenchmarkGELUMul is Gemma 3 1B's GEGLU on one token (6912 values); the
// bytes are those of gate and up. Each operation first restores gate from a
// copy (a memmove of 27 KiB, included in the time), so that the table is
// indexed with the same spread of activations every time rather than with
// values that repeated products have driven towards zero.
func BenchmarkGELUMul(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 16))
	x, up := randNormal32(r, 6912, 2), randNormal32(r, 6912, 1)
	gate := make([]float32, len(x))
	b.SetBytes(int64(8 * len(x)))
	for b.Loop() {
		copy(gate, x)
		GELUMul(gate, up)
	}
}

// BenchmarkMulF32 and BenchmarkMulAddF32 are the short convolution's
// elementwise steps on 2048 values; the bytes are those of the inputs read (a
// and b, and dst for MulAddF32).
func BenchmarkMulF32(b *testing.B) { benchElementwise(b, 8, MulF32) }

func BenchmarkMulAddF32(b *testing.B) { benchElementwise(b, 12, MulAddF32) }

// benchElementwise times f(dst, a, b) on 2048 random values (a residual of
// TinyLlama's size), counting bytesPerValue bytes per value.
func benchElementwise(b *testing.B, bytesPerValue int, f func(dst, a, b []float32)) {
	r := rand.New(rand.NewPCG(17, 18))
	x, y := randNormal32(r, 2048, 1), randNormal32(r, 2048, 1)
	dst := make([]float32, len(x))
	b.SetBytes(int64(bytesPerValue * len(x)))
	for b.Loop() {
		f(dst, x, y)
	}
}

// BenchmarkRoundFP16 rounds 4096 values to half precision and back, as
// attention rounds its query and its softmax weights: "query" holds normal
// values (σ = 1), "weights" the softmax of 4096 scores with σ = 3, most of
// them small (many round to subnormal halves or to zero). The bytes are those
// of the float32 input.
func BenchmarkRoundFP16(b *testing.B) {
	r := rand.New(rand.NewPCG(19, 20))
	query := randNormal32(r, benchRowLen, 1)
	weights := randNormal32(r, benchRowLen, 3)
	ExpSub(weights, 0)
	var sum float64
	for _, v := range weights {
		sum += float64(v)
	}
	ScaleF32(weights, float32(1/sum))
	dst := make([]float32, benchRowLen)
	for _, c := range []struct {
		name string
		src  []float32
	}{{"query", query}, {"weights", weights}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(4 * benchRowLen)
			for b.Loop() {
				RoundFP16(dst, c.src)
			}
		})
	}
}

// BenchmarkDeltaRule runs one token of the gated delta rule on a 128×128
// state (a V head of the Qwen3.5 models): "fused" is DeltaRuleF32, one pass
// over the state; "unfused" the four passes it replaced (ScaleF32, DotF32,
// AxpyF32, DotF32). Bytes are those of the state.
func BenchmarkDeltaRule(b *testing.B) {
	const S = 128
	r := rand.New(rand.NewPCG(41, 42))
	M := randNormal32(r, S*S, 0.05)
	k, q, v := randNormal32(r, S, 0.09), randNormal32(r, S, 0.09), randNormal32(r, S, 1)
	// No decay, so that the repeated updates leave no subnormals in the state.
	decay, beta, scale := float32(1), float32(0.5), float32(1/math.Sqrt(S))
	vv := make([]float32, S)
	b.Run("fused", func(b *testing.B) {
		b.SetBytes(4 * S * S)
		for b.Loop() {
			copy(vv, v)
			DeltaRuleF32(M, S, k, q, vv, decay, beta, scale)
		}
	})
	b.Run("unfused", func(b *testing.B) {
		b.SetBytes(4 * S * S)
		var delta [S]float32
		for b.Loop() {
			copy(vv, v)
			ScaleF32(M, decay)
			for r := range S {
				delta[r] = (vv[r] - DotF32(M[r*S:(r+1)*S], k)) * beta
			}
			for r := range S {
				AxpyF32(M[r*S:(r+1)*S], delta[r], k)
			}
			for r := range S {
				vv[r] = DotF32(M[r*S:(r+1)*S], q) * scale
			}
		}
	})
}

// BenchmarkMatMulInterleaved compares Q4_0 and Q4_K matrices of 2048 ×
// 2048 read as the file holds them with the same matrices interleaved
// (Q4_0x8, Q4_Kx8), on one thread, for one activation (decode), four (four
// sequences decoding at once) and 32 (a prefill batch).
func BenchmarkMatMulInterleaved(b *testing.B) {
	const rows, n = 2048, 2048
	r := rand.New(rand.NewPCG(15, 16))
	p := NewPool(1)
	defer p.Close()
	for _, t := range []Type{Q4_0, Q4_K} {
		rowBytes, _ := t.RowBytes(n)
		w := make([]byte, rows*rowBytes)
		randomBytes(r, w)
		fillWeights(r, t, w)
		x8 := make([]byte, InterleavedBytes(t, rows, rowBytes))
		if err := Interleave(t, x8, w, rows, rowBytes); err != nil {
			b.Fatal(err)
		}
		for _, batch := range []int{1, 4, 32} {
			acts := randomActivations(r, t.ActivationKind(), batch, n)
			out := make([]float32, batch*rows)
			for _, c := range []struct {
				t Type
				w []byte
			}{{t, w}, {Interleaved(t), x8}} {
				var job MatMulJob
				b.Run(c.t.String()+"/"+strconv.Itoa(batch), func(b *testing.B) {
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						p.MatMul(&job, c.t, c.w, rowBytes, acts, out)
					}
				})
			}
		}
	}
}

// BenchmarkMatVecPoolInterleaved is BenchmarkMatVecPool's Q4_0 and Q4_K
// cases with the matrix interleaved: the bandwidth decoding reaches with
// them.
func BenchmarkMatVecPoolInterleaved(b *testing.B) {
	p := NewPool(runtime.GOMAXPROCS(0))
	defer p.Close()
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, benchMatrixBytes)
	randomBytes(r, buf)
	for _, t := range []Type{Q4_0, Q4_K} {
		w, rowBytes, rows := benchMatrix(r, t, buf)
		rows &^= 7
		w = w[:rows*rowBytes]
		x8 := make([]byte, InterleavedBytes(t, rows, rowBytes))
		if err := Interleave(t, x8, w, rows, rowBytes); err != nil {
			b.Fatal(err)
		}
		acts := []Activation{*benchActivation(r, t)}
		out := make([]float32, rows)
		var job MatMulJob
		b.Run(Interleaved(t).String(), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				p.MatMul(&job, Interleaved(t), x8, rowBytes, acts, out)
			}
		})
	}
}

// Package synth writes GGUF models with deterministic random weights in the
// exact shapes of real models, so that benchmarks and tests need no downloads.
//
// A synthetic model has the tensors, hyper-parameters and per-tensor types that
// the reference implementation's converter and quantizer give the real model,
// and a placeholder vocabulary of the right size. Its weights are random but
// numerically tame (matrices with a standard deviation of 0.02, norm weights of
// 1), so the forward pass costs exactly what the real model's does.
package synth

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Shape holds the hyper-parameters of a model: everything that determines the
// tensors of its file.
type Shape struct {
	Name     string  // short name, e.g. "tinyllama-1.1b"
	Model    string  // the real model it copies, e.g. "TinyLlama-1.1B-Chat-v1.0"
	Arch     string  // GGUF architecture: "llama" or "qwen2" (Q/K/V biases)
	NEmbd    int     // hidden size
	NLayer   int     // transformer blocks
	NHead    int     // query heads
	NHeadKV  int     // key/value heads
	NFF      int     // feed-forward hidden size
	NVocab   int     // vocabulary size
	NCtx     int     // training context length
	RopeBase float32 // RoPE frequency base
	NormEps  float32 // RMSNorm epsilon
	Tied     bool    // the output projection is the token embedding matrix
	// Llama3Rope, when set, adds the rope_freqs.weight tensor of Llama 3.1+
	// models (per-frequency divisors of their long-context RoPE scaling).
	Llama3Rope *Llama3Rope
}

// Llama3Rope is the RoPE scaling of Llama 3.1 and later models.
type Llama3Rope struct {
	Factor         float64 // scale of the lowest frequencies
	LowFreqFactor  float64
	HighFreqFactor float64
	OrigCtx        float64 // original_max_position_embeddings
}

// HeadDim is the dimension of one attention head.
func (s *Shape) HeadDim() int { return s.NEmbd / s.NHead }

// HasQKVBias reports whether the Q, K and V projections have biases (qwen2).
func (s *Shape) HasQKVBias() bool { return s.Arch == "qwen2" }

// Params is the number of weights of the model (the token embeddings counted
// once when they are tied).
func (s *Shape) Params() int64 {
	var n int64
	for _, t := range s.tensors() {
		n += int64(t.cols) * int64(t.rows)
	}
	return n
}

// shapes are the known shapes, with the hyper-parameters of the models'
// config.json files.
var shapes = []Shape{
	{
		Name: "tiny", Model: "the tiny test model (testdata/models/tiny-*.gguf)", Arch: "llama",
		NEmbd: 256, NLayer: 4, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 512, NCtx: 512,
		RopeBase: 10000, NormEps: 1e-5,
	},
	{
		Name: "tiny-qwen2", Model: "a tiny qwen2 model (testdata/models/qwen2-tiny-q8_0.gguf with a 512-token vocabulary)", Arch: "qwen2",
		NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 512, NCtx: 1024,
		RopeBase: 1e6, NormEps: 1e-5, Tied: true,
	},
	{
		Name: "smollm-135m", Model: "SmolLM-135M", Arch: "llama",
		NEmbd: 576, NLayer: 30, NHead: 9, NHeadKV: 3, NFF: 1536, NVocab: 49152, NCtx: 2048,
		RopeBase: 10000, NormEps: 1e-5, Tied: true,
	},
	{
		Name: "smollm-360m", Model: "SmolLM-360M", Arch: "llama",
		NEmbd: 960, NLayer: 32, NHead: 15, NHeadKV: 5, NFF: 2560, NVocab: 49152, NCtx: 2048,
		RopeBase: 10000, NormEps: 1e-5, Tied: true,
	},
	{
		Name: "qwen2.5-0.5b", Model: "Qwen2.5-0.5B", Arch: "qwen2",
		NEmbd: 896, NLayer: 24, NHead: 14, NHeadKV: 2, NFF: 4864, NVocab: 151936, NCtx: 32768,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
	},
	{
		Name: "tinyllama-1.1b", Model: "TinyLlama-1.1B-Chat-v1.0", Arch: "llama",
		NEmbd: 2048, NLayer: 22, NHead: 32, NHeadKV: 4, NFF: 5632, NVocab: 32000, NCtx: 2048,
		RopeBase: 10000, NormEps: 1e-5,
	},
	{
		Name: "llama-3.2-1b", Model: "Llama-3.2-1B", Arch: "llama",
		NEmbd: 2048, NLayer: 16, NHead: 32, NHeadKV: 8, NFF: 8192, NVocab: 128256, NCtx: 131072,
		RopeBase: 500000, NormEps: 1e-5, Tied: true,
		Llama3Rope: &Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 8192},
	},
}

// Shapes returns the known shapes, smallest first.
func Shapes() []Shape {
	out := append([]Shape(nil), shapes...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Params() < out[j].Params() })
	return out
}

// ShapeNames returns the names of the known shapes, smallest first.
func ShapeNames() []string {
	var names []string
	for _, s := range Shapes() {
		names = append(names, s.Name)
	}
	return names
}

// LookupShape returns the shape with the given name (case-insensitive).
func LookupShape(name string) (Shape, error) {
	for _, s := range shapes {
		if strings.EqualFold(s.Name, name) {
			return s, nil
		}
	}
	return Shape{}, fmt.Errorf("synth: unknown shape %q (known: %s)", name, strings.Join(ShapeNames(), ", "))
}

// ropeFactors returns the rope_freqs.weight values of a Llama 3 RoPE scaling:
// for each frequency of a head, 1 for short wavelengths, Factor for long ones
// and a smooth blend between, as the reference's converter computes them.
func (r *Llama3Rope) ropeFactors(headDim int, base float32) []float32 {
	lowWavelen := r.OrigCtx / r.LowFreqFactor
	highWavelen := r.OrigCtx / r.HighFreqFactor
	out := make([]float32, headDim/2)
	for i := range out {
		freq := 1 / math.Pow(float64(base), float64(2*i)/float64(headDim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = float32(r.Factor)
		default:
			smooth := (r.OrigCtx/wavelen - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/r.Factor + smooth))
		}
	}
	return out
}

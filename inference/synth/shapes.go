// Package synth writes GGUF models with deterministic random weights in the
// exact shapes of real models, so that benchmarks and tests need no downloads.
//
// A synthetic model has the tensors, hyper-parameters and per-tensor types that
// the reference implementation's converter and quantizer give the real model,
// and a placeholder vocabulary of the right size. Its weights are random but
// numerically tame (matrices with a standard deviation of 0.02, norm weights of
// 1, RoPE factors from the model's config), so the forward pass costs exactly
// what the real model's does. The architectures are llama, qwen2, qwen3,
// gemma3, phi3 (Phi-4-mini), lfm2, smollm3, qwen35 (Qwen3.5's Gated DeltaNet
// hybrid) and gemma4 (Gemma 4 E2B), whether or not the engine runs them yet.
package synth

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/edgellm/edgellm/gguf"
)

// Shape holds the hyper-parameters of a model: everything that determines the
// tensors and metadata of its file. Fields that a model does not use are zero.
type Shape struct {
	Name     string  // short name, e.g. "tinyllama-1.1b"
	Model    string  // the real model it copies, e.g. "TinyLlama-1.1B-Chat-v1.0"
	Arch     string  // GGUF architecture: llama, qwen2, qwen3, gemma3, phi3, lfm2, smollm3, qwen35 or gemma4
	NEmbd    int     // hidden size
	NLayer   int     // blocks
	NHead    int     // query heads
	NHeadKV  int     // key/value heads of the attention layers
	NHeadDim int     // head_dim of config.json (written as attention.key_length and value_length); 0: NEmbd/NHead; gemma4: the full-attention layers' global_head_dim
	NFF      int     // feed-forward hidden size (gemma4: of the layers before the shared-KV ones)
	NVocab   int     // vocabulary size
	NCtx     int     // training context length
	RopeBase float32 // RoPE frequency base (of the global layers)
	RopeDim  int     // dimensions of a head that RoPE rotates (Phi-4-mini: 0.75 of them); 0: all
	NormEps  float32 // RMSNorm epsilon
	Tied     bool    // the output projection is the token embedding matrix

	// Layers gives each block's kind, one letter per block (LayerAttention,
	// LayerSliding, LayerNoRope, LayerConv, LayerDeltaNet), as config.json's
	// layer_types or no_rope_layers say; "" means global attention with RoPE
	// everywhere.
	Layers string
	// SlidingWindow is the number of positions a sliding-window layer sees
	// (attention.sliding_window; Phi-4-mini's files carry one its attention
	// does not use).
	SlidingWindow int
	// RopeBaseSWA is the RoPE base of the sliding-window layers.
	RopeBaseSWA float32
	// RopeLinear is the linear RoPE scaling factor of the global layers
	// (rope.scaling.factor); 0 for none.
	RopeLinear float32
	// ConvL is the length of the short convolutions (lfm2's
	// shortconv.l_cache, qwen35's ssm.conv_kernel: linear_conv_kernel_dim).
	ConvL int

	// DeltaNet is the shape of qwen35's Gated DeltaNet layers; nil for other
	// architectures.
	DeltaNet *DeltaNet
	// AttnInterval is qwen35's full_attention_interval: block il has
	// attention iff (il+1) % AttnInterval == 0.
	AttnInterval int
	// RopeSections is qwen35's rope.dimension_sections (config.json's
	// mrope_section, padded with a zero to four).
	RopeSections [4]int32

	// HeadDimSWA is gemma4's head size of the sliding-window layers
	// (config.json's head_dim; NHeadDim is then global_head_dim).
	HeadDimSWA int
	// RopeDimSWA is the number of dimensions RoPE rotates in gemma4's
	// sliding-window layers; 0: all of HeadDimSWA.
	RopeDimSWA int
	// PartialRotary is the share of a full-attention head gemma4's
	// "proportional" RoPE rotates: the rope_freqs.weight tensor leaves the
	// other pairs unrotated (factors of 1e30).
	PartialRotary float64
	// SharedKVLayers is gemma4's num_kv_shared_layers: the last blocks,
	// which read an earlier layer's KV cache and have no K and V of their
	// own.
	SharedKVLayers int
	// DoubleWideFF doubles the feed-forward size of the shared-KV blocks
	// (gemma4's use_double_wide_mlp).
	DoubleWideFF bool
	// PerLayerInput is gemma4's hidden_size_per_layer_input: the width of
	// the per-layer embeddings every block mixes in.
	PerLayerInput int
	// SoftCap is gemma4's final_logit_softcapping.
	SoftCap float32
	// Llama3Rope, when set, adds the rope_freqs.weight tensor of Llama 3.1+
	// models (per-frequency divisors of their long-context RoPE scaling).
	Llama3Rope *Llama3Rope
	// LongRope, when set, adds the rope_factors_long and rope_factors_short
	// tensors of Phi-3/Phi-4 LongRoPE scaling.
	LongRope *LongRope
}

// DeltaNet is the shape of a Gated DeltaNet layer (qwen35's linear
// attention): config.json's linear_num_key_heads, linear_num_value_heads and
// linear_key_head_dim (equal to linear_value_head_dim in every published
// model, and the state's size: ssm.state_size).
type DeltaNet struct {
	KeyHeads   int // ssm.group_count
	ValueHeads int // ssm.time_step_rank
	HeadDim    int // ssm.state_size
}

// convDim is the width of the fused Q, K and V projection, which the
// convolution runs over.
func (d *DeltaNet) convDim() int { return (2*d.KeyHeads + d.ValueHeads) * d.HeadDim }

// innerSize is the width of the values: ssm.inner_size.
func (d *DeltaNet) innerSize() int { return d.ValueHeads * d.HeadDim }

// Llama3Rope is the RoPE scaling of Llama 3.1 and later models.
type Llama3Rope struct {
	Factor         float64 // scale of the lowest frequencies
	LowFreqFactor  float64
	HighFreqFactor float64
	OrigCtx        float64 // original_max_position_embeddings
}

// LongRope is the LongRoPE scaling of Phi-3 and Phi-4 models: per-frequency
// divisors for contexts up to the original length (Short) and beyond (Long),
// rope_scaling's short_factor and long_factor.
type LongRope struct {
	OrigCtx int       // original_max_position_embeddings
	Long    []float32 // nil: all 1
	Short   []float32 // nil: all 1 (Phi-4-mini's short_factor)
}

// AttnFactor is the factor the reference's converter computes for the cosines
// and sines of a LongRoPE model whose context nctx exceeds the original one.
func (r *LongRope) AttnFactor(nctx int) float32 {
	scale := float64(nctx) / float64(r.OrigCtx)
	if scale <= 1 {
		return 1
	}
	return float32(math.Sqrt(1 + math.Log(scale)/math.Log(float64(r.OrigCtx))))
}

// HeadDim is the dimension of one attention head.
func (s *Shape) HeadDim() int {
	if s.NHeadDim > 0 {
		return s.NHeadDim
	}
	return s.NEmbd / s.NHead
}

// RotaryDim is the number of dimensions of a head that RoPE rotates.
func (s *Shape) RotaryDim() int {
	if s.RopeDim > 0 {
		return s.RopeDim
	}
	return s.HeadDim()
}

// LayerKind returns the kind of block il (LayerAttention when Layers is "").
func (s *Shape) LayerKind(il int) byte {
	if s.Layers == "" {
		return LayerAttention
	}
	return s.Layers[il]
}

// attention reports whether block il has attention (rather than a
// convolution or a DeltaNet).
func (s *Shape) attention(il int) bool {
	k := s.LayerKind(il)
	return k != LayerConv && k != LayerDeltaNet
}

// ownsKV reports whether block il has attention with K and V projections of
// its own: gemma4's last SharedKVLayers blocks read another layer's cache.
func (s *Shape) ownsKV(il int) bool {
	return s.attention(il) && il < s.NLayer-s.SharedKVLayers
}

// layerHeadDim is the head size of block il (gemma4's sliding-window layers
// have their own).
func (s *Shape) layerHeadDim(il int) int {
	if s.LayerKind(il) == LayerSliding && s.HeadDimSWA > 0 {
		return s.HeadDimSWA
	}
	return s.HeadDim()
}

// layerFF is the feed-forward size of block il.
func (s *Shape) layerFF(il int) int {
	if s.DoubleWideFF && il >= s.NLayer-s.SharedKVLayers {
		return 2 * s.NFF
	}
	return s.NFF
}

// AttentionLayers is the number of blocks with a KV cache of their own.
func (s *Shape) AttentionLayers() int {
	n := 0
	for il := range s.NLayer {
		if s.ownsKV(il) {
			n++
		}
	}
	return n
}

// KVCacheBytes is the size of an FP16 key/value cache of ctx positions in
// every layer that keeps one (convolution, DeltaNet and gemma4's shared-KV
// layers keep none; a sliding-window layer is counted in full).
func (s *Shape) KVCacheBytes(ctx int) int64 {
	var n int64
	for il := range s.NLayer {
		if s.ownsKV(il) {
			n += int64(ctx) * int64(s.NHeadKV*s.layerHeadDim(il)) * 2 /* K and V */ * 2 /* FP16 */
		}
	}
	return n
}

// HasQKVBias reports whether the Q, K and V projections have biases (qwen2).
func (s *Shape) HasQKVBias() bool { return archSpecs[s.Arch].qkvBias }

// Params is the number of weights of the model (the token embeddings counted
// once when they are tied).
func (s *Shape) Params() int64 {
	var n int64
	for _, t := range s.tensors() {
		n += int64(t.cols) * int64(t.rows)
	}
	return n
}

// DataBytes is the size of the tensor data of a file of type ft, each tensor
// padded to the GGUF alignment: the file's size less its header.
func (s *Shape) DataBytes(ft FileType) (int64, error) {
	if err := s.validate(); err != nil {
		return 0, err
	}
	var n int64
	for _, t := range s.tensors() {
		rb, err := s.tensorType(&t, ft, false).RowBytes(t.cols)
		if err != nil {
			return 0, fmt.Errorf("synth: tensor %q: %w", t.name, err)
		}
		n += alignUp(int64(rb)*int64(t.rows), gguf.DefaultAlignment)
	}
	return n, nil
}

// clone returns a copy of s that shares no memory with it.
func (s Shape) clone() Shape {
	if s.Llama3Rope != nil {
		r := *s.Llama3Rope
		s.Llama3Rope = &r
	}
	if s.LongRope != nil {
		r := *s.LongRope
		r.Long = append([]float32(nil), r.Long...)
		r.Short = append([]float32(nil), r.Short...)
		s.LongRope = &r
	}
	if s.DeltaNet != nil {
		d := *s.DeltaNet
		s.DeltaNet = &d
	}
	return s
}

// phi4MiniLong is the long_factor of Phi-4-mini-instruct's rope_scaling.
var phi4MiniLong = []float32{
	1, 1.118320672, 1.250641126, 1.398617824, 1.564103225, 1.74916897, 1.956131817, 2.187582649,
	2.446418898, 2.735880826, 3.059592084, 3.421605075, 3.826451687, 4.279200023, 4.785517845, 5.351743533,
	5.984965424, 6.693110555, 7.485043894, 8.370679318, 9.36110372, 10.4687158, 11.70738129, 13.09260651,
	14.64173252, 16.37415215, 18.31155283, 20.47818807, 22.90118105, 25.61086418, 28.64115884, 32.03,
	32.1, 32.13, 32.23, 32.6, 32.61, 32.64, 32.66, 32.7,
	32.71, 32.93, 32.97, 33.28, 33.49, 33.5, 44.16, 47.77,
}

// shapes are the known shapes, with the hyper-parameters of the models'
// config.json files. The tiny-ARCH shapes are those of the reference's small
// random models of each architecture (testdata/models/ARCH-tiny-*.gguf).
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
		Name: "tiny-qwen3", Model: "the tiny qwen3 model (testdata/models/qwen3-tiny-q4_k_m.gguf)", Arch: "qwen3",
		NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 2, NHeadDim: 128, NFF: 512, NVocab: 512, NCtx: 40960,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
	},
	{
		Name: "tiny-gemma3", Model: "the tiny gemma3 model (testdata/models/gemma3-tiny-q4_k_m.gguf)", Arch: "gemma3",
		NEmbd: 256, NLayer: 7, NHead: 4, NHeadKV: 2, NHeadDim: 128, NFF: 256, NVocab: 512, NCtx: 32768,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
		Layers: "sssssas", SlidingWindow: 16, RopeBaseSWA: 10000, RopeLinear: 8,
	},
	{
		Name: "tiny-phi3", Model: "the tiny phi3 model (testdata/models/phi3-tiny-q4_k_m.gguf)", Arch: "phi3",
		NEmbd: 256, NLayer: 3, NHead: 4, NHeadKV: 2, NFF: 512, NVocab: 512, NCtx: 131072,
		RopeBase: 10000, RopeDim: 48, NormEps: 1e-5, Tied: true,
		LongRope: &LongRope{OrigCtx: 4096},
	},
	{
		Name: "tiny-lfm2", Model: "the tiny lfm2 model (testdata/models/lfm2-tiny-q4_k_m.gguf)", Arch: "lfm2",
		NEmbd: 256, NLayer: 6, NHead: 4, NHeadKV: 2, NFF: 256, NVocab: 512, NCtx: 128000,
		RopeBase: 1e6, NormEps: 1e-5, Tied: true,
		Layers: "ccacac", ConvL: 3,
	},
	{
		Name: "tiny-smollm3", Model: "the tiny smollm3 model (testdata/models/smollm3-tiny-q4_k_m.gguf)", Arch: "smollm3",
		NEmbd: 256, NLayer: 4, NHead: 4, NHeadKV: 1, NFF: 512, NVocab: 512, NCtx: 65536,
		RopeBase: 5e6, NormEps: 1e-6, Tied: true,
		Layers: "aaan",
	},
	{
		Name: "tiny-qwen35", Model: "the tiny qwen35 model (testdata/models/qwen35-tiny-q4_k_m.gguf)", Arch: "qwen35",
		NEmbd: 256, NLayer: 4, NHead: 4, NHeadKV: 2, NHeadDim: 64, NFF: 512, NVocab: 512, NCtx: 262144,
		RopeBase: 1e7, RopeDim: 16, NormEps: 1e-6, Tied: true,
		Layers: "ddda", ConvL: 4, AttnInterval: 4, RopeSections: [4]int32{3, 3, 2, 0},
		DeltaNet: &DeltaNet{KeyHeads: 2, ValueHeads: 4, HeadDim: 64},
	},
	{
		Name: "tiny-gemma4", Model: "the tiny gemma4 model (testdata/models/gemma4-tiny-q4_k_m.gguf)", Arch: "gemma4",
		NEmbd: 256, NLayer: 10, NHead: 4, NHeadKV: 1, NHeadDim: 128, NFF: 128, NVocab: 512, NCtx: 131072,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
		Layers: "ssssassssa", SlidingWindow: 16, RopeBaseSWA: 10000,
		HeadDimSWA: 64, PartialRotary: 0.25, SharedKVLayers: 5, DoubleWideFF: true, PerLayerInput: 32, SoftCap: 30,
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
		Name: "qwen2.5-1.5b", Model: "Qwen2.5-1.5B", Arch: "qwen2",
		NEmbd: 1536, NLayer: 28, NHead: 12, NHeadKV: 2, NFF: 8960, NVocab: 151936, NCtx: 32768,
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
	{
		Name: "qwen3-0.6b", Model: "Qwen3-0.6B", Arch: "qwen3",
		NEmbd: 1024, NLayer: 28, NHead: 16, NHeadKV: 8, NHeadDim: 128, NFF: 3072, NVocab: 151936, NCtx: 40960,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
	},
	{
		Name: "qwen3-1.7b", Model: "Qwen3-1.7B", Arch: "qwen3",
		NEmbd: 2048, NLayer: 28, NHead: 16, NHeadKV: 8, NHeadDim: 128, NFF: 6144, NVocab: 151936, NCtx: 40960,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
	},
	{
		Name: "qwen3-4b", Model: "Qwen3-4B-Instruct-2507", Arch: "qwen3",
		NEmbd: 2560, NLayer: 36, NHead: 32, NHeadKV: 8, NHeadDim: 128, NFF: 9728, NVocab: 151936, NCtx: 262144,
		RopeBase: 5e6, NormEps: 1e-6, Tied: true,
	},
	{
		Name: "gemma3-270m", Model: "gemma-3-270m-it", Arch: "gemma3",
		NEmbd: 640, NLayer: 18, NHead: 4, NHeadKV: 1, NHeadDim: 256, NFF: 2048, NVocab: 262144, NCtx: 32768,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
		Layers: strings.Repeat("sssssa", 3), SlidingWindow: 512, RopeBaseSWA: 10000,
	},
	{
		Name: "gemma3-1b", Model: "gemma-3-1b-it", Arch: "gemma3",
		NEmbd: 1152, NLayer: 26, NHead: 4, NHeadKV: 1, NHeadDim: 256, NFF: 6912, NVocab: 262144, NCtx: 32768,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
		Layers: strings.Repeat("sssssa", 4) + "ss", SlidingWindow: 512, RopeBaseSWA: 10000,
	},
	{
		// layer_types: attention in blocks 2, 5, 8, 10, 12 and 14; n_ff is
		// block_ff_dim 6656 auto-adjusted (2/3, to a multiple of 256).
		Name: "lfm2-350m", Model: "LFM2-350M", Arch: "lfm2",
		NEmbd: 1024, NLayer: 16, NHead: 16, NHeadKV: 8, NFF: 4608, NVocab: 65536, NCtx: 128000,
		RopeBase: 1e6, NormEps: 1e-5, Tied: true,
		Layers: "ccaccaccacacacac", ConvL: 3,
	},
	{
		// As LFM2-350M; n_ff from block_ff_dim 12288.
		Name: "lfm2-1.2b", Model: "LFM2-1.2B", Arch: "lfm2",
		NEmbd: 2048, NLayer: 16, NHead: 32, NHeadKV: 8, NFF: 8192, NVocab: 65536, NCtx: 128000,
		RopeBase: 1e6, NormEps: 1e-5, Tied: true,
		Layers: "ccaccaccacacacac", ConvL: 3,
	},
	{
		// no_rope_layers: every fourth block has no RoPE.
		Name: "smollm3-3b", Model: "SmolLM3-3B", Arch: "smollm3",
		NEmbd: 2048, NLayer: 36, NHead: 16, NHeadKV: 4, NFF: 11008, NVocab: 128256, NCtx: 65536,
		RopeBase: 5e6, NormEps: 1e-6, Tied: true,
		Layers: strings.Repeat("aaan", 9),
	},
	{
		// partial_rotary_factor 0.75 of 128; sliding_window 262144 is in the
		// config (and the file) but unused. The Q4_K_M files published in
		// 2025 have every attn_qkv in Q5_K, by an older llama-quantize.
		Name: "phi4-mini", Model: "Phi-4-mini-instruct", Arch: "phi3",
		NEmbd: 3072, NLayer: 32, NHead: 24, NHeadKV: 8, NFF: 8192, NVocab: 200064, NCtx: 131072,
		RopeBase: 10000, RopeDim: 96, NormEps: 1e-5, Tied: true,
		SlidingWindow: 262144, LongRope: &LongRope{OrigCtx: 4096, Long: phi4MiniLong},
	},
	{
		// Qwen/Qwen3.5-0.8B's config.json text_config (as mirrored in public
		// test fixtures, e.g. brolm's qwen35_config test and the model's
		// apxml.com card): hidden_size 1024, 24 layers of layer_types
		// [linear ×3, full] ×6 (full_attention_interval 4), 8 heads, 2 KV
		// heads, head_dim 256, intermediate_size 3584, vocab_size 248320,
		// max_position_embeddings 262144, rope_theta 1e7 with
		// partial_rotary_factor 0.25 and mrope_section [11, 11, 10],
		// rms_norm_eps 1e-6, tied embeddings; linear_num_key_heads and
		// linear_num_value_heads 16 of 128, linear_conv_kernel_dim 4. The
		// multi-token-prediction layer and the vision tower are not in the
		// reference's text GGUF.
		Name: "qwen3.5-0.8b", Model: "Qwen3.5-0.8B", Arch: "qwen35",
		NEmbd: 1024, NLayer: 24, NHead: 8, NHeadKV: 2, NHeadDim: 256, NFF: 3584, NVocab: 248320, NCtx: 262144,
		RopeBase: 1e7, RopeDim: 64, NormEps: 1e-6, Tied: true,
		Layers: strings.Repeat("ddda", 6), ConvL: 4, AttnInterval: 4, RopeSections: [4]int32{11, 11, 10, 0},
		DeltaNet: &DeltaNet{KeyHeads: 16, ValueHeads: 16, HeadDim: 128},
	},
	{
		// Qwen/Qwen3.5-2B's config.json text_config (a captured copy:
		// SiliconBadgers/architecture research/2026-10-02-vector-control/
		// inputs/2B.json): as Qwen3.5-0.8B but hidden_size 2048 and
		// intermediate_size 6144. Its weights add up to the 1,881,825,088 of
		// unsloth/Qwen3.5-2B-GGUF (Hugging Face's gguf.total), to the weight.
		Name: "qwen3.5-2b", Model: "Qwen3.5-2B", Arch: "qwen35",
		NEmbd: 2048, NLayer: 24, NHead: 8, NHeadKV: 2, NHeadDim: 256, NFF: 6144, NVocab: 248320, NCtx: 262144,
		RopeBase: 1e7, RopeDim: 64, NormEps: 1e-6, Tied: true,
		Layers: strings.Repeat("ddda", 6), ConvL: 4, AttnInterval: 4, RopeSections: [4]int32{11, 11, 10, 0},
		DeltaNet: &DeltaNet{KeyHeads: 16, ValueHeads: 16, HeadDim: 128},
	},
	{
		// google/gemma-4-E2B-it's config.json text_config (as mirrored in
		// public test fixtures of it): hidden_size 1536, 35 layers of
		// layer_types [sliding ×4, full] ×7, 8 heads, 1 KV head, head_dim 256
		// (sliding) and global_head_dim 512 (full), sliding_window 512,
		// intermediate_size 6144 with use_double_wide_mlp (12288 in the 20
		// num_kv_shared_layers), hidden_size_per_layer_input 256,
		// vocab_size 262144, max_position_embeddings 131072, rope_theta 1e4
		// (sliding) and 1e6 with a "proportional" partial_rotary_factor 0.25
		// (full), final_logit_softcapping 30, rms_norm_eps 1e-6, tied
		// embeddings. The vision and audio towers are not in the text GGUF.
		Name: "gemma4-e2b", Model: "gemma-4-E2B-it", Arch: "gemma4",
		NEmbd: 1536, NLayer: 35, NHead: 8, NHeadKV: 1, NHeadDim: 512, NFF: 6144, NVocab: 262144, NCtx: 131072,
		RopeBase: 1e6, NormEps: 1e-6, Tied: true,
		Layers: strings.Repeat("ssssa", 7), SlidingWindow: 512, RopeBaseSWA: 10000,
		HeadDimSWA: 256, PartialRotary: 0.25, SharedKVLayers: 20, DoubleWideFF: true, PerLayerInput: 256, SoftCap: 30,
	},
}

// Shapes returns the known shapes, smallest first.
func Shapes() []Shape {
	out := make([]Shape, len(shapes))
	for i := range shapes {
		out[i] = shapes[i].clone()
	}
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
			return s.clone(), nil
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

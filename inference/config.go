// Package inference runs GGUF language models: it loads the weights of a model
// in place from the file mapping, keeps per-layer caches (FP16 keys and
// values, sliding-window rings, convolution states), and computes the forward
// pass of every architecture in the registry (arch.go): prompts in batches,
// then one token at a time.
package inference

import (
	"fmt"
	"strings"
)

// Arch names a model architecture (GGUF general.architecture).
type Arch string

// RopeStyle is how RoPE pairs the dimensions of a head.
type RopeStyle int

// The RoPE layouts.
const (
	RopeNorm RopeStyle = iota // consecutive pairs (x[2i], x[2i+1]): llama
	RopeNeox                  // half-split pairs (x[i], x[i+d/2]): qwen2, qwen3, gemma3, phi3, lfm2, qwen35
)

func (s RopeStyle) String() string {
	if s == RopeNeox {
		return "neox"
	}
	return "normal"
}

// Config holds a model's hyper-parameters, all read from GGUF metadata, and
// the description of each of its layers.
//
// The model-wide fields (NHead … RopeScale) are the values the metadata gives
// for the model as a whole, as `info` shows them; Layers says what each layer
// actually computes, and it is what the forward pass, the caches and the
// memory estimates read.
type Config struct {
	Arch      Arch
	Name      string
	NEmbd     int     // hidden size
	NLayer    int     // blocks
	NHead     int     // query heads
	NHeadKV   int     // key/value heads of the attention layers (GQA/MQA when < NHead)
	HeadDim   int     // dimension of one head
	NFF       int     // feed-forward hidden size
	NVocab    int     // vocabulary size
	NCtxTrain int     // context length the model was trained with
	RopeDim   int     // dimensions of a head that RoPE rotates
	RopeBase  float32 // RoPE frequency base (of the global layers)
	RopeScale float32 // RoPE linear frequency scale of the global layers (1 = none)
	RopeStyle RopeStyle
	NormEps   float32 // RMSNorm epsilon

	// EmbedScale multiplies the token embeddings (Gemma: sqrt(NEmbd)); 1 = none.
	EmbedScale float32
	// FinalSoftcap, when > 0, caps the logits: c·tanh(logits/c) (Gemma).
	FinalSoftcap float32
	// PerLayerDim is the width P of the per-layer inputs (gemma4's
	// embedding_length_per_layer_input; 0 = none): before the first layer,
	// pl[l] = (rmsnorm(per_layer_model_proj·x / sqrt(NEmbd))·per_layer_proj_norm
	// + per_layer_token_embd[id] × sqrt(P)) / sqrt(2), P values per layer,
	// which each layer with LayerSpec.PerLayerInput mixes into its output.
	PerLayerDim int
	// FinalNorm is the tensor of the norm before the output projection
	// ("output_norm.weight"; lfm2: "token_embd_norm.weight").
	FinalNorm string
	// Ropes are the distinct RoPE settings of the layers; an attention block
	// names its own by index (AttnSpec.Rope), so that each setting's angles
	// are computed once per batch.
	Ropes []RopeSpec
	// Layers describes each block, in order.
	Layers []LayerSpec

	longRope bool // the file says rope.scaling.type "longrope" (validate: only with LongRoPE factors)
}

// LayerSpec describes one block: a mixer (attention, a gated short
// convolution or a Gated DeltaNet) then a feed-forward network, each read
// from a normalised copy of the residual stream and added back to it,
// optionally normalised again before the addition (Gemma's post-norms).
type LayerSpec struct {
	Mixer        MixerKind
	Attn         AttnSpec  // when Mixer is MixAttention
	ConvL        int       // when Mixer is MixShortConv: the kernel length (shortconv.l_cache)
	Delta        DeltaSpec // when Mixer is MixDeltaNet
	PostAttnNorm bool      // the mixer's output is RMS-normed (post_attention_norm) before it is added
	FFN          FFNSpec
	PostFFNNorm  bool // the feed-forward output is RMS-normed (post_ffw_norm) before it is added
	// FFNNorm names the feed-forward's input norm within the block
	// ("ffn_norm" when empty; qwen35 calls it "post_attention_norm").
	FFNNorm string
	// PerLayerInput: after the feed-forward, x += rmsnorm(proj·(gelu(
	// inp_gate·x) × pl[l]))·post_norm, pl the model's per-layer inputs
	// (Config.PerLayerDim; gemma4).
	PerLayerInput bool
	// OutScale: the block's output x is multiplied by its one
	// layer_output_scale value (gemma4).
	OutScale bool
}

// MixerKind is what mixes information across positions in a block.
type MixerKind int

// The mixers.
const (
	MixAttention MixerKind = iota // causal self-attention over the layer's KV cache
	MixShortConv                  // lfm2's gated short convolution over the last ConvL positions
	MixDeltaNet                   // qwen35's Gated DeltaNet: a causal convolution, then a recurrent state per head
)

// DeltaSpec describes a Gated DeltaNet block (qwen35's linear-attention
// layers): NKHead query/key heads and NVHead value heads, all of StateDim
// values (V head h reads Q/K head h mod NKHead), a causal depthwise
// convolution of ConvL taps over the fused [q | k | v] projection, and per
// value head a StateDim × StateDim recurrent state.
type DeltaSpec struct {
	NKHead, NVHead, StateDim, ConvL int
}

// KDim is the width of the queries (and of the keys); VDim that of the
// values, of the z gate and of the output; ConvDim that of the fused
// projection the convolution runs over.
func (d *DeltaSpec) KDim() int    { return d.NKHead * d.StateDim }
func (d *DeltaSpec) VDim() int    { return d.NVHead * d.StateDim }
func (d *DeltaSpec) ConvDim() int { return 2*d.KDim() + d.VDim() }

// AttnSpec describes an attention block.
type AttnSpec struct {
	NHead, NHeadKV, HeadDim int
	FusedQKV                bool    // one attn_qkv matrix: rows [Q | K | V] (phi3)
	QKVBias                 bool    // Q/K/V projections have biases (qwen2)
	QKNorm                  bool    // Q and K are RMS-normed per head before RoPE (attn_q_norm, attn_k_norm)
	OutGate                 bool    // attn_q has 2·QDim rows, per head the query then its gate; the output is × sigmoid(gate) (qwen35)
	VNorm                   bool    // V is RMS-normed per head, without a weight (gemma4)
	OptionalV               bool    // attn_v may be absent: V is then the raw K projection (gemma4)
	Rope                    int     // index in Config.Ropes; -1: no RoPE in this layer (smollm3's NoPE layers)
	Window                  int     // sliding window: a query sees the Window latest positions, itself included; 0 = all
	QScale                  float32 // multiplies Q after RoPE (gemma3, phi3: 1/sqrt(head dim)); 1 = none
	Scale                   float32 // multiplies the scores (llama: 1/sqrt(head dim); 1 where QScale does it)
	// KVLayer is the layer whose KV cache the block attends to: its own
	// index, or an earlier layer's (gemma4's shared-KV layers), in which
	// case the block computes only its queries and keeps no cache.
	KVLayer int
}

// QDim is the width of the query projection; KVDim that of the keys and
// values.
func (a *AttnSpec) QDim() int  { return a.NHead * a.HeadDim }
func (a *AttnSpec) KVDim() int { return a.NHeadKV * a.HeadDim }

// FFNSpec describes a gated feed-forward block: down(act(gate·h) × up·h).
type FFNSpec struct {
	NFF     int
	Act     Activation
	FusedUp bool // gate and up are one ffn_up matrix of 2·NFF rows, the gate first (phi3)
}

// Activation is the gate's non-linearity.
type Activation int

// The activations.
const (
	ActSiLU Activation = iota // SwiGLU
	ActGELU                   // GELU, tanh form, through the reference's FP16 table (GEGLU)
)

func (a Activation) String() string {
	if a == ActGELU {
		return "gelu"
	}
	return "silu"
}

// RopeSpec is one RoPE setting: which dimensions rotate, and how fast.
type RopeSpec struct {
	Style RopeStyle
	Dim   int     // dimensions of a head that rotate (the rest pass through)
	Base  float32 // frequency base
	Scale float32 // linear frequency scale (1 = none)
	// Factors divide the frequencies pair by pair (Llama 3's rope_freqs);
	// with LongRoPE (phi3) these are the short factors, used while the
	// context is at most OrigCtx, and FactorsLong above it.
	Factors, FactorsLong []float32
	OrigCtx              int
	AttnFactor           float32 // multiplies cos and sin (LongRoPE's attn_factor); 1 = none
	// FactorsTensor and FactorsLongTensor name the optional 1-D tensors the
	// loader reads Factors and FactorsLong from ("" = none).
	FactorsTensor, FactorsLongTensor string
}

// factorsFor returns the per-pair frequency divisors for a context of ctx
// positions (LongRoPE chooses its short or long factors by the context, as
// the reference does).
func (r *RopeSpec) factorsFor(ctx int) []float32 {
	if r.FactorsLong != nil && ctx > r.OrigCtx {
		return r.FactorsLong
	}
	return r.Factors
}

// KVDim is the width of the key (and value) vectors of the model's attention
// layers (of the first attention layer when they differ).
func (c *Config) KVDim() int { return c.NHeadKV * c.HeadDim }

// Summary describes the layers in a few words, e.g. "26 layers: 22
// sliding-window (512), 4 global", "16 layers: 10 short convolution, 6
// attention", "24 layers: 18 Gated DeltaNet, 6 gated attention" or "35
// layers: 28 sliding-window (512), 7 global, 20 reading an earlier layer's
// KV cache".
func (c *Config) Summary() string {
	var global, sliding, conv, delta, nope, shared int
	window := 0
	for i := range c.Layers {
		l := &c.Layers[i]
		if l.Mixer == MixAttention && l.Attn.KVLayer != i {
			shared++
		}
		switch {
		case l.Mixer == MixShortConv:
			conv++
		case l.Mixer == MixDeltaNet:
			delta++
		case l.Attn.Window > 0:
			sliding++
			window = l.Attn.Window
		default:
			global++
		}
		if l.Mixer == MixAttention && l.Attn.Rope < 0 {
			nope++
		}
	}
	s := fmt.Sprintf("%d layers", len(c.Layers))
	var parts []string
	if sliding > 0 {
		parts = append(parts, fmt.Sprintf("%d sliding-window (%d)", sliding, window), fmt.Sprintf("%d global", global))
	}
	if conv > 0 {
		parts = append(parts, fmt.Sprintf("%d short convolution", conv), fmt.Sprintf("%d attention", global+sliding))
	}
	if delta > 0 {
		parts = append(parts, fmt.Sprintf("%d Gated DeltaNet", delta), fmt.Sprintf("%d gated attention", global+sliding))
	}
	if nope > 0 {
		parts = append(parts, fmt.Sprintf("%d without RoPE", nope))
	}
	if shared > 0 {
		parts = append(parts, fmt.Sprintf("%d reading an earlier layer's KV cache", shared))
	}
	if len(parts) == 0 {
		return s
	}
	return s + ": " + strings.Join(parts, ", ")
}

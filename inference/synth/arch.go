package synth

// The layer kinds of Shape.Layers, one letter per block.
const (
	LayerAttention byte = 'a' // global attention with RoPE
	LayerSliding   byte = 's' // sliding-window attention (gemma3)
	LayerNoRope    byte = 'n' // global attention without RoPE (smollm3)
	LayerConv      byte = 'c' // gated short convolution instead of attention (lfm2)
	LayerDeltaNet  byte = 'd' // Gated DeltaNet instead of attention (qwen35)
)

// archSpec is what an architecture's files hold beyond the llama layout, as
// the reference's converter writes them.
type archSpec struct {
	kinds         string // the layer kinds the architecture has
	qkvBias       bool   // Q, K and V projections have biases (qwen2)
	qkNorm        bool   // per-head RMSNorm of Q and K: attn_q_norm, attn_k_norm
	postNorms     bool   // norms after attention and after the FFN (gemma3)
	fused         bool   // one attn_qkv matrix, and gate and up in one ffn_up (phi3)
	finalNorm     string // the final norm's tensor
	window        bool   // attention.sliding_window is written even when 0 (phi3)
	perLayerKV    bool   // attention.head_count_kv is per layer, 0 for conv layers (lfm2)
	noSpacePrefix bool   // tokenizer.ggml.add_space_prefix is false (gemma3)
	gatedAttn     bool   // attn_q gives each head's query and its output gate (qwen35)
	ffnNormPost   bool   // the FFN's norm is named post_attention_norm (qwen35)
	perLayerInput bool   // per-layer embeddings, sliding/full head sizes, shared-KV layers (gemma4)
}

// archSpecs are the architectures synth writes.
var archSpecs = map[string]archSpec{
	"llama":   {kinds: "a", finalNorm: "output_norm"},
	"qwen2":   {kinds: "a", qkvBias: true, finalNorm: "output_norm"},
	"qwen3":   {kinds: "a", qkNorm: true, finalNorm: "output_norm"},
	"gemma3":  {kinds: "as", qkNorm: true, postNorms: true, finalNorm: "output_norm", noSpacePrefix: true},
	"phi3":    {kinds: "a", fused: true, finalNorm: "output_norm", window: true},
	"lfm2":    {kinds: "ac", qkNorm: true, finalNorm: "token_embd_norm", perLayerKV: true},
	"smollm3": {kinds: "an", finalNorm: "output_norm"},
	"qwen35":  {kinds: "ad", qkNorm: true, gatedAttn: true, ffnNormPost: true, finalNorm: "output_norm"},
	"gemma4":  {kinds: "as", qkNorm: true, postNorms: true, finalNorm: "output_norm", noSpacePrefix: true, perLayerInput: true},
}

// referenceKind is the kind the reference implementation gives layer il of a
// model of shape s where the file cannot say it, so that a shape cannot claim
// layers the reference would run differently: gemma3's layers are sliding
// except every sixth (when the file has a window), and smollm3 skips RoPE in
// every fourth, and qwen35's have attention every AttnInterval-th and a
// DeltaNet otherwise. ok is false where the kind is free (lfm2 reads it from
// the per-layer head_count_kv, gemma4 from its sliding-window pattern).
func (s *Shape) referenceKind(il int) (kind byte, ok bool) {
	switch s.Arch {
	case "gemma3":
		if s.SlidingWindow > 0 && il%6 < 5 {
			return LayerSliding, true
		}
		return LayerAttention, true
	case "smollm3":
		if (il+1)%4 == 0 {
			return LayerNoRope, true
		}
		return LayerAttention, true
	case "qwen35":
		if s.AttnInterval > 0 && (il+1)%s.AttnInterval == 0 {
			return LayerAttention, true
		}
		return LayerDeltaNet, true
	case "lfm2", "gemma4":
		return 0, false
	}
	return LayerAttention, true
}

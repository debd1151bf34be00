package inference

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/edgellm/edgellm/gguf"
)

// Architectures as data: each supported general.architecture has a describe
// function that reads its metadata into a Config and says, layer by layer,
// what the block computes (LayerSpec). The forward pass (batch.go), the
// loader (model.go) and the caches (cache.go) read only those descriptions,
// so an architecture is one entry here, not edits across the engine.
//
// Each describe function states what the reference implementation
// (llama.cpp's src/models/ARCH.cpp) computes for that architecture.

// architectures maps general.architecture to its describe function. It is
// never written.
var architectures = map[Arch]func(*meta, *Config) error{
	"llama":   describeLlama,
	"qwen2":   describeQwen2,
	"qwen3":   describeQwen3,
	"gemma3":  describeGemma3,
	"phi3":    describePhi3,
	"lfm2":    describeLFM2,
	"smollm3": describeSmolLM3,
	"qwen35":  describeQwen35,
	"gemma4":  describeGemma4,
}

// Architectures lists the supported architectures, sorted.
func Architectures() []string {
	names := make([]string, 0, len(architectures))
	for a := range architectures {
		names = append(names, string(a))
	}
	sort.Strings(names)
	return names
}

// ReadConfig reads and validates the hyper-parameters of the model in f and
// describes its layers.
func ReadConfig(f *gguf.File) (Config, error) {
	var c Config
	arch, err := f.String("general.architecture")
	if err != nil {
		return c, fmt.Errorf("inference: %w", err)
	}
	c.Arch = Arch(arch)
	describe, ok := architectures[c.Arch]
	if !ok {
		return c, fmt.Errorf("inference: unsupported architecture %q (supported: %s)", arch, strings.Join(Architectures(), ", "))
	}
	c.Name, _ = f.String("general.name")
	m := &meta{f: f, p: arch + "."}
	if err := readCommon(m, &c); err != nil {
		return c, err
	}
	if err := describe(m, &c); err != nil {
		return c, err
	}
	if err := c.validate(); err != nil {
		return c, err
	}
	return c, nil
}

// readCommon reads the hyper-parameters every architecture has and describes
// the plain pre-norm transformer layer (the llama layout) for every layer:
// the describe functions then change what differs.
func readCommon(m *meta, c *Config) error {
	err := m.sizes([]sizeKey{
		{"embedding_length", &c.NEmbd},
		{"block_count", &c.NLayer},
		{"attention.head_count", &c.NHead},
		{"context_length", &c.NCtxTrain},
	})
	if err != nil {
		return err
	}
	if c.NLayer > 4096 {
		return fmt.Errorf("inference: metadata %q = %d is out of range", m.p+"block_count", c.NLayer)
	}
	ff, err := m.perLayer("feed_forward_length", c.NLayer, -1)
	if err != nil {
		return err
	}
	kv, err := m.perLayer("attention.head_count_kv", c.NLayer, c.NHead)
	if err != nil {
		return err
	}
	c.NFF, c.NHeadKV = ff[0], firstNonZero(kv, c.NHead)
	if c.HeadDim, err = m.optSize("attention.key_length", 0); err != nil {
		return err
	}
	if c.HeadDim == 0 {
		if c.NEmbd%c.NHead != 0 {
			return fmt.Errorf("inference: embedding length %d is not a multiple of the head count %d", c.NEmbd, c.NHead)
		}
		c.HeadDim = c.NEmbd / c.NHead
	}
	if v, err := m.optSize("attention.value_length", c.HeadDim); err != nil {
		return err
	} else if v != c.HeadDim {
		return fmt.Errorf("inference: value length %d differs from key length %d (not supported)", v, c.HeadDim)
	}
	if c.RopeDim, err = m.optSize("rope.dimension_count", c.HeadDim); err != nil {
		return err
	}
	if c.RopeBase, err = m.optFloat("rope.freq_base", 10000); err != nil {
		return err
	}
	if c.RopeScale, c.longRope, err = ropeScale(m); err != nil {
		return err
	}
	eps, err := m.float("attention.layer_norm_rms_epsilon")
	if err != nil {
		return err
	}
	if !(eps > 0 && eps < 1) {
		return fmt.Errorf("inference: RMSNorm epsilon %v out of range", eps)
	}
	c.NormEps, c.EmbedScale, c.FinalNorm = eps, 1, "output_norm.weight"
	c.Ropes = []RopeSpec{{Style: RopeNorm, Dim: c.RopeDim, Base: c.RopeBase, Scale: c.RopeScale, AttnFactor: 1}}
	c.Layers = make([]LayerSpec, c.NLayer)
	for i := range c.Layers {
		if ff[i] <= 0 {
			return fmt.Errorf("inference: layer %d: feed-forward length %d", i, ff[i])
		}
		c.Layers[i] = LayerSpec{
			Mixer: MixAttention,
			Attn: AttnSpec{NHead: c.NHead, NHeadKV: kv[i], HeadDim: c.HeadDim, Rope: 0, KVLayer: i,
				Scale: float32(1 / math.Sqrt(float64(c.HeadDim))), QScale: 1},
			FFN: FFNSpec{NFF: ff[i], Act: ActSiLU},
		}
	}
	return nil
}

// ropeScale reads the linear RoPE scaling of the global layers (1: none),
// and whether the file says LongRoPE, whose scaling is in per-frequency
// factor tensors that only some architectures read (validate checks).
func ropeScale(m *meta) (scale float32, longRope bool, err error) {
	typ, err := m.f.String(m.p + "rope.scaling.type")
	switch {
	case errors.Is(err, gguf.ErrNotFound) || typ == "none":
		return 1, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("inference: %w", err)
	case typ == "longrope":
		return 1, true, nil
	case typ != "linear":
		return 0, false, fmt.Errorf("inference: unsupported rope scaling %q (supported: none, linear; longrope for phi3)", typ)
	}
	factor, err := m.float("rope.scaling.factor")
	if err != nil {
		return 0, false, fmt.Errorf("inference: linear rope scaling: %w", err)
	}
	if !(factor > 0 && factor < 1e6) {
		return 0, false, fmt.Errorf("inference: rope scaling factor %v out of range", factor)
	}
	return 1 / factor, false, nil
}

// describeLlama: Llama 1/2/3, TinyLlama, SmolLM, Mistral-style models; the
// common description with RoPE in consecutive pairs and, for Llama 3.1+, the
// per-frequency divisors of rope_freqs.weight.
func describeLlama(m *meta, c *Config) error {
	c.Ropes[0].FactorsTensor = "rope_freqs.weight"
	return nil
}

// describeQwen2: Qwen2 and Qwen2.5: Q/K/V biases and NEOX RoPE.
func describeQwen2(m *meta, c *Config) error {
	c.setRopeStyle(RopeNeox)
	for i := range c.Layers {
		c.Layers[i].Attn.QKVBias = true
	}
	return nil
}

// describeQwen3: Qwen3: Q and K RMS-normed per head before NEOX RoPE; the
// head size comes from attention.key_length, so Q may be wider than NEmbd.
func describeQwen3(m *meta, c *Config) error {
	c.setRopeStyle(RopeNeox)
	for i := range c.Layers {
		c.Layers[i].Attn.QKNorm = true
	}
	return nil
}

// describeGemma3: Gemma 3: embeddings × sqrt(NEmbd); Q/K norms; Q scaled
// before attention (scores unscaled); norms after attention and after the
// feed-forward too; GELU gate; with attention.sliding_window, local layers
// (il % 6 < 5 unless sliding_window_pattern says otherwise) that see only the
// window and use rope.freq_base_swa without scaling, while the global layers
// use rope.freq_base and its scaling. An optional final softcap.
func describeGemma3(m *meta, c *Config) error {
	c.setRopeStyle(RopeNeox)
	c.EmbedScale = float32(math.Sqrt(float64(c.NEmbd)))
	// The 27B model scales by its embedding per head, the others by the
	// head size (gemma_pytorch's query_pre_attn_scalar).
	qScale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	if c.NLayer == 62 {
		qScale = float32(1 / math.Sqrt(float64(c.NEmbd/c.NHead)))
	}
	window, err := m.optSize("attention.sliding_window", 0)
	if err != nil {
		return err
	}
	sliding := make([]bool, c.NLayer)
	if window > 0 {
		if sliding, err = m.swaPattern(c.NLayer, 6); err != nil {
			return err
		}
		baseSWA, err := m.optFloat("rope.freq_base_swa", 10000)
		if err != nil {
			return err
		}
		c.Ropes = append(c.Ropes, RopeSpec{Style: RopeNeox, Dim: c.RopeDim, Base: baseSWA, Scale: 1, AttnFactor: 1})
	}
	for i := range c.Layers {
		l := &c.Layers[i]
		l.Attn.QKNorm, l.Attn.QScale, l.Attn.Scale = true, qScale, 1
		l.PostAttnNorm, l.PostFFNNorm = true, true
		l.FFN.Act = ActGELU
		if sliding[i] {
			l.Attn.Window, l.Attn.Rope = window, 1
		}
	}
	return m.softcap(c)
}

// describePhi3: Phi-3 / Phi-4-mini: fused attn_qkv (when the file has it)
// and fused gate+up in ffn_up; NEOX RoPE on rope.dimension_count dims of a
// head; LongRoPE's short and long factors, chosen by the context against
// rope.scaling.original_context_length, and attn_factor on cos and sin; Q
// scaled by 1/sqrt(head size) before attention. The reference ignores
// attention.sliding_window for this architecture, and so does this.
func describePhi3(m *meta, c *Config) error {
	c.setRopeStyle(RopeNeox)
	r := &c.Ropes[0]
	r.FactorsTensor, r.FactorsLongTensor = "rope_factors_short.weight", "rope_factors_long.weight"
	var err error
	if r.OrigCtx, err = m.optSize("rope.scaling.original_context_length", c.NCtxTrain); err != nil {
		return err
	}
	if r.AttnFactor, err = m.optFloat("rope.scaling.attn_factor", 1); err != nil {
		return err
	}
	if !(r.AttnFactor > 0 && r.AttnFactor < 100) {
		return fmt.Errorf("inference: rope attn_factor %v out of range", r.AttnFactor)
	}
	_, fused := m.f.Tensor("blk.0.attn_qkv.weight")
	for i := range c.Layers {
		l := &c.Layers[i]
		l.Attn.FusedQKV = fused
		l.Attn.QScale, l.Attn.Scale = l.Attn.Scale, 1
		l.FFN.FusedUp = true
	}
	return nil
}

// describeLFM2: LFM2: attention.head_count_kv is per layer, 0 marking a gated
// short-convolution layer (kernel shortconv.l_cache); attention layers have
// Q/K norms and NEOX RoPE (and a window when attention.sliding_window is
// set); every layer has the SwiGLU feed-forward; the final norm is
// token_embd_norm.
func describeLFM2(m *meta, c *Config) error {
	c.setRopeStyle(RopeNeox)
	c.FinalNorm = "token_embd_norm.weight"
	convL, err := m.size("shortconv.l_cache")
	if err != nil {
		return err
	}
	if convL < 2 || convL > 64 {
		return fmt.Errorf("inference: short convolution length %d out of range [2, 64]", convL)
	}
	window, err := m.optSize("attention.sliding_window", 0)
	if err != nil {
		return err
	}
	for i := range c.Layers {
		l := &c.Layers[i]
		if l.Attn.NHeadKV == 0 {
			l.Mixer, l.ConvL, l.Attn = MixShortConv, convL, AttnSpec{}
			continue
		}
		l.Attn.QKNorm, l.Attn.Window = true, window
	}
	return nil
}

// describeSmolLM3: SmolLM3: the llama layout without RoPE in every fourth
// layer ((il+1) % 4 == 0, fixed in the reference; the files carry no key).
func describeSmolLM3(m *meta, c *Config) error {
	for i := range c.Layers {
		if (i+1)%4 == 0 {
			c.Layers[i].Attn.Rope = -1
		}
	}
	return nil
}

// maxStateDim bounds a DeltaNet head (ssm.state_size), whose state takes
// StateDim² floats per V head and sequence (the models use 128).
const maxStateDim = 512

// describeQwen35: Qwen3.5 (small dense): layer il is full attention iff
// (il+1) % full_attention_interval == 0 (4 when absent; a bool array
// attention.recurrent_layers overrides), otherwise Gated DeltaNet
// (DeltaSpec, from the ssm.* keys). The attention layers have a
// double-width attn_q whose second half of each head gates the output
// through a sigmoid, per-head Q/K norms and NEOX RoPE on the first
// rope.dimension_count dims (the file says M-RoPE with
// rope.dimension_sections, a required key, but for text every section takes
// the token position, which is plain NEOX RoPE). Every block's feed-forward
// reads post_attention_norm.
func describeQwen35(m *meta, c *Config) error {
	c.setRopeStyle(RopeNeox)
	sections, err := m.f.Int32s(m.p + "rope.dimension_sections")
	if err != nil {
		return fmt.Errorf("inference: %w", err)
	}
	if len(sections) == 0 || len(sections) > 4 {
		return fmt.Errorf("inference: metadata %q has %d values, want 1 to 4", m.p+"rope.dimension_sections", len(sections))
	}
	for i, v := range sections {
		if v < 0 || v > maxSize {
			return fmt.Errorf("inference: metadata %q[%d] = %d is out of range", m.p+"rope.dimension_sections", i, v)
		}
	}
	var d DeltaSpec
	var inner int
	err = m.sizes([]sizeKey{
		{"ssm.conv_kernel", &d.ConvL},
		{"ssm.state_size", &d.StateDim},
		{"ssm.group_count", &d.NKHead},
		{"ssm.time_step_rank", &d.NVHead},
		{"ssm.inner_size", &inner},
	})
	if err != nil {
		return err
	}
	switch {
	case d.ConvL < 2 || d.ConvL > 64:
		return fmt.Errorf("inference: DeltaNet convolution kernel %d out of range [2, 64]", d.ConvL)
	case d.StateDim > maxStateDim:
		return fmt.Errorf("inference: DeltaNet state size %d out of range [1, %d]", d.StateDim, maxStateDim)
	case d.NVHead > 4096 || d.NVHead%d.NKHead != 0:
		return fmt.Errorf("inference: %d DeltaNet value heads are not a multiple of %d key heads (at most 4096)", d.NVHead, d.NKHead)
	case inner != d.VDim():
		return fmt.Errorf("inference: ssm.inner_size %d is not state size %d × %d value heads", inner, d.StateDim, d.NVHead)
	}
	recurrent, err := m.recurrentLayers(c.NLayer)
	if err != nil {
		return err
	}
	for i := range c.Layers {
		l := &c.Layers[i]
		l.FFNNorm = "post_attention_norm"
		if recurrent[i] {
			l.Mixer, l.Delta, l.Attn = MixDeltaNet, d, AttnSpec{}
			continue
		}
		l.Attn.QKNorm, l.Attn.OutGate = true, true
	}
	return nil
}

// recurrentLayers says which layers of a qwen35 model are DeltaNet ones:
// attention.recurrent_layers (one bool per layer) or, without it, all but
// every full_attention_interval-th.
func (m *meta) recurrentLayers(n int) ([]bool, error) {
	if m.f.Has(m.p + "attention.recurrent_layers") {
		return m.boolPerLayer("attention.recurrent_layers", n)
	}
	interval, err := m.optSize("full_attention_interval", 4)
	if err != nil {
		return nil, err
	}
	if interval == 0 {
		return nil, fmt.Errorf("inference: metadata %q = 0 is out of range", m.p+"full_attention_interval")
	}
	out := make([]bool, n)
	for i := range out {
		out[i] = (i+1)%interval != 0
	}
	return out, nil
}

// maxPerLayerDim bounds gemma4's per-layer input width.
const maxPerLayerDim = 4096

// describeGemma4: Gemma 4 (the E2B/E4B-like dense models): embeddings ×
// sqrt(NEmbd); per-layer inputs of embedding_length_per_layer_input values
// (Config.PerLayerDim), mixed into every layer after its feed-forward;
// sliding layers (attention.sliding_window_pattern, one bool per layer) with
// the window, head size key_length_swa, rope.freq_base_swa and
// rope.dimension_count_swa, and full layers with key_length and
// rope.freq_base, whose rope_freqs divisors leave all but the first pairs
// unrotated; Q/K norms, V RMS-normed without weight (V is the raw K
// projection when attn_v is absent), scores unscaled; post-attention and
// post-FFN norms; GELU gate; layer_output_scale; the last
// attention.shared_kv_layers layers compute no K/V and attend to the cache
// of the last sliding (n−N−2) or full (n−N−1) layer that has one; logits
// soft-capped (30 when the key is absent). Norm weights are used as stored.
func describeGemma4(m *meta, c *Config) error {
	c.setRopeStyle(RopeNeox)
	c.EmbedScale = float32(math.Sqrt(float64(c.NEmbd)))
	c.Ropes[0].FactorsTensor = "rope_freqs.weight"
	var window, hdSWA, vSWA int
	err := m.sizes([]sizeKey{
		{"attention.sliding_window", &window},
		{"attention.key_length_swa", &hdSWA},
		{"attention.value_length_swa", &vSWA},
	})
	if err != nil {
		return err
	}
	// Required, 0 allowed (no per-layer inputs).
	if c.PerLayerDim, err = m.optSize("embedding_length_per_layer_input", -1); err != nil {
		return err
	}
	switch {
	case c.PerLayerDim < 0:
		return fmt.Errorf("inference: metadata %q: %w", m.p+"embedding_length_per_layer_input", gguf.ErrNotFound)
	case vSWA != hdSWA:
		return fmt.Errorf("inference: sliding value length %d differs from key length %d (not supported)", vSWA, hdSWA)
	case hdSWA > maxHeadDim || hdSWA%2 != 0:
		return fmt.Errorf("inference: sliding head dimension %d must be even and at most %d", hdSWA, maxHeadDim)
	case c.PerLayerDim > maxPerLayerDim:
		return fmt.Errorf("inference: per-layer input width %d out of range [0, %d]", c.PerLayerDim, maxPerLayerDim)
	}
	ropeSWA, err := m.optSize("rope.dimension_count_swa", c.RopeDim)
	if err != nil {
		return err
	}
	baseSWA, err := m.optFloat("rope.freq_base_swa", c.RopeBase)
	if err != nil {
		return err
	}
	c.Ropes = append(c.Ropes, RopeSpec{Style: RopeNeox, Dim: ropeSWA, Base: baseSWA, Scale: 1, AttnFactor: 1})
	sliding, err := m.boolPerLayer("attention.sliding_window_pattern", c.NLayer)
	if err != nil {
		return err
	}
	shared, err := m.optSize("attention.shared_kv_layers", 0)
	if err != nil {
		return err
	}
	nKV := c.NLayer - shared // layers [0, nKV) keep their own K/V
	if shared > 0 {
		if nKV < 2 {
			return fmt.Errorf("inference: %d shared-KV layers leave fewer than 2 of %d layers with a KV cache", shared, c.NLayer)
		}
		if !sliding[nKV-2] || sliding[nKV-1] {
			return fmt.Errorf("inference: shared-KV layers read layers %d and %d, which must be sliding and full", nKV-2, nKV-1)
		}
	}
	for i := range c.Layers {
		l := &c.Layers[i]
		a := &l.Attn
		a.QKNorm, a.VNorm, a.OptionalV, a.QScale, a.Scale = true, true, true, 1, 1
		l.PostAttnNorm, l.PostFFNNorm, l.FFN.Act = true, true, ActGELU
		l.PerLayerInput = c.PerLayerDim > 0
		_, l.OutScale = m.f.Tensor(fmt.Sprintf("blk.%d.layer_output_scale.weight", i)) // optional in the reference
		if sliding[i] {
			a.Window, a.Rope, a.HeadDim = window, 1, hdSWA
		}
		if i >= nKV {
			a.KVLayer = nKV - 1
			if sliding[i] {
				a.KVLayer = nKV - 2
			}
			a.NHeadKV = c.Layers[a.KVLayer].Attn.NHeadKV // the cache's heads
		}
	}
	if err := m.softcapDefault(c, 30); err != nil {
		return err
	}
	return nil
}

// boolPerLayer reads a required key holding one bool per layer.
func (m *meta) boolPerLayer(key string, n int) ([]bool, error) {
	v, ok := m.f.Get(m.p + key)
	if !ok {
		return nil, fmt.Errorf("inference: metadata %q: %w", m.p+key, gguf.ErrNotFound)
	}
	b, isBools := v.([]bool)
	if !isBools || len(b) != n {
		return nil, fmt.Errorf("inference: metadata %q must hold one bool per layer (%d)", m.p+key, n)
	}
	return b, nil
}

// setRopeStyle sets the style of every RoPE setting and of the model.
func (c *Config) setRopeStyle(s RopeStyle) {
	c.RopeStyle = s
	for i := range c.Ropes {
		c.Ropes[i].Style = s
	}
}

// validate checks the layer descriptions against each other.
func (c *Config) validate() error {
	if c.NHeadKV <= 0 || c.NHead%c.NHeadKV != 0 {
		return fmt.Errorf("inference: %d query heads are not a multiple of %d key/value heads", c.NHead, c.NHeadKV)
	}
	if c.longRope && c.Ropes[0].FactorsLongTensor == "" {
		return errors.New(`inference: unsupported rope scaling "longrope" (supported: none, linear; longrope for phi3)`)
	}
	for _, r := range c.Ropes {
		if r.Dim%2 != 0 || r.Dim > c.HeadDim || r.Dim <= 0 {
			return fmt.Errorf("inference: rope dimension %d must be even, positive and at most the head dimension %d", r.Dim, c.HeadDim)
		}
		if !(r.Base > 1 && r.Base < 1e12) {
			return fmt.Errorf("inference: rope frequency base %v out of range", r.Base)
		}
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("inference: head dimension %d is odd", c.HeadDim)
	}
	attention := false
	for i, l := range c.Layers {
		if l.Mixer != MixAttention {
			continue
		}
		attention = true
		a := l.Attn
		if a.NHeadKV <= 0 || a.NHead%a.NHeadKV != 0 {
			return fmt.Errorf("inference: layer %d: %d query heads are not a multiple of %d key/value heads", i, a.NHead, a.NHeadKV)
		}
		if a.Window < 0 || a.Rope >= len(c.Ropes) {
			return fmt.Errorf("inference: layer %d: bad attention description", i)
		}
		if a.HeadDim <= 0 || a.HeadDim%2 != 0 || a.HeadDim > maxHeadDim || (a.Rope >= 0 && c.Ropes[a.Rope].Dim > a.HeadDim) {
			return fmt.Errorf("inference: layer %d: head dimension %d must be even, at most %d and at least the rotated dimensions", i, a.HeadDim, maxHeadDim)
		}
		if a.KVLayer != i {
			if a.KVLayer < 0 || a.KVLayer >= i {
				return fmt.Errorf("inference: layer %d: reads the KV cache of layer %d, not an earlier one", i, a.KVLayer)
			}
			src := &c.Layers[a.KVLayer]
			if src.Mixer != MixAttention || src.Attn.KVLayer != a.KVLayer || src.Attn.HeadDim != a.HeadDim ||
				src.Attn.NHeadKV != a.NHeadKV || src.Attn.Window != a.Window {
				return fmt.Errorf("inference: layer %d: the KV cache of layer %d is not one it can read", i, a.KVLayer)
			}
		}
	}
	if !attention {
		return errors.New("inference: the model has no attention layer")
	}
	return nil
}

func firstNonZero(v []int, def int) int {
	if i := slices.IndexFunc(v, func(x int) bool { return x > 0 }); i >= 0 {
		return v[i]
	}
	return def
}

// meta reads an architecture's metadata keys (prefix p, e.g. "qwen3.") with
// range checks, so that a malformed file is refused with a clear error.
type meta struct {
	f *gguf.File
	p string
}

// maxSize bounds every size read from metadata: larger values are errors,
// not allocations.
const maxSize = 1 << 24

func (m *meta) size(key string) (int, error) {
	v, err := m.f.Uint(m.p + key)
	if err != nil {
		return 0, fmt.Errorf("inference: %w", err)
	}
	if v == 0 || v > maxSize {
		return 0, fmt.Errorf("inference: metadata %q = %d is out of range", m.p+key, v)
	}
	return int(v), nil
}

// sizeKey is a required size key and where sizes puts its value.
type sizeKey struct {
	key string
	dst *int
}

// sizes reads each of keys with size.
func (m *meta) sizes(keys []sizeKey) error {
	for _, k := range keys {
		v, err := m.size(k.key)
		if err != nil {
			return err
		}
		*k.dst = v
	}
	return nil
}

// optSize is size with a default for a missing key.
func (m *meta) optSize(key string, def int) (int, error) {
	if !m.f.Has(m.p + key) {
		return def, nil
	}
	v, err := m.f.Uint(m.p + key)
	if err != nil {
		return 0, fmt.Errorf("inference: %w", err)
	}
	if v > maxSize {
		return 0, fmt.Errorf("inference: metadata %q = %d is out of range", m.p+key, v)
	}
	return int(v), nil
}

func (m *meta) float(key string) (float32, error) {
	v, err := m.f.Float(m.p + key)
	if err != nil {
		return 0, fmt.Errorf("inference: %w", err)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("inference: metadata %q = %v is not a number", m.p+key, v)
	}
	return float32(v), nil
}

func (m *meta) optFloat(key string, def float32) (float32, error) {
	if !m.f.Has(m.p + key) {
		return def, nil
	}
	return m.float(key)
}

// perLayer reads a key that is either one integer for every layer or an
// array with one per layer (lfm2's head_count_kv); def is used when the key
// is missing (-1: required). Zero is allowed in arrays.
func (m *meta) perLayer(key string, n, def int) ([]int, error) {
	out := make([]int, n)
	if !m.f.Has(m.p + key) {
		if def < 0 {
			return nil, fmt.Errorf("inference: metadata %q: %w", m.p+key, gguf.ErrNotFound)
		}
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if arr, err := m.f.Int32s(m.p + key); err == nil {
		if len(arr) != n {
			return nil, fmt.Errorf("inference: metadata %q has %d values for %d layers", m.p+key, len(arr), n)
		}
		for i, v := range arr {
			if v < 0 || v > maxSize {
				return nil, fmt.Errorf("inference: metadata %q[%d] = %d is out of range", m.p+key, i, v)
			}
			out[i] = int(v)
		}
		return out, nil
	}
	v, err := m.size(key)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i] = v
	}
	return out, nil
}

// swaPattern says which layers are sliding-window ones: from
// attention.sliding_window_pattern, a period p (layer il slides iff
// il % p < p-1) or one bool per layer; without the key, the period def.
func (m *meta) swaPattern(n, def int) ([]bool, error) {
	key := m.p + "attention.sliding_window_pattern"
	out := make([]bool, n)
	period := def
	if v, ok := m.f.Get(key); ok {
		if b, isBools := v.([]bool); isBools {
			if len(b) != n {
				return nil, fmt.Errorf("inference: metadata %q has %d values for %d layers", key, len(b), n)
			}
			return b, nil
		}
		p, err := m.size("attention.sliding_window_pattern")
		if err != nil {
			return nil, err
		}
		period = p
	}
	for i := range out {
		out[i] = i%period < period-1
	}
	return out, nil
}

// softcap reads final_logit_softcapping (0 or absent: none).
func (m *meta) softcap(c *Config) error { return m.softcapDefault(c, 0) }

// softcapDefault reads final_logit_softcapping (def when absent; 0: none).
func (m *meta) softcapDefault(c *Config, def float32) error {
	v, err := m.optFloat("final_logit_softcapping", def)
	if err != nil {
		return err
	}
	if v < 0 || v > 1e6 {
		return fmt.Errorf("inference: final logit softcapping %v out of range", v)
	}
	c.FinalSoftcap = v
	return nil
}

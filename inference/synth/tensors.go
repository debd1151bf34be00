package synth

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/edgellm/edgellm/kernels"
)

// fill says how a tensor's values are made.
type fill int

const (
	fillRandom    fill = iota // normal-like values with standard deviation weightStd
	fillOnes                  // norm weights
	fillRopeFreqs             // Llama 3 RoPE frequency factors
	fillRopeLong              // LongRoPE factors beyond the original context
	fillRopeShort             // LongRoPE factors within the original context
	fillMinusOnes             // a DeltaNet's ssm_a (−exp(A_log)): a decay, not a growth
)

// weightStd is the standard deviation of the random weights: small enough that
// activations stay of order one through every layer, as in trained models.
const weightStd = 0.02

// tensorSpec is one tensor of a synthetic model.
type tensorSpec struct {
	name       string
	cols, rows int // rows is 1 for vectors
	layer      int // block index, or -1
	fill       fill
	keepF32    bool // a matrix the quantizer leaves in F32 (shortconv.conv, ssm_conv1d, per_layer_model_proj)
}

// matrix reports whether the tensor is 2-D.
func (t *tensorSpec) matrix() bool { return t.rows > 1 }

// dims returns the GGUF dimensions, innermost first.
func (t *tensorSpec) dims() []uint64 {
	if t.matrix() {
		return []uint64{uint64(t.cols), uint64(t.rows)}
	}
	return []uint64{uint64(t.cols)}
}

// tensors lists the tensors of the shape in the order the reference's
// quantize tool writes them: the tensors outside the blocks first, then block
// by block, each group sorted by name. So a file synth writes in a quantized
// type is byte for byte the file the tool makes from the F32 file of the same
// seed.
func (s *Shape) tensors() []tensorSpec {
	out := s.converterOrder()
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].layer != out[j].layer {
			return out[i].layer < out[j].layer
		}
		return out[i].name < out[j].name
	})
	return out
}

// converterOrder lists the tensors of the shape in the order the reference's
// converter writes them, block by block (within a block of qwen35 or gemma4
// the order is not the converter's: tensors sorts each block by name).
func (s *Shape) converterOrder() []tensorSpec {
	spec := archSpecs[s.Arch]
	out := []tensorSpec{{name: "token_embd.weight", cols: s.NEmbd, rows: s.NVocab, layer: -1}}
	global := func(name string, cols int, f fill) {
		out = append(out, tensorSpec{name: name, cols: cols, rows: 1, layer: -1, fill: f})
	}
	if spec.perLayerInput {
		pl := s.NLayer * s.PerLayerInput
		out = append(out,
			tensorSpec{name: "per_layer_token_embd.weight", cols: pl, rows: s.NVocab, layer: -1},
			tensorSpec{name: "per_layer_model_proj.weight", cols: s.NEmbd, rows: pl, layer: -1, keepF32: true})
		global("per_layer_proj_norm.weight", s.PerLayerInput, fillOnes)
	}
	if s.Llama3Rope != nil || s.PartialRotary > 0 {
		global("rope_freqs.weight", s.HeadDim()/2, fillRopeFreqs)
	}
	if s.LongRope != nil {
		global("rope_factors_long.weight", s.RotaryDim()/2, fillRopeLong)
		global("rope_factors_short.weight", s.RotaryDim()/2, fillRopeShort)
	}
	for l := range s.NLayer {
		p := fmt.Sprintf("blk.%d.", l)
		add := func(name string, cols, rows int, f fill) {
			out = append(out, tensorSpec{name: p + name, cols: cols, rows: rows, layer: l, fill: f})
		}
		add("attn_norm.weight", s.NEmbd, 1, fillOnes)
		hd := s.layerHeadDim(l)
		q, kv := s.NHead*hd, s.NHeadKV*hd
		switch {
		case s.LayerKind(l) == LayerConv:
			// The depthwise convolution is {L, n_embd} in ggml order, and the
			// quantizer keeps it in F32.
			out = append(out, tensorSpec{name: p + "shortconv.conv.weight", cols: s.ConvL, rows: s.NEmbd, layer: l, keepF32: true})
			add("shortconv.in_proj.weight", s.NEmbd, 3*s.NEmbd, fillRandom)
			add("shortconv.out_proj.weight", s.NEmbd, s.NEmbd, fillRandom)
		case s.LayerKind(l) == LayerDeltaNet:
			d := s.DeltaNet
			add("attn_qkv.weight", s.NEmbd, d.convDim(), fillRandom)
			add("attn_gate.weight", s.NEmbd, d.innerSize(), fillRandom)
			add("ssm_beta.weight", s.NEmbd, d.ValueHeads, fillRandom)
			add("ssm_alpha.weight", s.NEmbd, d.ValueHeads, fillRandom)
			out = append(out, tensorSpec{name: p + "ssm_conv1d.weight", cols: s.ConvL, rows: d.convDim(), layer: l, keepF32: true})
			add("ssm_dt.bias", d.ValueHeads, 1, fillOnes)
			add("ssm_a", d.ValueHeads, 1, fillMinusOnes)
			add("ssm_norm.weight", d.HeadDim, 1, fillOnes)
			add("ssm_out.weight", d.innerSize(), s.NEmbd, fillRandom)
		case spec.fused:
			add("attn_qkv.weight", s.NEmbd, q+2*kv, fillRandom)
		default:
			s.addAttention(add, spec, l, q, kv, hd)
		}
		if s.attention(l) {
			add("attn_output.weight", q, s.NEmbd, fillRandom)
		}
		if spec.postNorms {
			add("post_attention_norm.weight", s.NEmbd, 1, fillOnes)
		}
		if spec.ffnNormPost {
			add("post_attention_norm.weight", s.NEmbd, 1, fillOnes)
		} else {
			add("ffn_norm.weight", s.NEmbd, 1, fillOnes)
		}
		ff := s.layerFF(l)
		if spec.fused {
			// The gate's rows first, then the up projection's.
			add("ffn_up.weight", s.NEmbd, 2*ff, fillRandom)
		} else {
			add("ffn_gate.weight", s.NEmbd, ff, fillRandom)
			add("ffn_up.weight", s.NEmbd, ff, fillRandom)
		}
		add("ffn_down.weight", ff, s.NEmbd, fillRandom)
		if spec.postNorms {
			add("post_ffw_norm.weight", s.NEmbd, 1, fillOnes)
		}
		if spec.perLayerInput {
			add("inp_gate.weight", s.NEmbd, s.PerLayerInput, fillRandom)
			add("proj.weight", s.PerLayerInput, s.NEmbd, fillRandom)
			add("post_norm.weight", s.NEmbd, 1, fillOnes)
			add("layer_output_scale.weight", 1, 1, fillOnes)
		}
	}
	global(spec.finalNorm+".weight", s.NEmbd, fillOnes)
	if !s.Tied {
		out = append(out, tensorSpec{name: "output.weight", cols: s.NEmbd, rows: s.NVocab, layer: -1})
	}
	return out
}

// addAttention adds the separate Q, K and V projections of attention block l
// (q and kv rows, heads of hd): qwen35's attn_q also gives the output gate,
// and gemma4's shared-KV blocks have no K and V.
func (s *Shape) addAttention(add func(name string, cols, rows int, f fill), spec archSpec, l, q, kv, hd int) {
	if spec.gatedAttn {
		q *= 2
	}
	type projection struct {
		name string
		rows int
	}
	projections := []projection{{"attn_q", q}}
	if s.ownsKV(l) {
		projections = append(projections, projection{"attn_k", kv}, projection{"attn_v", kv})
	}
	for _, m := range projections {
		add(m.name+".weight", s.NEmbd, m.rows, fillRandom)
		if spec.qkvBias {
			add(m.name+".bias", m.rows, 1, fillRandom)
		}
	}
	if spec.qkNorm {
		add("attn_q_norm.weight", hd, 1, fillOnes)
		if s.ownsKV(l) {
			add("attn_k_norm.weight", hd, 1, fillOnes)
		}
	}
}

// vectorValues returns the values of a vector tensor that is not random.
func (s *Shape) vectorValues(t *tensorSpec) []float32 {
	switch t.fill {
	case fillRopeFreqs:
		if s.Llama3Rope == nil {
			return s.proportionalFactors()
		}
		return s.Llama3Rope.ropeFactors(s.HeadDim(), s.RopeBase)
	case fillMinusOnes:
		out := factorsOrOnes(nil, t.cols)
		for i := range out {
			out[i] = -1
		}
		return out
	case fillRopeLong:
		return factorsOrOnes(s.LongRope.Long, t.cols)
	case fillRopeShort:
		return factorsOrOnes(s.LongRope.Short, t.cols)
	}
	return factorsOrOnes(nil, t.cols)
}

// proportionalFactors returns gemma4's rope_freqs.weight: 1 for the first
// PartialRotary of a full-attention head's pairs, which RoPE rotates, and
// 1e30 for the rest, which it thereby leaves alone (as the reference's
// converter writes them).
func (s *Shape) proportionalFactors() []float32 {
	out := factorsOrOnes(nil, s.HeadDim()/2)
	for i := int(float64(s.HeadDim()) * s.PartialRotary / 2); i < len(out); i++ {
		out[i] = 1e30
	}
	return out
}

// factorsOrOnes returns a copy of f, or n ones when f is nil.
func factorsOrOnes(f []float32, n int) []float32 {
	if f != nil {
		return append([]float32(nil), f...)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// tensorType is the type of tensor t in a file of type ft: vectors, and the
// matrices the quantizer leaves alone, stay F32.
func (s *Shape) tensorType(t *tensorSpec, ft FileType, pure bool) kernels.Type {
	if !t.matrix() || t.keepF32 {
		return kernels.F32
	}
	return ft.TensorType(s, t.name, t.layer, t.cols, pure)
}

// validate checks that the shape's dimensions make a model of its
// architecture that the reference loads and runs as the shape says.
func (s *Shape) validate() error {
	spec, ok := archSpecs[s.Arch]
	bad := func(format string, args ...any) error {
		return fmt.Errorf("synth: shape %q: "+format, append([]any{s.Name}, args...)...)
	}
	switch {
	case !ok:
		return bad("unsupported architecture %q", s.Arch)
	case s.NEmbd <= 0 || s.NLayer <= 0 || s.NHead <= 0 || s.NHeadKV <= 0 || s.NFF <= 0 || s.NCtx <= 0 || s.NHeadDim < 0 || s.RopeDim < 0:
		return bad("dimensions must be positive")
	case s.NHeadDim == 0 && s.NEmbd%s.NHead != 0, s.NHead%s.NHeadKV != 0, s.HeadDim()%2 != 0:
		return bad("%d heads of %d and %d KV heads do not fit", s.NHead, s.NEmbd, s.NHeadKV)
	case s.RotaryDim()%2 != 0 || s.RotaryDim() > s.HeadDim():
		return bad("RoPE on %d of %d dimensions", s.RotaryDim(), s.HeadDim())
	case s.NVocab < vocabReserved+1:
		return bad("vocabulary of %d tokens is smaller than %d", s.NVocab, vocabReserved+1)
	case s.NEmbd%kernels.QK != 0 || s.NFF%kernels.QK != 0 || s.NHead*s.HeadDim()%kernels.QK != 0:
		return bad("embedding, feed-forward and attention widths must be multiples of %d", kernels.QK)
	case s.Layers != "" && len(s.Layers) != s.NLayer:
		return bad("%d layer kinds for %d layers", len(s.Layers), s.NLayer)
	case s.LongRope != nil && (s.LongRope.OrigCtx <= 0 || !lenIs(s.LongRope.Long, s.RotaryDim()/2) || !lenIs(s.LongRope.Short, s.RotaryDim()/2)):
		return bad("LongRoPE needs an original context and %d factors", s.RotaryDim()/2)
	case (s.LongRope != nil) != (s.Arch == "phi3"), s.Llama3Rope != nil && s.Arch != "llama":
		return bad("RoPE scaling of another architecture")
	}
	if err := s.validateNew(spec); err != nil {
		return bad("%v", err)
	}
	var sliding, conv, delta bool
	for il := range s.NLayer {
		kind := s.LayerKind(il)
		if !strings.ContainsRune(spec.kinds, rune(kind)) {
			return bad("layer %d is of kind %q, which %s does not have", il, kind, s.Arch)
		}
		if want, ok := s.referenceKind(il); ok && kind != want {
			return bad("layer %d is of kind %q, the reference runs it as %q", il, kind, want)
		}
		sliding = sliding || kind == LayerSliding
		conv = conv || kind == LayerConv
		delta = delta || kind == LayerDeltaNet
	}
	switch {
	case sliding != (s.RopeBaseSWA > 0), sliding && s.SlidingWindow <= 0:
		return bad("sliding-window layers need a window and their RoPE base, and only they")
	case (conv || delta) != (s.ConvL > 0):
		return bad("convolution layers need their length (a DeltaNet's too), and only they")
	case delta != (s.DeltaNet != nil):
		return bad("DeltaNet layers need their dimensions, and only they")
	}
	return nil
}

// validateNew checks the fields of the qwen35 and gemma4 shapes, which no
// other architecture has.
func (s *Shape) validateNew(spec archSpec) error {
	qwen35 := s.Arch == "qwen35"
	if d := s.DeltaNet; d != nil {
		switch {
		case d.KeyHeads <= 0 || d.ValueHeads%d.KeyHeads != 0 || d.HeadDim <= 0 || d.innerSize()%kernels.QK != 0:
			return fmt.Errorf("DeltaNet of %d key heads, %d value heads of %d does not fit", d.KeyHeads, d.ValueHeads, d.HeadDim)
		case s.ConvL < 2:
			return errors.New("a DeltaNet needs a convolution of 2 steps or more")
		}
	}
	var sections int32
	for _, n := range s.RopeSections {
		sections += n
	}
	switch {
	case qwen35 != (s.AttnInterval > 0), qwen35 && int(sections) != s.RotaryDim()/2:
		return fmt.Errorf("qwen35 needs its attention interval and rope sections (%d pairs of %d rotated dimensions), and only it", sections, s.RotaryDim())
	case !spec.perLayerInput && (s.HeadDimSWA != 0 || s.RopeDimSWA != 0 || s.PartialRotary != 0 || s.SharedKVLayers != 0 || s.DoubleWideFF || s.PerLayerInput != 0 || s.SoftCap != 0):
		return fmt.Errorf("gemma4's fields in a shape of %s", s.Arch)
	case !spec.perLayerInput:
		return nil
	case s.PerLayerInput <= 0 || s.HeadDimSWA <= 0 || s.HeadDimSWA%2 != 0 || s.RopeDimSWA < 0 || s.RopeDimSWA > s.HeadDimSWA || s.RopeDimSWA%2 != 0:
		return errors.New("gemma4 needs its per-layer input width and the sliding-window layers' head size")
	case s.PartialRotary <= 0 || s.PartialRotary > 1 || s.SoftCap <= 0:
		return errors.New("gemma4 needs the full-attention layers' rotated share and the logit soft-cap")
	case s.SharedKVLayers < 0 || s.SharedKVLayers >= s.NLayer:
		return fmt.Errorf("%d shared-KV layers of %d", s.SharedKVLayers, s.NLayer)
	}
	// A shared-KV layer reads the cache of the last layer of its kind before
	// them, so there must be one.
	for _, kind := range []byte{LayerSliding, LayerAttention} {
		needed, found := false, false
		for il := range s.NLayer {
			if s.LayerKind(il) == kind {
				found = found || s.ownsKV(il)
				needed = needed || !s.ownsKV(il)
			}
		}
		if needed && !found {
			return fmt.Errorf("shared-KV layers of kind %q but no earlier layer of that kind", kind)
		}
	}
	return nil
}

// lenIs reports whether f is nil (all ones) or has n values.
func lenIs(f []float32, n int) bool { return f == nil || len(f) == n }

package synth

import (
	"fmt"
	"sort"

	"github.com/edgellm/edgellm/kernels"
)

// fill says how a tensor's values are made.
type fill int

const (
	fillRandom fill = iota // normal-like values with standard deviation weightStd
	fillOnes               // norm weights
	fillRope               // Llama 3 RoPE frequency factors
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
}

// matrix reports whether the tensor is a 2-D weight (quantized in the mixes).
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
// converter writes them.
func (s *Shape) converterOrder() []tensorSpec {
	hd := s.HeadDim()
	q, kv := s.NHead*hd, s.NHeadKV*hd
	out := []tensorSpec{{name: "token_embd.weight", cols: s.NEmbd, rows: s.NVocab, layer: -1}}
	if s.Llama3Rope != nil {
		out = append(out, tensorSpec{name: "rope_freqs.weight", cols: hd / 2, rows: 1, layer: -1, fill: fillRope})
	}
	for l := range s.NLayer {
		p := fmt.Sprintf("blk.%d.", l)
		add := func(name string, cols, rows int, f fill) {
			out = append(out, tensorSpec{name: p + name, cols: cols, rows: rows, layer: l, fill: f})
		}
		add("attn_norm.weight", s.NEmbd, 1, fillOnes)
		add("attn_q.weight", s.NEmbd, q, fillRandom)
		if s.HasQKVBias() {
			add("attn_q.bias", q, 1, fillRandom)
		}
		add("attn_k.weight", s.NEmbd, kv, fillRandom)
		if s.HasQKVBias() {
			add("attn_k.bias", kv, 1, fillRandom)
		}
		add("attn_v.weight", s.NEmbd, kv, fillRandom)
		if s.HasQKVBias() {
			add("attn_v.bias", kv, 1, fillRandom)
		}
		add("attn_output.weight", q, s.NEmbd, fillRandom)
		add("ffn_norm.weight", s.NEmbd, 1, fillOnes)
		add("ffn_gate.weight", s.NEmbd, s.NFF, fillRandom)
		add("ffn_up.weight", s.NEmbd, s.NFF, fillRandom)
		add("ffn_down.weight", s.NFF, s.NEmbd, fillRandom)
	}
	out = append(out, tensorSpec{name: "output_norm.weight", cols: s.NEmbd, rows: 1, layer: -1, fill: fillOnes})
	if !s.Tied {
		out = append(out, tensorSpec{name: "output.weight", cols: s.NEmbd, rows: s.NVocab, layer: -1})
	}
	return out
}

// tensorType is the type of tensor t in a file of type ft: vectors stay F32.
func (s *Shape) tensorType(t *tensorSpec, ft FileType, pure bool) kernels.Type {
	if !t.matrix() {
		return kernels.F32
	}
	return ft.TensorType(s, t.name, t.layer, t.cols, pure)
}

// validate checks that the shape's dimensions make a model the engine loads.
func (s *Shape) validate() error {
	switch {
	case s.Arch != "llama" && s.Arch != "qwen2":
		return fmt.Errorf("synth: shape %q: unsupported architecture %q", s.Name, s.Arch)
	case s.NEmbd <= 0 || s.NLayer <= 0 || s.NHead <= 0 || s.NHeadKV <= 0 || s.NFF <= 0 || s.NCtx <= 0:
		return fmt.Errorf("synth: shape %q: dimensions must be positive", s.Name)
	case s.NEmbd%s.NHead != 0 || s.NHead%s.NHeadKV != 0 || s.HeadDim()%2 != 0:
		return fmt.Errorf("synth: shape %q: %d heads of %d and %d KV heads do not fit", s.Name, s.NHead, s.NEmbd, s.NHeadKV)
	case s.NVocab < vocabReserved+1:
		return fmt.Errorf("synth: shape %q: vocabulary of %d tokens is smaller than %d", s.Name, s.NVocab, vocabReserved+1)
	case s.NEmbd%kernels.QK != 0 || s.NFF%kernels.QK != 0:
		return fmt.Errorf("synth: shape %q: embedding and feed-forward sizes must be multiples of %d", s.Name, kernels.QK)
	}
	return nil
}

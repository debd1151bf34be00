package synth

import (
	"fmt"
	"strings"

	"github.com/edgellm/edgellm/kernels"
)

// FileType is a model file type as the reference's quantize tool names it
// (its llama_ftype): the default tensor type and the per-tensor mix.
type FileType int

// The file types synth writes. Their values are the reference's
// general.file_type numbers.
const (
	AllF32      FileType = 0
	MostlyF16   FileType = 1
	MostlyQ4_0  FileType = 2
	MostlyQ4_1  FileType = 3
	MostlyQ8_0  FileType = 7
	MostlyQ5_0  FileType = 8
	MostlyQ5_1  FileType = 9
	MostlyQ4_KS FileType = 14
	MostlyQ4_KM FileType = 15
	MostlyQ5_KS FileType = 16
	MostlyQ5_KM FileType = 17
	MostlyQ6_K  FileType = 18
	MostlyBF16  FileType = 32
)

var fileTypes = []struct {
	ft   FileType
	name string
	def  kernels.Type
}{
	{AllF32, "F32", kernels.F32},
	{MostlyF16, "F16", kernels.F16},
	{MostlyBF16, "BF16", kernels.BF16},
	{MostlyQ8_0, "Q8_0", kernels.Q8_0},
	{MostlyQ4_0, "Q4_0", kernels.Q4_0},
	{MostlyQ4_1, "Q4_1", kernels.Q4_1},
	{MostlyQ5_0, "Q5_0", kernels.Q5_0},
	{MostlyQ5_1, "Q5_1", kernels.Q5_1},
	{MostlyQ4_KS, "Q4_K_S", kernels.Q4_K},
	{MostlyQ4_KM, "Q4_K_M", kernels.Q4_K},
	{MostlyQ5_KS, "Q5_K_S", kernels.Q5_K},
	{MostlyQ5_KM, "Q5_K_M", kernels.Q5_K},
	{MostlyQ6_K, "Q6_K", kernels.Q6_K},
}

// FileTypeNames lists the names ParseFileType accepts.
func FileTypeNames() []string {
	var names []string
	for _, f := range fileTypes {
		names = append(names, f.name)
	}
	return names
}

// ParseFileType returns the file type with the given name, e.g. "Q4_K_M"
// (case-insensitive).
func ParseFileType(name string) (FileType, error) {
	for _, f := range fileTypes {
		if strings.EqualFold(f.name, name) {
			return f.ft, nil
		}
	}
	return 0, fmt.Errorf("synth: unknown type %q (known: %s)", name, strings.Join(FileTypeNames(), ", "))
}

// String returns the name of the file type, e.g. "Q4_K_M".
func (ft FileType) String() string {
	for _, f := range fileTypes {
		if f.ft == ft {
			return f.name
		}
	}
	return fmt.Sprintf("filetype(%d)", int(ft))
}

// known reports whether ft is one of the file types synth writes.
func (ft FileType) known() bool {
	for _, f := range fileTypes {
		if f.ft == ft {
			return true
		}
	}
	return false
}

// Default is the type of most 2-D weights of the file type.
func (ft FileType) Default() kernels.Type {
	for _, f := range fileTypes {
		if f.ft == ft {
			return f.def
		}
	}
	return kernels.F32
}

// quantized reports whether the default type is a block type, for which the
// reference's quantizer applies its per-tensor mix.
func (ft FileType) quantized() bool { return ft.Default().BlockSize() > 1 }

// TensorType returns the type the reference's quantize tool (llama-quantize,
// without an importance matrix) gives the 2-D weight name of a model of shape
// s. name is a GGUF tensor name such as "blk.3.attn_v.weight"; layer is its
// block (ignored for other tensors). With pure set, every 2-D weight gets the
// default type, as the tool's --pure option does.
//
// The mix of the quantized file types: the output projection (the token
// embeddings when they are tied) is Q6_K unless the type is Q8_0. In Q4_K_M
// and Q5_K_M, the V projections (attn_v, or phi3's fused attn_qkv, which the
// tool counts as one) of the first and last eighth of the attention layers and
// of every third one between are Q6_K, and so are the ffn_down weights of the
// same share of all layers; in Q4_K_S those V projections are Q5_K in the
// first four attention layers, and ffn_down in the first eighth of the layers.
// The tool counts V projections, not blocks, so an lfm2 model's convolution
// blocks and gemma4's shared-KV blocks do not count for them (qwen35's
// DeltaNet blocks do, by their attn_qkv). gemma4's per_layer_token_embd is
// typed as the tied output projection is. (llama-quantize
// before llama.cpp 1dab5f5, March 2026, gave every attn_qkv Q5_K in Q4_K_M
// instead, as the published Phi-4-mini files show.) Every other matrix
// (Q, K, attn_output, the FFN's gate and up, lfm2's shortconv projections)
// keeps the default type. Finally, a tensor whose rows are not a whole number
// of its type's blocks falls back as the tool does (Q4_K → Q5_0, Q5_K → Q5_1,
// Q6_K → Q8_0, and F16 when even that does not fit): SmolLM's 960, Qwen2.5's
// 896 and Gemma 3's 640 and 1152 columns are not multiples of 256.
func (ft FileType) TensorType(s *Shape, name string, layer int, cols int, pure bool) kernels.Type {
	typ := ft.Default()
	if !ft.quantized() {
		return typ
	}
	if !pure {
		typ = ft.mixType(s, name, layer, typ)
	}
	if cols%typ.BlockSize() == 0 {
		return typ
	}
	switch typ {
	case kernels.Q4_K:
		typ = kernels.Q5_0
	case kernels.Q5_K:
		typ = kernels.Q5_1
	case kernels.Q6_K:
		typ = kernels.Q8_0
	}
	if cols%typ.BlockSize() != 0 {
		typ = kernels.F16
	}
	return typ
}

// mixType applies the reference's per-tensor rules to the default type typ.
func (ft FileType) mixType(s *Shape, name string, layer int, typ kernels.Type) kernels.Type {
	switch {
	case name == "output.weight" || (s.Tied && (name == "token_embd.weight" || name == "per_layer_token_embd.weight")):
		if typ != kernels.Q8_0 {
			return kernels.Q6_K
		}
	case strings.HasSuffix(name, "attn_v.weight") || strings.HasSuffix(name, "attn_qkv.weight"):
		i, n := s.vIndex(layer), s.vIndex(s.NLayer)
		switch {
		case (ft == MostlyQ4_KM || ft == MostlyQ5_KM) && useMoreBits(i, n):
			return kernels.Q6_K
		case ft == MostlyQ4_KS && i < 4:
			return kernels.Q5_K
		}
	case strings.HasSuffix(name, "ffn_down.weight"):
		n := s.NLayer
		switch {
		case (ft == MostlyQ4_KM || ft == MostlyQ5_KM) && useMoreBits(layer, n):
			return kernels.Q6_K
		case ft == MostlyQ4_KS && layer < n/8:
			return kernels.Q5_K
		}
	}
	return typ
}

// vIndex is the number of blocks before block layer with a V projection
// (attn_v, or an attn_qkv: qwen35's DeltaNet blocks have one too): the tool's
// count of V projections seen so far. Convolution blocks and gemma4's
// shared-KV blocks have none.
func (s *Shape) vIndex(layer int) int {
	i := 0
	for il := range layer {
		if s.ownsKV(il) || s.LayerKind(il) == LayerDeltaNet {
			i++
		}
	}
	return i
}

// useMoreBits is the reference's choice of layers that get more bits: the
// first and last eighth, and every third layer between.
func useMoreBits(layer, n int) bool {
	return layer < n/8 || layer >= 7*n/8 || (layer-n/8)%3 == 2
}

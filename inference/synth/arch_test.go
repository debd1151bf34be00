package synth

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/kernels"
)

// archRefs pairs each architecture added after llama and qwen2 with the tiny
// shape that copies the reference's random model of it, and that model's
// Q4_K_M file (made by the reference's converter and llama-quantize).
var archRefs = []struct{ arch, shape, file string }{
	{"qwen3", "tiny-qwen3", "qwen3-tiny-q4_k_m"},
	{"gemma3", "tiny-gemma3", "gemma3-tiny-q4_k_m"},
	{"phi3", "tiny-phi3", "phi3-tiny-q4_k_m"},
	{"lfm2", "tiny-lfm2", "lfm2-tiny-q4_k_m"},
	{"smollm3", "tiny-smollm3", "smollm3-tiny-q4_k_m"},
	{"qwen35", "tiny-qwen35", "qwen35-tiny-q4_k_m"},
	{"gemma4", "tiny-gemma4", "gemma4-tiny-q4_k_m"},
}

func openRef(t *testing.T, name string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(models + name + ".gguf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A tiny shape of each new architecture writes the reference's file: the same
// tensors in the same order with the same dimensions and, in Q4_K_M, the same
// per-tensor types; in Q8_0, every matrix the reference quantized is Q8_0 and
// the rest stays F32. The metadata has the same keys in the same order, with
// values of the same types and, but for the name and the vocabulary's
// placeholder pieces, the same values.
func TestNewArchitecturesMatchReference(t *testing.T) {
	for _, c := range archRefs {
		t.Run(c.arch, func(t *testing.T) {
			ref := openRef(t, c.file)
			s := mustShape(t, c.shape)
			for _, ft := range []FileType{MostlyQ4_KM, MostlyQ8_0} {
				f, err := gguf.Parse(writeBytes(t, Options{Shape: s, Type: ft, Seed: 5, Threads: 2}))
				if err != nil {
					t.Fatal(err)
				}
				if len(f.Tensors) != len(ref.Tensors) {
					t.Fatalf("%v: %d tensors, the reference has %d", ft, len(f.Tensors), len(ref.Tensors))
				}
				for i := range ref.Tensors {
					got, want := &f.Tensors[i], &ref.Tensors[i]
					wantType := want.Type
					if ft == MostlyQ8_0 && wantType != kernels.F32 {
						wantType = kernels.Q8_0
					}
					if got.Name != want.Name || !slices.Equal(got.Dims, want.Dims) || got.Type != wantType {
						t.Errorf("%v: tensor %d is %v, the reference's %v (%v in this type)", ft, i, got, want, wantType)
					}
				}
				compareMetadata(t, f, ref, ft)
			}
		})
	}
}

func compareMetadata(t *testing.T, f, ref *gguf.File, ft FileType) {
	t.Helper()
	if len(f.KVs) != len(ref.KVs) {
		t.Errorf("%v: %d metadata keys, the reference has %d", ft, len(f.KVs), len(ref.KVs))
	}
	for i := range min(len(f.KVs), len(ref.KVs)) {
		got, want := f.KVs[i], ref.KVs[i]
		if got.Key != want.Key || reflect.TypeOf(got.Value) != reflect.TypeOf(want.Value) {
			t.Errorf("%v: metadata %d is %s (%T), the reference's %s (%T)", ft, i, got.Key, got.Value, want.Key, want.Value)
			continue
		}
		switch got.Key {
		case "general.name":
		case "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type":
			if reflect.ValueOf(got.Value).Len() != reflect.ValueOf(want.Value).Len() {
				t.Errorf("%v: %s has %d entries, the reference %d", ft, got.Key, reflect.ValueOf(got.Value).Len(), reflect.ValueOf(want.Value).Len())
			}
		case "general.file_type":
			if got.Value != uint32(ft) {
				t.Errorf("%v: file type %v", ft, got.Value)
			}
		default:
			if !reflect.DeepEqual(got.Value, want.Value) {
				t.Errorf("%v: %s = %v, the reference has %v", ft, got.Key, got.Value, want.Value)
			}
		}
	}
}

// blockIndex matches the block number of a tensor name.
var blockIndex = regexp.MustCompile(`^blk\.\d+\.`)

// patterns returns the tensor names of f with block numbers replaced by *.
func patterns(f *gguf.File) map[string]bool {
	out := map[string]bool{}
	for i := range f.Tensors {
		out[blockIndex.ReplaceAllString(f.Tensors[i].Name, "blk.*.")] = true
	}
	return out
}

// headerPath writes the header of the synthetic model opts describes to a
// sparse file of the model's full size and returns its path: everything of a
// big model but its data, which are zeros.
func headerPath(t *testing.T, opts Options) string {
	t.Helper()
	s := &opts.Shape
	specs := s.tensors()
	types := make([]kernels.Type, len(specs))
	for i := range specs {
		types[i] = s.tensorType(&specs[i], opts.Type, opts.Pure)
	}
	header, _, err := encodeHeader(s, opts, specs, types)
	if err != nil {
		t.Fatal(err)
	}
	data, err := s.DataBytes(opts.Type)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), s.Name+".gguf")
	if err := os.WriteFile(path, header, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(header))+data); err != nil {
		t.Fatal(err)
	}
	return path
}

// headerFile opens the file headerPath writes.
func headerFile(t *testing.T, opts Options) *gguf.File {
	t.Helper()
	f, err := gguf.Open(headerPath(t, opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Every real model's shape of a new architecture has the tensors (by name,
// block numbers aside) and the metadata keys of the reference's model of that
// architecture. The only keys that may be missing are those of a RoPE scaling
// the real model does not have: gemma-3-270m and gemma-3-1b have no
// rope_scaling, the reference's tiny model has Gemma 3 4B's linear ×8.
func TestRealShapesFollowReference(t *testing.T) {
	optional := map[string]bool{"rope.scaling.type": true, "rope.scaling.factor": true}
	for _, c := range archRefs {
		ref := openRef(t, c.file)
		refKeys := map[string]bool{}
		for _, kv := range ref.KVs {
			refKeys[kv.Key] = true
		}
		n := 0
		for _, s := range Shapes() {
			if s.Arch != c.arch || s.Name == c.shape {
				continue
			}
			n++
			f := headerFile(t, Options{Shape: s, Type: MostlyQ4_KM})
			if got, want := patterns(f), patterns(ref); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: tensors %v, the reference has %v", s.Name, keys(got), keys(want))
			}
			gotKeys := map[string]bool{}
			for _, kv := range f.KVs {
				gotKeys[kv.Key] = true
				if !refKeys[kv.Key] {
					t.Errorf("%s: metadata %s is not in the reference", s.Name, kv.Key)
				}
			}
			for k := range refKeys {
				if !gotKeys[k] && !(optional[strings.TrimPrefix(k, c.arch+".")] && s.RopeLinear == 0) {
					t.Errorf("%s: no metadata %s", s.Name, k)
				}
			}
		}
		if n == 0 {
			t.Errorf("no real shape of %s", c.arch)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The metadata of a real shape carries its hyper-parameters as the reference
// reads them: the head dimension, the rotated dimensions, the window, the
// per-layer KV heads of lfm2 and LongRoPE's attention factor.
func TestRealShapeMetadata(t *testing.T) {
	for _, c := range []struct {
		shape string
		want  map[string]any
	}{
		{"qwen3-4b", map[string]any{"qwen3.attention.key_length": uint32(128), "qwen3.embedding_length": uint32(2560), "qwen3.rope.freq_base": float32(5e6), "qwen3.context_length": uint32(262144)}},
		{"gemma3-270m", map[string]any{"gemma3.attention.key_length": uint32(256), "gemma3.attention.sliding_window": uint32(512), "gemma3.rope.freq_base_swa": float32(10000), "tokenizer.ggml.add_space_prefix": false}},
		{"lfm2-350m", map[string]any{"lfm2.attention.head_count_kv": []int32{0, 0, 8, 0, 0, 8, 0, 0, 8, 0, 8, 0, 8, 0, 8, 0}, "lfm2.feed_forward_length": uint32(4608), "lfm2.shortconv.l_cache": uint32(3)}},
		{"phi4-mini", map[string]any{"phi3.rope.dimension_count": uint32(96), "phi3.attention.sliding_window": uint32(262144), "phi3.rope.scaling.original_context_length": uint32(4096), "phi3.rope.scaling.attn_factor": float32(math.Sqrt(1 + math.Log(32)/math.Log(4096)))}},
		{"smollm3-3b", map[string]any{"smollm3.attention.head_count_kv": uint32(4), "smollm3.rope.dimension_count": uint32(128)}},
		{"qwen3.5-2b", map[string]any{"qwen35.rope.dimension_count": uint32(64), "qwen35.rope.dimension_sections": []int32{11, 11, 10, 0},
			"qwen35.ssm.inner_size": uint32(2048), "qwen35.ssm.group_count": uint32(16), "qwen35.full_attention_interval": uint32(4), "qwen35.attention.key_length": uint32(256)}},
		{"gemma4-e2b", map[string]any{"gemma4.attention.key_length": uint32(512), "gemma4.attention.key_length_swa": uint32(256),
			"gemma4.rope.dimension_count": uint32(512), "gemma4.rope.dimension_count_swa": uint32(256), "gemma4.attention.shared_kv_layers": uint32(20),
			"gemma4.embedding_length_per_layer_input": uint32(256), "gemma4.final_logit_softcapping": float32(30), "gemma4.attention.sliding_window": uint32(512)}},
	} {
		f := headerFile(t, Options{Shape: mustShape(t, c.shape), Type: MostlyQ8_0})
		for k, want := range c.want {
			if got, ok := f.Get(k); !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s = %v (%T), want %v (%T)", c.shape, k, got, got, want, want)
			}
		}
	}
	phi := mustShape(t, "phi4-mini")
	f := headerFile(t, Options{Shape: phi, Type: AllF32})
	long, ok := f.Tensor("rope_factors_long.weight")
	if !ok || long.Dims[0] != 48 {
		t.Fatalf("rope_factors_long: %v", long)
	}
	g := headerFile(t, Options{Shape: mustShape(t, "gemma4-e2b"), Type: MostlyQ4_KM})
	ff, _ := g.Get("gemma4.feed_forward_length")
	pattern, _ := g.Get("gemma4.attention.sliding_window_pattern")
	if sizes, ok := ff.([]int32); !ok || len(sizes) != 35 || sizes[14] != 6144 || sizes[15] != 12288 || sizes[34] != 12288 {
		t.Errorf("gemma-4-E2B feed_forward_length %v", ff)
	}
	if p, ok := pattern.([]bool); !ok || len(p) != 35 || p[4] || !p[5] || p[34] {
		t.Errorf("gemma-4-E2B sliding_window_pattern %v", pattern)
	}
	for name, want := range map[string]kernels.Type{
		"per_layer_token_embd.weight": kernels.Q6_K, // typed as the tied output
		"per_layer_model_proj.weight": kernels.F32,  // left alone by the quantizer
		"blk.15.attn_q.weight":        kernels.Q4_K,
	} {
		if ti, ok := g.Tensor(name); !ok || ti.Type != want {
			t.Errorf("gemma-4-E2B Q4_K_M %s: %v, want %v", name, ti, want)
		}
	}
	if _, ok := g.Tensor("blk.15.attn_k.weight"); ok {
		t.Error("gemma-4-E2B's shared-KV block 15 has an attn_k")
	}
}

// The vectors that are not random hold the values the reference's converter
// writes: gemma4's rope_freqs, 1 for the rotated quarter of a full-attention
// head's pairs and 1e30 for the rest.
func TestVectorsMatchReference(t *testing.T) {
	for _, c := range []struct{ shape, file, tensor string }{
		{"tiny-gemma4", "gemma4-tiny-q8_0", "rope_freqs.weight"},
	} {
		ref := openRef(t, c.file)
		f, err := gguf.Parse(writeBytes(t, Options{Shape: mustShape(t, c.shape), Type: MostlyQ8_0, Seed: 1}))
		if err != nil {
			t.Fatal(err)
		}
		got, ok1 := f.Tensor(c.tensor)
		want, ok2 := ref.Tensor(c.tensor)
		if !ok1 || !ok2 || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("%s %s: %v, the reference's %v", c.shape, c.tensor, got, want)
		}
	}
}

// The number of weights of each real shape is the model's published count:
// exact counts where a record gives them (the rope factors of Phi-4-mini are
// the only extra weights), the model card's rounded figure otherwise.
func TestParamsMatchPublished(t *testing.T) {
	for _, c := range []struct {
		shape     string
		published float64
		source    string
	}{
		{"qwen3-0.6b", 0.6e9, "Qwen3-0.6B model card: 0.6B (0.44B non-embedding)"},
		{"qwen3-1.7b", 1.7e9, "Qwen3-1.7B model card: 1.7B (1.4B non-embedding)"},
		{"qwen3-4b", 4.0e9, "Qwen3-4B-Instruct-2507 model card: 4.0B (3.6B non-embedding)"},
		{"gemma3-270m", 268098176, "llama.cpp's count for ggml-org/gemma-3-270m-it-GGUF"},
		{"gemma3-1b", 999885952, "gemma-3-1b-it: 999,885,952 (999.89M in Ollama)"},
		{"lfm2-350m", 354483968, "LFM2-350M model card"},
		{"lfm2-1.2b", 1170340608, "LFM2-1.2B model card"},
		{"smollm3-3b", 3075098624, "SmolLM3-3B safetensors (6,150,235,008 bytes of BF16)"},
		{"phi4-mini", 3836021760, "Phi-4-mini-instruct safetensors"},
		{"qwen3.5-0.8b", 752393024, "llama.cpp's n_params of Qwen3.5-0.8B GGUFs, in several public run records"},
		{"qwen3.5-2b", 1881825088, "unsloth/Qwen3.5-2B-GGUF: Hugging Face's gguf.total"},
		{"gemma4-e2b", 4628569635, "llama-server's n_params of a gemma-4-E2B-it GGUF (xbill9's gemma-rust README)"},
	} {
		s := mustShape(t, c.shape)
		got := float64(s.Params())
		if rel := math.Abs(got-c.published) / c.published; rel > 0.02 {
			t.Errorf("%s: %.0f weights, %.1f%% off the published %.0f (%s)", c.shape, got, 100*rel, c.published, c.source)
		}
	}
}

// The Q4_K_M mix of a real model's shape has the type histogram of the
// published file: ggml-org/SmolLM3-3B-GGUF's SmolLM3-Q4_K_M.gguf is F32×73
// Q4_K×216 Q6_K×37, as an independent public test of that file records it.
func TestQ4KMHistogramOfPublishedFile(t *testing.T) {
	s := mustShape(t, "smollm3-3b")
	hist := map[kernels.Type]int{}
	for _, spec := range s.tensors() {
		hist[s.tensorType(&spec, MostlyQ4_KM, false)]++
	}
	want := map[kernels.Type]int{kernels.F32: 73, kernels.Q4_K: 216, kernels.Q6_K: 37}
	if !reflect.DeepEqual(hist, want) {
		t.Errorf("SmolLM3-3B Q4_K_M: %v, the published file has %v", hist, want)
	}
}

// The mix rules on the new tensor kinds: the V projections that get more bits
// are counted over attention layers only (lfm2), phi3's fused attn_qkv counts
// as one, its fused ffn_up keeps the default type, and the short convolution
// stays F32 in every type.
func TestMixNewKinds(t *testing.T) {
	lfm := mustShape(t, "lfm2-350m")
	var moreV, moreDown []int
	for _, spec := range lfm.tensors() {
		typ := lfm.tensorType(&spec, MostlyQ4_KM, false)
		switch {
		case strings.HasSuffix(spec.name, "attn_v.weight") && typ == kernels.Q6_K:
			moreV = append(moreV, spec.layer)
		case strings.HasSuffix(spec.name, "ffn_down.weight") && typ == kernels.Q6_K:
			moreDown = append(moreDown, spec.layer)
		case strings.HasSuffix(spec.name, "shortconv.conv.weight") && typ != kernels.F32:
			t.Errorf("%s is %v", spec.name, typ)
		}
	}
	// Attention layers 2 5 8 10 12 14: the 3rd and 6th of six get more bits.
	if fmt.Sprint(moreV) != "[8 14]" || fmt.Sprint(moreDown) != "[0 1 4 7 10 13 14 15]" {
		t.Errorf("LFM2-350M Q6_K attn_v in layers %v, ffn_down in %v", moreV, moreDown)
	}
	for _, ft := range []FileType{MostlyQ8_0, MostlyQ4_0, MostlyQ6_K} {
		conv := tensorSpec{name: "blk.0.shortconv.conv.weight", cols: 3, rows: 1024, layer: 0, keepF32: true}
		if typ := lfm.tensorType(&conv, ft, true); typ != kernels.F32 {
			t.Errorf("%v pure: shortconv.conv is %v", ft, typ)
		}
	}

	phi := mustShape(t, "phi4-mini") // 32 layers, 3072 columns
	for _, c := range []struct {
		name  string
		layer int
		cols  int
		want  kernels.Type
	}{
		{"blk.0.attn_qkv.weight", 0, 3072, kernels.Q6_K},
		{"blk.5.attn_qkv.weight", 5, 3072, kernels.Q4_K},
		{"blk.6.attn_qkv.weight", 6, 3072, kernels.Q6_K},
		{"blk.6.ffn_up.weight", 6, 3072, kernels.Q4_K},
		{"blk.6.ffn_down.weight", 6, 8192, kernels.Q6_K},
		{"token_embd.weight", -1, 3072, kernels.Q6_K},
	} {
		if got := MostlyQ4_KM.TensorType(&phi, c.name, c.layer, c.cols, false); got != c.want {
			t.Errorf("Phi-4-mini %s: %v, want %v", c.name, got, c.want)
		}
	}

	gemma := mustShape(t, "gemma3-270m") // 640 columns: not whole super-blocks
	for _, c := range []struct {
		name  string
		layer int
		cols  int
		want  kernels.Type
	}{
		{"token_embd.weight", -1, 640, kernels.Q8_0},
		{"blk.0.attn_v.weight", 0, 640, kernels.Q8_0}, // Q6_K falls back
		{"blk.3.attn_v.weight", 3, 640, kernels.Q5_0}, // 18 layers: 0, 1, 4, 7, … get more bits
		{"blk.1.attn_output.weight", 1, 1024, kernels.Q4_K},
		{"blk.0.ffn_down.weight", 0, 2048, kernels.Q6_K},
	} {
		if got := MostlyQ4_KM.TensorType(&gemma, c.name, c.layer, c.cols, false); got != c.want {
			t.Errorf("gemma-3-270m %s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Shapes the reference would not run as they say are refused.
func TestValidateNewArchitectures(t *testing.T) {
	for _, c := range []struct {
		shape string
		edit  func(*Shape)
		wants string
	}{
		{"gemma3-270m", func(s *Shape) { s.Layers = strings.Repeat("ssssas", 3) }, "the reference runs it as"},
		{"smollm3-3b", func(s *Shape) { s.Layers = strings.Repeat("aana", 9) }, "the reference runs it as"},
		{"lfm2-350m", func(s *Shape) { s.Layers = "ccsccaccacacacac" }, "which lfm2 does not have"},
		{"lfm2-350m", func(s *Shape) { s.Layers = "ccac" }, "4 layer kinds for 16 layers"},
		{"lfm2-350m", func(s *Shape) { s.ConvL = 0 }, "convolution layers need"},
		{"gemma3-1b", func(s *Shape) { s.RopeBaseSWA = 0 }, "sliding-window layers need"},
		{"phi4-mini", func(s *Shape) { s.LongRope.Long = s.LongRope.Long[:47] }, "needs an original context and 48 factors"},
		{"phi4-mini", func(s *Shape) { s.RopeDim = 130 }, "RoPE on 130 of 128"},
		{"qwen3-0.6b", func(s *Shape) { s.LongRope = &LongRope{OrigCtx: 4096} }, "RoPE scaling of another architecture"},
		{"qwen3-0.6b", func(s *Shape) { s.Arch = "qwen9" }, "unsupported architecture"},
	} {
		s := mustShape(t, c.shape)
		c.edit(&s)
		if err := s.validate(); err == nil || !strings.Contains(err.Error(), c.wants) {
			t.Errorf("%s: %v, want %q", c.shape, err, c.wants)
		}
	}
	for _, s := range Shapes() {
		if err := s.validate(); err != nil {
			t.Error(err)
		}
	}
}

// The shapes handed out are copies: changing one changes no other.
func TestShapesAreCopies(t *testing.T) {
	a := mustShape(t, "phi4-mini")
	a.LongRope.Long[0] = 99
	a.LongRope.OrigCtx = 1
	for _, s := range append(Shapes(), mustShape(t, "phi4-mini")) {
		if s.Name == "phi4-mini" && (s.LongRope.Long[0] != 1 || s.LongRope.OrigCtx != 4096) {
			t.Fatalf("the table changed: %+v", *s.LongRope)
		}
	}
}

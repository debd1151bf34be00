package inference

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/kernels"
)

// rewrite copies a test model into a temp file, letting kv and tensor edit or
// drop (return false) each entry, and returns the new file's path.
func rewrite(t *testing.T, name string, kv func(*gguf.KV) bool, tensor func(*gguf.Tensor) bool) string {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testdataDir, "models", name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := gguf.NewBuilder()
	for _, e := range f.KVs {
		if kv != nil && !kv(&e) {
			continue
		}
		if err := b.AddKV(e.Key, e.Value); err != nil {
			t.Fatal(err)
		}
	}
	for _, ti := range f.Tensors {
		if tensor != nil && !tensor(&ti) {
			continue
		}
		if err := b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := gguf.WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadErrors(t *testing.T) {
	q81 := make([]byte, 256/32*36*256) // a [256 256] Q8_1 tensor
	cases := []struct {
		name   string
		kv     func(*gguf.KV) bool
		tensor func(*gguf.Tensor) bool
		want   string
	}{
		{"unsupported architecture", func(e *gguf.KV) bool {
			if e.Key == "general.architecture" {
				e.Value = "mamba"
			}
			return true
		}, nil, `unsupported architecture "mamba"`},
		{"missing hyper-parameter", func(e *gguf.KV) bool { return e.Key != "llama.block_count" }, nil, `"llama.block_count": key not found`},
		{"heads not a multiple of kv heads", func(e *gguf.KV) bool {
			if e.Key == "llama.attention.head_count_kv" {
				e.Value = uint32(3)
			}
			return true
		}, nil, "4 query heads are not a multiple of 3 key/value heads"},
		{"missing tensor", nil, func(ti *gguf.Tensor) bool { return ti.Name != "blk.2.ffn_up.weight" }, `tensor "blk.2.ffn_up.weight" is missing`},
		{"wrong shape", nil, func(ti *gguf.Tensor) bool {
			if ti.Name == "blk.0.attn_k.weight" {
				ti.Dims = []uint64{128, 256}
			}
			return true
		}, `tensor "blk.0.attn_k.weight" has shape [128 256], want [256 128]`},
		{"unsupported tensor type", nil, func(ti *gguf.Tensor) bool {
			if ti.Name == "blk.1.attn_q.weight" {
				ti.Type, ti.Data = kernels.Q8_1, q81
			}
			return true
		}, `tensor "blk.1.attn_q.weight" has unsupported type Q8_1`},
		{"unsupported rope scaling", func(e *gguf.KV) bool {
			if e.Key == "llama.rope.freq_base" {
				e.Key, e.Value = "llama.rope.scaling.type", "yarn"
			}
			return true
		}, nil, `unsupported rope scaling "yarn"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := rewrite(t, "tiny-f32", c.kv, c.tensor)
			m, err := Load(path)
			if err == nil {
				m.Close()
				t.Fatalf("loaded; want error %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
		})
	}
}

// TestRewriteLoads checks the rewrite helper itself: an unchanged copy loads
// and gives the original's logits.
func TestRewriteLoads(t *testing.T) {
	m, err := Load(rewrite(t, "tiny-q4_0", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	orig := loadTestModel(t, "tiny-q4_0")
	a, _ := m.NewState(8, 1)
	b, _ := orig.NewState(8, 1)
	defer a.Close()
	defer b.Close()
	la, _ := a.Forward(1, true)
	lb, _ := b.Forward(1, true)
	for i := range la {
		if la[i] != lb[i] {
			t.Fatalf("logit %d: %v vs %v", i, la[i], lb[i])
		}
	}
}

func TestForwardErrors(t *testing.T) {
	m := loadTestModel(t, "stories260K")
	s, err := m.NewState(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Forward(512, true); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("token 512: %v", err)
	}
	if _, err := s.Forward(-1, true); err == nil {
		t.Fatal("token -1 accepted")
	}
	for i := 0; i < 2; i++ {
		if _, err := s.Forward(1, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Forward(1, true); err == nil || !strings.Contains(err.Error(), "context full (2 tokens)") {
		t.Fatalf("third token in a context of 2: %v", err)
	}
}

// Malformed metadata of the new architectures is refused with a clear error;
// what real files carry (Phi-4-mini's rope.scaling.type "longrope") loads.
func TestLoadNewArchitectureMetadata(t *testing.T) {
	set := func(key string, v any) func(*gguf.KV) bool {
		return func(e *gguf.KV) bool {
			if e.Key == key {
				e.Value = v
			}
			return true
		}
	}
	replace := func(key, newKey string, v any) func(*gguf.KV) bool {
		return func(e *gguf.KV) bool {
			if e.Key == key {
				e.Key, e.Value = newKey, v
			}
			return true
		}
	}
	drop := func(key string) func(*gguf.KV) bool { return func(e *gguf.KV) bool { return e.Key != key } }
	for _, c := range []struct {
		model, name string
		kv          func(*gguf.KV) bool
		tensor      func(*gguf.Tensor) bool
		want        string
	}{
		{"lfm2-tiny-q8_0", "short per-layer array", set("lfm2.attention.head_count_kv", []int32{0, 0, 2, 0, 2}), nil,
			`"lfm2.attention.head_count_kv" has 5 values for 6 layers`},
		{"lfm2-tiny-q8_0", "convolution length 1", set("lfm2.shortconv.l_cache", uint32(1)), nil, "short convolution length 1 out of range"},
		{"lfm2-tiny-q8_0", "missing conv kernel", nil, func(ti *gguf.Tensor) bool { return ti.Name != "blk.3.shortconv.conv.weight" },
			`tensor "blk.3.shortconv.conv.weight" is missing`},
		{"gemma3-tiny-q8_0", "pattern of the wrong length", replace("gemma3.rope.freq_base_swa", "gemma3.attention.sliding_window_pattern", []bool{true, false}), nil,
			`"gemma3.attention.sliding_window_pattern" has 2 values for 7 layers`},
		{"gemma3-tiny-q8_0", "missing post-norm", nil, func(ti *gguf.Tensor) bool { return ti.Name != "blk.4.post_ffw_norm.weight" },
			`tensor "blk.4.post_ffw_norm.weight" is missing`},
		{"phi3-tiny-q8_0", "attn_factor NaN", set("phi3.rope.scaling.attn_factor", float32(math.NaN())), nil, "is not a number"},
		{"qwen35-tiny-q8_0", "missing rope sections", drop("qwen35.rope.dimension_sections"), nil,
			`metadata "qwen35.rope.dimension_sections": key not found`},
		{"qwen35-tiny-q8_0", "rope sections not integers", set("qwen35.rope.dimension_sections", "3,3,2"), nil,
			`"qwen35.rope.dimension_sections" is string, want array of int32`},
		{"qwen35-tiny-q8_0", "five rope sections", set("qwen35.rope.dimension_sections", []int32{3, 3, 2, 0, 1}), nil,
			`"qwen35.rope.dimension_sections" has 5 values, want 1 to 4`},
		{"qwen35-tiny-q8_0", "state size 0", set("qwen35.ssm.state_size", uint32(0)), nil, `"qwen35.ssm.state_size" = 0 is out of range`},
		{"qwen35-tiny-q8_0", "state size 1024", set("qwen35.ssm.state_size", uint32(1024)), nil, "DeltaNet state size 1024 out of range"},
		{"qwen35-tiny-q8_0", "missing state size", drop("qwen35.ssm.state_size"), nil, `"qwen35.ssm.state_size": key not found`},
		{"qwen35-tiny-q8_0", "V heads not a multiple of K heads", set("qwen35.ssm.group_count", uint32(3)), nil,
			"4 DeltaNet value heads are not a multiple of 3 key heads"},
		{"qwen35-tiny-q8_0", "inner size", set("qwen35.ssm.inner_size", uint32(300)), nil, "ssm.inner_size 300 is not state size 64 × 4 value heads"},
		{"qwen35-tiny-q8_0", "conv kernel 1", set("qwen35.ssm.conv_kernel", uint32(1)), nil, "DeltaNet convolution kernel 1 out of range"},
		{"qwen35-tiny-q8_0", "interval 0", set("qwen35.full_attention_interval", uint32(0)), nil, `"qwen35.full_attention_interval" = 0 is out of range`},
		{"qwen35-tiny-q8_0", "no attention layer", set("qwen35.full_attention_interval", uint32(8)), nil, "the model has no attention layer"},
		{"qwen35-tiny-q8_0", "recurrent layers of the wrong length", replace("qwen35.full_attention_interval", "qwen35.attention.recurrent_layers", []bool{true, false}), nil,
			`"qwen35.attention.recurrent_layers" must hold one bool per layer (4)`},
		{"qwen35-tiny-q8_0", "recurrent layers elsewhere", replace("qwen35.full_attention_interval", "qwen35.attention.recurrent_layers", []bool{true, true, false, true}), nil,
			`tensor "blk.2.attn_q.weight" is missing`},
		{"qwen35-tiny-q8_0", "missing ssm_a", nil, func(ti *gguf.Tensor) bool { return ti.Name != "blk.1.ssm_a" }, `tensor "blk.1.ssm_a" is missing`},
		{"qwen35-tiny-q8_0", "single-width attn_q", set("qwen35.attention.head_count", uint32(8)), nil,
			`tensor "blk.3.attn_q.weight" has shape [256 512], want [256 1024]`},
		{"gemma4-tiny-q8_0", "too many shared-KV layers", set("gemma4.attention.shared_kv_layers", uint32(9)), nil,
			"9 shared-KV layers leave fewer than 2 of 10 layers with a KV cache"},
		{"gemma4-tiny-q8_0", "shared layers reading the wrong kinds", set("gemma4.attention.shared_kv_layers", uint32(4)), nil,
			"shared-KV layers read layers 4 and 5, which must be sliding and full"},
		{"gemma4-tiny-q8_0", "pattern a period", set("gemma4.attention.sliding_window_pattern", uint32(5)), nil,
			`"gemma4.attention.sliding_window_pattern" must hold one bool per layer (10)`},
		{"gemma4-tiny-q8_0", "missing sliding head size", drop("gemma4.attention.key_length_swa"), nil,
			`"gemma4.attention.key_length_swa": key not found`},
		{"gemma4-tiny-q8_0", "sliding value length", set("gemma4.attention.value_length_swa", uint32(32)), nil,
			"sliding value length 32 differs from key length 64"},
		{"gemma4-tiny-q8_0", "sliding rope wider than the head", set("gemma4.rope.dimension_count_swa", uint32(128)), nil,
			"layer 0: head dimension 64 must be even, at most 512 and at least the rotated dimensions"},
		{"gemma4-tiny-q8_0", "missing per-layer width", drop("gemma4.embedding_length_per_layer_input"), nil,
			`"gemma4.embedding_length_per_layer_input": key not found`},
		{"gemma4-tiny-q8_0", "huge per-layer width", set("gemma4.embedding_length_per_layer_input", uint32(1<<20)), nil,
			"per-layer input width 1048576 out of range"},
		{"gemma4-tiny-q8_0", "per-layer width of another file", set("gemma4.embedding_length_per_layer_input", uint32(16)), nil,
			`tensor "per_layer_token_embd.weight" has shape [320 512], want [160 512]`},
		{"gemma4-tiny-q8_0", "missing inp_gate", nil, func(ti *gguf.Tensor) bool { return ti.Name != "blk.7.inp_gate.weight" },
			`tensor "blk.7.inp_gate.weight" is missing`},
		{"gemma4-tiny-q8_0", "missing K of a layer with a cache", nil, func(ti *gguf.Tensor) bool { return ti.Name != "blk.4.attn_k.weight" },
			`tensor "blk.4.attn_k.weight" is missing`},
		{"gemma4-tiny-q8_0", "softcap NaN", set("gemma4.final_logit_softcapping", float32(math.NaN())), nil, "is not a number"},
		{"smollm3-tiny-q8_0", "longrope outside phi3", replace("smollm3.rope.freq_base", "smollm3.rope.scaling.type", "longrope"), nil,
			`unsupported rope scaling "longrope"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Load(rewrite(t, c.model, c.kv, c.tensor))
			if err == nil {
				m.Close()
				t.Fatalf("loaded; want error %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
		})
	}
	t.Run("qwen35 recurrent layers", func(t *testing.T) {
		m, err := Load(rewrite(t, "qwen35-tiny-q8_0", replace("qwen35.full_attention_interval", "qwen35.attention.recurrent_layers", []bool{true, true, true, false}), nil))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if got := m.Config.Summary(); got != "4 layers: 3 Gated DeltaNet, 1 gated attention" {
			t.Errorf("summary %q", got)
		}
	})
	// gemma4: without attn_v a layer's V is its raw K projection; without
	// final_logit_softcapping the cap is 30; without shared_kv_layers every
	// layer keeps its own cache (and then needs its K/V weights).
	t.Run("gemma4 optional keys and tensors", func(t *testing.T) {
		noV := func(ti *gguf.Tensor) bool { return ti.Name != "blk.2.attn_v.weight" }
		m, err := Load(rewrite(t, "gemma4-tiny-q8_0", drop("gemma4.final_logit_softcapping"), noV))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if m.Layers[2].Wv != nil || m.Layers[1].Wv == nil || m.Config.FinalSoftcap != 30 {
			t.Errorf("attn_v %v, softcap %v", m.Layers[2].Wv, m.Config.FinalSoftcap)
		}
		// Without attn_v, V is the raw K: the logits are those of a file
		// whose attn_v holds attn_k's weights (and not the original's).
		kAsV := func(ti *gguf.Tensor) bool {
			if ti.Name == "blk.2.attn_v.weight" {
				ti.Data = m.Layers[2].Wk.Data
			}
			return true
		}
		same := loadRewritten(t, rewrite(t, "gemma4-tiny-q8_0", nil, kAsV))
		orig := loadTestModel(t, "gemma4-tiny-q8_0")
		prompt := []int32{1, 5, 6, 7, 8}
		got, want, before := prefillLogits(t, m, prompt), prefillLogits(t, same, prompt), prefillLogits(t, orig, prompt)
		if !slices.Equal(got, want) || slices.Equal(got, before) {
			t.Errorf("without attn_v: logits %v…, with attn_v = attn_k %v…, original %v…", got[:3], want[:3], before[:3])
		}
		_, err = Load(rewrite(t, "gemma4-tiny-q8_0", drop("gemma4.attention.shared_kv_layers"), nil))
		if err == nil || !strings.Contains(err.Error(), `tensor "blk.5.attn_k.weight" is missing`) {
			t.Errorf("without shared_kv_layers: %v", err)
		}
	})
	t.Run("phi3 longrope", func(t *testing.T) {
		m, err := Load(rewrite(t, "phi3-tiny-q8_0", replace("phi3.attention.sliding_window", "phi3.rope.scaling.type", "longrope"), nil))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if r := m.Config.Ropes[0]; r.Scale != 1 || r.FactorsLong == nil {
			t.Errorf("rope %+v", r)
		}
	})
}

// loadRewritten loads a rewritten model file, closed when the test ends.
func loadRewritten(t *testing.T, path string) *Model {
	t.Helper()
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// prefillLogits returns a copy of m's logits after prompt.
func prefillLogits(t *testing.T, m *Model, prompt []int32) []float32 {
	t.Helper()
	s, err := m.NewState(len(prompt), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.Prefill(context.Background(), prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(l)
}

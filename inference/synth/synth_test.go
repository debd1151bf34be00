package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/kernels"
)

const models = "../../testdata/models/"

func mustShape(t *testing.T, name string) Shape {
	t.Helper()
	s, err := LookupShape(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeBytes(t *testing.T, opts Options) []byte {
	t.Helper()
	var b bytes.Buffer
	sum, err := Write(&b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Bytes != int64(b.Len()) {
		t.Fatalf("summary says %d bytes, wrote %d", sum.Bytes, b.Len())
	}
	return b.Bytes()
}

// The per-tensor types of the Q4_K_M mix are those of the reference's
// tiny-q4_k_m.gguf, made from a model of the same shape; the "pure" reference
// files have every matrix in their type.
func TestTensorTypesMatchReference(t *testing.T) {
	s := mustShape(t, "tiny")
	for _, c := range []struct {
		file string
		ft   FileType
		pure bool
	}{
		{"tiny-q4_k_m", MostlyQ4_KM, false},
		{"tiny-q4_0", MostlyQ4_0, true},
		{"tiny-q5_1", MostlyQ5_1, true},
		{"tiny-q8_0", MostlyQ8_0, true},
		{"tiny-q4_k_s", MostlyQ4_KS, true},
		{"tiny-q6_k", MostlyQ6_K, true},
		{"tiny-f16", MostlyF16, false},
		{"tiny-f32", AllF32, false},
	} {
		f, err := gguf.Open(models + c.file + ".gguf")
		if err != nil {
			t.Fatal(err)
		}
		specs := s.tensors()
		if len(specs) != len(f.Tensors) {
			t.Errorf("%s: %d tensors, synth makes %d", c.file, len(f.Tensors), len(specs))
		}
		for i := range specs {
			spec := &specs[i]
			ref, ok := f.Tensor(spec.name)
			if !ok {
				t.Errorf("%s: no tensor %q", c.file, spec.name)
				continue
			}
			if got := s.tensorType(spec, c.ft, c.pure); got != ref.Type {
				t.Errorf("%s: %s is %v, synth gives %v", c.file, spec.name, ref.Type, got)
			}
			if !equalDims(ref.Dims, spec.dims()) {
				t.Errorf("%s: %s has dims %v, synth %v", c.file, spec.name, ref.Dims, spec.dims())
			}
		}
		f.Close()
	}
}

func equalDims(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The mix rules on shapes whose rows are not whole super-blocks, and on the
// layers that get more bits (for 32 layers: 0–3, 28–31 and 6, 9, … 27).
func TestMixFallbacks(t *testing.T) {
	smol := mustShape(t, "smollm-360m") // 960 columns, n_ff 2560, 32 layers, tied
	for _, c := range []struct {
		ft    FileType
		name  string
		layer int
		cols  int
		want  kernels.Type
	}{
		{MostlyQ4_KM, "token_embd.weight", -1, 960, kernels.Q8_0}, // output rule, then fallback
		{MostlyQ4_KM, "blk.5.attn_q.weight", 5, 960, kernels.Q5_0},
		{MostlyQ4_KM, "blk.5.ffn_down.weight", 5, 2560, kernels.Q4_K},
		{MostlyQ4_KM, "blk.6.ffn_down.weight", 6, 2560, kernels.Q6_K},
		{MostlyQ4_KM, "blk.0.ffn_down.weight", 0, 2560, kernels.Q6_K},
		{MostlyQ4_KM, "blk.31.ffn_down.weight", 31, 2560, kernels.Q6_K},
		{MostlyQ4_KM, "blk.0.attn_v.weight", 0, 960, kernels.Q8_0}, // Q6_K falls back
		{MostlyQ4_KM, "blk.7.attn_v.weight", 7, 960, kernels.Q5_0},
		{MostlyQ5_KM, "blk.7.attn_k.weight", 7, 960, kernels.Q5_1},
		{MostlyQ5_KM, "blk.7.ffn_down.weight", 7, 2560, kernels.Q5_K},
		{MostlyQ5_KM, "blk.9.ffn_down.weight", 9, 2560, kernels.Q6_K},
		{MostlyQ4_KS, "blk.3.attn_v.weight", 3, 960, kernels.Q5_1}, // Q5_K falls back
		{MostlyQ4_KS, "blk.3.ffn_down.weight", 3, 2560, kernels.Q5_K},
		{MostlyQ4_KS, "blk.4.ffn_down.weight", 4, 2560, kernels.Q4_K},
		{MostlyQ4_0, "token_embd.weight", -1, 960, kernels.Q8_0},
		{MostlyQ4_0, "blk.0.ffn_down.weight", 0, 2560, kernels.Q4_0},
		{MostlyQ8_0, "token_embd.weight", -1, 960, kernels.Q8_0},
		{MostlyQ6_K, "blk.2.attn_q.weight", 2, 960, kernels.Q8_0},
		{MostlyF16, "token_embd.weight", -1, 960, kernels.F16},
	} {
		if got := c.ft.TensorType(&smol, c.name, c.layer, c.cols, false); got != c.want {
			t.Errorf("%v %s: %v, want %v", c.ft, c.name, got, c.want)
		}
	}
	tl := mustShape(t, "tinyllama-1.1b") // untied, 2048 columns
	for name, want := range map[string]kernels.Type{"output.weight": kernels.Q6_K, "token_embd.weight": kernels.Q4_K} {
		if got := MostlyQ4_KM.TensorType(&tl, name, -1, 2048, false); got != want {
			t.Errorf("tinyllama %s: %v, want %v", name, got, want)
		}
	}
	if got := MostlyQ4_0.TensorType(&tl, "output.weight", -1, 2048, false); got != kernels.Q6_K {
		t.Errorf("tinyllama Q4_0 output: %v, want Q6_K", got)
	}
	if got := MostlyQ4_0.TensorType(&tl, "output.weight", -1, 2048, true); got != kernels.Q4_0 {
		t.Errorf("tinyllama pure Q4_0 output: %v, want Q4_0", got)
	}
	var more []int
	for l := range 22 {
		if useMoreBits(l, 22) {
			more = append(more, l)
		}
	}
	if got := fmt.Sprint(more); got != "[0 1 4 7 10 13 16 19 20 21]" {
		t.Errorf("layers of 22 with more bits: %s", got)
	}
}

// tinyGolden is the SHA-256 of the tiny Q4_K_M file of seed 1. It changes only
// when the generator, the quantizers or the file layout change.
const tinyGolden = "955e5ba5bf01acde977e76766cbfca12517a14a354cf35b04bf93dde783e0876"

func TestWriteDeterministic(t *testing.T) {
	opts := Options{Shape: mustShape(t, "tiny"), Type: MostlyQ4_KM, Seed: 1, Threads: 1}
	a := writeBytes(t, opts)
	opts.Threads = 3
	b := writeBytes(t, opts)
	if !bytes.Equal(a, b) {
		t.Fatal("1 and 3 threads wrote different files")
	}
	sum := sha256.Sum256(a)
	if got := hex.EncodeToString(sum[:]); got != tinyGolden {
		t.Errorf("tiny Q4_K_M seed 1: sha256 %s, want %s", got, tinyGolden)
	}
	opts.Seed = 2
	if c := writeBytes(t, opts); bytes.Equal(a, c) || len(c) != len(a) {
		t.Error("seeds 1 and 2 wrote the same file, or files of different sizes")
	}
}

// Every type of every shape's tensors is consistent with the summary, and the
// quantized tensors of a file are the quantization of the F32 file's: the
// weights depend on the seed only, not on the type.
func TestTypesShareWeights(t *testing.T) {
	s := mustShape(t, "tiny-qwen2")
	load := func(ft FileType) *gguf.File {
		f, err := gguf.Parse(writeBytes(t, Options{Shape: s, Type: ft, Seed: 9, Threads: 2}))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ref := load(AllF32)
	for _, ft := range []FileType{MostlyF16, MostlyBF16, MostlyQ8_0, MostlyQ4_0, MostlyQ4_1, MostlyQ5_0, MostlyQ5_1, MostlyQ4_KS, MostlyQ4_KM, MostlyQ5_KS, MostlyQ5_KM, MostlyQ6_K} {
		f := load(ft)
		if len(f.Tensors) != len(ref.Tensors) {
			t.Fatalf("%v: %d tensors, F32 has %d", ft, len(f.Tensors), len(ref.Tensors))
		}
		for i := range f.Tensors {
			got, orig := &f.Tensors[i], &ref.Tensors[i]
			cols := int(orig.Dims[0])
			x := make([]float32, cols)
			rb, _ := got.Type.RowBytes(cols)
			want := make([]byte, rb)
			for r := range int(orig.Rows()) {
				kernels.DequantizeRow(kernels.F32, orig.Data[4*cols*r:], x)
				kernels.QuantizeRow(got.Type, x, want)
				if !bytes.Equal(want, got.Data[r*rb:(r+1)*rb]) {
					t.Fatalf("%v: %s row %d is not the quantized F32 row", ft, got.Name, r)
				}
			}
		}
	}
}

// Every shape of an architecture the engine runs makes a model that it loads
// with the shape's hyper-parameters. The data are not made: the header is
// written to a sparse file of the full size.
func TestShapesLoad(t *testing.T) {
	for _, s := range Shapes() {
		for _, ft := range []FileType{MostlyQ4_KM, MostlyQ8_0, AllF32} {
			m, err := inference.Load(headerPath(t, Options{Shape: s, Type: ft}))
			if err != nil {
				t.Fatalf("%s %v: %v", s.Name, ft, err)
			}
			checkConfig(t, &s, m)
			m.Close()
		}
	}
}

func checkConfig(t *testing.T, s *Shape, m *inference.Model) {
	t.Helper()
	c := m.Config
	if string(c.Arch) != s.Arch || c.NEmbd != s.NEmbd || c.NLayer != s.NLayer || c.NHead != s.NHead ||
		c.NHeadKV != s.NHeadKV || c.NFF != s.NFF || c.NVocab != s.NVocab || c.NCtxTrain != s.NCtx ||
		c.RopeBase != s.RopeBase || c.NormEps != s.NormEps || c.HeadDim != s.HeadDim() {
		t.Errorf("%s: loaded config %+v", s.Name, c)
	}
	if tied := m.Output == m.Embed; tied != s.Tied {
		t.Errorf("%s: tied embeddings %v, want %v", s.Name, tied, s.Tied)
	}
	for i, l := range c.Layers {
		if l.Mixer == inference.MixAttention && l.Attn.QKVBias != s.HasQKVBias() {
			t.Errorf("%s: layer %d: Q/K/V biases %v", s.Name, i, l.Attn.QKVBias)
		}
	}
	factors := c.Ropes[0].Factors != nil
	if want := s.Llama3Rope != nil || s.LongRope != nil || s.PartialRotary > 0; factors != want {
		t.Errorf("%s: rope factors %v, want %v", s.Name, factors, want)
	}
	if n := m.Tokenizer.NumTokens(); n != s.NVocab {
		t.Errorf("%s: %d tokens", s.Name, n)
	}
}

// The random weights keep the forward pass tame: finite logits of moderate
// size that differ between tokens, in every type.
func TestForwardIsSane(t *testing.T) {
	for _, shape := range []string{"tiny", "tiny-qwen2", "tiny-qwen35", "tiny-gemma4"} {
		for _, ft := range []FileType{AllF32, MostlyQ4_KM, MostlyQ8_0} {
			path := filepath.Join(t.TempDir(), "m.gguf")
			if _, err := WriteFile(path, Options{Shape: mustShape(t, shape), Type: ft, Seed: 3}); err != nil {
				t.Fatal(err)
			}
			m, err := inference.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.NewState(64, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ids, err := m.Tokenizer.Encode("The quick brown fox jumps over the lazy dog", true)
			if err != nil {
				t.Fatal(err)
			}
			g := inference.NewGenerator(s, m.Tokenizer)
			logits, err := g.Prefill(context.Background(), ids)
			if err != nil {
				t.Fatal(err)
			}
			var sum, sq float64
			for _, v := range logits {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s %v: logit %v", shape, ft, v)
				}
				sum += float64(v)
				sq += float64(v) * float64(v)
			}
			n := float64(len(logits))
			sd := math.Sqrt(sq/n - (sum/n)*(sum/n))
			if !(sd > 0.05 && sd < 20) {
				t.Errorf("%s %v: logits have standard deviation %v", shape, ft, sd)
			}
			s.Close()
			m.Close()
		}
	}
}

func TestPlaceholderVocab(t *testing.T) {
	tokens, scores, types := placeholderVocab(151936)
	if len(tokens) != 151936 || len(scores) != len(tokens) || len(types) != len(tokens) {
		t.Fatalf("%d tokens, %d scores, %d types", len(tokens), len(scores), len(types))
	}
	seen := make(map[string]bool, len(tokens))
	for _, tok := range tokens {
		if seen[tok] {
			t.Fatalf("token %q twice", tok)
		}
		seen[tok] = true
	}
	if tokens[0] != "<unk>" || tokens[2] != "</s>" || tokens[3] != "<0x00>" || tokens[258] != "<0xFF>" ||
		tokens[259] != "▁" || tokens[260] != "▁a" || tokens[285] != "▁z" || tokens[286] != "▁aa" {
		t.Errorf("tokens %q … %q %q %q %q", tokens[:4], tokens[258], tokens[259], tokens[260], tokens[286])
	}
}

// Text survives a round trip through the tokenizer of a synthetic model, and
// uses its pieces.
func TestVocabRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := WriteFile(path, Options{Shape: mustShape(t, "tiny"), Type: MostlyQ8_0}); err != nil {
		t.Fatal(err)
	}
	tok, closeFn, err := inference.LoadTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	const text = "a b zz héllo, wörld 123"
	ids, err := tok.Encode(text, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Decode(ids, false); got != text {
		t.Errorf("round trip of %q gave %q (ids %v)", text, got, ids)
	}
	if ids[0] != 260 { // "▁a"
		t.Errorf("ids %v, want ▁a (260) first", ids)
	}
}

func TestLlama3RopeFactors(t *testing.T) {
	s := mustShape(t, "llama-3.2-1b")
	f := s.Llama3Rope.ropeFactors(s.HeadDim(), s.RopeBase)
	if len(f) != 32 || f[0] != 1 || f[31] != 32 {
		t.Fatalf("factors %v", f)
	}
	for i := 1; i < len(f); i++ {
		if f[i] < f[i-1] {
			t.Fatalf("factors not increasing: %v", f)
		}
	}
	// Wavelength 2π·500000^(i/32) crosses 8192/4 = 2048 between i = 14 and 15
	// and 8192 between i = 17 and 18: the blend lies between.
	if f[14] != 1 || !(f[15] > 1) || !(f[17] < 32) || f[18] != 32 {
		t.Errorf("factors %v", f)
	}
}

func TestLookupErrors(t *testing.T) {
	if _, err := LookupShape("gpt-5"); err == nil || !strings.Contains(err.Error(), "tinyllama-1.1b") {
		t.Errorf("unknown shape: %v", err)
	}
	if ft, err := ParseFileType("q4_k_m"); err != nil || ft != MostlyQ4_KM || ft.String() != "Q4_K_M" {
		t.Errorf("q4_k_m: %v %v", ft, err)
	}
	if _, err := ParseFileType("Q3_K_M"); err == nil {
		t.Error("Q3_K_M accepted")
	}
	if _, err := Write(&bytes.Buffer{}, Options{Shape: mustShape(t, "tiny"), Type: FileType(99)}); err == nil {
		t.Error("file type 99 accepted")
	}
	bad := mustShape(t, "tiny")
	bad.NHead = 3
	if _, err := Write(&bytes.Buffer{}, Options{Shape: bad, Type: AllF32}); err == nil {
		t.Error("3 heads of 256 accepted")
	}
	all := Shapes()
	for i := 1; i < len(all); i++ {
		if all[i].Params() < all[i-1].Params() {
			t.Errorf("shapes not smallest first: %s before %s", all[i-1].Name, all[i].Name)
		}
	}
	if names := ShapeNames(); len(names) != len(all) || names[0] != all[0].Name {
		t.Errorf("names %v", names)
	}
}

package inference

import (
	"fmt"
	"unsafe"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference/tokenizer"
	"github.com/edgellm/edgellm/kernels"
)

// Matrix is a weight matrix used in place in the file mapping: Rows rows of Cols
// values of type Type, each row RowBytes long.
type Matrix struct {
	Name     string
	Type     kernels.Type
	Rows     int
	Cols     int
	RowBytes int
	Data     []byte
}

// Row returns the bytes of row r.
func (m *Matrix) Row(r int) []byte { return m.Data[r*m.RowBytes : (r+1)*m.RowBytes] }

// Layer holds the weights of one block; which are set depends on the
// block's LayerSpec.
type Layer struct {
	AttnNorm []float32 // the mixer's input norm
	// Attention (MixAttention): Wq, Wk and Wv, or Wqkv when fused.
	Wq, Wk, Wv   *Matrix
	Wqkv         *Matrix   // rows [Q | K | V]
	Bq, Bk, Bv   []float32 // biases, when AttnSpec.QKVBias
	QNorm, KNorm []float32 // per-head norms (HeadDim), when AttnSpec.QKNorm
	Wo           *Matrix
	// Gated short convolution (MixShortConv): ConvIn gives [b | c | u],
	// ConvW holds the kernel tap by tap (ConvL rows of NEmbd: tap k of
	// every channel together), ConvOut projects c × conv(b × u).
	ConvIn, ConvOut *Matrix
	ConvW           []float32
	// Gated DeltaNet (MixDeltaNet): Wqkv (above) gives [q | k | v] and
	// ConvW their convolution kernel tap by tap (ConvL rows of ConvDim);
	// SsmZ the output gate z, SsmBeta and SsmAlpha one value per V head;
	// SsmDt the bias of alpha and SsmA the decay rate (−exp(A_log)) per V
	// head; SsmNorm the per-head output norm (StateDim); SsmOut the output
	// projection.
	SsmZ, SsmBeta, SsmAlpha, SsmOut *Matrix
	SsmDt, SsmA, SsmNorm            []float32
	PostAttnNorm                    []float32 // when LayerSpec.PostAttnNorm
	FFNNorm                         []float32
	Gate, Up                        *Matrix // Up has 2·NFF rows, the gate first, when FFNSpec.FusedUp (Gate nil)
	Down                            *Matrix
	PostFFNNorm                     []float32 // when LayerSpec.PostFFNNorm
	// Per-layer input (LayerSpec.PerLayerInput): InpGate maps x to the
	// per-layer width, Proj back to NEmbd, PostNorm norms the result.
	InpGate, Proj *Matrix
	PostNorm      []float32
	OutScale      []float32 // one value, when LayerSpec.OutScale
}

// Model is a loaded model: its configuration and weights, which point into the
// GGUF file mapping. A Model is read-only and may be shared by many States.
type Model struct {
	Config    Config
	File      *gguf.File
	Embed     *Matrix // token embeddings, one row per token
	Layers    []Layer
	OutNorm   []float32
	Output    *Matrix // output projection; Embed when the embeddings are tied
	Tokenizer *tokenizer.Tokenizer
	// Per-layer inputs (Config.PerLayerDim > 0): per_layer_token_embd (one
	// row of PerLayerDim·NLayer per token), per_layer_model_proj and the
	// norm of its per-layer slices.
	PerLayerEmbd, PerLayerProj *Matrix
	PerLayerNorm               []float32
}

// Load opens the GGUF file at path and loads the model in it.
func Load(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := FromFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

// Close releases the model's file mapping. The model must not be used afterwards.
func (m *Model) Close() error { return m.File.Close() }

// FromFile loads the model held in an open GGUF file, checking every tensor's
// presence, type and shape against the configuration.
func FromFile(f *gguf.File) (*Model, error) {
	cfg, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	m := &Model{File: f}
	l := loader{f: f}
	m.Embed = l.matrix("token_embd.weight", cfg.NEmbd, -1)
	if l.err != nil {
		return nil, l.err
	}
	cfg.NVocab = m.Embed.Rows
	for i := range cfg.Ropes {
		r := &cfg.Ropes[i]
		r.Factors = l.optVector(r.FactorsTensor, r.Dim/2)
		r.FactorsLong = l.optVector(r.FactorsLongTensor, r.Dim/2)
	}
	if p := cfg.PerLayerDim; p > 0 {
		m.PerLayerEmbd = l.matrix("per_layer_token_embd.weight", p*cfg.NLayer, cfg.NVocab)
		m.PerLayerProj = l.matrix("per_layer_model_proj.weight", cfg.NEmbd, p*cfg.NLayer)
		m.PerLayerNorm = l.vector("per_layer_proj_norm.weight", p)
	}
	m.Layers = make([]Layer, cfg.NLayer)
	for i := range m.Layers {
		l.layer(&m.Layers[i], &cfg, i)
	}
	m.OutNorm = l.vector(cfg.FinalNorm, cfg.NEmbd)
	if _, ok := f.Tensor("output.weight"); ok {
		m.Output = l.matrix("output.weight", cfg.NEmbd, cfg.NVocab)
	} else {
		m.Output = m.Embed // tied embeddings
	}
	if l.err != nil {
		return nil, l.err
	}
	m.Config = cfg
	if m.Tokenizer, err = tokenizer.FromGGUF(f); err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	if n := m.Tokenizer.NumTokens(); n != cfg.NVocab {
		return nil, fmt.Errorf("inference: tokenizer has %d tokens but token_embd.weight has %d rows", n, cfg.NVocab)
	}
	return m, nil
}

// layer loads the weights of block i as its description says.
func (l *loader) layer(L *Layer, cfg *Config, i int) {
	spec, nEmbd := &cfg.Layers[i], cfg.NEmbd
	p := fmt.Sprintf("blk.%d.", i)
	L.AttnNorm = l.vector(p+"attn_norm.weight", nEmbd)
	switch spec.Mixer {
	case MixAttention:
		a := &spec.Attn
		qDim, kvDim := a.QDim(), a.KVDim()
		qRows := qDim
		if a.OutGate {
			qRows = 2 * qDim // per head: the query, then its gate
		}
		own := a.KVLayer == i // a layer reading another's cache has no K/V weights
		if a.FusedQKV {
			L.Wqkv = l.matrix(p+"attn_qkv.weight", nEmbd, qDim+2*kvDim)
		} else {
			L.Wq = l.matrix(p+"attn_q.weight", nEmbd, qRows)
		}
		if own && !a.FusedQKV {
			L.Wk = l.matrix(p+"attn_k.weight", nEmbd, kvDim)
			if _, ok := l.f.Tensor(p + "attn_v.weight"); ok || !a.OptionalV {
				L.Wv = l.matrix(p+"attn_v.weight", nEmbd, kvDim) // else V is the raw K
			}
		}
		if a.QKVBias {
			L.Bq = l.vector(p+"attn_q.bias", qDim)
			L.Bk = l.vector(p+"attn_k.bias", kvDim)
			L.Bv = l.vector(p+"attn_v.bias", kvDim)
		}
		if a.QKNorm {
			L.QNorm = l.vector(p+"attn_q_norm.weight", a.HeadDim)
			if own {
				L.KNorm = l.vector(p+"attn_k_norm.weight", a.HeadDim)
			}
		}
		L.Wo = l.matrix(p+"attn_output.weight", qDim, nEmbd)
	case MixShortConv:
		L.ConvIn = l.matrix(p+"shortconv.in_proj.weight", nEmbd, 3*nEmbd)
		L.ConvOut = l.matrix(p+"shortconv.out_proj.weight", nEmbd, nEmbd)
		L.ConvW = l.convKernel(p+"shortconv.conv.weight", spec.ConvL, nEmbd)
	case MixDeltaNet:
		d := &spec.Delta
		L.Wqkv = l.matrix(p+"attn_qkv.weight", nEmbd, d.ConvDim())
		L.SsmZ = l.matrix(p+"attn_gate.weight", nEmbd, d.VDim())
		L.SsmBeta = l.matrix(p+"ssm_beta.weight", nEmbd, d.NVHead)
		L.SsmAlpha = l.matrix(p+"ssm_alpha.weight", nEmbd, d.NVHead)
		L.ConvW = l.convKernel(p+"ssm_conv1d.weight", d.ConvL, d.ConvDim())
		L.SsmDt = l.vector(p+"ssm_dt.bias", d.NVHead)
		L.SsmA = l.vector(p+"ssm_a", d.NVHead)
		L.SsmNorm = l.vector(p+"ssm_norm.weight", d.StateDim)
		L.SsmOut = l.matrix(p+"ssm_out.weight", d.VDim(), nEmbd)
	}
	if spec.PostAttnNorm {
		L.PostAttnNorm = l.vector(p+"post_attention_norm.weight", nEmbd)
	}
	ffnNorm := spec.FFNNorm
	if ffnNorm == "" {
		ffnNorm = "ffn_norm"
	}
	L.FFNNorm = l.vector(p+ffnNorm+".weight", nEmbd)
	f := &spec.FFN
	if f.FusedUp {
		L.Up = l.matrix(p+"ffn_up.weight", nEmbd, 2*f.NFF)
	} else {
		L.Gate = l.matrix(p+"ffn_gate.weight", nEmbd, f.NFF)
		L.Up = l.matrix(p+"ffn_up.weight", nEmbd, f.NFF)
	}
	L.Down = l.matrix(p+"ffn_down.weight", f.NFF, nEmbd)
	if spec.PostFFNNorm {
		L.PostFFNNorm = l.vector(p+"post_ffw_norm.weight", nEmbd)
	}
	if spec.PerLayerInput {
		L.InpGate = l.matrix(p+"inp_gate.weight", nEmbd, cfg.PerLayerDim)
		L.Proj = l.matrix(p+"proj.weight", cfg.PerLayerDim, nEmbd)
		L.PostNorm = l.vector(p+"post_norm.weight", nEmbd)
	}
	if spec.OutScale {
		L.OutScale = l.vector(p+"layer_output_scale.weight", 1)
	}
}

// LoadTokenizer reads only the tokenizer of a GGUF file (a model or a
// vocabulary-only file). The returned function releases the file.
func LoadTokenizer(path string) (*tokenizer.Tokenizer, func() error, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("inference: %w", err)
	}
	return tok, f.Close, nil
}

// loader fetches tensors and remembers the first error.
type loader struct {
	f   *gguf.File
	err error
}

func (l *loader) tensor(name string) *gguf.Tensor {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("inference: tensor %q is missing", name)
		return nil
	}
	return t
}

// matrix returns the 2-D tensor name with rows of cols values and the given
// number of rows (-1: any).
func (l *loader) matrix(name string, cols, rows int) *Matrix {
	t := l.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Dims) != 2 || int(t.Dims[0]) != cols || (rows >= 0 && int(t.Dims[1]) != rows) {
		want := fmt.Sprintf("[%d %d]", cols, rows)
		if rows < 0 {
			want = fmt.Sprintf("[%d *]", cols)
		}
		l.err = fmt.Errorf("inference: tensor %q has shape %v, want %s", name, t.Dims, want)
		return nil
	}
	if !t.Type.Supported() {
		l.err = fmt.Errorf("inference: tensor %q has unsupported type %v", name, t.Type)
		return nil
	}
	rb, err := t.Type.RowBytes(cols)
	if err != nil {
		l.err = fmt.Errorf("inference: tensor %q: %w", name, err)
		return nil
	}
	return &Matrix{Name: name, Type: t.Type, Rows: int(t.Dims[1]), Cols: cols, RowBytes: rb, Data: t.Data}
}

// convKernel reads a depthwise convolution kernel of taps taps for channels
// channels: the file holds each channel's taps together, the convolution
// reads each tap across the channels, so the result is tap-major.
func (l *loader) convKernel(name string, taps, channels int) []float32 {
	w := l.floats(name, taps, channels)
	if w == nil {
		return nil
	}
	out := make([]float32, len(w))
	for ch := range channels {
		for k := range taps {
			out[k*channels+ch] = w[ch*taps+k]
		}
	}
	return out
}

// optVector is vector for a tensor that may be absent (nil then, as for an
// empty name).
func (l *loader) optVector(name string, n int) []float32 {
	if name == "" {
		return nil
	}
	if _, ok := l.f.Tensor(name); !ok {
		return nil
	}
	return l.vector(name, n)
}

// floats returns the 2-D tensor name of rows rows of cols values as float32
// (dequantized when it is not F32).
func (l *loader) floats(name string, cols, rows int) []float32 {
	w := l.matrix(name, cols, rows)
	if w == nil {
		return nil
	}
	out := make([]float32, cols*rows)
	for r := range rows {
		kernels.DequantizeRow(w.Type, w.Row(r), out[r*cols:(r+1)*cols])
	}
	return out
}

// vector returns the 1-D tensor name of n values as float32. F32 data are used
// in place; other types are dequantized (norm weights are small).
func (l *loader) vector(name string, n int) []float32 {
	t := l.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Dims) != 1 || int(t.Dims[0]) != n {
		l.err = fmt.Errorf("inference: tensor %q has shape %v, want [%d]", name, t.Dims, n)
		return nil
	}
	if !t.Type.Supported() {
		l.err = fmt.Errorf("inference: tensor %q has unsupported type %v", name, t.Type)
		return nil
	}
	// All supported CPUs are little-endian, so F32 data can be used in place.
	if t.Type == kernels.F32 && uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(t.Data))), n)
	}
	out := make([]float32, n)
	kernels.DequantizeRow(t.Type, t.Data, out)
	return out
}

// Matrices returns the layer's weight matrices (those its description uses),
// in the order the forward pass reads them.
func (L *Layer) Matrices() []*Matrix {
	var out []*Matrix
	for _, w := range []*Matrix{L.Wq, L.Wk, L.Wv, L.Wqkv, L.Wo, L.ConvIn, L.ConvOut,
		L.SsmZ, L.SsmBeta, L.SsmAlpha, L.SsmOut, L.Gate, L.Up, L.Down, L.InpGate, L.Proj} {
		if w != nil {
			out = append(out, w)
		}
	}
	return out
}

// interleavable returns the matrices that Interleave copies: those that
// only matrix products read (not the token embeddings, read by rows, nor an
// output projection tied to them), in a type the CPU has kernels for
// interleaved (kernels.Interleaves: Q4_0, Q4_K), with a multiple of eight
// rows.
func (m *Model) interleavable() []*Matrix {
	var out []*Matrix
	seen := map[*Matrix]bool{m.Embed: true}
	add := func(w *Matrix) {
		if w != nil && !seen[w] && kernels.Interleaves(w.Type) && w.Rows%8 == 0 {
			seen[w] = true
			out = append(out, w)
		}
	}
	for l := range m.Layers {
		for _, w := range m.Layers[l].Matrices() {
			add(w)
		}
	}
	add(m.Output)
	add(m.PerLayerProj)
	return out
}

// InterleaveBytes is what Interleave would copy: the heap it takes and the
// bytes of the file whose pages it lets go (0 and 0 when it copies
// nothing). Interleaved Q4_K takes 1184 bytes where the file takes 1152
// (its scales unpacked).
func (m *Model) InterleaveBytes() (heap, file int64) {
	for _, w := range m.interleavable() {
		heap += int64(kernels.InterleavedBytes(w.Type, w.Rows, w.RowBytes))
		file += int64(len(w.Data))
	}
	return heap, file
}

// Interleave copies the weight matrices that the CPU's kernels multiply
// faster interleaved (kernels.Interleaves: Q4_0 and Q4_K with AVX2; eight
// rows in the lanes of each vector) into that layout on the heap, and lets
// the file's pages of each go once it is copied, so the model's resident
// memory stays about the same but is no longer page cache the kernel can
// reclaim. The results of every product are unchanged, bit for bit. It
// returns the heap it took (InterleaveBytes). Call it before the model is
// used.
func (m *Model) Interleave() (int64, error) {
	var n int64
	for _, w := range m.interleavable() {
		dst := make([]byte, kernels.InterleavedBytes(w.Type, w.Rows, w.RowBytes))
		if err := kernels.Interleave(w.Type, dst, w.Data, w.Rows, w.RowBytes); err != nil {
			return n, fmt.Errorf("inference: interleave %s: %w", w.Name, err)
		}
		src := w.Data
		w.Type, w.Data = kernels.Interleaved(w.Type), dst
		if err := m.File.Release(src); err != nil {
			return n, fmt.Errorf("inference: interleave %s: %w", w.Name, err)
		}
		n += int64(len(dst))
	}
	return n, nil
}

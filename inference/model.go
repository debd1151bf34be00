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

// Layer holds the weights of one transformer block.
type Layer struct {
	AttnNorm   []float32
	Wq, Wk, Wv *Matrix
	Bq, Bk, Bv []float32 // nil unless Config.HasQKVBias
	Wo         *Matrix
	FFNNorm    []float32
	Gate, Up   *Matrix
	Down       *Matrix
}

// Model is a loaded model: its configuration and weights, which point into the
// GGUF file mapping. A Model is read-only and may be shared by many States.
type Model struct {
	Config      Config
	File        *gguf.File
	Embed       *Matrix // token embeddings, one row per token
	Layers      []Layer
	OutNorm     []float32
	Output      *Matrix   // output projection; Embed when the embeddings are tied
	RopeFactors []float32 // per-frequency divisors (Llama 3 rope_freqs), or nil
	Tokenizer   *tokenizer.Tokenizer
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
	m.Config = cfg
	qDim, kvDim := cfg.NHead*cfg.HeadDim, cfg.KVDim()
	m.Layers = make([]Layer, cfg.NLayer)
	for i := range m.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		L := &m.Layers[i]
		L.AttnNorm = l.vector(p+"attn_norm.weight", cfg.NEmbd)
		L.Wq = l.matrix(p+"attn_q.weight", cfg.NEmbd, qDim)
		L.Wk = l.matrix(p+"attn_k.weight", cfg.NEmbd, kvDim)
		L.Wv = l.matrix(p+"attn_v.weight", cfg.NEmbd, kvDim)
		if cfg.HasQKVBias {
			L.Bq = l.vector(p+"attn_q.bias", qDim)
			L.Bk = l.vector(p+"attn_k.bias", kvDim)
			L.Bv = l.vector(p+"attn_v.bias", kvDim)
		}
		L.Wo = l.matrix(p+"attn_output.weight", qDim, cfg.NEmbd)
		L.FFNNorm = l.vector(p+"ffn_norm.weight", cfg.NEmbd)
		L.Gate = l.matrix(p+"ffn_gate.weight", cfg.NEmbd, cfg.NFF)
		L.Up = l.matrix(p+"ffn_up.weight", cfg.NEmbd, cfg.NFF)
		L.Down = l.matrix(p+"ffn_down.weight", cfg.NFF, cfg.NEmbd)
	}
	m.OutNorm = l.vector("output_norm.weight", cfg.NEmbd)
	if _, ok := f.Tensor("output.weight"); ok {
		m.Output = l.matrix("output.weight", cfg.NEmbd, cfg.NVocab)
	} else {
		m.Output = m.Embed // tied embeddings
	}
	if _, ok := f.Tensor("rope_freqs.weight"); ok {
		m.RopeFactors = l.vector("rope_freqs.weight", cfg.RopeDim/2)
	}
	if l.err != nil {
		return nil, l.err
	}
	if m.Tokenizer, err = tokenizer.FromGGUF(f); err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	if n := m.Tokenizer.NumTokens(); n != cfg.NVocab {
		return nil, fmt.Errorf("inference: tokenizer has %d tokens but token_embd.weight has %d rows", n, cfg.NVocab)
	}
	return m, nil
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

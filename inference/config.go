// Package inference runs GGUF language models: it loads the weights of a model
// in place from the file mapping, keeps an FP16 key/value cache, and computes the
// forward pass of the llama and qwen2 architectures (prompts in batches, then
// one token at a time).
package inference

import (
	"errors"
	"fmt"

	"github.com/edgellm/edgellm/gguf"
)

// Arch names a supported model architecture (GGUF general.architecture).
type Arch string

// The supported architectures.
const (
	ArchLlama Arch = "llama" // Llama 1/2/3, TinyLlama, SmolLM, Mistral-style models
	ArchQwen2 Arch = "qwen2" // Qwen2 and Qwen2.5: Q/K/V biases, half-split RoPE
)

// RopeStyle is how RoPE pairs the dimensions of a head.
type RopeStyle int

// The RoPE layouts.
const (
	RopeNorm RopeStyle = iota // consecutive pairs (x[2i], x[2i+1]): llama
	RopeNeox                  // half-split pairs (x[i], x[i+d/2]): qwen2
)

// Config holds a model's hyper-parameters, all read from GGUF metadata.
type Config struct {
	Arch       Arch
	Name       string
	NEmbd      int     // hidden size
	NLayer     int     // transformer blocks
	NHead      int     // query heads
	NHeadKV    int     // key/value heads (GQA/MQA when < NHead)
	HeadDim    int     // dimension of one head
	NFF        int     // feed-forward hidden size
	NVocab     int     // vocabulary size
	NCtxTrain  int     // context length the model was trained with
	RopeDim    int     // dimensions of a head that RoPE rotates
	RopeBase   float32 // RoPE frequency base
	RopeScale  float32 // RoPE linear frequency scale (1 = none)
	RopeStyle  RopeStyle
	NormEps    float32 // RMSNorm epsilon
	HasQKVBias bool    // Q/K/V projections have biases (qwen2)
}

// KVDim is the width of the key (and value) vectors of one layer and position.
func (c *Config) KVDim() int { return c.NHeadKV * c.HeadDim }

// KVCacheBytes is the size of an FP16 key/value cache for ctx positions.
func (c *Config) KVCacheBytes(ctx int) int64 {
	return int64(ctx) * int64(c.NLayer) * int64(c.KVDim()) * 2 /* K and V */ * 2 /* FP16 */
}

// ReadConfig reads and validates the hyper-parameters of the model in f.
func ReadConfig(f *gguf.File) (Config, error) {
	var c Config
	arch, err := f.String("general.architecture")
	if err != nil {
		return c, fmt.Errorf("inference: %w", err)
	}
	c.Arch = Arch(arch)
	switch c.Arch {
	case ArchLlama:
		c.RopeStyle = RopeNorm
	case ArchQwen2:
		c.RopeStyle = RopeNeox
		c.HasQKVBias = true
	default:
		return c, fmt.Errorf("inference: unsupported architecture %q (supported: llama, qwen2)", arch)
	}
	c.Name, _ = f.String("general.name")
	p := arch + "."
	ints := []struct {
		key      string
		dst      *int
		optional bool
	}{
		{p + "embedding_length", &c.NEmbd, false},
		{p + "block_count", &c.NLayer, false},
		{p + "attention.head_count", &c.NHead, false},
		{p + "attention.head_count_kv", &c.NHeadKV, true},
		{p + "feed_forward_length", &c.NFF, false},
		{p + "context_length", &c.NCtxTrain, false},
		{p + "attention.key_length", &c.HeadDim, true},
		{p + "rope.dimension_count", &c.RopeDim, true},
	}
	for _, it := range ints {
		v, err := f.Uint(it.key)
		if err != nil {
			if it.optional && errors.Is(err, gguf.ErrNotFound) {
				continue
			}
			return c, fmt.Errorf("inference: %w", err)
		}
		if v == 0 || v > 1<<24 {
			return c, fmt.Errorf("inference: metadata %q = %d is out of range", it.key, v)
		}
		*it.dst = int(v)
	}
	if c.NHeadKV == 0 {
		c.NHeadKV = c.NHead
	}
	if c.NHead%c.NHeadKV != 0 {
		return c, fmt.Errorf("inference: %d query heads are not a multiple of %d key/value heads", c.NHead, c.NHeadKV)
	}
	if c.HeadDim == 0 {
		if c.NEmbd%c.NHead != 0 {
			return c, fmt.Errorf("inference: embedding length %d is not a multiple of the head count %d", c.NEmbd, c.NHead)
		}
		c.HeadDim = c.NEmbd / c.NHead
	}
	if c.RopeDim == 0 {
		c.RopeDim = c.HeadDim
	}
	if c.RopeDim > c.HeadDim || c.RopeDim%2 != 0 {
		return c, fmt.Errorf("inference: rope dimension %d must be even and at most the head dimension %d", c.RopeDim, c.HeadDim)
	}
	if c.HeadDim%2 != 0 {
		return c, fmt.Errorf("inference: head dimension %d is odd", c.HeadDim)
	}
	c.RopeBase = 10000
	if v, err := f.Float(p + "rope.freq_base"); err == nil {
		c.RopeBase = float32(v)
	} else if !errors.Is(err, gguf.ErrNotFound) {
		return c, fmt.Errorf("inference: %w", err)
	}
	if !(c.RopeBase > 1) {
		return c, fmt.Errorf("inference: rope frequency base %v must be > 1", c.RopeBase)
	}
	c.RopeScale = 1
	if typ, err := f.String(p + "rope.scaling.type"); err == nil && typ != "none" {
		if typ != "linear" {
			return c, fmt.Errorf("inference: unsupported rope scaling %q (supported: none, linear)", typ)
		}
		factor, err := f.Float(p + "rope.scaling.factor")
		if err != nil {
			return c, fmt.Errorf("inference: linear rope scaling: %w", err)
		}
		if !(factor > 0) {
			return c, fmt.Errorf("inference: rope scaling factor %v must be > 0", factor)
		}
		c.RopeScale = float32(1 / factor)
	}
	eps, err := f.Float(p + "attention.layer_norm_rms_epsilon")
	if err != nil {
		return c, fmt.Errorf("inference: %w", err)
	}
	if !(eps > 0 && eps < 1) {
		return c, fmt.Errorf("inference: RMSNorm epsilon %v out of range", eps)
	}
	c.NormEps = float32(eps)
	return c, nil
}

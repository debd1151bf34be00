package inference

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/edgellm/edgellm/gguf"
)

// Memory is a report of the memory an engine uses, in bytes.
type Memory struct {
	Heap    int64 // live Go heap after a collection: the engine's own memory
	KVCache int64 // the part of Heap that is the layers' caches (keys and values, convolution and DeltaNet states)
	Mapped  int64 // size of the mapped model file (in the page cache, not the heap)
	RSS     int64 // resident set size of the process (includes mapped pages read)
}

// MeasureMemory collects garbage and reports the memory in use now.
func MeasureMemory(s *State) Memory {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{
		Heap:    int64(ms.HeapAlloc),
		KVCache: s.m.Config.CacheBytes(s.Ctx(), s.kv),
		Mapped:  int64(s.m.File.Size),
		RSS:     residentBytes(),
	}
}

// AdviseFor tells the kernel how the weights will be read, given the memory
// the process may use (budget bytes; 0 reads MemAvailable from /proc/meminfo):
// read the whole file ahead when it fits, otherwise no read-ahead, because the
// weights will be paged in and out as each layer is used.
func (m *Model) AdviseFor(budget int64) error {
	if budget <= 0 {
		budget = MemAvailable()
	}
	if budget > 0 && int64(m.File.Size) < budget {
		return m.File.Advise(gguf.AdviseWillNeed)
	}
	return m.File.Advise(gguf.AdviseRandom)
}

// MemAvailable reads MemAvailable from /proc/meminfo: the bytes the kernel
// estimates can be allocated without swapping (0 when unavailable).
func MemAvailable() int64 { return procKB("/proc/meminfo", "MemAvailable:") }

// residentBytes reads VmRSS from /proc/self/status (0 when unavailable).
func residentBytes() int64 { return procKB("/proc/self/status", "VmRSS:") }

// procKB reads a "Key: N kB" line of a /proc file as bytes (0 when missing).
func procKB(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Estimate is the memory a model needs at a given context, in bytes.
type Estimate struct {
	Weights int64 // tensor data, mapped from the file
	KVCache int64 // the layers' caches: keys and values (FP16 or Q8_0), convolution and DeltaNet states (F32)
	Buffers int64 // activations, RoPE rows and logits
}

// EstimateMemory estimates the memory of running the model with ctx
// positions and keys and values stored as kv.
func (m *Model) EstimateMemory(ctx int, kv KVType) Estimate {
	c := &m.Config
	var w int64
	for _, t := range m.File.Tensors {
		w += int64(len(t.Data))
	}
	// The batch buffers of a State (NewState), the logits rows Eval keeps,
	// the RoPE rows, and the quantized copies of the matmul inputs.
	b := c.buffers()
	perToken := 3*c.NEmbd + 2*b.qDim + 2*b.kvDim + b.qkv + b.hb + b.hb2 + b.bcu + b.z + 2*b.heads +
		c.PerLayerDim*(c.NLayer+1)
	logitRows := min(maxBatch, max(1, logitBudget/c.NVocab))
	floats := maxBatch*perToken + logitRows*c.NVocab + b.qkv + c.PerLayerDim*c.NLayer
	for _, r := range c.Ropes {
		floats += maxBatch * r.Dim
	}
	acts := maxBatch * 2 * (c.NEmbd + max(b.qDim, b.z) + b.hb)
	if kv == KVQ8_0 { // the queries quantized to Q8_0 (State.qAct): quants and a float32 scale per block
		heads, hd := c.attentionHeads()
		acts += maxBatch * heads * (hd + 4*hd/kvBlock) / 4
	}
	return Estimate{Weights: w, KVCache: c.CacheBytes(ctx, kv), Buffers: int64(4*floats + 4*acts)}
}

// SequenceBytes is what each sequence of a Batcher needs beside its caches
// (CacheBytes) and the batcher's one workspace (EstimateMemory's Buffers):
// its own copy of its logits, and a row of logits in the workspace.
func (c *Config) SequenceBytes() int64 { return 2 * 4 * int64(c.NVocab) }

// attentionHeads returns the most query heads and the largest head
// dimension of the model's attention layers.
func (c *Config) attentionHeads() (heads, headDim int) {
	for i := range c.Layers {
		if c.Layers[i].Mixer == MixAttention {
			heads, headDim = max(heads, c.Layers[i].Attn.NHead), max(headDim, c.Layers[i].Attn.HeadDim)
		}
	}
	return heads, headDim
}

// bufferWidths are the widths of a State's batch buffers: the largest any
// layer needs (0 for buffers no layer uses).
type bufferWidths struct {
	qDim, kvDim int // query and key/value projections
	qkv         int // a fused Q/K/V projection (DeltaNet's too), or a query with its gates
	hb, hb2     int // the feed-forward hidden buffers (hb2 doubled with a fused ffn_up)
	bcu         int // a short convolution's input projection
	z, heads    int // DeltaNet's output gate z (VDim), and its β and α (one per V head)
}

func (c *Config) buffers() bufferWidths {
	var b bufferWidths
	fused, fusedUp := false, false
	for i := range c.Layers {
		l := &c.Layers[i]
		switch l.Mixer {
		case MixAttention:
			b.qDim = max(b.qDim, l.Attn.QDim())
			b.kvDim = max(b.kvDim, l.Attn.KVDim())
			fused = fused || l.Attn.FusedQKV
			if l.Attn.OutGate {
				b.qkv = max(b.qkv, 2*l.Attn.QDim())
			}
		case MixShortConv:
			b.bcu = 3 * c.NEmbd
		case MixDeltaNet:
			b.qkv = max(b.qkv, l.Delta.ConvDim())
			b.z = max(b.z, l.Delta.VDim())
			b.heads = max(b.heads, l.Delta.NVHead)
		}
		b.hb = max(b.hb, l.FFN.NFF)
		fusedUp = fusedUp || l.FFN.FusedUp
	}
	b.hb2 = b.hb
	if fusedUp {
		b.hb2 = 2 * b.hb
	}
	if fused {
		b.qkv = max(b.qkv, b.qDim+2*b.kvDim)
	}
	return b
}

// TypeHistogram counts the tensors of each type.
func (m *Model) TypeHistogram() map[string]int { return m.File.TypeHistogram() }

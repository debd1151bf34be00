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
	KVCache int64 // the part of Heap that is the KV cache
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
		KVCache: s.m.Config.KVCacheBytes(s.Ctx()),
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
	KVCache int64 // FP16 keys and values
	Buffers int64 // activations, RoPE tables and logits
}

// EstimateMemory estimates the memory of running the model with ctx positions.
func (m *Model) EstimateMemory(ctx int) Estimate {
	c := &m.Config
	var w int64
	for _, t := range m.File.Tensors {
		w += int64(len(t.Data))
	}
	// Per-token scratch for a batch of maxBatch tokens, the logits rows Eval
	// keeps, the RoPE tables, and the quantized copies of the matmul inputs.
	perToken := 3*c.NEmbd + 2*c.NHead*c.HeadDim + 2*c.KVDim() + 2*c.NFF
	logitRows := min(maxBatch, max(1, (1<<18)/c.NVocab))
	floats := maxBatch*perToken + logitRows*c.NVocab + ctx*c.RopeDim
	acts := maxBatch * 2 * (c.NEmbd + c.NHead*c.HeadDim + c.NFF)
	return Estimate{Weights: w, KVCache: c.KVCacheBytes(ctx), Buffers: int64(4*floats + 4*acts)}
}

// TypeHistogram counts the tensors of each type.
func (m *Model) TypeHistogram() map[string]int { return m.File.TypeHistogram() }

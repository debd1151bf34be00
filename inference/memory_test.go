package inference

import (
	"context"
	"runtime"
	"testing"

	"github.com/edgellm/edgellm/inference/sampler"
)

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestHeapWithinKVBudget checks the engine's own heap (the mapped file not
// counted): at most the KV cache + 10% + 8 MiB, for every test model.
func TestHeapWithinKVBudget(t *testing.T) {
	for _, tc := range conformanceModels {
		t.Run(tc.name, func(t *testing.T) {
			before := liveHeap()
			m := loadTestModel(t, tc.name)
			s, err := m.NewState(512, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			g := NewGenerator(s, m.Tokenizer)
			ids, err := m.Tokenizer.Encode("Once upon a time", true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Generate(context.Background(), ids, GenerateOptions{MaxTokens: 16, Sampling: sampler.DefaultParams()}); err != nil {
				t.Fatal(err)
			}
			used := liveHeap() - before
			kv := m.Config.CacheBytes(512, KVF16)
			limit := kv + kv/10 + 8<<20
			t.Logf("heap %.2f MiB, KV cache %.2f MiB, limit %.2f MiB", float64(used)/(1<<20), float64(kv)/(1<<20), float64(limit)/(1<<20))
			if used > limit {
				t.Fatalf("engine heap %d bytes exceeds KV cache %d + 10%% + 8 MiB = %d", used, kv, limit)
			}
			runtime.KeepAlive(g)
		})
	}
}

// checkCachePlan checks a model's cache plan with keys and values stored as
// kv: fixed bytes whatever the context, perToken per position, and that a
// State allocates exactly that, each layer's cache of the kind kind(i) says.
func checkCachePlan(t *testing.T, m *Model, kv KVType, fixed, perToken int64, kind func(i int) CacheKind) {
	t.Helper()
	c := &m.Config
	if got := c.CacheCost(kv); got.Fixed != fixed || got.PerToken != perToken {
		t.Fatalf("%v: cache cost %+v, want fixed %d, per token %d", kv, got, fixed, perToken)
	}
	for _, ctx := range []int{64, 4096} {
		if got, want := c.CacheBytes(ctx, kv), fixed+perToken*int64(ctx); got != want {
			t.Errorf("%v: context %d: cache %d bytes, want %d", kv, ctx, got, want)
		}
	}
	s, err := m.NewStateKV(64, 1, kv)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var held int64
	for i := range s.caches {
		lc := &s.caches[i]
		held += int64(4*len(lc.conv) + 2*len(lc.k) + 2*len(lc.v) + len(lc.kq) + len(lc.vq))
		if lc.spec.Kind != kind(i) {
			t.Errorf("layer %d: cache kind %d, want %d", i, lc.spec.Kind, kind(i))
		}
	}
	if held != c.CacheBytes(64, kv) {
		t.Errorf("%v: the state holds %d bytes of cache, the plan says %d", kv, held, c.CacheBytes(64, kv))
	}
	if got := MeasureMemory(s).KVCache; got != held {
		t.Errorf("%v: MeasureMemory reports %d bytes of cache, the state holds %d", kv, got, held)
	}
}

// A qwen35 model's DeltaNet layers keep a fixed-size state per sequence
// (their convolution's previous ConvL−1 inputs and one S×S matrix per V
// head, F32), whatever the context: the plan counts them as fixed and only
// the attention layer per token, and a State allocates exactly that.
func TestDeltaNetCachePlan(t *testing.T) {
	const delta = 3 * 4 * ((4-1)*512 + 4*64*64) // 3 layers of F32 history and states
	const perToken = 1 * 2 * 2 * 2 * 64         // 1 attention layer, K and V, FP16, 2 heads of 64
	kind := func(i int) CacheKind {
		if i == 3 {
			return CacheKV
		}
		return CacheDeltaNet
	}
	m := loadTestModel(t, "qwen35-tiny-q8_0")
	checkCachePlan(t, m, KVF16, delta, perToken, kind)
	checkCachePlan(t, m, KVQ8_0, delta, perToken*34/64, kind) // Q8_0 keys and values; the states stay F32
}

// gemma4's shared-KV layers attend to the cache of an earlier layer and keep
// none of their own: the plan counts the full layer that owns a cache per
// token, the sliding layers' rings as fixed, the five shared layers as
// nothing, and a State allocates exactly that.
func TestSharedKVCachePlan(t *testing.T) {
	const rings = 4 * (16 + maxBatch - 1) * 64 * 2 * 2 // layers 0–3: window + batch − 1 rows, one head of 64, K and V, FP16
	const perToken = 1 * 128 * 2 * 2                   // layer 4: one head of 128, K and V, FP16
	kind := func(i int) CacheKind {
		if i >= 5 {
			return CacheNone
		}
		return CacheKV
	}
	m := loadTestModel(t, "gemma4-tiny-q8_0")
	checkCachePlan(t, m, KVF16, rings, perToken, kind)
	checkCachePlan(t, m, KVQ8_0, rings*34/64, perToken*34/64, kind)
}

// A Q8_0 KV cache takes 34 bytes per 32 keys or values where FP16 takes 64:
// for every model the plan's key and value bytes (all but the recurrent
// states) are 34/64 of FP16's, exactly, at every context, and the estimate
// `info` prints says so.
func TestQ8_0CacheHalvesKV(t *testing.T) {
	for _, name := range []string{"tiny-q8_0", "qwen3-tiny-q8_0", "gemma3-tiny-q8_0", "phi3-tiny-q8_0",
		"smollm3-tiny-q8_0", "lfm2-tiny-q8_0", "qwen35-tiny-q8_0", "gemma4-tiny-q8_0"} {
		m := loadTestModel(t, name)
		c := &m.Config
		for _, ctx := range []int{64, 2048} {
			var kv16, kv8, other int64
			specs8 := c.CacheSpecs(ctx, KVQ8_0)
			for i, s := range c.CacheSpecs(ctx, KVF16) {
				if s.Kind != CacheKV {
					other += s.Bytes()
					if specs8[i].Bytes() != s.Bytes() {
						t.Errorf("%s: layer %d (kind %d): %d bytes with Q8_0 KV, %d with FP16", name, i, s.Kind, specs8[i].Bytes(), s.Bytes())
					}
					continue
				}
				kv16 += s.Bytes()
				kv8 += specs8[i].Bytes()
			}
			if kv16 == 0 || kv8*64 != kv16*34 {
				t.Errorf("%s, context %d: Q8_0 keys and values %d bytes, FP16 %d: want 34/64", name, ctx, kv8, kv16)
			}
			if e8, e16 := m.EstimateMemory(ctx, KVQ8_0).KVCache, m.EstimateMemory(ctx, KVF16).KVCache; e8 != kv8+other || e16 != kv16+other {
				t.Errorf("%s, context %d: estimates %d (Q8_0) and %d (FP16), want %d and %d", name, ctx, e8, e16, kv8+other, kv16+other)
			}
			if ctx == 2048 {
				t.Logf("%s: context %d: keys and values %d bytes FP16, %d Q8_0 (%.4f); other states %d", name, ctx, kv16, kv8, float64(kv8)/float64(kv16), other)
			}
		}
	}
}

// A batcher's sequences share its workspace: each further state costs its
// caches and SequenceBytes, not a workspace of its own.
func TestBatcherSequenceBytes(t *testing.T) {
	for _, name := range []string{"tiny-q8_0", "qwen3-tiny-q8_0", "gemma3-tiny-q4_k_m"} {
		m := loadTestModel(t, name)
		b, err := NewBatcher(m, 512, 2, 4, KVF16)
		if err != nil {
			t.Fatal(err)
		}
		first, err := b.NewState()
		if err != nil {
			t.Fatal(err)
		}
		before := liveHeap()
		var more []*State
		for range 3 {
			s, err := b.NewState()
			if err != nil {
				t.Fatal(err)
			}
			more = append(more, s)
		}
		per := (liveHeap() - before) / 3
		want := m.Config.CacheBytes(512, KVF16) + m.Config.SequenceBytes()
		if per > want+64<<10 || per < want-64<<10 { // the heap moves by a few KiB besides
			t.Errorf("%s: %d bytes per further state, want about %d (caches %d + SequenceBytes %d)",
				name, per, want, m.Config.CacheBytes(512, KVF16), m.Config.SequenceBytes())
		}
		runtime.KeepAlive(first)
		runtime.KeepAlive(more)
		for _, s := range append(more, first) {
			s.Close()
		}
		b.Close()
	}
}

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
			kv := m.Config.CacheBytes(512)
			limit := kv + kv/10 + 8<<20
			t.Logf("heap %.2f MiB, KV cache %.2f MiB, limit %.2f MiB", float64(used)/(1<<20), float64(kv)/(1<<20), float64(limit)/(1<<20))
			if used > limit {
				t.Fatalf("engine heap %d bytes exceeds KV cache %d + 10%% + 8 MiB = %d", used, kv, limit)
			}
			runtime.KeepAlive(g)
		})
	}
}

// checkCachePlan checks a model's cache plan: fixed bytes whatever the
// context, perToken per position, and that a State allocates exactly that,
// each layer's cache of the kind kind(i) says.
func checkCachePlan(t *testing.T, m *Model, fixed, perToken int64, kind func(i int) CacheKind) {
	t.Helper()
	c := &m.Config
	if got := c.CacheCost(); got.Fixed != fixed || got.PerToken != perToken {
		t.Fatalf("cache cost %+v, want fixed %d, per token %d", got, fixed, perToken)
	}
	for _, ctx := range []int{64, 4096} {
		if got, want := c.CacheBytes(ctx), fixed+perToken*int64(ctx); got != want {
			t.Errorf("context %d: cache %d bytes, want %d", ctx, got, want)
		}
	}
	s, err := m.NewState(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var held int64
	for i := range s.caches {
		lc := &s.caches[i]
		held += int64(4*len(lc.conv) + 2*len(lc.k) + 2*len(lc.v))
		if lc.spec.Kind != kind(i) {
			t.Errorf("layer %d: cache kind %d, want %d", i, lc.spec.Kind, kind(i))
		}
	}
	if held != c.CacheBytes(64) {
		t.Errorf("the state holds %d bytes of cache, the plan says %d", held, c.CacheBytes(64))
	}
}

// A qwen35 model's DeltaNet layers keep a fixed-size state per sequence
// (their convolution's previous ConvL−1 inputs and one S×S matrix per V
// head, F32), whatever the context: the plan counts them as fixed and only
// the attention layer per token, and a State allocates exactly that.
func TestDeltaNetCachePlan(t *testing.T) {
	const delta = 3 * 4 * ((4-1)*512 + 4*64*64) // 3 layers of F32 history and states
	const perToken = 1 * 2 * 2 * 2 * 64         // 1 attention layer, K and V, FP16, 2 heads of 64
	checkCachePlan(t, loadTestModel(t, "qwen35-tiny-q8_0"), delta, perToken, func(i int) CacheKind {
		if i == 3 {
			return CacheKV
		}
		return CacheDeltaNet
	})
}

// gemma4's shared-KV layers attend to the cache of an earlier layer and keep
// none of their own: the plan counts the full layer that owns a cache per
// token, the sliding layers' rings as fixed, the five shared layers as
// nothing, and a State allocates exactly that.
func TestSharedKVCachePlan(t *testing.T) {
	const rings = 4 * (16 + maxBatch - 1) * 64 * 2 * 2 // layers 0–3: window + batch − 1 rows, one head of 64, K and V, FP16
	const perToken = 1 * 128 * 2 * 2                   // layer 4: one head of 128, K and V, FP16
	checkCachePlan(t, loadTestModel(t, "gemma4-tiny-q8_0"), rings, perToken, func(i int) CacheKind {
		if i >= 5 {
			return CacheNone
		}
		return CacheKV
	})
}

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

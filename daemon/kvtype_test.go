package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/mqtt"
)

// model.kv_type q8_0: the engine's caches take 34/64 of f16's memory, the
// memory plan is given that cost, and the status reports the type and the
// bytes; a model whose head dimension is not a multiple of 32 and a type
// that does not exist are refused with the key's name.
func TestLoadLLMKVType(t *testing.T) {
	load := func(kv string) ModelInfo {
		t.Helper()
		var checked ModelInfo
		e, err := LoadLLM(context.Background(), LoadOptions{Path: modelPath(t, "tiny-q8_0.gguf"), Context: 256, Threads: 1, KVType: kv,
			Check: func(m ModelInfo) error { checked = m; return nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if checked.CacheBytesPerToken != e.Model().CacheBytesPerToken {
			t.Errorf("%s: the plan was given %d bytes per token, the engine has %d", kv, checked.CacheBytesPerToken, e.Model().CacheBytesPerToken)
		}
		return e.Model()
	}
	f16, q8 := load("f16"), load("q8_0")
	const perToken = 4 * 2 * 128 * 2 // tiny: 4 layers, K and V, 2 KV heads of 64, FP16 (q8_0: 278528 bytes at 256)
	if f16.KVType != "f16" || f16.CacheBytesPerToken != perToken || f16.KVCacheBytes != 256*perToken {
		t.Errorf("f16: %+v", f16)
	}
	if q8.KVType != "q8_0" || q8.CacheBytesPerToken != perToken*34/64 || q8.KVCacheBytes != 256*perToken*34/64 {
		t.Errorf("q8_0: %+v", q8)
	}
	if d := load(""); d.KVType != "f16" || d.KVCacheBytes != f16.KVCacheBytes {
		t.Errorf("no kv_type: %+v, want f16's", d)
	}

	s := &server{queue: NewQueue(1, nil)}
	s.state.Store(mqtt.StateIdle)
	s.model.Store(q8)
	b, err := json.Marshal(s.status())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"kv_type":"q8_0","kv_cache_bytes":278528`) {
		t.Errorf("status %s lacks the KV type and bytes", b)
	}

	_, err = LoadLLM(context.Background(), LoadOptions{Path: modelPath(t, "stories260K.gguf"), Context: 256, Threads: 1, KVType: "q8_0"})
	if err == nil || !strings.Contains(err.Error(), "model.kv_type") || !strings.Contains(err.Error(), "head dimension 8") {
		t.Errorf("q8_0 with head dimension 8: %v", err)
	}
	_, err = LoadLLM(context.Background(), LoadOptions{Path: modelPath(t, "tiny-q8_0.gguf"), Context: 256, Threads: 1, KVType: "q4"})
	if err == nil || !strings.Contains(err.Error(), "model.kv_type") || !strings.Contains(err.Error(), "f16, q8_0") {
		t.Errorf("kv_type q4: %v", err)
	}
}

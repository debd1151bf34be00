package daemon

import (
	"reflect"
	"testing"

	"github.com/edgellm/edgellm/mqtt"
)

func TestNewJobResolvesDefaults(t *testing.T) {
	cfg, err := ParseConfig([]byte(minimal + "limits:\n  max_tokens: 300\nsampling:\n  temperature: 0.5\n  top_k: 20\n  seed: 99\n"))
	if err != nil {
		t.Fatal(err)
	}
	lim := mqtt.RequestLimits{MaxBytes: 4096, MaxTokens: cfg.Limits.MaxTokens}

	req, err := mqtt.ParseRequest([]byte(`{"id":"a","prompt":"hi","stop":["\n"]}`), lim)
	if err != nil {
		t.Fatal(err)
	}
	j := NewJob(req.ID, &req.Request, cfg)
	want := Sampling{Temperature: 0.5, TopP: DefaultTopP, TopK: 20, MinP: DefaultMinP, RepeatPenalty: DefaultRepeatPenalty, Seed: 99}
	if j.ID != "a" || j.Prompt != "hi" || j.MaxTokens != 300 || j.Sampling != want || !reflect.DeepEqual(j.Stop, []string{"\n"}) || j.JSON {
		t.Errorf("defaults: %+v", j)
	}

	req, err = mqtt.ParseRequest([]byte(`{"id":"b","messages":[{"role":"user","content":"x"}],"system":"s","max_tokens":7,
		"temperature":0,"top_p":0.5,"top_k":3,"min_p":0.2,"repeat_penalty":1.3,"seed":5,"schema":{"type":"object"},"chat_template":"chatml"}`), lim)
	if err != nil {
		t.Fatal(err)
	}
	j = NewJob(req.ID, &req.Request, cfg)
	want = Sampling{Temperature: 0, TopP: 0.5, TopK: 3, MinP: 0.2, RepeatPenalty: 1.3, Seed: 5}
	if j.MaxTokens != 7 || j.Sampling != want || j.System != "s" || len(j.Messages) != 1 || !j.JSON || j.ChatTemplate != "chatml" {
		t.Errorf("overrides: %+v", j)
	}

	// Seed -1 (the request's or the config's) becomes a random seed.
	req, _ = mqtt.ParseRequest([]byte(`{"prompt":"x","seed":-1}`), lim)
	a, b := NewJob(req.ID, &req.Request, cfg), NewJob(req.ID, &req.Request, cfg)
	if a.Sampling.Seed == b.Sampling.Seed {
		t.Errorf("two random seeds are equal: %d", a.Sampling.Seed)
	}
}

func TestModelInfoCacheBytes(t *testing.T) {
	// TinyLlama-1.1B: 22 layers, 4 KV heads × 64 = 256, FP16 K and V.
	m := ModelInfo{Layers: 22, CacheBytesPerToken: 22 * 256 * 4, CacheBytesFixed: 1000}
	if got := m.CacheBytes(2048); got != 2048*22*256*4+1000 {
		t.Errorf("CacheBytes(2048) = %d", got)
	}
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/inference"
)

const models = "../../testdata/models/"

func load(t *testing.T, name string) *inference.Model {
	t.Helper()
	m, err := inference.Load(models + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// The weights read per token, counted from the file's tensor table: every
// 2-D tensor but the token embeddings (and lfm2's small convolution kernels), plus one row of those, plus all of them
// again when they are also the output matrix.
func TestWeightBytesPerToken(t *testing.T) {
	for _, c := range []struct {
		file string
		tied bool
	}{{"tiny-q4_k_m.gguf", false}, {"tiny-f16.gguf", false}, {"qwen2-tiny-q8_0.gguf", true},
		{"phi3-tiny-q8_0.gguf", true}, {"gemma3-tiny-q4_k_m.gguf", true}, {"lfm2-tiny-q8_0.gguf", true}} {
		m := load(t, c.file)
		var want int64
		for _, tn := range m.File.Tensors {
			if len(tn.Dims) != 2 || strings.HasSuffix(tn.Name, "shortconv.conv.weight") {
				continue // norms, and lfm2's convolution kernel of a few values per channel
			}
			if tn.Name == "token_embd.weight" {
				want += int64(len(tn.Data)) / int64(tn.Dims[1]) // one row
				if c.tied {
					want += int64(len(tn.Data))
				}
				continue
			}
			want += int64(len(tn.Data))
		}
		if got := WeightBytesPerToken(m); got != want || want == 0 {
			t.Errorf("%s: %d bytes per token, want %d", c.file, got, want)
		}
	}
}

func TestStat(t *testing.T) {
	s := newStat([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if s.Mean != 5 || math.Abs(s.SD-math.Sqrt(32.0/7)) > 1e-12 || len(s.Samples) != 8 {
		t.Errorf("stat %+v", s)
	}
	if s := newStat([]float64{3}); s.Mean != 3 || s.SD != 0 {
		t.Errorf("one sample: %+v", s)
	}
	if got := newStat([]float64{1, 2}).String(); got != "1.50 ± 0.71" {
		t.Errorf("String() = %q", got)
	}
}

func TestRun(t *testing.T) {
	m := load(t, "tiny-q4_k_m.gguf")
	r, err := Run(context.Background(), "tiny", m, Options{PromptTokens: 12, GenTokens: 5, Threads: 2, Reps: 2, BandwidthBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Threads != 2 || r.Reps != 2 || r.PromptTokens != 12 || r.GenTokens != 5 || r.Arch != "llama" || r.Types["Q6_K"] != 5 {
		t.Errorf("report %+v", r)
	}
	for _, s := range []Stat{r.Prefill, r.Decode} {
		if len(s.Samples) != 2 || !(s.Mean > 0) || s.SD < 0 || math.IsInf(s.Mean, 0) {
			t.Errorf("stat %+v", s)
		}
	}
	if r.BandwidthBytes != 16<<20 || !(r.Bandwidth > 1e8) {
		t.Errorf("bandwidth %v over %d bytes", r.Bandwidth, r.BandwidthBytes)
	}
	want := 100 * r.Decode.Mean * float64(r.WeightBytesPerToken) / r.Bandwidth
	if math.Abs(r.Roofline-want) > 1e-9*want || !(r.Roofline > 0) {
		t.Errorf("roofline %v, want %v", r.Roofline, want)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"model: tiny (llama", "prefill 12", "decode 5", "±", "weights read per token: 1.9 MiB", "roofline:", "Q4_K×25"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Decode.Mean != r.Decode.Mean || back.WeightBytesPerToken != r.WeightBytesPerToken {
		t.Errorf("JSON round trip: %v, %+v", err, back)
	}
}

func TestRunSkipsAndRejects(t *testing.T) {
	m := load(t, "tiny-q8_0.gguf")
	r, err := Run(context.Background(), "tiny", m, Options{PromptTokens: -1, GenTokens: 3, Reps: 1, BandwidthBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.PromptTokens != 0 || len(r.Prefill.Samples) != 0 || len(r.Decode.Samples) != 1 || r.Bandwidth != 0 || r.Roofline != 0 {
		t.Errorf("report %+v", r)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	if strings.Contains(text.String(), "prefill") || strings.Contains(text.String(), "roofline") {
		t.Errorf("skipped parts shown:\n%s", text.String())
	}
	for _, o := range []Options{{PromptTokens: -1, GenTokens: -1}, {Reps: -2}, {Threads: -1}} {
		if _, err := Run(context.Background(), "tiny", m, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, "tiny", m, Options{PromptTokens: 4, GenTokens: 2, BandwidthBytes: -1}); err == nil {
		t.Error("cancelled run succeeded")
	}
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/kernels"
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
// 2-D tensor but the token embeddings (and lfm2's and qwen35's small convolution kernels), plus one row of those, plus all of them
// again when they are also the output matrix; gemma4's per-layer token
// embeddings count one row.
func TestWeightBytesPerToken(t *testing.T) {
	for _, c := range []struct {
		file string
		tied bool
	}{{"tiny-q4_k_m.gguf", false}, {"tiny-f16.gguf", false}, {"qwen2-tiny-q8_0.gguf", true},
		{"phi3-tiny-q8_0.gguf", true}, {"gemma3-tiny-q4_k_m.gguf", true}, {"lfm2-tiny-q8_0.gguf", true},
		{"qwen35-tiny-q4_k_m.gguf", true}, {"gemma4-tiny-q4_k_m.gguf", true}} {
		m := load(t, c.file)
		var want int64
		for _, tn := range m.File.Tensors {
			if len(tn.Dims) != 2 || strings.HasSuffix(tn.Name, "shortconv.conv.weight") || strings.HasSuffix(tn.Name, "ssm_conv1d.weight") {
				continue // norms, and the convolution kernels of a few values per channel
			}
			if tn.Name == "per_layer_token_embd.weight" {
				want += int64(len(tn.Data)) / int64(tn.Dims[1]) // one row
				continue
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
	r, err := Run(context.Background(), "tiny", m, Options{PromptTokens: 12, GenTokens: 5, Threads: 2, Reps: 2, BandwidthBytes: 16 << 20, BandwidthTime: time.Millisecond})
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
	if r.BandwidthBytes != 16<<20 || r.BandwidthWanted != 16<<20 || r.BandwidthSource != SourceBuffer || r.BandwidthPasses < 2 {
		t.Errorf("bandwidth over %d bytes (%d wanted) of %q in %d passes", r.BandwidthBytes, r.BandwidthWanted, r.BandwidthSource, r.BandwidthPasses)
	}
	if !(r.BandwidthMin > 1e8 && r.BandwidthMin <= r.Bandwidth && r.Bandwidth <= r.BandwidthMax) {
		t.Errorf("bandwidth min %g, median %g, max %g", r.BandwidthMin, r.Bandwidth, r.BandwidthMax)
	}
	if want := r.Decode.Mean * float64(r.WeightBytesPerToken); r.Streamed != want || !(want > 0) {
		t.Errorf("streamed %g B/s, want %g", r.Streamed, want)
	}
	if want := 100 * r.Streamed / r.Bandwidth; math.Abs(r.Roofline-want) > 1e-9*want || !(r.Roofline > 0) {
		t.Errorf("roofline %v, want %v", r.Roofline, want)
	}
	text := textOf(t, &r)
	for _, s := range []string{"model: tiny (llama", "prefill 12", "decode 5", "±", "weights read per token: 1.9 MiB",
		fmt.Sprintf("decode streams:         %.2f GB/s", r.Streamed/1e9),
		fmt.Sprintf("memory read bandwidth:  %.2f GB/s (median of %d passes, %.2f–%.2f; 2 threads reading a 16 MiB buffer)", r.Bandwidth/1e9, r.BandwidthPasses, r.BandwidthMin/1e9, r.BandwidthMax/1e9),
		fmt.Sprintf("roofline:               %.1f %% (decode streams ÷ bandwidth)", r.Roofline), "Q4_K×25"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "wanted") {
		t.Errorf("text says less was read than wanted:\n%s", text)
	}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Decode.Mean != r.Decode.Mean || back.WeightBytesPerToken != r.WeightBytesPerToken ||
		back.Streamed != r.Streamed || back.BandwidthMin != r.BandwidthMin || back.BandwidthMax != r.BandwidthMax {
		t.Errorf("JSON round trip: %v, %+v", err, back)
	}
	// The JSON names scripts read.
	for _, k := range []string{`"bandwidth_bytes_s":`, `"bandwidth_min_bytes_s":`, `"bandwidth_max_bytes_s":`, `"bandwidth_passes":`,
		`"bandwidth_buffer_bytes":16777216`, `"bandwidth_source":"buffer"`, `"streamed_bytes_s":`, `"roofline_percent":`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
}

// Without a buffer size, the measurement reads the model's tensor data when
// they are as many bytes as it wants, and otherwise a buffer as large as the
// available memory allows, saying so when that is less than it wants.
func TestBandwidthProbeSources(t *testing.T) {
	m := load(t, "tiny-q4_k_m.gguf")
	data := int64(len(m.File.TensorData()))
	if buffer, want := probePlan(m, 3<<20); buffer != 3<<20 || want != 3<<20 {
		t.Errorf("asked for 3 MiB: buffer %d, want %d", buffer, want)
	}
	if buffer, want := probePlan(m, 0); want != wantedProbeBytes() || buffer == 0 {
		t.Errorf("a model of %d bytes: buffer %d, want %d", data, buffer, want)
	}
	r := Report{Threads: 2, GenTokens: 1}
	probe := newBandwidthProbe(m, 2, 0, data)
	probe.Read(0)
	probe.record(&r)
	probe.close()
	if r.BandwidthSource != SourceModel || r.BandwidthBytes != data&^7 || r.BandwidthPasses != 1 || !(r.Bandwidth > 0) {
		t.Errorf("model: %q, %d bytes of %d, %d passes, %g B/s", r.BandwidthSource, r.BandwidthBytes, data, r.BandwidthPasses, r.Bandwidth)
	}
	if text := textOf(t, &r); !strings.Contains(text, fmt.Sprintf("2 threads reading the model's %.1f MiB of tensor data)", mib(r.BandwidthBytes))) {
		t.Errorf("text:\n%s", text)
	}
	want := int64(64 << 20)
	probe = newBandwidthProbe(m, 2, probeBuffer(data, want, 32<<20), want)
	probe.Read(0)
	probe.record(&r)
	probe.close()
	if r.BandwidthSource != SourceBuffer || r.BandwidthBytes != 8<<20 || r.BandwidthWanted != want {
		t.Errorf("buffer: %q, %d bytes, %d wanted", r.BandwidthSource, r.BandwidthBytes, r.BandwidthWanted)
	}
	if text := textOf(t, &r); !strings.Contains(text, "a 8 MiB buffer)") || !strings.Contains(text, "less than the 64 MiB wanted, for want of memory") {
		t.Errorf("text:\n%s", text)
	}
}

func TestProbeBuffer(t *testing.T) {
	const M = 1 << 20
	for _, c := range []struct{ model, want, avail, buffer int64 }{
		{637 * M, 512 * M, 20000 * M, 0},     // a large model: its own data
		{512 * M, 512 * M, 0, 0},             // exactly as large as wanted
		{2 * M, 512 * M, 20000 * M, 512 * M}, // a small model: a buffer
		{2 * M, 512 * M, 0, 512 * M},         // available memory unknown
		{2 * M, 512 * M, 400 * M, 100 * M},   // a buffer of what fits
		{230 * M, 512 * M, 400 * M, 0},       // the model's data, larger than what fits
	} {
		if got := probeBuffer(c.model, c.want, c.avail); got != c.buffer {
			t.Errorf("probeBuffer(%d, %d, %d) = %d, want %d", c.model, c.want, c.avail, got, c.buffer)
		}
	}
	if w := wantedProbeBytes(); w < minProbeBytes || w < probeCacheMultiple*kernels.LargestCacheBytes() {
		t.Errorf("wants %d bytes, fewer than %d or %d× the largest cache", w, minProbeBytes, probeCacheMultiple)
	}
}

func textOf(t *testing.T, r *Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRunSkipsAndRejects(t *testing.T) {
	m := load(t, "tiny-q8_0.gguf")
	r, err := Run(context.Background(), "tiny", m, Options{PromptTokens: -1, GenTokens: 3, Reps: 1, BandwidthBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.PromptTokens != 0 || len(r.Prefill.Samples) != 0 || len(r.Decode.Samples) != 1 || r.Bandwidth != 0 || r.Roofline != 0 || !(r.Streamed > 0) {
		t.Errorf("report %+v", r)
	}
	text := textOf(t, &r)
	if strings.Contains(text, "prefill") || strings.Contains(text, "roofline") || strings.Contains(text, "bandwidth") || !strings.Contains(text, "decode streams:") {
		t.Errorf("skipped parts shown or decode's stream missing:\n%s", text)
	}
	// Without a decode test there is no stream and no roofline, only the bandwidth.
	r, err = Run(context.Background(), "tiny", m, Options{PromptTokens: 3, GenTokens: -1, Reps: 1, BandwidthBytes: 1 << 20, BandwidthTime: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	text = textOf(t, &r)
	if r.Streamed != 0 || r.Roofline != 0 || !(r.Bandwidth > 0) || strings.Contains(text, "roofline") || strings.Contains(text, "streams") || !strings.Contains(text, "memory read bandwidth:") {
		t.Errorf("prefill only: %+v\n%s", r, text)
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

// With a depth, every timed test starts with the depth tokens in the cache
// and ends that many positions further on, whether the state rewinds to them
// (full KV caches) or refills them (tiny's llama; gemma3's sliding-window
// rings and lfm2's convolution states cannot rewind), and the report names
// the depth.
func TestRunDepth(t *testing.T) {
	for _, file := range []string{"tiny-q8_0.gguf", "gemma3-tiny-q8_0.gguf", "lfm2-tiny-q8_0.gguf"} {
		m := load(t, file)
		const depth, prompt, gen, reps = 40, 9, 4, 2
		runs := map[string]int{}
		opts := Options{PromptTokens: prompt, GenTokens: gen, Reps: reps, Threads: 2, Depth: depth, BandwidthBytes: -1}
		opts.timed = func(test string, before, after int) {
			runs[test]++
			want := map[string]int{"prefill": prompt, "decode": gen}[test]
			if before != depth || after != depth+want {
				t.Errorf("%s: %s from position %d to %d, want %d to %d", file, test, before, after, depth, depth+want)
			}
		}
		r, err := Run(context.Background(), "tiny", m, opts)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if runs["prefill"] != reps || runs["decode"] != reps || len(r.Prefill.Samples) != reps || len(r.Decode.Samples) != reps || r.Depth != depth {
			t.Errorf("%s: tests run %v, report %+v", file, runs, r)
		}
		text := textOf(t, &r)
		for _, s := range []string{"prefill 9 @ d40   ", "decode 4 @ d40   "} {
			if !strings.Contains(text, s) {
				t.Errorf("%s: text lacks %q:\n%s", file, s, text)
			}
		}
		b, err := json.Marshal(&r)
		if err != nil || !bytes.Contains(b, []byte(`"depth":40`)) {
			t.Errorf("%s: JSON without the depth (%v): %s", file, err, b)
		}
	}
	// Without a depth the tests start from an empty cache and the names
	// and JSON say depth 0.
	m := load(t, "tiny-q8_0.gguf")
	opts := Options{PromptTokens: 3, GenTokens: 2, Reps: 1, BandwidthBytes: -1}
	opts.timed = func(test string, before, after int) {
		if before != 0 {
			t.Errorf("%s from position %d without depth", test, before)
		}
	}
	r, err := Run(context.Background(), "tiny", m, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(&r)
	if text := textOf(t, &r); strings.Contains(text, "@") || !strings.Contains(text, "prefill 3 ") || !bytes.Contains(b, []byte(`"depth":0`)) {
		t.Errorf("no depth: %s\n%s", b, text)
	}
}

// A depth that leaves no room for a test in the model's context (tiny's 512
// tokens) is an error that names the numbers, as is a negative depth.
func TestRunDepthBeyondContext(t *testing.T) {
	m := load(t, "tiny-q8_0.gguf")
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Depth: 500, PromptTokens: 13, GenTokens: 2}, "depth 500 + 13 test tokens = 513 positions, more than the model's context length of 512"},
		{Options{Depth: 600, PromptTokens: -1, GenTokens: 1}, "depth 600 + 1 test tokens = 601 positions, more than the model's context length of 512"},
		{Options{PromptTokens: 513}, "513 test tokens, more than the model's context length of 512"},
		{Options{Depth: -1}, "invalid options"},
	} {
		c.opts.BandwidthBytes = -1
		if _, err := Run(context.Background(), "tiny", m, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.want)
		}
	}
	// Exactly the context is allowed.
	if _, err := Run(context.Background(), "tiny", m, Options{Depth: 510, PromptTokens: 2, GenTokens: 1, Reps: 1, BandwidthBytes: -1}); err != nil {
		t.Errorf("depth 510 + 2 in 512: %v", err)
	}
}

// With Parallel, the decode test runs in every sequence of a batcher at
// once (each from the depth), its tok/s counting all their tokens, and the
// join test times a short prompt arriving during a long prefill.
func TestRunParallel(t *testing.T) {
	m := load(t, "tiny-q8_0.gguf")
	const depth, gen, par = 20, 4, 3
	decodes := 0
	opts := Options{PromptTokens: 5, GenTokens: gen, Reps: 2, Threads: 2, Depth: depth, BandwidthBytes: -1, Parallel: par}
	opts.timed = func(test string, before, after int) {
		if test == "decode" {
			decodes++
		}
		want := map[string]int{"prefill": 5, "decode": gen}[test]
		if before != depth || after != depth+want {
			t.Errorf("%s from position %d to %d, want %d to %d", test, before, after, depth, depth+want)
		}
	}
	r, err := Run(context.Background(), "tiny", m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Parallel != par || decodes != 2 || r.Decode.Mean <= 0 || r.Join == nil || r.Join.LongTokens != 512-JoinShort ||
		len(r.Join.Wait.Samples) != 2 || r.Join.Wait.Mean <= 0 || r.Join.Step.Mean <= 0 || r.Join.Long.Mean <= 0 {
		t.Fatalf("report %+v, join %+v", r, r.Join)
	}
	text := textOf(t, &r)
	for _, s := range []string{"decode 4 @ d20 × 3 sequences", "join: a 8-token prompt arriving during a 504-token prefill"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
	b, _ := json.Marshal(&r)
	if !bytes.Contains(b, []byte(`"parallel":3`)) || !bytes.Contains(b, []byte(`"join":{"long_tokens":504`)) {
		t.Errorf("JSON: %s", b)
	}
	if _, err := Run(context.Background(), "tiny", m, Options{Parallel: MaxParallel + 1, BandwidthBytes: -1}); err == nil {
		t.Error("parallel beyond MaxParallel accepted")
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBench(t *testing.T) {
	code, out, errs := runCLI(t, "", "bench", "-m", models+"tiny-q4_k_m.gguf", "-p", "8", "-n", "4", "-j", "2", "-r", "2", "--bw-mib", "16", "--bw-time", "10ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"threads 2, 2 repetitions", "prefill 8", "decode 4", " ± ", "weights read per token", "decode streams:", "memory read bandwidth:", "median of ", "a 16 MiB buffer", "roofline:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI(t, "", "bench", "-m", models+"qwen2-tiny-q8_0.gguf", "-p", "0", "-n", "3", "-r", "1", "--json", "--bw-mib", "-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Arch   string  `json:"arch"`
		Prompt int     `json:"prompt_tokens"`
		Gen    int     `json:"gen_tokens"`
		Bytes  int64   `json:"weight_bytes_per_token"`
		BW     float64 `json:"bandwidth_bytes_s"`
		Stream float64 `json:"streamed_bytes_s"`
		Decode struct {
			Mean    float64   `json:"mean"`
			Samples []float64 `json:"samples"`
		} `json:"decode_tok_s"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Arch != "qwen2" || r.Prompt != 0 || r.Gen != 3 || r.Bytes <= 0 || r.BW != 0 || r.Stream != float64(r.Bytes)*r.Decode.Mean || len(r.Decode.Samples) != 1 || !(r.Decode.Mean > 0) {
		t.Errorf("report %+v", r)
	}
}

func TestBenchErrors(t *testing.T) {
	for _, c := range []struct {
		args  []string
		code  int
		wants string
	}{
		{[]string{"bench"}, 2, "want -m MODEL"},
		{[]string{"bench", "-m", models + "tiny-q8_0.gguf", "-r", "0"}, 2, "-r at least 1"},
		{[]string{"bench", "-m", models + "tiny-q8_0.gguf", "-p", "0", "-n", "0"}, 2, "nor both 0"},
		{[]string{"bench", "-m", models + "tiny-q8_0.gguf", "--bw-time", "0s"}, 2, "--bw-time positive"},
		{[]string{"bench", "-m", models + "none.gguf"}, 1, "no such file"},
		{[]string{"bench", "-m", models + "tiny-q8_0.gguf", "-d", "-1"}, 2, "-d and -j not negative"},
		{[]string{"bench", "-m", models + "tiny-q8_0.gguf", "-d", "480", "-p", "64", "--bw-mib", "-1"}, 1,
			"depth 480 + 64 test tokens = 544 positions, more than the model's context length of 512"},
	} {
		code, _, errs := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.wants) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.wants)
		}
	}
}

// -d runs the tests after that many cached tokens, and the text and JSON
// reports say so.
func TestBenchDepth(t *testing.T) {
	code, out, errs := runCLI(t, "", "bench", "-m", models+"tiny-q8_0.gguf", "-p", "8", "-n", "4", "-d", "100", "-j", "2", "-r", "1", "--bw-mib", "-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"prefill 8 @ d100 ", "decode 4 @ d100 "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI(t, "", "bench", "-m", models+"tiny-q8_0.gguf", "-p", "0", "-n", "2", "-d", "300", "-r", "1", "--json", "--bw-mib", "-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Depth  int `json:"depth"`
		Gen    int `json:"gen_tokens"`
		Decode struct {
			Samples []float64 `json:"samples"`
		} `json:"decode_tok_s"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Depth != 300 || r.Gen != 2 || len(r.Decode.Samples) != 1 {
		t.Errorf("report %+v", r)
	}
}

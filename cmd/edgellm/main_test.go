package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const models = "../../testdata/models/"

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunGreedyStories(t *testing.T) {
	code, out, errs := runCLI(t, "", "run", models+"stories260K.gguf", "-p", "", "-n", "30", "-t", "0", "-j", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.TrimSpace(out) == "" {
		t.Fatal("no text generated")
	}
	for _, want := range []string{"prefill: 1 tokens", "decode: 30 tokens", "memory: heap", "KV cache"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	// Greedy decoding is deterministic, so the prompt from stdin gives the same text.
	code2, out2, _ := runCLI(t, "", "run", models+"stories260K.gguf", "-n", "30", "-t", "0")
	if code2 != 0 || out2 != out {
		t.Fatalf("stdin prompt: exit %d, text %q, want %q", code2, out2, out)
	}
}

func TestRunSeeded(t *testing.T) {
	args := []string{"run", models + "tiny-q4_k_m.gguf", "-p", "Hello", "-n", "20", "-t", "1.0", "-s", "7"}
	_, a, _ := runCLI(t, "", args...)
	_, b, _ := runCLI(t, "", args...)
	if a != b || a == "" {
		t.Fatalf("same seed gave %q and %q", a, b)
	}
}

func TestEvalWritesLogits(t *testing.T) {
	out := filepath.Join(t.TempDir(), "l.f32")
	code, stdout, errs := runCLI(t, "", "eval", "-m", models+"stories260K.gguf", "--ids", "1,461,461", "--logits", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.TrimSpace(stdout) != `{"ids":[1,461,461]}` {
		t.Fatalf("stdout %q", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 3*512*4 {
		t.Fatalf("%d bytes of logits, want 3 rows of 512 float32", len(b))
	}
	// Row 0 is the logits after BOS: compare with the reference's.
	ref, err := os.ReadFile("../../testdata/reference/stories260K-bos.logits.f32")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 512; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		want := math.Float32frombits(binary.LittleEndian.Uint32(ref[4*i:]))
		if math.Abs(float64(got-want)) > 1e-3 {
			t.Fatalf("logit %d: %v, reference %v", i, got, want)
		}
	}
	// --text is tokenized with BOS: "" gives just BOS.
	code, stdout, errs = runCLI(t, "", "eval", "-m", models+"stories260K.gguf", "--text", "", "--logits", out)
	if code != 0 || strings.TrimSpace(stdout) != `{"ids":[1]}` {
		t.Fatalf("--text \"\": exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
}

func TestTokenize(t *testing.T) {
	m := models + "qwen2-tiny-q8_0.gguf"
	_, out, _ := runCLI(t, "", "tokenize", "-m", m, "-p", "Turn on the porch light when the sun sets, then say: 'Done!' 123")
	want := "17278 319 262 33179 1657 618 262 4252 5621 11 788 910 25 705 45677 13679 220 16 17 18\n"
	if out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	// Exact bytes of stdin, no trimming.
	_, out, _ = runCLI(t, "hi\n", "tokenize", "-m", models+"stories260K.gguf")
	_, out2, _ := runCLI(t, "", "tokenize", "-m", models+"stories260K.gguf", "-p", "hi\n")
	if out != out2 || out == "\n" {
		t.Fatalf("stdin %q vs -p %q", out, out2)
	}
	// --special adds BOS for an SPM model.
	_, out, _ = runCLI(t, "", "tokenize", "-m", models+"stories260K.gguf", "--special", "-p", "hi")
	if !strings.HasPrefix(out, "1 ") {
		t.Fatalf("--special: %q does not start with BOS", out)
	}
}

// infoOf runs info on a test model at a context and checks that its
// output says each of wants; it returns the output.
func infoOf(t *testing.T, model, ctx string, wants ...string) string {
	t.Helper()
	code, out, errs := runCLI(t, "", "info", models+model, "-c", ctx)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	return out
}

// --kv-type q8_0: info reports the KV cache at 34/64 of f16's (tiny-q4_k_m
// at context 256: 4 layers × 256 positions × 128 × K and V, 0.50 MiB in
// FP16, 0.27 MiB in Q8_0), run and eval run with it and say so; a model whose
// head dimension is not a multiple of 32 is refused (exit 1), a type that
// does not exist is a usage error naming the allowed ones (exit 2).
func TestKVTypeFlag(t *testing.T) {
	code, out, errs := runCLI(t, "", "info", models+"tiny-q4_k_m.gguf", "-c", "256", "--kv-type", "q8_0")
	if code != 0 {
		t.Fatalf("info: exit %d: %s", code, errs)
	}
	for _, want := range []string{"KV cache 0.3 MiB (q8_0)", "keys and values in q8_0: 0.27 MiB, where f16 takes 0.50 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("info --kv-type q8_0 lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ := runCLI(t, "", "info", models+"tiny-q4_k_m.gguf", "-c", "256", "--slots", "4"); !strings.Contains(out, "with 4 slots (queue.slots): KV caches 2.0 MiB") {
		t.Errorf("info --slots 4 lacks the four slots' caches:\n%s", out)
	}
	if _, out, _ := runCLI(t, "", "info", models+"tiny-q4_k_m.gguf", "-c", "256"); !strings.Contains(out, "KV cache 0.5 MiB (f16)") || strings.Contains(out, "keys and values in") {
		t.Errorf("info without --kv-type is not f16:\n%s", out)
	}
	code, _, errs = runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "Hello", "-n", "8", "-t", "0", "-j", "2", "-c", "256", "--kv-type", "q8_0")
	if code != 0 || !strings.Contains(errs, "KV cache 0.3 MiB, q8_0") {
		t.Errorf("run --kv-type q8_0: exit %d, stderr:\n%s", code, errs)
	}
	f := filepath.Join(t.TempDir(), "l.f32")
	if code, _, errs := runCLI(t, "", "eval", "-m", models+"tiny-q8_0.gguf", "--ids", "1,2,3", "--logits", f, "--kv-type", "q8_0"); code != 0 {
		t.Errorf("eval --kv-type q8_0: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, "", "info", models+"stories260K.gguf", "--kv-type", "q8_0")
	if code != 1 || !strings.Contains(errs, "head dimension 8 is not a multiple of 32") {
		t.Errorf("info --kv-type q8_0 of stories260K: exit %d, %s", code, errs)
	}
	for _, cmd := range [][]string{
		{"info", models + "tiny-q4_k_m.gguf"},
		{"run", models + "tiny-q4_k_m.gguf", "-p", "x"},
		{"eval", "-m", models + "tiny-q4_k_m.gguf", "--ids", "1", "--logits", f},
		{"bench", "-m", models + "tiny-q4_k_m.gguf"},
	} {
		code, _, errs := runCLI(t, "", append(cmd, "--kv-type", "q4")...)
		if code != 2 || !strings.Contains(errs, `--kv-type: KV cache type "q4": want one of f16, q8_0`) {
			t.Errorf("%s --kv-type q4: exit %d, %s", cmd[0], code, errs)
		}
	}
}

func TestInfo(t *testing.T) {
	out := infoOf(t, "tiny-q4_k_m.gguf", "256", "general.architecture", `"llama"`, "architecture:  llama", "layers:        4",
		"4 query, 2 key/value", "Q4_K×", "Q6_K×", "memory at context 256", "KV cache 0.5 MiB")
	if strings.Contains(out, "recurrent states") || strings.Contains(out, "earlier layer's KV cache") {
		t.Errorf("info of a model without recurrent or shared-KV layers speaks of them:\n%s", out)
	}
	// qwen35: the DeltaNet states (3 layers of 3×512 convolution inputs and
	// 4 states of 64×64, F32: 0.21 MiB) are counted in the cache, besides
	// the one attention layer's 256 positions × 2 KV heads × 64 (0.13 MiB).
	infoOf(t, "qwen35-tiny-q8_0.gguf", "256", "architecture:  qwen35", "layers:        4 layers: 3 Gated DeltaNet, 1 gated attention",
		"KV cache 0.3 MiB", "recurrent states (convolution, Gated DeltaNet; F32, fixed whatever the context): 0.21 MiB")
	// gemma4: only layers 0–4 keep K/V: four sliding rings of 47 positions
	// × 64 (0.05 MiB) and one full layer of 1024 positions × 128 (0.5 MiB);
	// the five shared-KV layers count nothing.
	infoOf(t, "gemma4-tiny-q8_0.gguf", "1024", "architecture:  gemma4",
		"10 layers: 8 sliding-window (16), 2 global, 5 reading an earlier layer's KV cache",
		"KV cache 0.5 MiB", "5 layers attend to an earlier layer's KV cache and keep none of their own (counted as 0)")
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00truncated"), 0o644)
	long := strings.Repeat("once upon a time ", 200)
	cases := []struct {
		name  string
		args  []string
		code  int
		in    string
		wants string
	}{
		{"no command", nil, 2, "", "usage"},
		{"unknown command", []string{"frobnicate"}, 2, "", "unknown command"},
		{"run without model", []string{"run"}, 2, "", "exactly one MODEL"},
		{"bad flag value", []string{"run", "m.gguf", "-n", "abc"}, 2, "", "invalid value"},
		{"negative n", []string{"run", "m.gguf", "-n", "-1"}, 2, "", "-n -1"},
		{"bad top-p", []string{"run", models + "stories260K.gguf", "-k", "1.5"}, 2, "", "-k/--top-p 1.5: top-p"},
		{"bad top-p long form", []string{"run", models + "stories260K.gguf", "--top-p", "0"}, 2, "", "-k/--top-p 0: top-p"},
		{"bad top-k", []string{"run", models + "stories260K.gguf", "--top-k", "-1"}, 2, "", "--top-k -1"},
		{"missing file", []string{"run", filepath.Join(dir, "none.gguf"), "-p", "x"}, 1, "", "no such file"},
		{"broken file", []string{"info", bad}, 1, "", "gguf:"},
		{"prompt too long", []string{"run", models + "stories260K.gguf", "-c", "64", "-p", long}, 1, "", "context of 64 tokens"},
		{"eval without ids", []string{"eval", "-m", models + "stories260K.gguf", "--logits", filepath.Join(dir, "x")}, 2, "", "exactly one of --ids and --text"},
		{"eval bad ids", []string{"eval", "-m", models + "stories260K.gguf", "--ids", "1,x", "--logits", filepath.Join(dir, "x")}, 2, "", "item 2"},
		{"eval id out of range", []string{"eval", "-m", models + "stories260K.gguf", "--ids", "1,999", "--logits", filepath.Join(dir, "x")}, 1, "", "out of the vocabulary"},
		{"tokenize without model", []string{"tokenize", "-p", "x"}, 2, "", "-m MODEL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCLI(t, c.in, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, errs)
			}
			if !strings.Contains(errs, c.wants) {
				t.Errorf("stderr %q lacks %q", errs, c.wants)
			}
			// The error is one line; bad usage adds the command's usage after it.
			first, rest, _ := strings.Cut(strings.TrimSpace(errs), "\n")
			switch {
			case c.name == "no command":
			case c.code == 2 && c.name != "unknown command":
				if !strings.HasPrefix(strings.TrimSpace(rest), "usage: edgellm "+c.args[0]) || !strings.Contains(first, c.wants) {
					t.Errorf("want the error, then the usage of %s: %q", c.args[0], errs)
				}
			case rest != "":
				t.Errorf("error is not one line: %q", errs)
			}
			if strings.Contains(errs, "goroutine ") || strings.Contains(errs, "panic") {
				t.Errorf("stack trace: %q", errs)
			}
		})
	}
}

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSynth(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny.gguf")
	code, stdout, errs := runCLI(t, "", "synth", "--shape", "tiny", "--type", "q4_k_m", "-o", out, "--seed", "7", "-j", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{out + ": tiny", "Q4_K_M", "39 tensors (F32×9 Q4_K×25 Q6_K×5)", "2.0 MiB"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q: %q", want, stdout)
		}
	}
	// The file is a model the other commands use.
	code, stdout, errs = runCLI(t, "", "info", out)
	if code != 0 || !strings.Contains(stdout, "name:          synth tiny") || !strings.Contains(stdout, "Q6_K×5") {
		t.Fatalf("info: exit %d, %s%s", code, stdout, errs)
	}
	code, _, errs = runCLI(t, "", "run", out, "-p", "hello", "-n", "4", "-t", "0")
	if code != 0 || !strings.Contains(errs, "decode: 4 tokens") {
		t.Fatalf("run: exit %d, %s", code, errs)
	}
}

// The shapes of the new architectures are written whether or not the engine
// runs them: tiny-phi3 has the reference's tiny phi3 model's 22 tensors, of
// which the 13 matrices are Q8_0 (norms and LongRoPE factors stay F32).
func TestSynthNewArchitecture(t *testing.T) {
	out := filepath.Join(t.TempDir(), "phi.gguf")
	code, stdout, errs := runCLI(t, "", "synth", "--shape", "tiny-phi3", "--type", "q8_0", "-o", out, "-j", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := out + ": tiny-phi3 (the tiny phi3 model"; !strings.Contains(stdout, want) || !strings.Contains(stdout, "22 tensors (F32×9 Q8_0×13)") {
		t.Errorf("output %q", stdout)
	}
	code, stdout, _ = runCLI(t, "", "info", out)
	if !strings.Contains(stdout, "phi3.attention.sliding_window") || !strings.Contains(stdout, "phi3.rope.scaling.attn_factor") {
		t.Errorf("info: exit %d, %s", code, stdout)
	}
}

func TestSynthErrors(t *testing.T) {
	dir := t.TempDir()
	o := filepath.Join(dir, "x.gguf")
	for _, c := range []struct {
		args  []string
		code  int
		wants string
	}{
		{[]string{"synth", "--type", "Q8_0", "-o", o}, 2, "--shape, --type and -o are required"},
		{[]string{"synth", "--shape", "tiny", "--type", "Q8_0"}, 2, "are required"},
		{[]string{"synth", "--shape", "gpt-9", "--type", "Q8_0", "-o", o}, 2, "unknown shape \"gpt-9\" (known: tiny"},
		{[]string{"synth", "--shape", "tiny", "--type", "Q2_K", "-o", o}, 2, "unknown type \"Q2_K\" (known: F32"},
		{[]string{"synth", "--shape", "tiny", "--type", "Q8_0", "-o", o, "extra"}, 2, "unexpected argument"},
		{[]string{"synth", "--shape", "tiny", "--type", "Q8_0", "-o", filepath.Join(dir, "no", "x.gguf")}, 1, "no such file"},
	} {
		code, _, errs := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.wants) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.wants)
		}
	}
}

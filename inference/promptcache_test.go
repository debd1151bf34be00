package inference

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cacheWriterEnv makes the test binary a process that writes prompt cache
// files in a loop (the killed-writer test runs it and kills it).
const cacheWriterEnv = "EDGELLM_TEST_CACHE_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(cacheWriterEnv); path != "" {
		os.Exit(cacheWriter(path))
	}
	os.Exit(m.Run())
}

// cacheWriter saves two different prompts' caches to path, alternately, for
// ever, printing "saving" before each save.
func cacheWriter(path string) int {
	m, err := Load("../testdata/models/tiny-q8_0.gguf")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := m.NewState(512, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	prompts := [2][]int32{cachePrompt(1, 400), cachePrompt(2, 300)}
	for i := 0; ; i++ {
		p := prompts[i%2]
		s.Reset()
		if _, err := s.Prefill(context.Background(), p, false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("saving")
		if err := s.SaveCache(path, p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// cachePrompt is a deterministic token sequence.
func cachePrompt(seed, n int) []int32 {
	p := make([]int32, n)
	p[0] = 1
	for i := 1; i < n; i++ {
		p[i] = int32(3 + (seed*7919+i*104729)%500)
	}
	return p
}

func newTestState(t *testing.T, model string) (*Model, *State, *Generator) {
	t.Helper()
	return newTestStateKV(t, model, KVF16)
}

// newTestStateKV is newTestState with keys and values stored as kv.
func newTestStateKV(t *testing.T, model string, kv KVType) (*Model, *State, *Generator) {
	t.Helper()
	m, err := Load("../testdata/models/" + model)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := m.NewStateKV(512, 1, kv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return m, s, NewGenerator(s, m.Tokenizer)
}

func greedyText(t *testing.T, g *Generator, prompt []int32) (string, Result) {
	t.Helper()
	var out []byte
	res, err := g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 20, Sampling: greedy(), ReusePrefix: true,
		OnText: func(b []byte) error { out = append(out, b...); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return string(out), res
}

// A saved prompt's cache, loaded into a new state, skips its prefill and
// changes no output, for the same prompt and for longer ones sharing it,
// with an FP16 and with a Q8_0 KV cache (and gemma3's sliding-window rings
// in Q8_0: they cannot go back one position to recompute the last prompt
// token's logits, so the same prompt prefills again).
func TestPromptCacheRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		model string
		kv    KVType
		rings bool
	}{{"tiny-q4_k_m.gguf", KVF16, false}, {"tiny-q4_k_m.gguf", KVQ8_0, false}, {"gemma3-tiny-q8_0.gguf", KVQ8_0, true}} {
		t.Run(tc.model+"/"+tc.kv.String(), func(t *testing.T) { checkPromptCacheRoundTrip(t, tc.model, tc.kv, tc.rings) })
	}
}

func checkPromptCacheRoundTrip(t *testing.T, model string, kv KVType, rings bool) {
	path := filepath.Join(t.TempDir(), "prompt.kv")
	prompt := cachePrompt(1, 120)
	_, s1, g1 := newTestStateKV(t, model, kv)
	want, _ := greedyText(t, g1, prompt)
	if err := s1.SaveCache(path, prompt); err != nil {
		t.Fatal(err)
	}
	longer := append(slices.Clone(prompt), cachePrompt(9, 30)[1:]...)
	_, _, gf := newTestStateKV(t, model, kv)
	wantLonger, _ := greedyText(t, gf, longer)
	same := len(prompt) - 1
	if rings {
		same = 0
	}
	for _, tc := range []struct {
		prompt []int32
		want   string
		cached int
	}{{prompt, want, same}, {longer, wantLonger, len(prompt)}} {
		_, s2, g2 := newTestStateKV(t, model, kv)
		toks, err := s2.LoadCache(path)
		if err != nil || !slices.Equal(toks, prompt) || s2.Pos() != len(prompt) {
			t.Fatalf("LoadCache: %d tokens, pos %d, %v", len(toks), s2.Pos(), err)
		}
		g2.Adopt(toks)
		got, res := greedyText(t, g2, tc.prompt)
		if got != tc.want || res.CachedTokens != tc.cached {
			t.Fatalf("from the cache: %q (%d cached), want %q (%d)", got, res.CachedTokens, tc.want, tc.cached)
		}
	}
}

// Truncated, bit-flipped, wrong-model and wrong-version files are rejected
// and leave the state as it was.
func TestPromptCacheRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prompt.kv")
	prompt := cachePrompt(3, 40)
	_, s, _ := newTestState(t, "tiny-q8_0.gguf")
	if _, err := s.Prefill(context.Background(), prompt, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveCache(path, prompt); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{}
	for _, n := range []int{0, 7, 60, 100, len(good) / 2, len(good) - 1} {
		bad[fmt.Sprintf("truncated to %d", n)] = good[:n]
	}
	for _, off := range []int{0, 9, 30, 70, 200, len(good) / 2, len(good) - 5} {
		b := slices.Clone(good)
		b[off] ^= 0x10
		bad[fmt.Sprintf("bit flipped at %d", off)] = b
	}
	bad["padded"] = append(slices.Clone(good), 0)
	v2 := slices.Clone(good)
	binary.LittleEndian.PutUint32(v2[8:], PromptCacheVersion+1)
	bad["another version"] = v2
	for name, data := range bad {
		p := filepath.Join(dir, "bad.kv")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, s2, _ := newTestState(t, "tiny-q8_0.gguf")
		toks, err := s2.LoadCache(p)
		if !errors.Is(err, ErrPromptCache) || toks != nil || s2.Pos() != 0 {
			t.Errorf("%s: %d tokens, pos %d, err %v", name, len(toks), s2.Pos(), err)
		}
	}
	if _, err := s.LoadCache(filepath.Join(dir, "bad.kv")); err == nil || !strings.Contains(err.Error(), "version") && !strings.Contains(err.Error(), "rejected") {
		t.Errorf("version error: %v", err)
	}
	// Same shape, different weights: the model id tells them apart.
	_, other, _ := newTestState(t, "tiny-q4_0.gguf")
	if _, err := other.LoadCache(path); !errors.Is(err, ErrPromptCache) || !strings.Contains(err.Error(), "another model") {
		t.Errorf("wrong model: %v", err)
	}
	// A model of another shape.
	_, qwen, _ := newTestState(t, "qwen2-tiny-q8_0.gguf")
	if _, err := qwen.LoadCache(path); !errors.Is(err, ErrPromptCache) {
		t.Errorf("wrong shape: %v", err)
	}
	// A file of version 2 (before KV types), as an older build wrote it.
	old := slices.Clone(good)
	binary.LittleEndian.PutUint32(old[8:], 2)
	p := filepath.Join(dir, "v2.kv")
	if err := os.WriteFile(p, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadCache(p); !errors.Is(err, ErrPromptCache) || !strings.Contains(err.Error(), "format version 2, this build reads version 3") {
		t.Errorf("version 2 file: %v", err)
	}
	// The same model with another KV cache type, either way round.
	_, s8, _ := newTestStateKV(t, "tiny-q8_0.gguf", KVQ8_0)
	if toks, err := s8.LoadCache(path); !errors.Is(err, ErrPromptCache) || !strings.Contains(err.Error(), "KV cache type f16, this state's is q8_0") || toks != nil || s8.Pos() != 0 {
		t.Errorf("f16 file into a q8_0 state: %d tokens, pos %d, %v", len(toks), s8.Pos(), err)
	}
	if _, err := s8.Prefill(context.Background(), prompt, false); err != nil {
		t.Fatal(err)
	}
	p8 := filepath.Join(dir, "q8.kv")
	if err := s8.SaveCache(p8, prompt); err != nil {
		t.Fatal(err)
	}
	_, s16, _ := newTestState(t, "tiny-q8_0.gguf")
	if _, err := s16.LoadCache(p8); !errors.Is(err, ErrPromptCache) || !strings.Contains(err.Error(), "KV cache type q8_0, this state's is f16") {
		t.Errorf("q8_0 file into an f16 state: %v", err)
	}
	if fi, err := os.Stat(p8); err != nil || fi.Size() >= int64(len(good)) {
		t.Errorf("the q8_0 file is not smaller than the f16 one (%d bytes): %v, %v", len(good), fi.Size(), err)
	}
}

// Killing the writer in the middle of a save leaves the previous file or the
// new one, never a broken one.
func TestPromptCacheSurvivesKilledWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prompt.kv")
	_, s, _ := newTestState(t, "tiny-q8_0.gguf")
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), cacheWriterEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		// Let it save 1 + round times, then kill it as the next save begins.
		for range 2 + round {
			if !lines.Scan() {
				t.Fatalf("round %d: the writer stopped: %v", round, cmd.Wait())
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		toks, err := s.LoadCache(path)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !slices.Equal(toks, cachePrompt(1, 400)) && !slices.Equal(toks, cachePrompt(2, 300)) {
			t.Fatalf("round %d: the file holds %d unexpected tokens", round, len(toks))
		}
		s.Reset()
	}
	// A killed save leaves its temporary file; the next save removes it.
	if _, err := s.Prefill(context.Background(), cachePrompt(5, 10), false); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveCache(path, cachePrompt(5, 10)); err != nil {
		t.Fatal(err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	hub "github.com/edgellm/edgellm/inference/models"
)

// modelServer serves the test model at /files/stories.gguf and records the
// paths asked for.
func modelServer(t *testing.T) (srv *httptest.Server, data []byte, sum string, paths func() []string) {
	t.Helper()
	data, err := os.ReadFile(models + "stories260K.gguf")
	if err != nil {
		t.Fatalf("test model missing: %v", err)
	}
	h := sha256.Sum256(data)
	var mu sync.Mutex
	var seen []string
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		http.ServeContent(w, r, "m.gguf", time.Time{}, bytes.NewReader(data))
	}))
	t.Cleanup(srv.Close)
	return srv, data, hex.EncodeToString(h[:]), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestPullURL(t *testing.T) {
	srv, data, sum, _ := modelServer(t)
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "pull", srv.URL+"/files/stories.gguf", "-o", dir, "--sha256", strings.ToUpper(sum))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	path := filepath.Join(dir, "stories.gguf")
	if strings.TrimSpace(out) != path {
		t.Fatalf("stdout %q, want the path %s", out, path)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded file: %v", err)
	}
	// stderr is not a terminal: plain lines, no bar.
	for _, want := range []string{"stories.gguf: downloading 1.0 MiB", "stories.gguf: 100% (1.0 of 1.0 MiB)", "sha256 " + sum + " verified"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "\r") {
		t.Errorf("progress bar written to a non-terminal:\n%q", errs)
	}

	// Again: nothing to do.
	code, out, errs = runCLI(t, "", "pull", srv.URL+"/files/stories.gguf", "-o", dir)
	if code != 0 || strings.TrimSpace(out) != path || !strings.Contains(errs, "already downloaded") {
		t.Fatalf("second pull: exit %d, stdout %q, stderr %s", code, out, errs)
	}

	// A wrong hash fails (exit 1) and leaves nothing behind.
	dir2 := t.TempDir()
	code, _, errs = runCLI(t, "", "pull", srv.URL+"/files/stories.gguf", "-o", dir2, "--sha256", strings.Repeat("ab", 32))
	if code != 1 || !strings.Contains(errs, "published") {
		t.Fatalf("wrong hash: exit %d, stderr %s", code, errs)
	}
	if entries, _ := os.ReadDir(dir2); len(entries) != 0 {
		t.Fatalf("left %v behind", entries)
	}
}

// TestPullKnownName resolves a catalogue name on a mirror ($HF_ENDPOINT):
// the request goes to the model's repository path, and a file that is not
// the published one is refused before it is downloaded.
func TestPullKnownName(t *testing.T) {
	srv, _, _, paths := modelServer(t)
	t.Setenv("HF_ENDPOINT", srv.URL)
	dir := t.TempDir()
	code, _, errs := runCLI(t, "", "pull", "qwen2.5-0.5b", "-o", dir)
	if code != 1 || !strings.Contains(errs, "the published file has 491400032") {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	if !strings.Contains(errs, "licence: Apache-2.0") {
		t.Errorf("stderr does not name the licence:\n%s", errs)
	}
	want := "/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf"
	if got := paths(); len(got) != 1 || got[0] != want {
		t.Fatalf("requested %q, want %q", got, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left %v behind", entries)
	}
}

func TestPullUsage(t *testing.T) {
	for _, args := range [][]string{
		{"pull"},
		{"pull", "no-such-model"},
		{"pull", "a", "b"},
		{"pull", "tinyllama-1.1b", "--sha256", strings.Repeat("0", 64)},
	} {
		if code, _, errs := runCLI(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	code, out, _ := runCLI(t, "", "pull", "--list")
	if code != 0 {
		t.Fatalf("--list: exit %d", code)
	}
	for _, m := range hub.Catalogue() {
		if !strings.Contains(out, m.Name) || !strings.Contains(out, m.URL()) || !strings.Contains(out, "fits "+m.Boards()+" at a 2048-token context") {
			t.Errorf("--list lacks %s:\n%s", m.Name, out)
		}
	}
	if !strings.Contains(out, "lfm2-350m") || !strings.Contains(out, "fits Pi Zero 2 W (512 MB), Pi 4/5") {
		t.Errorf("--list names no model for the Pi Zero 2 W:\n%s", out)
	}
}

func TestDefaultModelDir(t *testing.T) {
	dir := t.TempDir()
	if got := defaultModelDir(dir); got != dir {
		t.Errorf("writable directory: got %q", got)
	}
	if got := defaultModelDir(filepath.Join(dir, "missing")); got != "." {
		t.Errorf("missing directory: got %q, want .", got)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := defaultModelDir(file); got != "." {
		t.Errorf("a file: got %q, want .", got)
	}
}

func TestHuggingFaceFileURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/blob/main/qwen2.5-0.5b-instruct-q4_k_m.gguf": "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf",
		"https://huggingface.co/o/r/resolve/main/m.gguf":                                                     "https://huggingface.co/o/r/resolve/main/m.gguf",
		"https://example.com/o/r/blob/main/m.gguf":                                                           "https://example.com/o/r/blob/main/m.gguf",
	} {
		if got := huggingFaceFileURL(in); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

package models

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestCatalogue(t *testing.T) {
	cat := Catalogue()
	if len(cat) != 5 {
		t.Fatalf("%d models, want 5", len(cat))
	}
	seen := map[string]bool{}
	var prev int64
	for _, m := range cat {
		for _, key := range []string{m.Name, strings.ToLower(m.File)} {
			if seen[key] {
				t.Errorf("%s: %q used twice", m.Name, key)
			}
			seen[key] = true
		}
		if b, err := hex.DecodeString(m.SHA256); err != nil || len(b) != 32 || m.SHA256 != strings.ToLower(m.SHA256) {
			t.Errorf("%s: sha256 %q is not 64 lower-case hex digits", m.Name, m.SHA256)
		}
		if m.Size < 100<<20 || m.Size < prev {
			t.Errorf("%s: size %d (want real model sizes, smallest first)", m.Name, m.Size)
		}
		prev = m.Size
		if !strings.HasSuffix(m.File, ".gguf") || strings.Count(m.Repo, "/") != 1 || m.License == "" || m.Description == "" {
			t.Errorf("%s: incomplete entry %+v", m.Name, m)
		}
		want := "https://huggingface.co/" + m.Repo + "/resolve/main/" + m.File
		if m.URL() != want {
			t.Errorf("%s: URL %s, want %s", m.Name, m.URL(), want)
		}
	}
	cat[0].Name = "changed"
	if Catalogue()[0].Name == "changed" {
		t.Fatal("Catalogue returned the table itself")
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"qwen2.5-0.5b", "QWEN2.5-0.5B", "qwen2.5-0.5b-instruct-q4_k_m.gguf"} {
		m, ok := Lookup(name)
		if !ok || m.Repo != "Qwen/Qwen2.5-0.5B-Instruct-GGUF" {
			t.Errorf("Lookup(%q) = %+v, %v", name, m, ok)
		}
	}
	if m, ok := Lookup("tinyllama-1.1b"); !ok || m.File != "tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf" {
		t.Errorf("tinyllama: %+v, %v", m, ok)
	}
	if _, ok := Lookup("gpt-5"); ok {
		t.Error("unknown name found")
	}
}

func TestURLAt(t *testing.T) {
	m, _ := Lookup("smollm2-360m")
	want := "http://127.0.0.1:8080/HuggingFaceTB/SmolLM2-360M-Instruct-GGUF/resolve/main/smollm2-360m-instruct-q8_0.gguf"
	if got := m.URLAt("http://127.0.0.1:8080/"); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

package models

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/inference/synth"
)

func TestCatalogue(t *testing.T) {
	cat := Catalogue()
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
		if !strings.Contains(strings.ToLower(m.File), strings.ToLower(m.Quant)) || !strings.Contains(m.Description, m.Quant) {
			t.Errorf("%s: file %s or description %q does not name the quantisation %s", m.Name, m.File, m.Description, m.Quant)
		}
		want := "https://huggingface.co/" + m.Repo + "/resolve/main/" + m.File
		if m.URL() != want {
			t.Errorf("%s: URL %s, want %s", m.Name, m.URL(), want)
		}
	}
	// The models of issue 14, in the quantisations their publishers (or, where
	// they published none, unsloth and ggml-org) put out.
	for _, name := range []string{
		"qwen3-0.6b", "qwen3-0.6b-q8_0", "qwen3-1.7b", "qwen3-1.7b-q8_0", "qwen3-4b", "qwen3-4b-q8_0",
		"gemma3-270m", "gemma3-270m-q8_0", "gemma3-1b", "gemma3-1b-q8_0", "lfm2-350m", "lfm2-350m-q8_0",
		"lfm2-1.2b", "smollm3-3b", "smollm3-3b-q8_0", "phi4-mini", "phi4-mini-q8_0",
		// Issue 18's, where public records give the file's size and hash.
		"qwen3.5-0.8b", "qwen3.5-2b",
	} {
		if !seen[name] {
			t.Errorf("no model %s", name)
		}
	}
	cat[0].Name = "changed"
	if Catalogue()[0].Name == "changed" {
		t.Fatal("Catalogue returned the table itself")
	}
}

// Each model is in the type it says and has the synthetic twin it names (the
// file is at least the twin's tensor data), and fits the Raspberry Pi boards
// it says: MinRAM is the smallest board memory that holds the file, the FP16
// KV cache of FitContext tokens and PiReserve.
func TestCatalogueFits(t *testing.T) {
	for _, m := range Catalogue() {
		s, err := synth.LookupShape(m.Shape)
		if err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		ft, err := synth.ParseFileType(m.Quant)
		if err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		data, err := s.DataBytes(ft)
		if err != nil || m.Size <= data {
			t.Errorf("%s: %d bytes, but %s's tensors in %s are %d (%v)", m.Name, m.Size, s.Name, m.Quant, data, err)
		}
		need := m.Size + s.KVCacheBytes(min(FitContext, s.NCtx)) + PiReserve
		fits := 0
		for _, mib := range piRAM {
			if need <= int64(mib)<<20 {
				fits = mib
				break
			}
		}
		if m.MinRAM != fits {
			t.Errorf("%s: MinRAM %d MiB, but it needs %.0f MiB: the smallest board that fits has %d", m.Name, m.MinRAM, float64(need)/(1<<20), fits)
		}
	}
}

func TestBoards(t *testing.T) {
	for mib, want := range map[int]string{
		512:   "Pi Zero 2 W (512 MB), Pi 4/5",
		1024:  "Pi 4/5 with 1 GB or more",
		4096:  "Pi 4/5 with 4 GB or more",
		16384: "Pi 5 with 16 GB",
	} {
		if got := (Model{MinRAM: mib}).Boards(); got != want {
			t.Errorf("%d MiB: %q, want %q", mib, got, want)
		}
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

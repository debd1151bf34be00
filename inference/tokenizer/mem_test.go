package tokenizer

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/edgellm/edgellm/gguf"
)

// maxRetainedGPT2 bounds the heap a tokenizer of the GPT-2 vocabulary (50257
// tokens, 50000 merges) keeps on top of the GGUF file it was built from.
const maxRetainedGPT2 = 1.5 * (1 << 20)

// heapAlloc returns the live heap after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestNewHeapRetention checks that New keeps little heap of its own: the
// token texts, scores and merges stay in the caller's slices (here the GGUF
// file's metadata), and the indexes built over them are compact.
func TestNewHeapRetention(t *testing.T) {
	f, err := gguf.Open(filepath.Join(vocabDir, "ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatalf("test data missing: %v", err)
	}
	defer f.Close()
	before := heapAlloc()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	after := heapAlloc()
	runtime.KeepAlive(f)
	runtime.KeepAlive(tok)
	retained := int64(after) - int64(before)
	t.Logf("GPT-2 vocabulary (%d tokens): tokenizer retains %d bytes (%.2f MiB)", tok.NumTokens(), retained, float64(retained)/(1<<20))
	if retained > maxRetainedGPT2 {
		t.Errorf("tokenizer retains %d bytes, want at most %d", retained, int64(maxRetainedGPT2))
	}
	// the tokenizer still works
	if ids, err := tok.Encode("Hello world", false); err != nil || len(ids) != 2 {
		t.Errorf("Encode = %v, %v", ids, err)
	}
}

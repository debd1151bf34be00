package gguf

import (
	"bytes"
	"path/filepath"
	"testing"
)

// openReal opens a GGUF file written by the reference implementation and checks
// it: it parses, every tensor has the data its type and shape need, within the
// file, the Builder writes it back byte for byte, Advise works and Close works.
func openReal(t *testing.T, path string) {
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	checkParsed(t, f.data, f, nil)
	if arch, err := f.String("general.architecture"); err != nil || arch == "" {
		t.Errorf("general.architecture = %q, %v", arch, err)
	}
	if enc := reencode(t, f); !bytes.Equal(enc, f.data) {
		t.Errorf("the Builder writes it back as %d bytes that differ from the %d of the file", len(enc), len(f.data))
	}
	for _, a := range []Advice{AdviseNormal, AdviseWillNeed, AdviseSequential, AdviseRandom} {
		if err := f.Advise(a); err != nil {
			t.Errorf("Advise(%v): %v", a, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, tt := range f.Tensors {
		if tt.Data != nil {
			t.Fatalf("tensor %q data kept after Close", tt.Name)
		}
	}
}

// TestModels checks every model in the project's testdata/models. The directory
// must exist and hold models: a missing one fails the test.
func TestModels(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "models", "*.gguf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no models in ../testdata/models (%v)", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) { openReal(t, path) })
	}
}

// TestVocabFiles checks the vocabulary-only files (metadata, no tensors) in
// testdata/vocab, when there are any.
func TestVocabFiles(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "vocab", "*.gguf"))
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) { openReal(t, path) })
	}
}

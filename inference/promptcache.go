package inference

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"
)

// Prompt cache files hold the KV cache of a prompt so a later run sharing
// its prefix skips prefilling it. Layout, little-endian:
//
//	magic "EDGELLKV", version u32, KV type u32 (1 = FP16), layers u32,
//	KV width u32, tokens u32, model id [32] (ModelID),
//	tokens × int32,
//	for each layer: K then V of the first `tokens` positions, u16 each,
//	sha256 of everything before [32].
//
// A file is written to a temporary name, synced and renamed, so a crash
// leaves the old file or the new one, never a torn one.

// PromptCacheVersion is the format version this build reads and writes.
const PromptCacheVersion = 1

const (
	promptCacheMagic  = "EDGELLKV"
	kvTypeF16         = 1
	promptCacheHeader = 8 + 4*5 + 32
)

// ErrPromptCache is wrapped by every reason LoadCache rejects a file.
var ErrPromptCache = errors.New("prompt cache rejected")

// ModelID identifies the model file: the sha256 of its header, metadata and
// tensor directory.
func (m *Model) ModelID() [32]byte { return sha256.Sum256(m.File.Header()) }

// SaveCache writes the KV cache of the first len(tokens) positions, which
// must hold tokens, to path atomically.
func (s *State) SaveCache(path string, tokens []int32) (err error) {
	n := len(tokens)
	if n == 0 || n > s.pos {
		return fmt.Errorf("inference: prompt cache: %d tokens, the state holds %d", n, s.pos)
	}
	dir := filepath.Dir(path)
	// Temporary files of saves that were killed (one writer per file).
	stale, _ := filepath.Glob(filepath.Join(dir, filepath.Base(path)+".tmp-*"))
	for _, f := range stale {
		os.Remove(f)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("inference: prompt cache: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	sum := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, sum), 1<<20)
	kvDim := s.c.KVDim()
	var hdr [promptCacheHeader]byte
	copy(hdr[:], promptCacheMagic)
	for i, v := range []uint32{PromptCacheVersion, kvTypeF16, uint32(s.c.NLayer), uint32(kvDim), uint32(n)} {
		binary.LittleEndian.PutUint32(hdr[8+4*i:], v)
	}
	id := s.m.ModelID()
	copy(hdr[28:], id[:])
	w.Write(hdr[:])
	binary.Write(w, binary.LittleEndian, tokens)
	for l := range s.KV.K {
		w.Write(u16Bytes(s.KV.K[l][:n*kvDim]))
		w.Write(u16Bytes(s.KV.V[l][:n*kvDim]))
	}
	if err = w.Flush(); err != nil {
		return fmt.Errorf("inference: prompt cache: %w", err)
	}
	if _, err = f.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("inference: prompt cache: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("inference: prompt cache: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("inference: prompt cache: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("inference: prompt cache: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// LoadCache reads a prompt cache file into the state and returns the tokens
// whose KV cache it restored; the state's position is then their count. A
// file that is truncated, corrupted, of another format version or made by
// another model (or with another KV layout) is rejected with an error
// wrapping ErrPromptCache, and the state is left as it was.
func (s *State) LoadCache(path string) ([]int32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("inference: prompt cache: %w", err)
	}
	reject := func(format string, args ...any) ([]int32, error) {
		return nil, fmt.Errorf("inference: prompt cache %s: %w: %s", path, ErrPromptCache, fmt.Sprintf(format, args...))
	}
	if len(data) < promptCacheHeader+sha256.Size || string(data[:8]) != promptCacheMagic {
		return reject("not a prompt cache file (or truncated)")
	}
	u32 := func(i int) uint32 { return binary.LittleEndian.Uint32(data[8+4*i:]) }
	version, kvType, layers, kvDim, n := u32(0), u32(1), u32(2), u32(3), u32(4)
	switch {
	case version != PromptCacheVersion:
		return reject("format version %d, this build reads version %d", version, PromptCacheVersion)
	case kvType != kvTypeF16:
		return reject("KV type %d, want %d (FP16)", kvType, kvTypeF16)
	case int(layers) != s.c.NLayer || int(kvDim) != s.c.KVDim():
		return reject("KV shape %d layers × %d, the model has %d × %d", layers, kvDim, s.c.NLayer, s.c.KVDim())
	case n == 0 || int(n) > s.KV.Ctx:
		return reject("%d tokens, the context holds %d", n, s.KV.Ctx)
	}
	if id := s.m.ModelID(); !bytes.Equal(data[28:60], id[:]) {
		return reject("made by another model file")
	}
	want := uint64(promptCacheHeader) + 4*uint64(n) + 2*2*uint64(layers)*uint64(n)*uint64(kvDim) + sha256.Size
	if uint64(len(data)) != want {
		return reject("%d bytes, want %d (truncated or padded)", len(data), want)
	}
	body := data[:len(data)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return reject("checksum mismatch (corrupted)")
	}
	tokens := make([]int32, n)
	off := promptCacheHeader
	for i := range tokens {
		tokens[i] = int32(binary.LittleEndian.Uint32(data[off:]))
		off += 4
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= s.c.NVocab {
			return reject("token %d is outside the vocabulary of %d", t, s.c.NVocab)
		}
	}
	width := int(n) * int(kvDim) * 2
	for l := range s.KV.K {
		copy(u16Bytes(s.KV.K[l][:int(n)*int(kvDim)]), data[off:off+width])
		off += width
		copy(u16Bytes(s.KV.V[l][:int(n)*int(kvDim)]), data[off:off+width])
		off += width
	}
	s.pos = int(n)
	return tokens, nil
}

// u16Bytes views FP16 values as their little-endian bytes (the machines
// edgellm runs on are little-endian).
func u16Bytes(x []uint16) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 2*len(x))
}

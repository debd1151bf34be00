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
)

// Prompt cache files hold the per-layer caches of a prompt so a later run
// sharing its prefix skips prefilling it. Layout, little-endian:
//
//	magic "EDGELLKV", version u32, layers u32, tokens u32, model id [32]
//	(ModelID),
//	for each layer: kind u32 (CacheKind), width u32, rows u32 (rows of
//	width values that follow: for a key/value cache, the positions a
//	sequence at `tokens` still needs, keys then values in FP16 or Q8_0
//	blocks; for a convolution or DeltaNet state, its rows in F32), KV type
//	u32 (KVType of a key/value cache, else 0),
//	tokens × int32,
//	each layer's data, in order,
//	sha256 of everything before [32].
//
// A file is written to a temporary name, synced and renamed, so a crash
// leaves the old file or the new one, never a torn one.

// PromptCacheVersion is the format version this build reads and writes
// (version 1 held one full FP16 key/value cache for every layer; version 2
// had no KV type per layer, its key/value caches all FP16).
const PromptCacheVersion = 3

const (
	promptCacheMagic  = "EDGELLKV"
	promptCacheHeader = 8 + 4*3 + 32
	promptCacheLayer  = 4 * 4
)

// ErrPromptCache is wrapped by every reason LoadCache rejects a file.
var ErrPromptCache = errors.New("prompt cache rejected")

// ModelID identifies the model file: the sha256 of its header, metadata and
// tensor directory.
func (m *Model) ModelID() [32]byte { return sha256.Sum256(m.File.Header()) }

// SaveCache writes to path, atomically, what every layer needs to continue
// after tokens, which the first positions of the state must hold; the state
// must be able to rewind to len(tokens) (CanRewind).
func (s *State) SaveCache(path string, tokens []int32) (err error) {
	n := len(tokens)
	if n == 0 || n > s.pos {
		return fmt.Errorf("inference: prompt cache: %d tokens, the state holds %d", n, s.pos)
	}
	if !s.CanRewind(n) {
		return fmt.Errorf("inference: prompt cache: the state holds %d tokens and cannot be rewound to %d", s.pos, n)
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
	var hdr [promptCacheHeader]byte
	copy(hdr[:], promptCacheMagic)
	for i, v := range []uint32{PromptCacheVersion, uint32(len(s.caches)), uint32(n)} {
		binary.LittleEndian.PutUint32(hdr[8+4*i:], v)
	}
	id := s.m.ModelID()
	copy(hdr[20:], id[:])
	w.Write(hdr[:])
	for i := range s.caches {
		lc := &s.caches[i]
		rows := lc.savedRows(n)
		binary.Write(w, binary.LittleEndian, [4]uint32{uint32(lc.spec.Kind), uint32(lc.spec.Width), uint32(rows), uint32(lc.spec.KV)})
	}
	binary.Write(w, binary.LittleEndian, tokens)
	var data []byte
	for i := range s.caches {
		data = s.caches[i].save(data[:0], n)
		w.Write(data)
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
// whose caches it restored; the state's position is then their count. A
// file that is truncated, corrupted, of another format version or made by
// another model (or with another KV layout or KV type) is rejected with an error
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
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(data[off:]) }
	version, layers, n := u32(8), u32(12), u32(16)
	switch {
	case version != PromptCacheVersion:
		return reject("format version %d, this build reads version %d", version, PromptCacheVersion)
	case int(layers) != len(s.caches):
		return reject("%d layers, the model has %d", layers, len(s.caches))
	case n == 0 || int(n) > s.ctx:
		return reject("%d tokens, the context holds %d", n, s.ctx)
	}
	if id := s.m.ModelID(); !bytes.Equal(data[20:52], id[:]) {
		return reject("made by another model file")
	}
	off := promptCacheHeader
	want := uint64(off) + uint64(layers)*promptCacheLayer + 4*uint64(n) + sha256.Size
	if uint64(len(data)) < want {
		return reject("%d bytes, want at least %d (truncated)", len(data), want)
	}
	for i := range s.caches {
		lc := &s.caches[i]
		kind, width, rows, kv := u32(off), u32(off+4), u32(off+8), u32(off+12)
		off += promptCacheLayer
		if KVType(kv) != lc.spec.KV {
			return reject("layer %d: KV cache type %v, this state's is %v", i, KVType(kv), lc.spec.KV)
		}
		if CacheKind(kind) != lc.spec.Kind || int(width) != lc.spec.Width ||
			uint64(rows)*uint64(lc.rowBytes()) != uint64(lc.stateBytes(int(n))) {
			return reject("layer %d: cache kind %d × %d wide, %d rows; the model's is kind %d × %d, %d rows",
				i, kind, width, rows, lc.spec.Kind, lc.spec.Width, lc.savedRows(int(n)))
		}
		want += uint64(lc.stateBytes(int(n)))
	}
	if uint64(len(data)) != want {
		return reject("%d bytes, want %d (truncated or padded)", len(data), want)
	}
	body := data[:len(data)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return reject("checksum mismatch (corrupted)")
	}
	tokens := make([]int32, n)
	for i := range tokens {
		tokens[i] = int32(u32(off))
		off += 4
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= s.c.NVocab {
			return reject("token %d is outside the vocabulary of %d", t, s.c.NVocab)
		}
	}
	s.Reset()
	s.loadCaches(body[off:], int(n), int(n))
	return tokens, nil
}

package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/edgellm/edgellm/kernels"
)

// writeVersion is the GGUF version the Builder writes.
const writeVersion = 3

// Builder collects metadata and tensors and writes them as a GGUF version 3
// file. Values are encoded when they are added, so later changes to a slice
// given to AddKV do not show in the file; the data given to AddTensor is kept by
// reference and must stay unchanged until the last WriteTo.
//
// Every file a Builder writes is accepted by Parse. The zero Builder is ready to
// use.
type Builder struct {
	kvs     []builderKV
	keys    map[string]bool
	tensors []builderTensor
	names   map[string]bool
	align   uint64 // from general.alignment; 0 until set
}

type builderKV struct {
	key string
	typ ValueType
	enc []byte // the encoded value, without its type tag
}

type builderTensor struct {
	name string
	typ  kernels.Type
	dims []uint64
	data []byte
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{} }

// AddKV adds a metadata key and its value. The value must have one of the Go
// types Parse returns (see KV): uint8, int8, uint16, int16, uint32, int32,
// uint64, int64, float32, float64, bool or string; a slice of one of those for an
// array; or []any whose elements are themselves arrays (typed slices or []any,
// nested at most 4 deep in all) for an array of arrays. A nil typed slice is
// written as an empty array.
//
// The key must be non-empty UTF-8 and not added before. A general.alignment key
// sets the alignment of the tensor data: it must be an integer (uint32, as the
// format says) that is a power of two up to 1 MiB.
func (b *Builder) AddKV(key string, value any) error {
	if key == "" || !utf8.ValidString(key) {
		return fmt.Errorf("gguf: metadata key %q is empty or not UTF-8", key)
	}
	if b.keys[key] {
		return fmt.Errorf("gguf: metadata key %q added twice", key)
	}
	enc, typ, err := appendValue(nil, value, 0)
	if err != nil {
		return fmt.Errorf("gguf: metadata %q: %w", key, err)
	}
	if key == "general.alignment" {
		a, ok := asUint(value)
		if !ok {
			return fmt.Errorf("gguf: metadata %q: value of type %T, want an unsigned integer", key, value)
		}
		if a == 0 || a&(a-1) != 0 || a > maxAlignment {
			return fmt.Errorf("gguf: metadata %q: alignment %d is not a power of two between 1 and %d", key, a, maxAlignment)
		}
		b.align = a
	}
	if b.keys == nil {
		b.keys = make(map[string]bool)
	}
	b.keys[key] = true
	b.kvs = append(b.kvs, builderKV{key: key, typ: typ, enc: enc})
	return nil
}

// AddTensor adds a tensor. dims lists 1 to 4 dimensions, innermost (row) first,
// each between 1 and 2^31-1; dims[0] must be a whole number of typ's blocks and
// data must hold exactly typ.RowBytes(dims[0]) bytes for each row. The name must
// be non-empty UTF-8 and not added before. data is kept, not copied.
func (b *Builder) AddTensor(name string, typ kernels.Type, dims []uint64, data []byte) error {
	if name == "" || !utf8.ValidString(name) {
		return fmt.Errorf("gguf: tensor name %q is empty or not UTF-8", name)
	}
	if b.names[name] {
		return fmt.Errorf("gguf: tensor %q added twice", name)
	}
	if !typ.Known() {
		return fmt.Errorf("gguf: tensor %q: unknown tensor type %d", name, uint32(typ))
	}
	if len(dims) == 0 || len(dims) > MaxDims {
		return fmt.Errorf("gguf: tensor %q: %d dimensions, want 1 to %d", name, len(dims), MaxDims)
	}
	total := uint64(1)
	for d, n := range dims {
		if n == 0 || n > math.MaxInt32 {
			return fmt.Errorf("gguf: tensor %q: dimension %d is %d (must be 1 … 2^31-1)", name, d, n)
		}
		if total > math.MaxInt64/n {
			return fmt.Errorf("gguf: tensor %q: element count of dimensions %v overflows", name, dims)
		}
		total *= n
	}
	rowBytes, err := typ.RowBytes(int(dims[0]))
	if err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	rows := total / dims[0]
	if rows > uint64(len(data))/uint64(rowBytes) || rows*uint64(rowBytes) != uint64(len(data)) {
		return fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d rows of %d bytes (%v %v)", name, len(data), rows, rowBytes, typ, dims)
	}
	if b.names == nil {
		b.names = make(map[string]bool)
	}
	b.names[name] = true
	b.tensors = append(b.tensors, builderTensor{name: name, typ: typ, dims: append([]uint64(nil), dims...), data: data})
	return nil
}

// Alignment returns the alignment the tensor data will be written with: the
// general.alignment value if one was added, else DefaultAlignment.
func (b *Builder) Alignment() uint64 {
	if b.align == 0 {
		return DefaultAlignment
	}
	return b.align
}

// WriteTo writes the file to w: header, metadata, tensor infos, then, if there
// are tensors, zero padding to the alignment and each tensor's data followed by
// zero padding to the alignment. This is the layout of the reference
// implementation's writer, byte for byte. It returns the number of bytes written
// to w. It may be called more than once.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	align := b.Alignment()
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<16)
	le := binary.LittleEndian

	var hdr []byte
	hdr = append(hdr, Magic...)
	hdr = le.AppendUint32(hdr, writeVersion)
	hdr = le.AppendUint64(hdr, uint64(len(b.tensors)))
	hdr = le.AppendUint64(hdr, uint64(len(b.kvs)))
	bw.Write(hdr)
	pos := uint64(len(hdr))
	var buf []byte
	for _, kv := range b.kvs {
		buf = appendString(buf[:0], kv.key)
		buf = le.AppendUint32(buf, uint32(kv.typ))
		bw.Write(buf)
		bw.Write(kv.enc)
		pos += uint64(len(buf) + len(kv.enc))
	}
	off := uint64(0) // offset of the next tensor in the data section
	for _, t := range b.tensors {
		buf = appendString(buf[:0], t.name)
		buf = le.AppendUint32(buf, uint32(len(t.dims)))
		for _, d := range t.dims {
			buf = le.AppendUint64(buf, d)
		}
		buf = le.AppendUint32(buf, uint32(t.typ))
		buf = le.AppendUint64(buf, off)
		bw.Write(buf)
		pos += uint64(len(buf))
		off = alignUp(off+uint64(len(t.data)), align)
	}
	var zeros [256]byte
	pad := func(n uint64) {
		for n > 0 {
			k := min(n, uint64(len(zeros)))
			bw.Write(zeros[:k])
			n -= k
		}
	}
	if len(b.tensors) > 0 { // as the reference writer, no padding without tensor data
		pad(alignUp(pos, align) - pos)
	}
	for _, t := range b.tensors {
		bw.Write(t.data)
		n := uint64(len(t.data))
		pad(alignUp(n, align) - n)
	}
	// bufio.Writer keeps the first error and reports it from Flush.
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("gguf: write: %w", err)
	}
	return cw.n, nil
}

// WriteFile writes the file built by b to path atomically: it writes a
// temporary file in the same directory, syncs it to disk and renames it over
// path, so path holds either its old content or the whole new file. The file
// gets mode 0644.
func WriteFile(path string, b *Builder) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	if err := writeSynced(tmp, b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%w (file %s)", err, path)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	// Make the rename durable. Some file systems cannot sync a directory;
	// the file itself is complete either way.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// writeSynced writes b to the temporary file tmp, sets its mode and syncs it.
func writeSynced(tmp *os.File, b *Builder) error {
	if _, err := b.WriteTo(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("gguf: write: sync: %w", err)
	}
	return nil
}

// countingWriter counts the bytes written to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func appendString(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(s)))
	return append(dst, s...)
}

var errNotArray = errors.New("element of an array of arrays is not an array")

// appendValue appends the encoding of v (without its type tag) to dst and
// returns the type tag. depth is the number of arrays v is nested in.
func appendValue(dst []byte, v any, depth int) ([]byte, ValueType, error) {
	le := binary.LittleEndian
	switch x := v.(type) {
	case uint8:
		return append(dst, x), TypeUint8, nil
	case int8:
		return append(dst, byte(x)), TypeInt8, nil
	case uint16:
		return le.AppendUint16(dst, x), TypeUint16, nil
	case int16:
		return le.AppendUint16(dst, uint16(x)), TypeInt16, nil
	case uint32:
		return le.AppendUint32(dst, x), TypeUint32, nil
	case int32:
		return le.AppendUint32(dst, uint32(x)), TypeInt32, nil
	case uint64:
		return le.AppendUint64(dst, x), TypeUint64, nil
	case int64:
		return le.AppendUint64(dst, uint64(x)), TypeInt64, nil
	case float32:
		return le.AppendUint32(dst, math.Float32bits(x)), TypeFloat32, nil
	case float64:
		return le.AppendUint64(dst, math.Float64bits(x)), TypeFloat64, nil
	case bool:
		return append(dst, boolByte(x)), TypeBool, nil
	case string:
		return appendString(dst, x), TypeString, nil
	}
	if depth >= maxDepth {
		return nil, 0, fmt.Errorf("arrays nested deeper than %d", maxDepth)
	}
	switch x := v.(type) {
	case []uint8:
		return append(arrayHeader(dst, TypeUint8, len(x)), x...), TypeArray, nil
	case []int8:
		return appendArray(dst, TypeInt8, x, func(b []byte, e int8) []byte { return append(b, byte(e)) }), TypeArray, nil
	case []uint16:
		return appendArray(dst, TypeUint16, x, le.AppendUint16), TypeArray, nil
	case []int16:
		return appendArray(dst, TypeInt16, x, func(b []byte, e int16) []byte { return le.AppendUint16(b, uint16(e)) }), TypeArray, nil
	case []uint32:
		return appendArray(dst, TypeUint32, x, le.AppendUint32), TypeArray, nil
	case []int32:
		return appendArray(dst, TypeInt32, x, func(b []byte, e int32) []byte { return le.AppendUint32(b, uint32(e)) }), TypeArray, nil
	case []uint64:
		return appendArray(dst, TypeUint64, x, le.AppendUint64), TypeArray, nil
	case []int64:
		return appendArray(dst, TypeInt64, x, func(b []byte, e int64) []byte { return le.AppendUint64(b, uint64(e)) }), TypeArray, nil
	case []float32:
		return appendArray(dst, TypeFloat32, x, func(b []byte, e float32) []byte { return le.AppendUint32(b, math.Float32bits(e)) }), TypeArray, nil
	case []float64:
		return appendArray(dst, TypeFloat64, x, func(b []byte, e float64) []byte { return le.AppendUint64(b, math.Float64bits(e)) }), TypeArray, nil
	case []bool:
		return appendArray(dst, TypeBool, x, func(b []byte, e bool) []byte { return append(b, boolByte(e)) }), TypeArray, nil
	case []string:
		return appendArray(dst, TypeString, x, appendString), TypeArray, nil
	case []any:
		dst = arrayHeader(dst, TypeArray, len(x))
		for i, e := range x {
			var t ValueType
			var err error
			if dst, t, err = appendValue(dst, e, depth+1); err != nil {
				return nil, 0, fmt.Errorf("[%d]: %w", i, err)
			}
			if t != TypeArray {
				return nil, 0, fmt.Errorf("[%d]: %w (%T)", i, errNotArray, e)
			}
		}
		return dst, TypeArray, nil
	}
	return nil, 0, fmt.Errorf("unsupported value type %T", v)
}

func arrayHeader(dst []byte, et ValueType, n int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(et))
	return binary.LittleEndian.AppendUint64(dst, uint64(n))
}

func appendArray[T any](dst []byte, et ValueType, s []T, enc func([]byte, T) []byte) []byte {
	dst = arrayHeader(dst, et, len(s))
	for _, e := range s {
		dst = enc(dst, e)
	}
	return dst
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

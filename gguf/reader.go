package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/edgellm/edgellm/kernels"
)

// File is a parsed GGUF file. Its tensor data point into the file's mapping
// (or into the buffer given to Parse) and are valid until Close.
type File struct {
	Version    uint32
	Alignment  uint64
	KVs        []KV     // metadata in file order
	Tensors    []Tensor // tensors in file order
	DataOffset uint64   // offset of the tensor data section in the file
	Size       uint64   // size of the file in bytes

	kv      map[string]int // key → index in KVs
	tensors map[string]int // name → index in Tensors
	data    []byte         // the whole file
	mapped  bool
}

// Open maps the file at path read-only and parses it. Close releases the mapping.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s: not a regular file", path)
	}
	size := st.Size()
	if size < 24 {
		return nil, fmt.Errorf("gguf: %s: file of %d bytes is too small for a GGUF header (24 bytes)", path, size)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("gguf: %s: file of %d bytes is too large to map on this platform", path, size)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gguf: mmap %s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		unix.Munmap(data)
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	f.mapped = true
	return f, nil
}

// Close releases the file mapping. Tensor data must not be used afterwards.
func (f *File) Close() error {
	if !f.mapped || f.data == nil {
		return nil
	}
	err := unix.Munmap(f.data)
	f.data = nil
	for i := range f.Tensors {
		f.Tensors[i].Data = nil
	}
	if err != nil {
		return fmt.Errorf("gguf: munmap: %w", err)
	}
	return nil
}

// Advice is a hint to the kernel about how tensor data will be read.
type Advice int

// The access patterns Advise accepts.
const (
	AdviseNormal     Advice = iota // no particular pattern
	AdviseWillNeed                 // read the whole file ahead: it fits in memory
	AdviseSequential               // read ahead aggressively, drop pages soon after use
	AdviseRandom                   // no read-ahead: the model does not fit and will page
)

// Advise passes an access-pattern hint for the tensor data section to the kernel
// (madvise). It does nothing for a File made by Parse.
func (f *File) Advise(a Advice) error {
	if !f.mapped || f.data == nil {
		return nil
	}
	adv := map[Advice]int{AdviseNormal: unix.MADV_NORMAL, AdviseWillNeed: unix.MADV_WILLNEED,
		AdviseSequential: unix.MADV_SEQUENTIAL, AdviseRandom: unix.MADV_RANDOM}[a]
	// madvise needs a page-aligned start: advise from the page holding the data.
	start := f.DataOffset &^ uint64(os.Getpagesize()-1)
	if err := unix.Madvise(f.data[start:], adv); err != nil {
		return fmt.Errorf("gguf: madvise: %w", err)
	}
	return nil
}

// Parse parses a GGUF file held in data. The returned File refers to data.
func Parse(data []byte) (*File, error) {
	r := &reader{b: data}
	f := &File{data: data, Size: uint64(len(data)), Alignment: DefaultAlignment}
	if len(data) < 4 || string(data[:4]) != Magic {
		n := min(len(data), 4)
		return nil, fmt.Errorf("gguf: bad magic %q at offset 0: not a GGUF file", data[:n])
	}
	r.off = 4
	var err error
	if f.Version, err = r.u32("version"); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("gguf: unsupported version %d at offset 4 (supported: 2, 3)", f.Version)
	}
	nTensors, err := r.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := r.u64("metadata count")
	if err != nil {
		return nil, err
	}
	// Each key/value takes at least 8+4+1 bytes and each tensor info 8+4+8+4+8.
	if nKV > uint64(r.left())/13 {
		return nil, fmt.Errorf("gguf: metadata count %d at offset 16 exceeds what the file of %d bytes can hold", nKV, len(data))
	}
	if nTensors > uint64(r.left())/32 {
		return nil, fmt.Errorf("gguf: tensor count %d at offset 8 exceeds what the file of %d bytes can hold", nTensors, len(data))
	}
	f.KVs = make([]KV, 0, nKV)
	f.kv = make(map[string]int, nKV)
	for i := uint64(0); i < nKV; i++ {
		at := r.off
		key, err := r.str(fmt.Sprintf("metadata %d key", i))
		if err != nil {
			return nil, err
		}
		if _, dup := f.kv[key]; dup {
			return nil, fmt.Errorf("gguf: metadata key %q at offset %d appears twice", key, at)
		}
		ctx := fmt.Sprintf("metadata %q", key)
		vt, err := r.u32(ctx + " type")
		if err != nil {
			return nil, err
		}
		v, err := r.value(ValueType(vt), ctx, 0)
		if err != nil {
			return nil, err
		}
		f.kv[key] = len(f.KVs)
		f.KVs = append(f.KVs, KV{Key: key, Value: v})
	}
	if v, ok := f.Get("general.alignment"); ok {
		a, ok := asUint(v)
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
			return nil, fmt.Errorf("gguf: general.alignment %v is not a power of two up to 1 MiB", v)
		}
		f.Alignment = a
	}
	f.Tensors = make([]Tensor, 0, nTensors)
	f.tensors = make(map[string]int, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		t, err := r.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensors[t.Name]; dup {
			return nil, fmt.Errorf("gguf: tensor %d name %q appears twice", i, t.Name)
		}
		f.tensors[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	dataOff := alignUp(uint64(r.off), f.Alignment)
	if dataOff > f.Size && nTensors > 0 {
		return nil, fmt.Errorf("gguf: tensor data section at offset %d is past the end of the file (%d bytes)", dataOff, f.Size)
	}
	f.DataOffset = dataOff
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return nil, fmt.Errorf("gguf: tensor %q: data offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		rowBytes, _ := t.Type.RowBytes(int(t.Dims[0]))
		size := uint64(rowBytes) * t.Rows()
		start := dataOff + t.Offset
		if t.Offset > f.Size || start > f.Size || size > f.Size-start {
			return nil, fmt.Errorf("gguf: tensor %q: data at offset %d with size %d runs past the end of the file (%d bytes)", t.Name, start, size, f.Size)
		}
		t.Data = data[start : start+size : start+size]
	}
	return f, nil
}

// reader decodes little-endian values from b, checking every length.
type reader struct {
	b   []byte
	off int
}

func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) need(n uint64, what string) error {
	if n > uint64(r.left()) {
		return fmt.Errorf("gguf: %s at offset %d: needs %d bytes, file has %d left (truncated?)", what, r.off, n, r.left())
	}
	return nil
}

func (r *reader) u32(what string) (uint32, error) {
	if err := r.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v, nil
}

func (r *reader) u64(what string) (uint64, error) {
	if err := r.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v, nil
}

func (r *reader) str(what string) (string, error) {
	at := r.off
	n, err := r.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(r.left()) {
		return "", fmt.Errorf("gguf: %s at offset %d: string length %d exceeds the %d bytes left in the file", what, at, n, r.left())
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s, nil
}

// maxDepth bounds nested arrays so a hostile file cannot exhaust the stack.
const maxDepth = 4

func (r *reader) value(t ValueType, what string, depth int) (any, error) {
	if sz := t.size(); sz > 0 {
		if err := r.need(uint64(sz), what); err != nil {
			return nil, err
		}
		b := r.b[r.off:]
		r.off += sz
		switch t {
		case TypeUint8:
			return b[0], nil
		case TypeInt8:
			return int8(b[0]), nil
		case TypeBool:
			if b[0] > 1 {
				return nil, fmt.Errorf("gguf: %s at offset %d: bool byte %d is neither 0 nor 1", what, r.off-1, b[0])
			}
			return b[0] == 1, nil
		case TypeUint16:
			return binary.LittleEndian.Uint16(b), nil
		case TypeInt16:
			return int16(binary.LittleEndian.Uint16(b)), nil
		case TypeUint32:
			return binary.LittleEndian.Uint32(b), nil
		case TypeInt32:
			return int32(binary.LittleEndian.Uint32(b)), nil
		case TypeFloat32:
			return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
		case TypeUint64:
			return binary.LittleEndian.Uint64(b), nil
		case TypeInt64:
			return int64(binary.LittleEndian.Uint64(b)), nil
		case TypeFloat64:
			return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
		}
	}
	switch t {
	case TypeString:
		return r.str(what)
	case TypeArray:
		return r.array(what, depth)
	}
	return nil, fmt.Errorf("gguf: %s at offset %d: unknown value type %d", what, r.off-4, uint32(t))
}

func (r *reader) array(what string, depth int) (any, error) {
	if depth >= maxDepth {
		return nil, fmt.Errorf("gguf: %s at offset %d: arrays nested deeper than %d", what, r.off, maxDepth)
	}
	et32, err := r.u32(what + " array element type")
	if err != nil {
		return nil, err
	}
	et := ValueType(et32)
	at := r.off
	n, err := r.u64(what + " array length")
	if err != nil {
		return nil, err
	}
	minSize := uint64(et.size())
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if minSize == 0 {
		return nil, fmt.Errorf("gguf: %s at offset %d: unknown array element type %d", what, at-4, et32)
	}
	if n > uint64(r.left())/minSize {
		return nil, fmt.Errorf("gguf: %s at offset %d: array length %d exceeds what the %d bytes left in the file can hold", what, at, n, r.left())
	}
	switch et {
	case TypeString:
		out := make([]string, n)
		for i := range out {
			if out[i], err = r.str(fmt.Sprintf("%s[%d]", what, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case TypeArray:
		out := make([]any, n)
		for i := range out {
			if out[i], err = r.value(TypeArray, fmt.Sprintf("%s[%d]", what, i), depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case TypeBool:
		out := make([]bool, n)
		for i := range out {
			b := r.b[r.off+i]
			if b > 1 {
				return nil, fmt.Errorf("gguf: %s[%d] at offset %d: bool byte %d is neither 0 nor 1", what, i, r.off+i, b)
			}
			out[i] = b == 1
		}
		r.off += int(n)
		return out, nil
	}
	b := r.b[r.off : r.off+int(n*minSize)]
	r.off += len(b)
	return decodeNumbers(et, b, int(n)), nil
}

func decodeNumbers(t ValueType, b []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return append([]uint8(nil), b...)
	case TypeInt8:
		return fill(n, func(i int) int8 { return int8(b[i]) })
	case TypeUint16:
		return fill(n, func(i int) uint16 { return le.Uint16(b[2*i:]) })
	case TypeInt16:
		return fill(n, func(i int) int16 { return int16(le.Uint16(b[2*i:])) })
	case TypeUint32:
		return fill(n, func(i int) uint32 { return le.Uint32(b[4*i:]) })
	case TypeInt32:
		return fill(n, func(i int) int32 { return int32(le.Uint32(b[4*i:])) })
	case TypeFloat32:
		return fill(n, func(i int) float32 { return math.Float32frombits(le.Uint32(b[4*i:])) })
	case TypeUint64:
		return fill(n, func(i int) uint64 { return le.Uint64(b[8*i:]) })
	case TypeInt64:
		return fill(n, func(i int) int64 { return int64(le.Uint64(b[8*i:])) })
	default: // TypeFloat64
		return fill(n, func(i int) float64 { return math.Float64frombits(le.Uint64(b[8*i:])) })
	}
}

func fill[T any](n int, f func(int) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func (r *reader) tensorInfo(i uint64) (Tensor, error) {
	var t Tensor
	name, err := r.str(fmt.Sprintf("tensor %d name", i))
	if err != nil {
		return t, err
	}
	if !utf8.ValidString(name) || name == "" {
		return t, fmt.Errorf("gguf: tensor %d name %q is empty or not UTF-8", i, name)
	}
	t.Name = name
	ctx := fmt.Sprintf("tensor %q", name)
	at := r.off
	nd, err := r.u32(ctx + " dimension count")
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > MaxDims {
		return t, fmt.Errorf("gguf: %s at offset %d: dimension count %d is not between 1 and %d", ctx, at, nd, MaxDims)
	}
	t.Dims = make([]uint64, nd)
	total := uint64(1)
	for d := range t.Dims {
		at := r.off
		if t.Dims[d], err = r.u64(fmt.Sprintf("%s dimension %d", ctx, d)); err != nil {
			return t, err
		}
		if t.Dims[d] == 0 || t.Dims[d] > math.MaxInt32 {
			return t, fmt.Errorf("gguf: %s at offset %d: dimension %d is %d (must be 1 … 2^31-1)", ctx, at, d, t.Dims[d])
		}
		if total > math.MaxInt64/t.Dims[d] {
			return t, fmt.Errorf("gguf: %s at offset %d: element count overflows", ctx, at)
		}
		total *= t.Dims[d]
	}
	at = r.off
	typ, err := r.u32(ctx + " type")
	if err != nil {
		return t, err
	}
	t.Type = kernels.Type(typ)
	if !t.Type.Known() {
		return t, fmt.Errorf("gguf: %s at offset %d: unknown tensor type %d", ctx, at, typ)
	}
	if t.Dims[0]%uint64(t.Type.BlockSize()) != 0 {
		return t, fmt.Errorf("gguf: %s: row length %d is not a multiple of the %v block size %d", ctx, t.Dims[0], t.Type, t.Type.BlockSize())
	}
	if t.Offset, err = r.u64(ctx + " data offset"); err != nil {
		return t, err
	}
	return t, nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

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

// headerSize is the size of the fixed part of the header: magic, version and
// the two counts.
const headerSize = 24

// maxAlignment bounds general.alignment.
const maxAlignment = 1 << 20

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
	if size < headerSize {
		return nil, fmt.Errorf("gguf: %s: file of %d bytes is too small for a GGUF header (%d bytes)", path, size, headerSize)
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

// Header returns the bytes before the tensor data: the header, the metadata
// and the tensor directory (for identifying a model file by its hash).
func (f *File) Header() []byte { return f.data[:f.DataOffset] }

// TensorData returns the bytes from the start of the tensor data to the end of
// the file: every tensor's data, as mapped (nil after Close).
func (f *File) TensorData() []byte {
	if f.data == nil {
		return nil
	}
	return f.data[f.DataOffset:]
}

// Close releases the file mapping. Tensor data must not be used afterwards.
// Closing a File made by Parse, or closing twice, does nothing.
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

// Release lets the kernel drop the resident pages of b, a part of the
// file's mapping (a tensor's Data) the caller will not read again, such as
// a tensor copied elsewhere: only the pages wholly inside b, so that a
// neighbour's data stays. Reading b afterwards reads the file again. It does
// nothing for a File made by Parse or a closed File, and fails when b is
// not in the mapping.
func (f *File) Release(b []byte) error {
	if !f.mapped || f.data == nil || len(b) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p-base+uintptr(len(b)) > uintptr(len(f.data)) {
		return errors.New("gguf: release: the bytes are not in the file's mapping")
	}
	page := uintptr(os.Getpagesize())
	lo := (p - base + page - 1) &^ (page - 1)
	hi := (p - base + uintptr(len(b))) &^ (page - 1)
	if lo >= hi {
		return nil
	}
	if err := unix.Madvise(f.data[lo:hi], unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("gguf: madvise dontneed: %w", err)
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

// String returns the name of the advice.
func (a Advice) String() string {
	switch a {
	case AdviseNormal:
		return "normal"
	case AdviseWillNeed:
		return "willneed"
	case AdviseSequential:
		return "sequential"
	case AdviseRandom:
		return "random"
	}
	return "advice(" + strconv.Itoa(int(a)) + ")"
}

// Advise passes an access-pattern hint for the tensor data section to the kernel
// (madvise). It does nothing for a File made by Parse, for a closed File, or
// when the file has no tensor data; it fails for an unknown Advice.
func (f *File) Advise(a Advice) error {
	var adv int
	switch a {
	case AdviseNormal:
		adv = unix.MADV_NORMAL
	case AdviseWillNeed:
		adv = unix.MADV_WILLNEED
	case AdviseSequential:
		adv = unix.MADV_SEQUENTIAL
	case AdviseRandom:
		adv = unix.MADV_RANDOM
	default:
		return fmt.Errorf("gguf: madvise: unknown advice %d", int(a))
	}
	if !f.mapped || f.data == nil || f.DataOffset >= uint64(len(f.data)) {
		return nil
	}
	// madvise needs a page-aligned start: advise from the page holding the data.
	start := f.DataOffset &^ uint64(os.Getpagesize()-1)
	if err := unix.Madvise(f.data[start:], adv); err != nil {
		return fmt.Errorf("gguf: madvise %v: %w", a, err)
	}
	return nil
}

// Parse parses a GGUF file held in data. The returned File refers to data.
//
// Parse never panics, and the memory it allocates is bounded by a small multiple
// of len(data): every count and length is checked against the bytes left before
// anything is allocated for it.
func Parse(data []byte) (*File, error) {
	r := &reader{b: data}
	f := &File{data: data, Size: uint64(len(data)), Alignment: DefaultAlignment}
	if len(data) < len(Magic) {
		return nil, fmt.Errorf("gguf: magic at offset 0: needs %d bytes, file has %d (truncated?)", len(Magic), len(data))
	}
	if string(data[:len(Magic)]) != Magic {
		return nil, fmt.Errorf("gguf: bad magic %q at offset 0: not a GGUF file", data[:len(Magic)])
	}
	r.off = len(Magic)
	var err error
	if f.Version, err = r.u32(field("version")); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		hint := ""
		if sw := bits.ReverseBytes32(f.Version); sw == 2 || sw == 3 {
			hint = "; a big-endian file? only little-endian files are supported"
		}
		return nil, fmt.Errorf("gguf: unsupported version %d at offset 4 (supported: 2, 3%s)", f.Version, hint)
	}
	nTensors, err := r.u64(field("tensor count"))
	if err != nil {
		return nil, err
	}
	nKV, err := r.u64(field("metadata count"))
	if err != nil {
		return nil, err
	}
	// Reject counts the rest of the file cannot hold before allocating for them.
	if nKV > uint64(r.left())/minKVSize {
		return nil, fmt.Errorf("gguf: metadata count %d at offset 16 exceeds what the file of %d bytes can hold", nKV, len(data))
	}
	if nTensors > uint64(r.left())/minTensorInfoSize {
		return nil, fmt.Errorf("gguf: tensor count %d at offset 8 exceeds what the file of %d bytes can hold", nTensors, len(data))
	}
	f.KVs = make([]KV, 0, nKV)
	f.kv = make(map[string]int, nKV)
	for i := range int(nKV) {
		at := r.off
		key, err := r.str(loc{kind: "metadata", num: i, field: "key"})
		if err != nil {
			return nil, err
		}
		if key == "" || !utf8.ValidString(key) {
			return nil, fmt.Errorf("gguf: metadata %d key %q at offset %d is empty or not UTF-8", i, key, at)
		}
		if _, dup := f.kv[key]; dup {
			return nil, fmt.Errorf("gguf: metadata key %q at offset %d appears twice", key, at)
		}
		l := loc{kind: "metadata", name: key, named: true}
		l.field = "type"
		vt, err := r.u32(l)
		if err != nil {
			return nil, err
		}
		l.field = ""
		v, err := r.value(ValueType(vt), l)
		if err != nil {
			return nil, err
		}
		if key == "general.alignment" {
			a, ok := asUint(v)
			if !ok {
				return nil, fmt.Errorf("gguf: metadata %q at offset %d: value of type %v, want an unsigned integer", key, at, ValueType(vt))
			}
			if a == 0 || a&(a-1) != 0 || a > maxAlignment {
				return nil, fmt.Errorf("gguf: metadata %q at offset %d: alignment %d is not a power of two between 1 and %d", key, at, a, maxAlignment)
			}
			f.Alignment = a
		}
		f.kv[key] = len(f.KVs)
		f.KVs = append(f.KVs, KV{Key: key, Value: v})
	}
	f.Tensors = make([]Tensor, 0, nTensors)
	f.tensors = make(map[string]int, nTensors)
	for i := range int(nTensors) {
		at := r.off
		t, err := r.tensorInfo(i, f.Alignment)
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensors[t.Name]; dup {
			return nil, fmt.Errorf("gguf: tensor %d name %q at offset %d appears twice", i, t.Name, at)
		}
		f.tensors[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	dataOff := alignUp(uint64(r.off), f.Alignment)
	if dataOff > f.Size && nTensors > 0 {
		return nil, fmt.Errorf("gguf: tensor data section at offset %d (end of the tensor infos %d aligned to %d) is past the end of the file (%d bytes)", dataOff, r.off, f.Alignment, f.Size)
	}
	f.DataOffset = dataOff
	for i := range f.Tensors {
		t := &f.Tensors[i]
		rowBytes, err := t.Type.RowBytes(int(t.Dims[0])) // checked by tensorInfo
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		rows := t.Rows()
		// dataOff <= Size here, so start cannot overflow once Offset <= Size.
		if t.Offset > f.Size-dataOff {
			return nil, fmt.Errorf("gguf: tensor %q: data offset %d starts past the end of the file (data section at %d, file %d bytes)", t.Name, t.Offset, dataOff, f.Size)
		}
		start := dataOff + t.Offset
		avail := f.Size - start
		if rows > avail/uint64(rowBytes) {
			hi, lo := bits.Mul64(rows, uint64(rowBytes))
			size := strconv.FormatUint(lo, 10)
			if hi != 0 {
				size = "more than 2^64"
			}
			return nil, fmt.Errorf("gguf: tensor %q: data at offset %d with size %s (%d rows of %d bytes) runs past the end of the file (%d bytes)", t.Name, start, size, rows, rowBytes, f.Size)
		}
		end := start + rows*uint64(rowBytes)
		t.Data = data[start:end:end]
	}
	return f, nil
}

// Lower bounds of the encoded sizes, used to reject absurd counts before
// anything is allocated for them.
const (
	minKVSize         = 8 + 1 + 4 + 1         // key length, 1-byte key, value type, 1-byte value
	minTensorInfoSize = 8 + 1 + 4 + 8 + 4 + 8 // name length, 1-byte name, dimension count, one dimension, type, offset
)

// loc names the field being read in error messages. It is passed by value and
// formatted only when an error is reported, so reading a large array of strings
// or arrays costs no allocation per element however long the key is.
type loc struct {
	kind   string        // "metadata" or "tensor"; empty for header fields
	name   string        // key or tensor name, when named
	named  bool          // name is set; otherwise num is the entry's index
	num    int           // index of the entry when not named
	idx    [maxDepth]int // indices of array elements, outermost first
	depth  int           // number of indices in idx
	field  string        // the part of the entry: "type", "array length", …
	fieldN int           // a number printed after field when hasN
	hasN   bool
}

// field returns the loc of a header field.
func field(name string) loc { return loc{field: name} }

func (l loc) String() string {
	var sb strings.Builder
	sb.WriteString(l.kind)
	if l.kind != "" {
		if l.named {
			sb.WriteString(" " + strconv.Quote(l.name))
		} else {
			sb.WriteString(" " + strconv.Itoa(l.num))
		}
	}
	for _, i := range l.idx[:l.depth] {
		sb.WriteString("[" + strconv.Itoa(i) + "]")
	}
	if l.field != "" {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(l.field)
		if l.hasN {
			sb.WriteString(" " + strconv.Itoa(l.fieldN))
		}
	}
	return sb.String()
}

// elem returns the loc of element i of the array at l.
func (l loc) elem(i int) loc {
	l.idx[l.depth] = i
	l.depth++
	l.field = ""
	return l
}

// reader decodes little-endian values from b, checking every length.
type reader struct {
	b   []byte
	off int
}

func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) need(n uint64, l loc) error {
	if n > uint64(r.left()) {
		return fmt.Errorf("gguf: %v at offset %d: needs %d bytes, file has %d left (truncated?)", l, r.off, n, r.left())
	}
	return nil
}

func (r *reader) u32(l loc) (uint32, error) {
	if err := r.need(4, l); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v, nil
}

func (r *reader) u64(l loc) (uint64, error) {
	if err := r.need(8, l); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v, nil
}

func (r *reader) str(l loc) (string, error) {
	at := r.off
	n, err := r.u64(l)
	if err != nil {
		return "", err
	}
	if n > uint64(r.left()) {
		return "", fmt.Errorf("gguf: %v at offset %d: string length %d exceeds the %d bytes left in the file", l, at, n, r.left())
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s, nil
}

// maxDepth bounds nested arrays so a hostile file cannot exhaust the stack: a
// metadata value may be an array of arrays of arrays of arrays, no deeper.
const maxDepth = 4

func (r *reader) value(t ValueType, l loc) (any, error) {
	if sz := t.size(); sz > 0 {
		if err := r.need(uint64(sz), l); err != nil {
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
				return nil, fmt.Errorf("gguf: %v at offset %d: bool byte %d is neither 0 nor 1", l, r.off-1, b[0])
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
		return r.str(l)
	case TypeArray:
		return r.array(l)
	}
	// Only top-level values reach here: array element types are checked by array.
	return nil, fmt.Errorf("gguf: %v type at offset %d: unknown value type %d", l, r.off-4, uint32(t))
}

// array reads an array value: element type, length and elements. Every length
// is checked against the bytes left before the slice is made, so no array can
// take more memory than a small multiple of the bytes it is encoded in (16 bytes
// of string header per 8-byte string length; 16 bytes of interface plus 24 of
// slice header per 12-byte nested array header).
func (r *reader) array(l loc) (any, error) {
	if l.depth >= maxDepth {
		return nil, fmt.Errorf("gguf: %v at offset %d: arrays nested deeper than %d", l, r.off, maxDepth)
	}
	l.field = "array element type"
	et32, err := r.u32(l)
	if err != nil {
		return nil, err
	}
	et := ValueType(et32)
	at := r.off
	l.field = "array length"
	n, err := r.u64(l)
	if err != nil {
		return nil, err
	}
	l.field = ""
	minSize := uint64(et.size())
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if minSize == 0 {
		return nil, fmt.Errorf("gguf: %v at offset %d: unknown array element type %d", l, at-4, et32)
	}
	if n > uint64(r.left())/minSize {
		return nil, fmt.Errorf("gguf: %v at offset %d: array length %d exceeds what the %d bytes left in the file can hold", l, at, n, r.left())
	}
	switch et {
	case TypeString:
		out := make([]string, n)
		for i := range out {
			if out[i], err = r.str(l.elem(i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case TypeArray:
		out := make([]any, n)
		for i := range out {
			if out[i], err = r.array(l.elem(i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case TypeBool:
		out := make([]bool, n)
		for i := range out {
			b := r.b[r.off+i]
			if b > 1 {
				return nil, fmt.Errorf("gguf: %v at offset %d: bool byte %d is neither 0 nor 1", l.elem(i), r.off+i, b)
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
		return fill(n, func(i int) uint8 { return b[i] })
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

// tensorInfo reads the i-th tensor info. align is the file's alignment, which
// the data offset must be a multiple of.
func (r *reader) tensorInfo(i int, align uint64) (Tensor, error) {
	var t Tensor
	at := r.off
	name, err := r.str(loc{kind: "tensor", num: i, field: "name"})
	if err != nil {
		return t, err
	}
	if name == "" || !utf8.ValidString(name) {
		return t, fmt.Errorf("gguf: tensor %d name %q at offset %d is empty or not UTF-8", i, name, at)
	}
	t.Name = name
	l := loc{kind: "tensor", name: name, named: true, field: "dimension count"}
	at = r.off
	nd, err := r.u32(l)
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > MaxDims {
		return t, fmt.Errorf("gguf: %v at offset %d: dimension count %d is not between 1 and %d", l, at, nd, MaxDims)
	}
	t.Dims = make([]uint64, nd)
	total := uint64(1)
	l.field, l.hasN = "dimension", true
	for d := range t.Dims {
		at := r.off
		l.fieldN = d
		if t.Dims[d], err = r.u64(l); err != nil {
			return t, err
		}
		if t.Dims[d] == 0 || t.Dims[d] > math.MaxInt32 {
			return t, fmt.Errorf("gguf: tensor %q at offset %d: dimension %d is %d (must be 1 … 2^31-1)", name, at, d, t.Dims[d])
		}
		if total > math.MaxInt64/t.Dims[d] {
			return t, fmt.Errorf("gguf: tensor %q at offset %d: element count of dimensions %v overflows", name, at, t.Dims[:d+1])
		}
		total *= t.Dims[d]
	}
	l.field, l.hasN = "type", false
	at = r.off
	typ, err := r.u32(l)
	if err != nil {
		return t, err
	}
	t.Type = kernels.Type(typ)
	if !t.Type.Known() {
		return t, fmt.Errorf("gguf: tensor %q type at offset %d: unknown tensor type %d", name, at, typ)
	}
	if bs := uint64(t.Type.BlockSize()); t.Dims[0]%bs != 0 {
		return t, fmt.Errorf("gguf: tensor %q at offset %d: row length %d is not a multiple of the %v block size %d", name, at, t.Dims[0], t.Type, bs)
	}
	l.field = "data offset"
	at = r.off
	if t.Offset, err = r.u64(l); err != nil {
		return t, err
	}
	if t.Offset%align != 0 {
		return t, fmt.Errorf("gguf: tensor %q data offset at offset %d: %d is not a multiple of the alignment %d", name, at, t.Offset, align)
	}
	return t, nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

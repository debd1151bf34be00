package gguf

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/kernels"
)

// allTypes lists every tensor type the kernels package knows.
var allTypes = []kernels.Type{
	kernels.F32, kernels.F16, kernels.BF16,
	kernels.Q4_0, kernels.Q4_1, kernels.Q5_0, kernels.Q5_1, kernels.Q8_0, kernels.Q8_1,
	kernels.Q2_K, kernels.Q3_K, kernels.Q4_K, kernels.Q5_K, kernels.Q6_K, kernels.Q8_K,
}

// sampleKVs has one value of every scalar type, every typed array (empty and
// not), and arrays of arrays nested up to the deepest level Parse accepts.
func sampleKVs() []KV {
	return []KV{
		{"general.architecture", "llama"},
		{"general.name", "tiny ✓ model"},
		{"test.empty_string", ""},
		{"test.u8", uint8(200)},
		{"test.i8", int8(-100)},
		{"test.u16", uint16(60000)},
		{"test.i16", int16(-30000)},
		{"test.u32", uint32(4000000000)},
		{"test.i32", int32(-2000000000)},
		{"test.u64", uint64(math.MaxUint64)},
		{"test.i64", int64(math.MinInt64)},
		{"test.f32", float32(-1.5)},
		{"test.f32_inf", float32(math.Inf(1))},
		{"test.f64", math.Pi},
		{"test.true", true},
		{"test.false", false},
		{"test.a_u8", []uint8{0, 1, 255}},
		{"test.a_i8", []int8{-128, 0, 127}},
		{"test.a_u16", []uint16{0, 65535}},
		{"test.a_i16", []int16{-32768, 32767}},
		{"test.a_u32", []uint32{0, math.MaxUint32}},
		{"test.a_i32", []int32{math.MinInt32, 0, math.MaxInt32}},
		{"test.a_u64", []uint64{0, math.MaxUint64}},
		{"test.a_i64", []int64{math.MinInt64, math.MaxInt64}},
		{"test.a_f32", []float32{0, -2.5, float32(math.Inf(-1))}},
		{"test.a_f64", []float64{1e-300, -1e300}},
		{"test.a_bool", []bool{true, false, true}},
		{"test.a_string", []string{"a", "", "ünïcode", "<0x0A>"}},
		{"test.a_empty_u8", []uint8{}},
		{"test.a_empty_f32", []float32{}},
		{"test.a_empty_string", []string{}},
		{"test.a_empty_nested", []any{}},
		{"test.nested", []any{[]int32{1, 2}, []string{"x"}, []any{[]bool{true}, []float64{}}, []uint8{}}},
		{"test.nested_deepest", []any{[]any{[]any{[]uint16{7}}, []any{}}}},
	}
}

// sampleTensor is a tensor to add to a Builder.
type sampleTensor struct {
	name string
	typ  kernels.Type
	dims []uint64
	data []byte
}

// randomBytes returns n deterministic pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// sampleTensors has a tensor of every type, with 1 to 4 dimensions.
func sampleTensors(t testing.TB) []sampleTensor {
	var out []sampleTensor
	for i, typ := range allTypes {
		dims := []uint64{uint64(typ.BlockSize()) * uint64(1+i%3)}
		for d := 1; d <= i%4; d++ {
			dims = append(dims, uint64(1+(i+d)%3))
		}
		rowBytes, err := typ.RowBytes(int(dims[0]))
		if err != nil {
			t.Fatal(err)
		}
		n := rowBytes
		for _, d := range dims[1:] {
			n *= int(d)
		}
		out = append(out, sampleTensor{"blk." + typ.String() + ".weight", typ, dims, randomBytes(uint64(i), n)})
	}
	return out
}

// newSample returns a Builder holding kvs and tensors.
func newSample(t testing.TB, kvs []KV, tensors []sampleTensor) *Builder {
	t.Helper()
	b := NewBuilder()
	for _, kv := range kvs {
		if err := b.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatalf("AddKV(%q): %v", kv.Key, err)
		}
	}
	for _, ts := range tensors {
		if err := b.AddTensor(ts.name, ts.typ, ts.dims, ts.data); err != nil {
			t.Fatalf("AddTensor(%q): %v", ts.name, err)
		}
	}
	return b
}

// encode writes b to memory.
func encode(t testing.TB, b *Builder) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := b.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d bytes", n, buf.Len())
	}
	return buf.Bytes()
}

// checkRoundTrip parses data and checks it holds exactly kvs and tensors, laid
// out with the given alignment.
func checkRoundTrip(t *testing.T, data []byte, kvs []KV, tensors []sampleTensor, align uint64) *File {
	t.Helper()
	f, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if f.Version != 3 {
		t.Errorf("version %d, want 3", f.Version)
	}
	if f.Alignment != align {
		t.Errorf("alignment %d, want %d", f.Alignment, align)
	}
	if len(f.KVs) != len(kvs) {
		t.Fatalf("%d KVs, want %d", len(f.KVs), len(kvs))
	}
	for i, kv := range kvs {
		got := f.KVs[i]
		if got.Key != kv.Key || !reflect.DeepEqual(got.Value, kv.Value) {
			t.Errorf("KV %d = %q: %#v, want %q: %#v", i, got.Key, got.Value, kv.Key, kv.Value)
		}
		if v, ok := f.Get(kv.Key); !ok || !reflect.DeepEqual(v, kv.Value) {
			t.Errorf("Get(%q) = %#v, %v", kv.Key, v, ok)
		}
	}
	if len(f.Tensors) != len(tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(tensors))
	}
	if f.DataOffset%align != 0 {
		t.Errorf("data offset %d not aligned to %d", f.DataOffset, align)
	}
	for i, want := range tensors {
		got := &f.Tensors[i]
		if got.Name != want.name || got.Type != want.typ || !reflect.DeepEqual(got.Dims, want.dims) {
			t.Errorf("tensor %d = %v, want %s %v %v", i, got, want.name, want.typ, want.dims)
		}
		if got.Offset%align != 0 || (f.DataOffset+got.Offset)%align != 0 {
			t.Errorf("tensor %q at data offset %d (file offset %d) not aligned to %d", got.Name, got.Offset, f.DataOffset+got.Offset, align)
		}
		if !bytes.Equal(got.Data, want.data) {
			t.Errorf("tensor %q data differ", got.Name)
		}
		if tt, ok := f.Tensor(want.name); !ok || tt != got {
			t.Errorf("Tensor(%q) = %v, %v", want.name, tt, ok)
		}
	}
	return f
}

func TestRoundTrip(t *testing.T) {
	kvs, tensors := sampleKVs(), sampleTensors(t)
	data := encode(t, newSample(t, kvs, tensors))
	checkRoundTrip(t, data, kvs, tensors, DefaultAlignment)
	if len(data)%DefaultAlignment != 0 {
		t.Errorf("file size %d is not padded to the alignment", len(data))
	}
	// Writing again gives the same bytes.
	if again := encode(t, newSample(t, kvs, tensors)); !bytes.Equal(again, data) {
		t.Error("second encoding differs")
	}
}

func TestRoundTripNaN(t *testing.T) {
	nan32 := math.Float32frombits(0x7fc00123)
	nan64 := math.Float64frombits(0x7ff8000000000456)
	b := NewBuilder()
	for _, kv := range []KV{{"nan32", nan32}, {"nan64", nan64}, {"nans", []float32{nan32}}} {
		if err := b.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Parse(encode(t, b))
	if err != nil {
		t.Fatal(err)
	}
	v32, _ := f.Get("nan32")
	v64, _ := f.Get("nan64")
	vs, _ := f.Get("nans")
	if math.Float32bits(v32.(float32)) != 0x7fc00123 || math.Float64bits(v64.(float64)) != 0x7ff8000000000456 ||
		math.Float32bits(vs.([]float32)[0]) != 0x7fc00123 {
		t.Errorf("NaN payloads not kept: %#x %#x %#x", math.Float32bits(v32.(float32)), math.Float64bits(v64.(float64)), math.Float32bits(vs.([]float32)[0]))
	}
}

func TestRoundTripAccessors(t *testing.T) {
	f := checkRoundTrip(t, encode(t, newSample(t, sampleKVs(), nil)), sampleKVs(), nil, DefaultAlignment)
	if s, err := f.String("general.name"); err != nil || s != "tiny ✓ model" {
		t.Errorf("String = %q, %v", s, err)
	}
	if u, err := f.Uint("test.u16"); err != nil || u != 60000 {
		t.Errorf("Uint = %d, %v", u, err)
	}
	if x, err := f.Float("test.f32"); err != nil || x != -1.5 {
		t.Errorf("Float = %v, %v", x, err)
	}
	if b, err := f.Bool("test.true"); err != nil || !b {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if s, err := f.Strings("test.a_string"); err != nil || len(s) != 4 {
		t.Errorf("Strings = %q, %v", s, err)
	}
	if x, err := f.Float32s("test.a_f64"); err != nil || len(x) != 2 {
		t.Errorf("Float32s = %v, %v", x, err)
	}
	if x, err := f.Int32s("test.a_i16"); err != nil || !reflect.DeepEqual(x, []int32{-32768, 32767}) {
		t.Errorf("Int32s = %v, %v", x, err)
	}
	if _, err := f.Uint("test.i8"); err == nil {
		t.Error("Uint of a negative value succeeded")
	}
	if _, err := f.String("missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("String(missing) error %v, want ErrNotFound", err)
	}
}

func TestRoundTripAlignment(t *testing.T) {
	tensors := sampleTensors(t)
	for _, align := range []uint64{1, 8, 64, 4096} {
		for _, v := range []any{uint32(align), uint64(align)} {
			kvs := append([]KV{{"general.alignment", v}}, sampleKVs()...)
			b := newSample(t, kvs, tensors)
			if b.Alignment() != align {
				t.Errorf("Alignment() = %d, want %d", b.Alignment(), align)
			}
			data := encode(t, b)
			checkRoundTrip(t, data, kvs, tensors, align)
			if uint64(len(data))%align != 0 {
				t.Errorf("alignment %d: file size %d is not padded", align, len(data))
			}
		}
	}
	// The alignment key may come after the tensors were added.
	b := newSample(t, nil, tensors)
	if err := b.AddKV("general.alignment", uint32(64)); err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, encode(t, b), []KV{{"general.alignment", uint32(64)}}, tensors, 64)
}

func TestBuilderEmpty(t *testing.T) {
	var b Builder // the zero Builder works
	data := encode(t, &b)
	if len(data) != headerSize {
		t.Errorf("empty file is %d bytes, want %d", len(data), headerSize)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.KVs) != 0 || len(f.Tensors) != 0 {
		t.Errorf("empty file parsed as %d KVs, %d tensors", len(f.KVs), len(f.Tensors))
	}
}

func TestBuilderAddKVErrors(t *testing.T) {
	tooDeep := []any{[]any{[]any{[]any{[]uint8{}}}}}
	cases := []struct {
		key   string
		value any
		want  string
	}{
		{"k", 1, "unsupported value type int"},
		{"k", uint(1), "unsupported value type uint"},
		{"k", 1.5, ""}, // float64 is fine
		{"k", []int{1}, "unsupported value type []int"},
		{"k", map[string]int{}, "unsupported value type map"},
		{"k", nil, "unsupported value type <nil>"},
		{"k", []byte(nil), ""}, // a nil slice is an empty array
		{"k", []any{uint8(1)}, "[0]: element of an array of arrays is not an array (uint8)"},
		{"k", []any{[]int32{}, nil}, "[1]: unsupported value type <nil>"},
		{"k", []any{[]any{"s"}}, "[0]: [0]: element of an array of arrays is not an array"},
		{"k", tooDeep, "arrays nested deeper than 4"},
		{"", "v", "empty or not UTF-8"},
		{"bad\xff", "v", "empty or not UTF-8"},
		{"general.alignment", uint32(0), "alignment 0 is not a power of two"},
		{"general.alignment", uint32(3), "alignment 3 is not a power of two"},
		{"general.alignment", uint32(1 << 21), "alignment 2097152 is not a power of two between 1 and 1048576"},
		{"general.alignment", "32", "value of type string, want an unsigned integer"},
		{"general.alignment", float32(32), "value of type float32, want an unsigned integer"},
		{"general.alignment", int32(-32), "value of type int32, want an unsigned integer"},
	}
	for _, c := range cases {
		b := NewBuilder()
		err := b.AddKV(c.key, c.value)
		if c.want == "" {
			if err != nil {
				t.Errorf("AddKV(%q, %#v): %v", c.key, c.value, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "gguf: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddKV(%q, %#v) error %v, want one containing %q", c.key, c.value, err, c.want)
		}
		if len(b.kvs) != 0 || b.align != 0 {
			t.Errorf("AddKV(%q, %#v) failed but changed the builder", c.key, c.value)
		}
	}
	b := NewBuilder()
	if err := b.AddKV("k", "a"); err != nil {
		t.Fatal(err)
	}
	if err := b.AddKV("k", "b"); err == nil || !strings.Contains(err.Error(), `"k" added twice`) {
		t.Errorf("duplicate key: %v", err)
	}
}

func TestBuilderAddTensorErrors(t *testing.T) {
	f32 := func(n int) []byte { return make([]byte, 4*n) }
	cases := []struct {
		name string
		typ  kernels.Type
		dims []uint64
		data []byte
		want string
	}{
		{"", kernels.F32, []uint64{1}, f32(1), "empty or not UTF-8"},
		{"a\xfe", kernels.F32, []uint64{1}, f32(1), "empty or not UTF-8"},
		{"t", kernels.Type(4), []uint64{1}, f32(1), "unknown tensor type 4"},
		{"t", kernels.Type(99), []uint64{1}, f32(1), "unknown tensor type 99"},
		{"t", kernels.F32, nil, nil, "0 dimensions, want 1 to 4"},
		{"t", kernels.F32, []uint64{1, 1, 1, 1, 1}, f32(1), "5 dimensions, want 1 to 4"},
		{"t", kernels.F32, []uint64{2, 0}, nil, "dimension 1 is 0"},
		{"t", kernels.F32, []uint64{1 << 31}, nil, "dimension 0 is 2147483648"},
		{"t", kernels.F32, []uint64{math.MaxInt32, math.MaxInt32, math.MaxInt32}, nil, "overflows"},
		{"t", kernels.Q8_0, []uint64{33}, make([]byte, 34), "not a whole number of 32-value blocks"},
		{"t", kernels.Q4_K, []uint64{128}, make([]byte, 72), "not a whole number of 256-value blocks"},
		{"t", kernels.F32, []uint64{4, 2}, f32(7), "28 bytes of data, want 2 rows of 16 bytes"},
		{"t", kernels.F32, []uint64{4, 2}, f32(9), "36 bytes of data, want 2 rows of 16 bytes"},
		{"t", kernels.F32, []uint64{1, math.MaxInt32, math.MaxInt32, 2}, f32(1), "want 9223372028264841218 rows of 4 bytes"},
		{"t", kernels.Q8_0, []uint64{32, 2}, make([]byte, 34), "34 bytes of data, want 2 rows of 34 bytes"},
	}
	for _, c := range cases {
		b := NewBuilder()
		err := b.AddTensor(c.name, c.typ, c.dims, c.data)
		if err == nil || !strings.HasPrefix(err.Error(), "gguf: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddTensor(%q, %v, %v, %d bytes) error %v, want one containing %q", c.name, c.typ, c.dims, len(c.data), err, c.want)
		}
		if len(b.tensors) != 0 {
			t.Errorf("AddTensor(%q) failed but changed the builder", c.name)
		}
	}
	b := NewBuilder()
	if err := b.AddTensor("t", kernels.F32, []uint64{1}, f32(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.AddTensor("t", kernels.F16, []uint64{1}, make([]byte, 2)); err == nil || !strings.Contains(err.Error(), `"t" added twice`) {
		t.Errorf("duplicate tensor: %v", err)
	}
	// The builder keeps its own copy of dims.
	dims := []uint64{2}
	if err := b.AddTensor("u", kernels.F32, dims, f32(2)); err != nil {
		t.Fatal(err)
	}
	dims[0] = 3
	f, err := Parse(encode(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := f.Tensor("u"); u.Dims[0] != 2 {
		t.Errorf("dims changed after AddTensor: %v", u.Dims)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteToError(t *testing.T) {
	b := newSample(t, sampleKVs(), sampleTensors(t))
	size := int64(len(encode(t, b)))
	for _, limit := range []int{0, 100, int(size) - 1} {
		n, err := b.WriteTo(&failWriter{n: limit})
		if err == nil || !strings.Contains(err.Error(), "gguf: write: disk full") {
			t.Errorf("limit %d: error %v", limit, err)
		}
		if n != int64(limit) {
			t.Errorf("limit %d: WriteTo returned %d", limit, n)
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.gguf")
	kvs, tensors := sampleKVs(), sampleTensors(t)
	if err := os.WriteFile(path, []byte("old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // replaces an existing file, then its own output
		if err := WriteFile(path, newSample(t, kvs, tensors)); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		checkRoundTrip(t, f.data, kvs, tensors, DefaultAlignment)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (temporary files left?)", len(entries))
	}

	// A failed write leaves no file and no temporary file.
	if err := WriteFile(filepath.Join(dir, "missing", "x.gguf"), NewBuilder()); err == nil || !strings.HasPrefix(err.Error(), "gguf: ") {
		t.Errorf("WriteFile into a missing directory: %v", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(sub, "x.gguf"), 0o755); err != nil { // rename onto a directory fails
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(sub, "x.gguf"), NewBuilder()); err == nil {
		t.Error("WriteFile over a directory succeeded")
	}
	if entries, _ := os.ReadDir(sub); len(entries) != 1 {
		t.Errorf("failed WriteFile left %d entries, want 1", len(entries))
	}
}

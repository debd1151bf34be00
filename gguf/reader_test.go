package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/kernels"
)

// canvasKVs and canvasTensors make the valid file that the broken files are cut
// from. Names are unique in the file so that byte surgery can find them.
func canvasKVs() []KV {
	return []KV{
		{"general.architecture", "llama"},
		{"test.one_str", "hello"},
		{"test.arr", []int32{1, 2, 3}},
		{"test.one_bool", true},
		{"test.bool_list", []bool{true, false}},
		{"test.str_list", []string{"ab", "cd"}},
		{"test.nested", []any{[]uint8{1}}},
		{"dup.key1", uint32(1)},
		{"dup.key2", uint32(2)},
	}
}

func canvasTensors() []sampleTensor {
	return []sampleTensor{
		{"tensor.a", kernels.F32, []uint64{8, 2}, randomBytes(1, 64)},
		{"tensor.b", kernels.Q8_0, []uint64{32, 1, 1, 1}, randomBytes(2, 34)},
		{"tensor.c", kernels.F32, []uint64{4, 1, 1, 1}, randomBytes(3, 16)},
	}
}

// pos returns the offset of the only occurrence of s in d.
func pos(t testing.TB, d []byte, s string) int {
	t.Helper()
	if n := bytes.Count(d, []byte(s)); n != 1 {
		t.Fatalf("%q occurs %d times in the file, want once", s, n)
	}
	return bytes.Index(d, []byte(s))
}

// kvType returns the offset of the type tag of metadata key, kvValue that of its value.
func kvType(t testing.TB, d []byte, key string) int  { return pos(t, d, key) + len(key) }
func kvValue(t testing.TB, d []byte, key string) int { return kvType(t, d, key) + 4 }

// tensorFields returns the offsets of a tensor's dimension count, first
// dimension, type and data offset fields.
func tensorFields(t testing.TB, d []byte, name string) (nd, dims, typ, off int) {
	nd = pos(t, d, name) + len(name)
	n := int(binary.LittleEndian.Uint32(d[nd:]))
	return nd, nd + 4, nd + 4 + 8*n, nd + 4 + 8*n + 4
}

func put32(d []byte, off int, v uint32) { binary.LittleEndian.PutUint32(d[off:], v) }
func put64(d []byte, off int, v uint64) { binary.LittleEndian.PutUint64(d[off:], v) }

// brokenCase is a valid file damaged by mut, which returns the damaged file and
// the texts its error message must contain.
type brokenCase struct {
	name string
	mut  func(t testing.TB, d []byte) ([]byte, []string)
}

func want(s ...string) []string { return s }

func truncated(n int, msg string) brokenCase {
	return brokenCase{fmt.Sprintf("truncated header at %d", n), func(t testing.TB, d []byte) ([]byte, []string) {
		return d[:n], want(msg)
	}}
}

var brokenCases = []brokenCase{
	{"bad magic", func(t testing.TB, d []byte) ([]byte, []string) {
		d[3] = 'X'
		return d, want(`bad magic "GGUX" at offset 0`)
	}},
	{"version 1", func(t testing.TB, d []byte) ([]byte, []string) {
		put32(d, 4, 1)
		return d, want("unsupported version 1 at offset 4")
	}},
	{"version 4", func(t testing.TB, d []byte) ([]byte, []string) {
		put32(d, 4, 4)
		return d, want("unsupported version 4 at offset 4")
	}},
	{"big-endian version", func(t testing.TB, d []byte) ([]byte, []string) {
		put32(d, 4, 3<<24)
		return d, want("unsupported version 50331648 at offset 4", "big-endian")
	}},
	truncated(0, "magic at offset 0: needs 4 bytes, file has 0"),
	truncated(3, "magic at offset 0: needs 4 bytes, file has 3"),
	truncated(4, "version at offset 4: needs 4 bytes, file has 0 left"),
	truncated(7, "version at offset 4: needs 4 bytes, file has 3 left"),
	truncated(8, "tensor count at offset 8: needs 8 bytes, file has 0 left"),
	truncated(12, "tensor count at offset 8: needs 8 bytes, file has 4 left"),
	truncated(16, "metadata count at offset 16: needs 8 bytes, file has 0 left"),
	truncated(23, "metadata count at offset 16: needs 8 bytes, file has 7 left"),
	{"absurd tensor count", func(t testing.TB, d []byte) ([]byte, []string) {
		put64(d, 8, 1<<62)
		return d, want("tensor count 4611686018427387904 at offset 8 exceeds")
	}},
	{"tensor count one too many for the file", func(t testing.TB, d []byte) ([]byte, []string) {
		put64(d, 8, uint64(len(d)-24)/33+1)
		return d, want(fmt.Sprintf("tensor count %d at offset 8 exceeds", (len(d)-24)/33+1))
	}},
	{"absurd metadata count", func(t testing.TB, d []byte) ([]byte, []string) {
		put64(d, 16, 1<<40)
		return d, want("metadata count 1099511627776 at offset 16 exceeds")
	}},
	{"metadata count larger than the entries", func(t testing.TB, d []byte) ([]byte, []string) {
		put64(d, 16, 10) // the 10th entry is read from the tensor infos, which then are misread
		return d, want("at offset")
	}},
	{"key length past end", func(t testing.TB, d []byte) ([]byte, []string) {
		put64(d, 24, 1<<50)
		return d, want("metadata 0 key at offset 24: string length 1125899906842624 exceeds")
	}},
	{"string value length past end", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.one_str")
		put64(d, off, 1000000)
		return d, want(fmt.Sprintf(`metadata "test.one_str" at offset %d: string length 1000000 exceeds`, off))
	}},
	{"string element length past end", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.str_list") + 12 + 10 // the second string
		put64(d, off, math.MaxUint64)
		return d, want(fmt.Sprintf(`metadata "test.str_list"[1] at offset %d: string length 18446744073709551615 exceeds`, off))
	}},
	{"absurd array length", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.arr") + 4
		put64(d, off, 1<<61)
		return d, want(fmt.Sprintf(`metadata "test.arr" at offset %d: array length 2305843009213693952 exceeds`, off))
	}},
	{"absurd string array length", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.str_list") + 4
		put64(d, off, uint64(len(d)-off)/8) // fits 8-byte elements, not strings
		return d, want(`metadata "test.str_list"`, "at offset")
	}},
	{"absurd nested array length", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.nested") + 12 + 4
		put64(d, off, 1<<40)
		return d, want(fmt.Sprintf(`metadata "test.nested"[0] at offset %d: array length 1099511627776 exceeds`, off))
	}},
	{"absurd array of arrays length", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.nested") + 4
		put64(d, off, uint64(len(d))/12+1)
		return d, want(fmt.Sprintf(`metadata "test.nested" at offset %d: array length %d exceeds`, off, len(d)/12+1))
	}},
	{"unknown value type", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvType(t, d, "test.one_str")
		put32(d, off, 13)
		return d, want(fmt.Sprintf(`metadata "test.one_str" type at offset %d: unknown value type 13`, off))
	}},
	{"unknown array element type", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.arr")
		put32(d, off, 0xffffffff)
		return d, want(fmt.Sprintf(`metadata "test.arr" at offset %d: unknown array element type 4294967295`, off))
	}},
	{"unknown nested array element type", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.nested") + 12
		put32(d, off, 13)
		return d, want(fmt.Sprintf(`metadata "test.nested"[0] at offset %d: unknown array element type 13`, off))
	}},
	{"bool byte 2", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.one_bool")
		d[off] = 2
		return d, want(fmt.Sprintf(`metadata "test.one_bool" at offset %d: bool byte 2 is neither 0 nor 1`, off))
	}},
	{"bool element byte 2", func(t testing.TB, d []byte) ([]byte, []string) {
		off := kvValue(t, d, "test.bool_list") + 12 + 1
		d[off] = 2
		return d, want(fmt.Sprintf(`metadata "test.bool_list"[1] at offset %d: bool byte 2 is neither 0 nor 1`, off))
	}},
	{"duplicate key", func(t testing.TB, d []byte) ([]byte, []string) {
		off := pos(t, d, "dup.key2")
		copy(d[off:], "dup.key1")
		return d, want(fmt.Sprintf(`metadata key "dup.key1" at offset %d appears twice`, off-8))
	}},
	{"key not UTF-8", func(t testing.TB, d []byte) ([]byte, []string) {
		off := pos(t, d, "dup.key2")
		d[off+7] = 0xff
		return d, want(fmt.Sprintf(`metadata 8 key "dup.key\xff" at offset %d is empty or not UTF-8`, off-8))
	}},
	{"duplicate tensor name", func(t testing.TB, d []byte) ([]byte, []string) {
		off := pos(t, d, "tensor.b")
		copy(d[off:], "tensor.a")
		return d, want(fmt.Sprintf(`tensor 1 name "tensor.a" at offset %d appears twice`, off-8))
	}},
	{"tensor name not UTF-8", func(t testing.TB, d []byte) ([]byte, []string) {
		off := pos(t, d, "tensor.b")
		d[off+6] = 0xc3
		return d, want(fmt.Sprintf(`tensor 1 name "tensor\xc3b" at offset %d is empty or not UTF-8`, off-8))
	}},
	{"tensor name length past end", func(t testing.TB, d []byte) ([]byte, []string) {
		off := pos(t, d, "tensor.b") - 8
		put64(d, off, 1<<33)
		return d, want(fmt.Sprintf(`tensor 1 name at offset %d: string length 8589934592 exceeds`, off))
	}},
	{"dimension count 0", func(t testing.TB, d []byte) ([]byte, []string) {
		nd, _, _, _ := tensorFields(t, d, "tensor.a")
		put32(d, nd, 0)
		return d, want(fmt.Sprintf(`tensor "tensor.a" dimension count at offset %d: dimension count 0 is not between 1 and 4`, nd))
	}},
	{"dimension count 5", func(t testing.TB, d []byte) ([]byte, []string) {
		nd, _, _, _ := tensorFields(t, d, "tensor.b")
		put32(d, nd, 5)
		return d, want(fmt.Sprintf(`tensor "tensor.b" dimension count at offset %d: dimension count 5 is not between 1 and 4`, nd))
	}},
	{"dimension 0", func(t testing.TB, d []byte) ([]byte, []string) {
		_, dims, _, _ := tensorFields(t, d, "tensor.a")
		put64(d, dims+8, 0)
		return d, want(fmt.Sprintf(`tensor "tensor.a" at offset %d: dimension 1 is 0`, dims+8))
	}},
	{"dimension too large", func(t testing.TB, d []byte) ([]byte, []string) {
		_, dims, _, _ := tensorFields(t, d, "tensor.a")
		put64(d, dims, 1<<31)
		return d, want(fmt.Sprintf(`tensor "tensor.a" at offset %d: dimension 0 is 2147483648`, dims))
	}},
	{"element count overflow", func(t testing.TB, d []byte) ([]byte, []string) {
		_, dims, _, _ := tensorFields(t, d, "tensor.b")
		for i := 1; i < 4; i++ {
			put64(d, dims+8*i, math.MaxInt32)
		}
		return d, want(fmt.Sprintf(`tensor "tensor.b" at offset %d: element count of dimensions [32 2147483647 2147483647] overflows`, dims+16))
	}},
	{"byte size overflow", func(t testing.TB, d []byte) ([]byte, []string) {
		// 2^62 F32 values fit an int64 but take 2^64 bytes, which wraps to 0.
		_, dims, _, _ := tensorFields(t, d, "tensor.c")
		for i, n := range []uint64{1, 1 << 30, 1 << 30, 4} {
			put64(d, dims+8*i, n)
		}
		return d, want(`tensor "tensor.c": data at offset`, "with size more than 2^64 (4611686018427387904 rows of 4 bytes) runs past the end")
	}},
	{"unknown tensor type", func(t testing.TB, d []byte) ([]byte, []string) {
		_, _, typ, _ := tensorFields(t, d, "tensor.a")
		put32(d, typ, 99)
		return d, want(fmt.Sprintf(`tensor "tensor.a" type at offset %d: unknown tensor type 99`, typ))
	}},
	{"removed tensor type Q4_2", func(t testing.TB, d []byte) ([]byte, []string) {
		_, _, typ, _ := tensorFields(t, d, "tensor.a")
		put32(d, typ, 4)
		return d, want(fmt.Sprintf(`tensor "tensor.a" type at offset %d: unknown tensor type 4`, typ))
	}},
	{"row length not a multiple of the block size", func(t testing.TB, d []byte) ([]byte, []string) {
		_, dims, typ, _ := tensorFields(t, d, "tensor.b")
		put64(d, dims, 48)
		return d, want(fmt.Sprintf(`tensor "tensor.b" at offset %d: row length 48 is not a multiple of the Q8_0 block size 32`, typ))
	}},
	{"data offset not aligned", func(t testing.TB, d []byte) ([]byte, []string) {
		_, _, _, off := tensorFields(t, d, "tensor.b")
		v := binary.LittleEndian.Uint64(d[off:]) + 4
		put64(d, off, v)
		return d, want(fmt.Sprintf(`tensor "tensor.b" data offset at offset %d: %d is not a multiple of the alignment 32`, off, v))
	}},
	{"data offset past end", func(t testing.TB, d []byte) ([]byte, []string) {
		_, _, _, off := tensorFields(t, d, "tensor.c")
		put64(d, off, 1<<40)
		return d, want(`tensor "tensor.c": data offset 1099511627776 starts past the end of the file`)
	}},
	{"tensor data past end of file", func(t testing.TB, d []byte) ([]byte, []string) {
		// tensor.c has 16 bytes of data and 16 of padding; keep 12 of its bytes.
		return d[:len(d)-20], want(`tensor "tensor.c": data at offset`, "with size 16 (1 rows of 16 bytes) runs past the end of the file")
	}},
	{"data section past end of file", func(t testing.TB, d []byte) ([]byte, []string) {
		_, _, _, off := tensorFields(t, d, "tensor.c")
		end := off + 8 // end of the tensor infos
		if end%DefaultAlignment == 0 {
			t.Fatalf("tensor infos end at the aligned offset %d: change the canvas", end)
		}
		return d[:end], want(fmt.Sprintf("tensor data section at offset %d", alignUp(uint64(end), 32)), "past the end of the file")
	}},
}

// alignCase damages the value of a general.alignment key.
func alignCase(name string, value any, mut func(d []byte, off int), msg string) brokenCase {
	return brokenCase{name, func(t testing.TB, _ []byte) ([]byte, []string) {
		b := NewBuilder()
		key := "general.alignment"
		if _, ok := value.(uint32); !ok {
			key = "general.alignmenX" // the Builder refuses a bad alignment: rename it afterwards
		}
		if err := b.AddKV(key, value); err != nil {
			t.Fatal(err)
		}
		if err := b.AddTensor("w", kernels.F32, []uint64{2}, make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
		d := encode(t, b)
		at := pos(t, d, key) - 8
		copy(d[at+8:], "general.alignment")
		if mut != nil {
			mut(d, kvValue(t, d, "general.alignment"))
		}
		return d, want(fmt.Sprintf(`metadata "general.alignment" at offset %d: %s`, at, msg))
	}}
}

func init() {
	brokenCases = append(brokenCases,
		alignCase("alignment 0", uint32(64), func(d []byte, off int) { put32(d, off, 0) }, "alignment 0 is not a power of two"),
		alignCase("alignment 3", uint32(64), func(d []byte, off int) { put32(d, off, 3) }, "alignment 3 is not a power of two"),
		alignCase("alignment 2 MiB", uint32(64), func(d []byte, off int) { put32(d, off, 2<<20) }, "alignment 2097152 is not a power of two between 1 and 1048576"),
		alignCase("alignment string", "32", nil, "value of type string, want an unsigned integer"),
		alignCase("alignment float", float32(32), nil, "value of type float32, want an unsigned integer"),
		alignCase("alignment negative", int32(-32), nil, "value of type int32, want an unsigned integer"),
		alignCase("alignment array", []uint32{32}, nil, "value of type array, want an unsigned integer"),
	)
}

// deepArray returns a file whose only key holds arrays nested depth deep.
func deepArray(t testing.TB, depth int) []byte {
	var v any = []any{}
	for range 3 {
		v = []any{v}
	}
	d := encode(t, newSample(t, []KV{{"deep", v}}, nil))
	if depth <= 4 {
		return d
	}
	// The innermost array is empty: give it one element, a fifth empty array.
	off := kvValue(t, d, "deep") + 3*12
	put64(d, off+4, 1)
	var inner [12]byte
	put32(inner[:], 0, uint32(TypeUint8))
	return append(d[:off+12:off+12], append(inner[:], d[off+12:]...)...)
}

func init() {
	brokenCases = append(brokenCases, brokenCase{"arrays nested too deep", func(t testing.TB, _ []byte) ([]byte, []string) {
		d := deepArray(t, 5)
		off := kvValue(t, d, "deep") + 4*12
		return d, want(fmt.Sprintf(`metadata "deep"[0][0][0][0] at offset %d: arrays nested deeper than 4`, off))
	}})
}

func canvas(t testing.TB) []byte {
	return encode(t, newSample(t, canvasKVs(), canvasTensors()))
}

func TestParseBroken(t *testing.T) {
	if _, err := Parse(canvas(t)); err != nil {
		t.Fatalf("the undamaged canvas does not parse: %v", err)
	}
	if _, err := Parse(deepArray(t, 4)); err != nil {
		t.Fatalf("arrays nested 4 deep: %v", err)
	}
	for _, c := range brokenCases {
		t.Run(c.name, func(t *testing.T) {
			d, wants := c.mut(t, canvas(t))
			f, err := Parse(d)
			if err == nil {
				t.Fatalf("Parse succeeded: %d KVs, %d tensors", len(f.KVs), len(f.Tensors))
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "gguf: ") {
				t.Errorf("error %q lacks the gguf: prefix", msg)
			}
			for _, w := range wants {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\ndoes not contain %q", msg, w)
				}
			}
		})
	}
}

func TestParseVersion2(t *testing.T) {
	d := canvas(t)
	put32(d, 4, 2)
	f, err := Parse(d)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 {
		t.Errorf("version %d", f.Version)
	}
}

// TestParseEveryPrefix cuts the canvas at every length: each cut before the end
// of the last tensor's data fails with an error naming an offset; longer ones
// (which lose only padding) parse.
func TestParseEveryPrefix(t *testing.T) {
	d := canvas(t)
	f, err := Parse(d)
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	end := int(f.DataOffset + last.Offset + uint64(len(last.Data)))
	for n := range len(d) {
		_, err := Parse(d[:n:n])
		if n < end {
			if err == nil {
				t.Errorf("prefix of %d bytes parsed", n)
			} else if !strings.HasPrefix(err.Error(), "gguf: ") || !strings.Contains(err.Error(), "offset") {
				t.Errorf("prefix of %d bytes: error %q names no offset", n, err)
			}
		} else if err != nil {
			t.Errorf("prefix of %d bytes (only padding cut): %v", n, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	d, wants := brokenCases[0].mut(t, canvas(t))
	broken := filepath.Join(dir, "broken.gguf")
	small := filepath.Join(dir, "small.gguf")
	for path, data := range map[string][]byte{broken: d, small: d[:23]} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ path, want string }{
		{broken, wants[0]},
		{broken, "(file " + broken + ")"},
		{small, "file of 23 bytes is too small"},
		{dir, "not a regular file"},
		{filepath.Join(dir, "missing.gguf"), "no such file"},
	}
	for _, c := range cases {
		f, err := Open(c.path)
		if err == nil {
			f.Close()
			t.Errorf("Open(%s) succeeded", c.path)
			continue
		}
		if !strings.HasPrefix(err.Error(), "gguf: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%s) error %q, want one containing %q", c.path, err, c.want)
		}
	}
}

// writeTemp writes data to a file in a test directory and returns its path.
func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenClose(t *testing.T) {
	kvs, tensors := sampleKVs(), sampleTensors(t)
	f, err := Open(writeTemp(t, encode(t, newSample(t, kvs, tensors))))
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, f.data, kvs, tensors, DefaultAlignment)
	for i, ts := range tensors {
		if !bytes.Equal(f.Tensors[i].Data, ts.data) {
			t.Errorf("tensor %q data differ", ts.name)
		}
	}
	// The tensor data run from the end of the header to the end of the file,
	// and each tensor's data lie in them at its offset.
	td := f.TensorData()
	if len(f.Header())+len(td) != int(f.Size) {
		t.Errorf("tensor data of %d bytes after a header of %d in a file of %d", len(td), len(f.Header()), f.Size)
	}
	for _, tt := range f.Tensors {
		if len(tt.Data) > 0 && &td[tt.Offset] != &tt.Data[0] {
			t.Errorf("tensor %q is not at its offset %d in the tensor data", tt.Name, tt.Offset)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f.TensorData() != nil {
		t.Error("tensor data kept after Close")
	}
	for _, tt := range f.Tensors {
		if tt.Data != nil {
			t.Errorf("tensor %q data kept after Close", tt.Name)
		}
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// Metadata stay usable after Close.
	if s, err := f.String("general.architecture"); err != nil || s != "llama" {
		t.Errorf("String after Close = %q, %v", s, err)
	}
}

func TestAdvise(t *testing.T) {
	advice := []Advice{AdviseNormal, AdviseWillNeed, AdviseSequential, AdviseRandom}
	f, err := Open(writeTemp(t, encode(t, newSample(t, sampleKVs(), sampleTensors(t)))))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range advice {
		if err := f.Advise(a); err != nil {
			t.Errorf("Advise(%v): %v", a, err)
		}
	}
	if err := f.Advise(Advice(42)); err == nil || !strings.Contains(err.Error(), "gguf: madvise: unknown advice 42") {
		t.Errorf("Advise(42) error %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, a := range advice {
		if err := f.Advise(a); err != nil {
			t.Errorf("Advise(%v) after Close: %v", a, err)
		}
	}
	// A File made by Parse has nothing to advise.
	pf, err := Parse(canvas(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range advice {
		if err := pf.Advise(a); err != nil {
			t.Errorf("Advise(%v) on a parsed buffer: %v", a, err)
		}
	}
}

// TestAdviseNoData opens a file without tensors (so without padding) that ends
// just before a page boundary: the aligned data section would start on the next
// page, past the end of the mapping.
func TestAdviseNoData(t *testing.T) {
	pageSize := os.Getpagesize()
	b := NewBuilder()
	// header 24 + key length 8 + key 1 + type 4 + string length 8 = 45 bytes before the string
	if err := b.AddKV("k", strings.Repeat("x", pageSize-45-3)); err != nil {
		t.Fatal(err)
	}
	d := encode(t, b)
	if len(d) != pageSize-3 {
		t.Fatalf("file of %d bytes, want %d", len(d), pageSize-3)
	}
	f, err := Open(writeTemp(t, d))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.DataOffset <= f.Size {
		t.Fatalf("data offset %d within the file of %d bytes: the test does not test", f.DataOffset, f.Size)
	}
	for _, a := range []Advice{AdviseNormal, AdviseWillNeed, AdviseSequential, AdviseRandom} {
		if err := f.Advise(a); err != nil {
			t.Errorf("Advise(%v): %v", a, err)
		}
	}
}

func TestAdviceString(t *testing.T) {
	for a, s := range map[Advice]string{AdviseNormal: "normal", AdviseWillNeed: "willneed", AdviseSequential: "sequential", AdviseRandom: "random", 9: "advice(9)"} {
		if a.String() != s {
			t.Errorf("Advice(%d).String() = %q, want %q", int(a), a.String(), s)
		}
	}
}

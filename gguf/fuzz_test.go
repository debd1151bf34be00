package gguf

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// allocFactor and allocSlack bound the bytes Parse may allocate for an input of
// n bytes: allocFactor*n + allocSlack.
const (
	allocFactor = 32
	allocSlack  = 64 << 10
)

// parseAlloc parses data and returns the bytes allocated meanwhile.
func parseAlloc(data []byte) (*File, uint64, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := Parse(data)
	runtime.ReadMemStats(&after)
	return f, after.TotalAlloc - before.TotalAlloc, err
}

// checkParsed checks what Parse returned for data: an error with the package
// prefix, or a File whose every part is consistent and lies within data.
func checkParsed(t *testing.T, data []byte, f *File, err error) {
	t.Helper()
	if err != nil {
		if f != nil {
			t.Fatalf("Parse returned a File and the error %v", err)
		}
		if !strings.HasPrefix(err.Error(), "gguf: ") {
			t.Fatalf("error %q lacks the gguf: prefix", err)
		}
		return
	}
	if f.Version != 2 && f.Version != 3 {
		t.Fatalf("version %d accepted", f.Version)
	}
	if f.Alignment == 0 || f.Alignment&(f.Alignment-1) != 0 || f.DataOffset%f.Alignment != 0 {
		t.Fatalf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
	}
	if f.Size != uint64(len(data)) {
		t.Fatalf("size %d, input %d bytes", f.Size, len(data))
	}
	for i, kv := range f.KVs {
		if v, ok := f.Get(kv.Key); !ok || f.kv[kv.Key] != i {
			t.Fatalf("Get(%q) = %v, %v: the index misses KV %d", kv.Key, v, ok, i)
		}
	}
	if len(f.kv) != len(f.KVs) || len(f.tensors) != len(f.Tensors) {
		t.Fatalf("indexes hold %d keys and %d tensors, lists %d and %d", len(f.kv), len(f.tensors), len(f.KVs), len(f.Tensors))
	}
	for i := range f.Tensors {
		tt := &f.Tensors[i]
		if got, ok := f.Tensor(tt.Name); !ok || got != tt {
			t.Fatalf("Tensor(%q) does not find tensor %d", tt.Name, i)
		}
		if len(tt.Dims) == 0 || len(tt.Dims) > MaxDims || !tt.Type.Known() {
			t.Fatalf("tensor %v accepted", tt)
		}
		rowBytes, err := tt.Type.RowBytes(int(tt.Dims[0]))
		if err != nil {
			t.Fatalf("tensor %v: %v", tt, err)
		}
		want := uint64(rowBytes) * tt.Rows()
		if want/uint64(rowBytes) != tt.Rows() || uint64(len(tt.Data)) != want {
			t.Fatalf("tensor %v has %d bytes of data, its shape needs %d rows of %d bytes", tt, len(tt.Data), tt.Rows(), rowBytes)
		}
		start := f.DataOffset + tt.Offset
		if tt.Offset%f.Alignment != 0 || start < f.DataOffset || start > f.Size || want > f.Size-start {
			t.Fatalf("tensor %v at %d+%d, %d bytes, outside the file of %d bytes", tt, f.DataOffset, tt.Offset, want, f.Size)
		}
		if &tt.Data[0] != &data[start] || cap(tt.Data) != len(tt.Data) {
			t.Fatalf("tensor %v data is not the slice of the input at %d", tt, start)
		}
	}
}

// reencode writes the parsed file back with a Builder. Whatever Parse accepts
// the Builder must accept too.
func reencode(t *testing.T, f *File) []byte {
	t.Helper()
	b := NewBuilder()
	for _, kv := range f.KVs {
		if err := b.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatalf("Builder refuses parsed metadata: %v", err)
		}
	}
	for _, tt := range f.Tensors {
		if err := b.AddTensor(tt.Name, tt.Type, tt.Dims, tt.Data); err != nil {
			t.Fatalf("Builder refuses parsed tensor: %v", err)
		}
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func FuzzParse(f *testing.F) {
	f.Add(encode(f, NewBuilder()))
	f.Add(canvas(f))
	f.Add(deepArray(f, 4))
	f.Add(deepArray(f, 5))
	f.Add(encode(f, newSample(f, sampleKVs()[:8], sampleTensors(f)[:3])))
	f.Add(encode(f, newSample(f, []KV{{"general.alignment", uint32(8)}, {"a", []string{"x", "y"}}}, canvasTensors())))
	for _, c := range brokenCases { // damaged files
		d, _ := c.mut(f, canvas(f))
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, alloc, err := parseAlloc(data)
		if limit := allocFactor*uint64(len(data)) + allocSlack; alloc > limit {
			t.Fatalf("Parse of %d bytes allocated %d bytes (limit %d); error %v", len(data), alloc, limit, err)
		}
		checkParsed(t, data, file, err)
		if err != nil {
			return
		}
		// Writing the file back and parsing it gives the same metadata and
		// tensors, and writing that again gives the same bytes.
		enc := reencode(t, file)
		again, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-encoded file does not parse: %v", err)
		}
		checkParsed(t, enc, again, nil)
		if len(again.KVs) != len(file.KVs) || len(again.Tensors) != len(file.Tensors) {
			t.Fatalf("re-encoded file has %d KVs, %d tensors; want %d, %d", len(again.KVs), len(again.Tensors), len(file.KVs), len(file.Tensors))
		}
		for i, tt := range file.Tensors {
			got := again.Tensors[i]
			if got.Name != tt.Name || got.Type != tt.Type || !reflect.DeepEqual(got.Dims, tt.Dims) || !bytes.Equal(got.Data, tt.Data) {
				t.Fatalf("tensor %d changed in the round trip: %v → %v", i, &tt, &got)
			}
		}
		if enc2 := reencode(t, again); !bytes.Equal(enc, enc2) {
			t.Fatal("second re-encoding differs from the first")
		}
	})
}

// TestParseAllocBound feeds Parse inputs built to make it allocate much: many
// tiny entries, arrays of empty strings or empty arrays, and a long key whose
// array elements must not each copy the key into an error context.
func TestParseAllocBound(t *testing.T) {
	le := binary.LittleEndian
	header := func(nTensors, nKV uint64) []byte {
		d := append([]byte(Magic), 3, 0, 0, 0)
		d = le.AppendUint64(d, nTensors)
		return le.AppendUint64(d, nKV)
	}
	kv := func(d []byte, key string, typ ValueType) []byte {
		d = le.AppendUint64(d, uint64(len(key)))
		d = append(d, key...)
		return le.AppendUint32(d, uint32(typ))
	}
	arrayOf := func(d []byte, et ValueType, n int, elem []byte) []byte {
		d = le.AppendUint32(d, uint32(et))
		d = le.AppendUint64(d, uint64(n))
		for range n {
			d = append(d, elem...)
		}
		return d
	}
	const n = 20000
	inputs := map[string][]byte{}

	d := header(0, n)
	for i := range n {
		d = kv(d, string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)), TypeUint8)
		d = append(d, 1)
	}
	inputs["tiny KVs"] = d

	d = header(n, 0)
	for i := range n {
		name := []byte{byte('a' + i%26), byte('a' + i/26%26), byte('a' + i/676)}
		d = le.AppendUint64(d, 3)
		d = append(d, name...)
		d = le.AppendUint32(d, 1)
		d = le.AppendUint64(d, 1)
		d = le.AppendUint32(d, 0)
		d = le.AppendUint64(d, 0)
	}
	d = append(d, make([]byte, 64)...)
	inputs["tiny tensors"] = d

	inputs["empty strings"] = arrayOf(kv(header(0, 1), "s", TypeArray), TypeString, n, make([]byte, 8))
	var empty [12]byte
	inputs["empty arrays"] = arrayOf(kv(header(0, 1), "a", TypeArray), TypeArray, n, empty[:])
	long := strings.Repeat("k", 16<<10)
	inputs["long key, arrays"] = arrayOf(kv(header(0, 1), long, TypeArray), TypeArray, n, empty[:])
	inputs["long key, strings"] = arrayOf(kv(header(0, 1), long, TypeArray), TypeString, n, make([]byte, 8))
	// The same with the last element broken, so that an error is reported.
	for name, d := range map[string][]byte{"long key, arrays": inputs["long key, arrays"], "long key, strings": inputs["long key, strings"]} {
		broken := bytes.Clone(d)
		broken[len(broken)-1] = 0xff
		inputs[name+", broken"] = broken
	}

	for name, d := range inputs {
		f, alloc, err := parseAlloc(d)
		if strings.HasSuffix(name, "broken") != (err != nil) {
			t.Errorf("%s: error %v", name, err)
		}
		checkParsed(t, d, f, err)
		ratio := float64(alloc) / float64(len(d))
		t.Logf("%s: %d bytes in, %d allocated (%.1f×)", name, len(d), alloc, ratio)
		if limit := allocFactor*uint64(len(d)) + allocSlack; alloc > limit {
			t.Errorf("%s: Parse of %d bytes allocated %d bytes (limit %d)", name, len(d), alloc, limit)
		}
	}
}

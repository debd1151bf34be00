package gguf

import (
	"strings"
	"testing"

	"github.com/edgellm/edgellm/kernels"
)

func TestFormatValue(t *testing.T) {
	long := strings.Repeat("a", 59) + "é" + strings.Repeat("x", 10) // "é" is bytes 59 and 60
	for _, c := range []struct {
		v    any
		want string
	}{
		{"llama", `"llama"`},
		{"a\nb", `"a\nb"`},
		{long, `"` + strings.Repeat("a", 59) + `"… (71 bytes)`},
		{uint32(5), "5"},
		{int64(-3), "-3"},
		{float32(1e-5), "1e-05"},
		{float64(0.1), "0.1"},
		{true, "true"},
		{[]string{"a", "b"}, `["a", "b"]`},
		{[]int32{1, 2, 3, 4, 5, 6, 7, 8}, "[1, 2, 3, 4, 5, 6, 7, 8]"},
		{[]int32{1, 2, 3, 4, 5, 6, 7, 8, 9}, "[9 × int32]"},
		{make([]string, 32000), "[32000 strings]"},
		{[]any{[]string{"a"}, []uint8{1, 2}}, `[["a"], [1, 2]]`},
		{make([]any, 9), "[9 arrays]"},
		{[]float32{}, "[]"},
	} {
		if got := FormatValue(c.v); got != c.want {
			t.Errorf("FormatValue(%#v) = %s, want %s", c.v, got, c.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	b := NewBuilder()
	b.AddKV("general.architecture", "x")
	b.AddKV("x.block_count", uint32(2))
	b.AddTensor("a", kernels.F32, []uint64{4, 2}, make([]byte, 32))
	b.AddTensor("bb", kernels.Q8_0, []uint64{32}, make([]byte, 34))
	var buf strings.Builder
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse([]byte(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := `metadata:        2 keys
  general.architecture "x"
  x.block_count        2
tensors:         2, 66 B: F32×1 Q8_0×1
`
	var out strings.Builder
	if err := f.Describe(&out, false); err != nil || out.String() != want {
		t.Fatalf("Describe(false) = %q, %v; want %q", out.String(), err, want)
	}
	out.Reset()
	want += "  a  F32   [4 2]            32 B\n  bb Q8_0  [32]             34 B\n"
	if err := f.Describe(&out, true); err != nil || out.String() != want {
		t.Fatalf("Describe(true) =\n%s\nwant\n%s", out.String(), want)
	}
}

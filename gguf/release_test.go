package gguf

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/edgellm/edgellm/kernels"
)

// TestRelease maps a file with a 4 MiB tensor, reads it all, releases it,
// and checks that the mapping's resident memory fell by the tensor's pages
// (from /proc/self/smaps) while the tensor still reads the same.
func TestRelease(t *testing.T) {
	const n = 1 << 20
	data := make([]byte, 4*n)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	b := NewBuilder()
	if err := b.AddKV("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	if err := b.AddTensor("big", kernels.F32, []uint64{n}, data); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.gguf")
	if err := WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tn, _ := f.Tensor("big")
	sum := func() (s uint64) {
		for _, c := range tn.Data {
			s += uint64(c)
		}
		return s
	}
	want := sum()
	before := mappingRss(t, tn.Data)
	if err := f.Release(tn.Data); err != nil {
		t.Fatal(err)
	}
	after := mappingRss(t, tn.Data)
	if page := os.Getpagesize(); before-after < len(data)-2*page {
		t.Errorf("resident %d KiB before Release, %d KiB after: want about %d KiB less", before>>10, after>>10, len(data)>>10)
	}
	if got := sum(); got != want {
		t.Errorf("the tensor reads %d after Release, %d before", got, want)
	}
	if err := f.Release(data); err == nil {
		t.Error("Release of bytes outside the mapping succeeded")
	}
}

// mappingRss returns the resident bytes of the mapping that holds b, from
// /proc/self/smaps.
func mappingRss(t *testing.T, b []byte) int {
	t.Helper()
	fh, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	p := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	in := false
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && len(fields) >= 5 {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && l <= p && p < h
			continue
		}
		if in && fields[0] == "Rss:" {
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal(fmt.Errorf("no mapping holds %#x in /proc/self/smaps (%v)", p, sc.Err()))
	return 0
}

package kernels

import (
	"testing"
	"unsafe"
)

func TestParseCacheSize(t *testing.T) {
	for in, want := range map[string]int64{
		"48K\n": 48 << 10, "2048K": 2 << 20, "260M\n": 260 << 20, "1G": 1 << 30, "512": 512,
		"": 0, "K": 0, "12X": 0, "-4K": 0,
	} {
		if got := parseCacheSize(in); got != want {
			t.Errorf("parseCacheSize(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestSumWordsReadsEverything(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 1000, 4099, 1<<16 + 13} {
		b := make([]uint64, n)
		var want uint64
		for i := range b {
			b[i] = uint64(i)*0x9e3779b97f4a7c15 + 3
			want += b[i]
		}
		if got := sumWords(b); got != want {
			t.Errorf("%d words: sum %d, want %d", n, got, want)
		}
		if got := sumWordsGeneric(b); got != want {
			t.Errorf("%d words: portable sum %d, want %d", n, got, want)
		}
	}
}

func TestBandwidthProbe(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	buf := NewBandwidthBuffer(p, 16<<20)
	if len(buf) != 16<<20 || buf[0] == 0 || buf[len(buf)-1] == 0 {
		t.Fatalf("buffer of %d bytes, first %d, last %d: want 16 MiB, all written", len(buf), buf[0], buf[len(buf)-1])
	}
	probe := NewBandwidthProbe(p, buf)
	if bw := probe.Result(); bw.Passes != 0 || bw.Median != 0 || bw.Bytes != 16<<20 {
		t.Fatalf("before any pass: %+v", bw)
	}
	probe.Read(0)
	if bw := probe.Result(); bw.Passes != 1 || bw.Min != bw.Max || bw.Median != bw.Min {
		t.Fatalf("one pass: %+v", bw)
	}
	for range 4 {
		probe.Read(0)
	}
	bw := probe.Result()
	if bw.Bytes != 16<<20 || bw.Threads != 2 || bw.Passes != 5 {
		t.Fatalf("measured %+v, want 16 MiB, 2 threads, 5 passes", bw)
	}
	if !(bw.Min <= bw.Median && bw.Median <= bw.Max) {
		t.Fatalf("min %g, median %g, max %g are out of order", bw.Min, bw.Median, bw.Max)
	}
	// Any machine this runs on reads more than 100 MB/s and less than 10 TB/s.
	if !(bw.Min > 1e8 && bw.Max < 1e13) {
		t.Fatalf("bandwidth %.3g…%.3g B/s is implausible", bw.Min, bw.Max)
	}
	// Every word was read: the sum of each pass is the sum of the words.
	job := &readJob{buf: make([]uint64, 3*readGrain+5)}
	p.Run(len(job.buf), readGrain, &fillJob{buf: job.buf})
	p.Run(len(job.buf), readGrain, job)
	if job.sum.Load() != sumWords(job.buf) || job.sum.Load() == 0 {
		t.Fatalf("threads summed %d, want %d", job.sum.Load(), sumWords(job.buf))
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{4}, 4}, {[]float64{1, 3}, 2}, {[]float64{1, 2, 10}, 2}, {[]float64{1, 2, 3, 10}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.in, got, c.want)
		}
	}
}

// The words read start at the first 8-byte boundary and stop before a tail
// shorter than a word.
func TestAlignedWords(t *testing.T) {
	buf := make([]uint64, 4)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), 32)
	for _, c := range []struct{ lo, hi, words int }{{0, 32, 4}, {1, 32, 3}, {7, 32, 3}, {8, 32, 3}, {0, 31, 3}, {3, 13, 0}, {3, 16, 1}, {5, 5, 0}} {
		w := alignedWords(b[c.lo:c.hi])
		if len(w) != c.words {
			t.Errorf("bytes %d…%d: %d words, want %d", c.lo, c.hi, len(w), c.words)
			continue
		}
		if len(w) > 0 && &w[0] != &buf[(c.lo+7)/8] {
			t.Errorf("bytes %d…%d: first word is not word %d", c.lo, c.hi, (c.lo+7)/8)
		}
	}
}

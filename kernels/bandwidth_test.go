package kernels

import (
	"math"
	"testing"
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

func TestBandwidthBufferSize(t *testing.T) {
	n := BandwidthBufferSize()
	if n < minBandwidthBytes || n > maxBandwidthBytes {
		t.Fatalf("buffer of %d bytes, want 64 MiB … 1 GiB", n)
	}
	if c := LargestCacheBytes(); c > 0 && n < min(cacheMultiple*c, maxBandwidthBytes) {
		t.Fatalf("buffer of %d bytes for a cache of %d", n, c)
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

func TestMeasureReadBandwidth(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	bw := MeasureReadBandwidth(p, 16<<20, 2)
	if bw.Bytes != 16<<20 || bw.Threads != 2 || bw.Passes != 2 {
		t.Fatalf("measured %+v, want 16 MiB, 2 threads, 2 passes", bw)
	}
	// Any machine this runs on reads more than 100 MB/s and less than 10 TB/s.
	if !(bw.BytesPerSec > 1e8 && bw.BytesPerSec < 1e13) || math.IsInf(bw.BytesPerSec, 0) {
		t.Fatalf("bandwidth %.3g B/s is implausible", bw.BytesPerSec)
	}
	// Every word was read: the sum of each pass is the sum of the words.
	job := &readJob{buf: make([]uint64, 3*readGrain+5)}
	p.Run(len(job.buf), readGrain, &fillJob{buf: job.buf})
	p.Run(len(job.buf), readGrain, job)
	if job.sum.Load() != sumWords(job.buf) || job.sum.Load() == 0 {
		t.Fatalf("threads summed %d, want %d", job.sum.Load(), sumWords(job.buf))
	}
}

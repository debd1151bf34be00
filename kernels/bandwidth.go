package kernels

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Memory read bandwidth
//
// Decoding a token reads every weight once, so the speed of a memory-bound
// decoder is at most the memory read bandwidth divided by the bytes of
// weights. MeasureReadBandwidth measures that bandwidth the way the decoder
// reads: the pool's threads each stream through their own contiguous part of a
// buffer far larger than the caches.

// Bandwidth is the result of MeasureReadBandwidth.
type Bandwidth struct {
	BytesPerSec float64 // best pass: bytes read per second
	Bytes       int64   // size of the buffer read in each pass
	Threads     int     // threads that read
	Passes      int     // timed passes
}

// Bandwidth buffer sizes: a multiple of the largest cache, within bounds.
const (
	minBandwidthBytes = 64 << 20
	maxBandwidthBytes = 1 << 30
	cacheMultiple     = 4
)

// BandwidthBufferSize returns the buffer size MeasureReadBandwidth should use
// on this machine: four times the largest CPU cache the system reports (so that
// what a pass reads cannot still be cached from the previous pass), at least
// 64 MiB and at most 1 GiB.
func BandwidthBufferSize() int64 {
	return min(max(cacheMultiple*LargestCacheBytes(), minBandwidthBytes), maxBandwidthBytes)
}

// LargestCacheBytes returns the size of the largest CPU cache of CPU 0 as
// Linux reports it in sysfs, or 0 when it is unknown.
func LargestCacheBytes() int64 {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	var largest int64
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "size"))
		if err != nil {
			continue
		}
		largest = max(largest, parseCacheSize(string(b)))
	}
	return largest
}

// parseCacheSize parses a sysfs cache size such as "48K", "2048K" or "260M"
// (0 when malformed).
func parseCacheSize(s string) int64 {
	s = strings.TrimSpace(s)
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult = 1 << 10
	case strings.HasSuffix(s, "M"):
		mult = 1 << 20
	case strings.HasSuffix(s, "G"):
		mult = 1 << 30
	}
	n, err := strconv.ParseInt(strings.TrimRight(s, "KMG"), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}

// MeasureReadBandwidth allocates a buffer of about size bytes, writes it once
// (so that every page is backed by memory of its own), then reads it passes
// times with all of p's threads, each thread summing a contiguous part, and
// reports the fastest pass.
func MeasureReadBandwidth(p *Pool, size int64, passes int) Bandwidth {
	words := max(int(size/8), 4096*p.Threads())
	buf := make([]uint64, words)
	p.Run(len(buf), readGrain, &fillJob{buf: buf})
	job := &readJob{buf: buf}
	best := time.Duration(1<<63 - 1)
	passes = max(passes, 1)
	for range passes {
		start := time.Now()
		p.Run(len(buf), readGrain, job)
		best = min(best, time.Since(start))
	}
	n := int64(8 * len(buf))
	return Bandwidth{
		BytesPerSec: float64(n) / best.Seconds(),
		Bytes:       n,
		Threads:     p.Threads(),
		Passes:      passes,
	}
}

// readGrain is the granularity, in words, of the parts the threads read:
// 32 KiB, a whole number of cache lines and pages.
const readGrain = 4096

// fillJob writes distinct non-zero words into buf.
type fillJob struct{ buf []uint64 }

func (j *fillJob) Do(lo, hi int) {
	for i := lo; i < hi; i++ {
		j.buf[i] = uint64(i)*0x9e3779b97f4a7c15 | 1
	}
}

// readJob sums the words of buf; the sum is kept so that the reads cannot be
// optimised away.
type readJob struct {
	buf []uint64
	sum atomic.Uint64
}

func (j *readJob) Do(lo, hi int) { j.sum.Add(sumWords(j.buf[lo:hi])) }

// sumWordsGeneric returns the sum of the words of b. It reads b as four
// streams (its quarters) at once, eight words of each per iteration into
// independent accumulators, so that one core keeps enough loads in flight to
// come close to what the memory can deliver to it. The assembly version
// (sumWords on amd64) also prefetches each stream ahead into L2, as the
// decode kernels do; without that, this loop measured 25–26 GB/s on the
// 2-core machine where the kernels streamed weights at up to 27 GB/s and a
// prefetching loop reads 35 GB/s.
func sumWordsGeneric(b []uint64) uint64 {
	q := len(b) / 4 &^ 7
	return sumQuarters(b, q) + sumTail(b[4*q:])
}

// sumQuarters returns the sum of the first q words (a multiple of 8) of each
// quarter-stream of b, i.e. of b[:4q] read as b[:q], b[q:2q], b[2q:3q] and
// b[3q:4q] side by side.
func sumQuarters(b []uint64, q int) uint64 {
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	a, c, d, e := b[:q], b[q:2*q], b[2*q:3*q], b[3*q:4*q]
	for i := 0; i+8 <= q; i += 8 {
		w, x, y, z := (*[8]uint64)(a[i:]), (*[8]uint64)(c[i:]), (*[8]uint64)(d[i:]), (*[8]uint64)(e[i:])
		s0 += w[0] + x[0] + y[0] + z[0]
		s1 += w[1] + x[1] + y[1] + z[1]
		s2 += w[2] + x[2] + y[2] + z[2]
		s3 += w[3] + x[3] + y[3] + z[3]
		s4 += w[4] + x[4] + y[4] + z[4]
		s5 += w[5] + x[5] + y[5] + z[5]
		s6 += w[6] + x[6] + y[6] + z[6]
		s7 += w[7] + x[7] + y[7] + z[7]
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

// sumTail returns the sum of the words of b.
func sumTail(b []uint64) uint64 {
	var s uint64
	for _, v := range b {
		s += v
	}
	return s
}

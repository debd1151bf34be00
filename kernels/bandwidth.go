package kernels

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Memory read bandwidth
//
// Decoding a token reads every weight once, so the speed of a memory-bound
// decoder is at most the memory read bandwidth divided by the bytes of
// weights. A BandwidthProbe measures that bandwidth the way the decoder reads:
// the pool's threads each stream through their own contiguous part of the
// bytes, and the bytes are far more than the caches hold, so that what one
// pass reads has left the caches before the next pass reads it again. The
// bandwidth a machine shares with others (a virtual machine's host) varies
// from one second to the next, so the passes can be spread over the period
// that the decoder was measured in, between its runs, and their median taken.

// Bandwidth is the result of a BandwidthProbe: the read rates, in bytes per
// second, of passes over the same bytes. The median is the figure to use; the
// spread between the slowest and fastest pass shows how steady the machine
// was while it measured.
type Bandwidth struct {
	Min     float64 // bytes per second of the slowest pass
	Median  float64 // bytes per second of the median pass
	Max     float64 // bytes per second of the fastest pass
	Bytes   int64   // bytes read in each pass
	Threads int     // threads that read
	Passes  int     // timed passes
}

// BandwidthProbe reads the same bytes in timed passes and collects the rates.
type BandwidthProbe struct {
	pool  *Pool
	job   readJob
	rates []float64
}

// NewBandwidthProbe returns a probe that reads data with all of p's threads,
// each thread summing a contiguous part, and makes one untimed pass over data
// to bring in any page not yet resident. data is read as whole 8-byte words
// from its first 8-byte boundary on; the bytes before it and a tail shorter
// than a word are not read or counted.
func NewBandwidthProbe(p *Pool, data []byte) *BandwidthProbe {
	b := &BandwidthProbe{pool: p, job: readJob{buf: alignedWords(data)}}
	p.Run(len(b.job.buf), readGrain, &b.job)
	return b
}

// Read makes timed passes until d has passed since it began, at least one.
func (b *BandwidthProbe) Read(d time.Duration) {
	n := float64(8 * len(b.job.buf))
	for begin := time.Now(); ; {
		start := time.Now()
		b.pool.Run(len(b.job.buf), readGrain, &b.job)
		b.rates = append(b.rates, n/time.Since(start).Seconds())
		if time.Since(begin) >= d {
			return
		}
	}
}

// Result summarises the passes made so far (all rates 0 before the first).
func (b *BandwidthProbe) Result() Bandwidth {
	r := Bandwidth{Bytes: int64(8 * len(b.job.buf)), Threads: b.pool.Threads(), Passes: len(b.rates)}
	if len(b.rates) == 0 {
		return r
	}
	sorted := slices.Sorted(slices.Values(b.rates))
	r.Min, r.Median, r.Max = sorted[0], median(sorted), sorted[len(sorted)-1]
	return r
}

// median returns the median of sorted, which is not empty.
func median(sorted []float64) float64 {
	h := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[h]
	}
	return (sorted[h-1] + sorted[h]) / 2
}

// alignedWords returns the 8-byte words of b from its first 8-byte boundary
// on (nil when there is none).
func alignedWords(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	skip := int(-uintptr(unsafe.Pointer(&b[0])) & 7)
	if len(b)-skip < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[skip])), (len(b)-skip)/8)
}

// NewBandwidthBuffer allocates a buffer of size bytes (rounded down to whole
// 8-byte words) for a BandwidthProbe and writes every word of it with p's
// threads, so that each page is backed by memory of its own: pages never
// written would all read the same shared page of zeros, from the cache.
func NewBandwidthBuffer(p *Pool, size int64) []byte {
	words := make([]uint64, max(size/8, 1))
	p.Run(len(words), readGrain, &fillJob{buf: words})
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8*len(words))
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

package kernels

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// coverJob records which indices were done, and by how many calls.
type coverJob struct {
	hits  []atomic.Int32
	calls atomic.Int32
	grain int
	bad   atomic.Int32 // chunks whose start is not a multiple of grain
}

func (j *coverJob) Do(lo, hi int) {
	j.calls.Add(1)
	if lo%j.grain != 0 {
		j.bad.Add(1)
	}
	for i := lo; i < hi; i++ {
		j.hits[i].Add(1)
	}
}

// TestPoolRunCoversOnce runs many jobs of many sizes back to back, with
// spinning and with workers that park at once, and checks that every index is
// done exactly once, in chunks that start on the grain and number at most
// the large and small chunks of the pool's threads.
func TestPoolRunCoversOnce(t *testing.T) {
	for _, spin := range []time.Duration{poolSpin, 0} {
		for _, threads := range []int{1, 2, 3, 5} {
			p := newPool(threads, spin)
			for n := 0; n < 300; n += 7 {
				for _, grain := range []int{1, 4, 16} {
					j := &coverJob{hits: make([]atomic.Int32, n), grain: grain}
					p.Run(n, grain, j)
					for i := range j.hits {
						if h := j.hits[i].Load(); h != 1 {
							t.Fatalf("spin %d, %d threads, n=%d grain=%d: index %d done %d times", spin, threads, n, grain, i, h)
						}
					}
					if c := int(j.calls.Load()); c > threads*(1+smallPerThread) || (n > 0 && c == 0) {
						t.Fatalf("spin %d, %d threads, n=%d: %d chunks", spin, threads, n, c)
					}
					if j.bad.Load() != 0 {
						t.Fatalf("spin %d, %d threads, n=%d grain=%d: a chunk starts off the grain", spin, threads, n, grain)
					}
				}
			}
			p.Close()
		}
	}
}

// TestPoolCloseStopsWorkers checks that Close ends the worker goroutines,
// parked or spinning, before it returns (so it would hang otherwise), and
// that no goroutine of the pools outlives it for long.
func TestPoolCloseStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, spin := range []time.Duration{poolSpin, 0} {
		p := newPool(4, spin)
		p.Run(100, 1, &coverJob{hits: make([]atomic.Int32, 100), grain: 1})
		p.Close()
	}
	// The workers have returned from work; the runtime may still be
	// tearing their goroutines down.
	for i := 0; runtime.NumGoroutine() > before; i++ {
		if i == 1_000_000 {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		runtime.Gosched()
	}
}

// BenchmarkPoolRun is the cost of running a job that does nothing over two
// threads: what each matrix-vector product of a decode pays on top of its
// work.
func BenchmarkPoolRun(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	j := &coverJob{hits: make([]atomic.Int32, 2), grain: 1}
	for b.Loop() {
		p.Run(2, 1, j)
	}
}

// TestSplitLargeChunksFirst checks the cut of a job: one large chunk per
// thread, of equal size and together about largeShare of the units, then the
// small chunks of the rest, in order, without gaps, ending at n.
func TestSplitLargeChunksFirst(t *testing.T) {
	for _, tc := range []struct{ n, grain, threads int }{
		{5632, 16, 2}, {2048, 16, 2}, {256, 16, 2}, {32, 1, 2}, {32000, 16, 3}, {2, 1, 2}, {100, 7, 5},
	} {
		s := newSplit(tc.n, tc.grain, tc.threads)
		units := (tc.n + tc.grain - 1) / tc.grain
		if s.bound(0) != 0 || s.bound(s.parts) != tc.n {
			t.Fatalf("%+v: chunks span [%d, %d)", tc, s.bound(0), s.bound(s.parts))
		}
		for k := 0; k < s.parts; k++ {
			if s.bound(k) > s.bound(k+1) {
				t.Fatalf("%+v: chunk %d ends before it starts", tc, k)
			}
		}
		for k := 1; k < tc.threads; k++ {
			if s.bound(k+1)-s.bound(k) != s.bound(1) {
				t.Fatalf("%+v: large chunk %d has %d indices, chunk 0 %d", tc, k, s.bound(k+1)-s.bound(k), s.bound(1))
			}
		}
		large := tc.threads * s.large
		if want := units * largeShare / 100; large > want || large < want-tc.threads {
			t.Fatalf("%+v: large chunks hold %d of %d units, want about %d", tc, large, units, want)
		}
		if small := s.parts - tc.threads; small > tc.threads*smallPerThread || (units > large && small == 0) {
			t.Fatalf("%+v: %d small chunks for %d units", tc, small, units-large)
		}
	}
}

// jitterJob is a coverJob that first does a pseudo-random amount of busy
// work per chunk, so that the threads of a job finish at scattered moments,
// some of them just as Run parks.
type jitterJob struct {
	coverJob
	sink atomic.Uint64
}

func (j *jitterJob) Do(lo, hi int) {
	x := uint64(j.calls.Load()+1) * 0x9E3779B97F4A7C15
	x ^= x >> 33
	s := uint64(0)
	for i := range x % 400 {
		s += i * x
	}
	j.sink.Add(s)
	j.coverJob.Do(lo, hi)
}

// TestPoolParkWakeRace runs many short jobs of scattered lengths back to back
// on pools whose threads park at once or after a very short spin, so that
// workers finish just as Run parks and Run hands out work just as workers
// park. A lost wake-up hangs the test (the test binary's timeout fails it);
// a chunk run twice or not at all shows in the counts. Under qemu-user on
// x86 hosts, where an arm64 atomic store followed by a load is not ordered
// (see Pool), this hung in one of two or three runs before the parking flags
// were set with Swap.
func TestPoolParkWakeRace(t *testing.T) {
	const jobs = 100_000
	for _, spin := range []time.Duration{0, time.Microsecond, 5 * time.Microsecond} {
		for _, threads := range []int{2, 3} {
			p := newPool(threads, spin)
			j := &jitterJob{coverJob: coverJob{hits: make([]atomic.Int32, threads), grain: 1}}
			for range jobs {
				p.Run(threads, 1, j)
			}
			p.Close()
			for i := range j.hits {
				if h := j.hits[i].Load(); h != jobs {
					t.Fatalf("spin %v, %d threads: index %d done %d times in %d jobs", spin, threads, i, h, jobs)
				}
			}
		}
	}
}

package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Job is work that can be split over a range of indices: Do handles [lo, hi).
// Implementations are usually pointers to preallocated structs, so running a
// job allocates nothing.
type Job interface {
	Do(lo, hi int)
}

// Pool is a fixed set of worker goroutines that split jobs into contiguous
// chunks; the goroutine calling Run works on chunks itself. A Pool runs one
// job at a time; it is not safe for concurrent Runs.
//
// A job is cut into one large chunk per thread, together about
// largeShare of it, and smallPerThread small chunks per thread for the rest;
// the threads take chunks in order from a shared counter, so each normally
// starts on a large one and those that finish first take the small ones. One
// thread's half of a product can take several per cent longer than the
// other's, depending on the matrix (memory placement), so evenly cut chunks
// make the faster thread wait; small chunks throughout cost more, since each
// chunk restarts the kernels' memory streams.
//
// A decoded token is a few hundred short jobs with a little serial work
// between them, so a worker that has finished a chunk spins for a while
// (poolSpin) watching for the next one before it parks on its channel, and
// Run spins the same way for the workers to finish. Waking a parked
// goroutine can take tens of microseconds, longer than many of a token's
// products: a helper woken for each would start it that late, and the caller
// would wait for it. Spinning is off when the
// pool has more threads than GOMAXPROCS, where a spinning worker would take
// the CPU another one needs.
//
// Parking is a handshake over two atomics: the side about to park sets its
// flag and then reads the other side's progress; the other side updates its
// progress and then reads the flag. Either the parker sees the progress or
// the other side sees the flag and sends a wake-up. This needs the flag's
// write ordered before the progress read. Go's atomics promise that, but
// qemu-user runs an arm64 Store (STLR) and a following Load (LDAR) as plain
// x86 moves, which the store buffer may reorder: the inference tests hung
// under qemu in CI, with Run parked on p.done and its worker on its wake
// channel. The flags are therefore set with Swap, a read-modify-write that
// qemu runs as a host atomic (a locked, fencing instruction on x86, as Go on
// amd64 runs every atomic store); only the parking path pays for it.
type Pool struct {
	threads int
	spin    time.Duration // how long to spin before parking (0: park at once)
	workers []*poolWorker

	jobs    uint64        // jobs run so far: the id of the current one
	cur     split         // how the current job is cut into chunks
	next    atomic.Int32  // the next chunk of the current job to take
	pending atomic.Int32  // workers still taking chunks of the current job
	waiting atomic.Uint64 // the id of the job Run is parked on, or 0
	done    chan struct{} // capacity 1: the last worker's wake-up of a parked Run
	exited  sync.WaitGroup
}

// poolWorker is one helper goroutine's mailbox.
type poolWorker struct {
	seq    atomic.Uint64 // bumped by Run after writing c
	parked atomic.Bool   // the worker is (about to be) blocked on wake
	wake   chan struct{} // capacity 1
	c      chunk         // the chunk of seq; job nil means stop
}

type chunk struct {
	job Job    // nil means stop
	id  uint64 // the job's id (Pool.jobs)
}

const (
	// largeShare is the share of a job's units, in percent, that goes to
	// the large chunks, one per thread.
	largeShare = 90
	// smallPerThread is how many small chunks per thread the rest is cut
	// into.
	smallPerThread = 2
)

// split cuts n indices, in units of grain, into threads large chunks of large
// units each, then small chunks of per or per+1 units (the extra first) for
// the rest; the last chunk ends at n.
type split struct {
	n, grain, threads, parts int
	large, per, extra        int
}

func newSplit(n, grain, threads int) split {
	units := (n + grain - 1) / grain
	s := split{n: n, grain: grain, threads: threads, large: units * largeShare / (100 * threads)}
	rest := units - s.large*threads
	small := min(rest, threads*smallPerThread)
	s.parts = threads + small
	if small > 0 {
		s.per, s.extra = rest/small, rest%small
	}
	return s
}

// bound returns the start of chunk k (n for k = parts).
func (s *split) bound(k int) int {
	if k <= s.threads {
		return min(s.n, k*s.large*s.grain)
	}
	k -= s.threads
	return min(s.n, (s.threads*s.large+k*s.per+min(k, s.extra))*s.grain)
}

// poolSpin is how long a thread spins on what it waits for before parking:
// longer than the serial work between the products of a decode, short
// enough that an idle pool parks at once on a human scale.
const poolSpin = 200 * time.Microsecond

// spinCheck is how many checks a spinning thread makes between looks at the
// clock.
const spinCheck = 256

// NewPool starts a pool of the given number of threads (the caller counts as
// one). threads <= 0 means the number of CPUs the process may use.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	spin := time.Duration(0)
	if threads <= runtime.GOMAXPROCS(0) {
		spin = poolSpin
	}
	return newPool(threads, spin)
}

// newPool starts a pool of threads ≥ 1 threads that spin for spin before
// parking.
func newPool(threads int, spin time.Duration) *Pool {
	p := &Pool{threads: threads, spin: spin, done: make(chan struct{}, 1)}
	p.workers = make([]*poolWorker, threads-1)
	p.exited.Add(len(p.workers))
	for i := range p.workers {
		w := &poolWorker{wake: make(chan struct{}, 1)}
		p.workers[i] = w
		go p.work(w)
	}
	return p
}

func (p *Pool) work(w *poolWorker) {
	defer p.exited.Done()
	var seq uint64
	for {
		seq = p.await(w, seq)
		c := w.c
		if c.job == nil {
			return
		}
		p.take(c.job)
		// Wake Run only if it is parked on this very job: a worker delayed
		// between these two steps must not wake a later Run early.
		if p.pending.Add(-1) == 0 && p.waiting.Load() == c.id && p.waiting.CompareAndSwap(c.id, 0) {
			p.done <- struct{}{}
		}
	}
}

// await returns w's sequence number once it differs from last, spinning
// first and then parking on w.wake. Parking announces itself in w.parked and
// checks seq again, so a Run that bumps seq either sees the flag (and sends a
// wake-up) or is seen by the check.
func (p *Pool) await(w *poolWorker, last uint64) uint64 {
	for {
		start := time.Now()
		for i := 1; ; i++ {
			if s := w.seq.Load(); s != last {
				return s
			}
			if i%spinCheck == 0 && time.Since(start) >= p.spin {
				break
			}
		}
		w.parked.Swap(true) // Swap, not Store: see Pool
		if s := w.seq.Load(); s != last {
			if !w.parked.CompareAndSwap(true, false) {
				<-w.wake // Run took the flag: take its wake-up too
			}
			return s
		}
		<-w.wake
	}
}

// Threads is the number of threads jobs are split over.
func (p *Pool) Threads() int { return p.threads }

// Run splits [0, n) into contiguous chunks whose boundaries are multiples of
// grain (except the end), runs them in parallel and returns when all are
// done.
func (p *Pool) Run(n, grain int, j Job) {
	if grain < 1 {
		grain = 1
	}
	units := (n + grain - 1) / grain
	threads := min(p.threads, units)
	if threads <= 1 {
		j.Do(0, n)
		return
	}
	p.cur = newSplit(n, grain, threads)
	p.next.Store(0)
	p.jobs++
	p.pending.Store(int32(threads - 1))
	for _, w := range p.workers[:threads-1] {
		p.send(w, chunk{j, p.jobs})
	}
	p.take(j)
	p.wait()
}

// take runs chunks of the current job until none is left.
func (p *Pool) take(j Job) {
	for {
		k := int(p.next.Add(1)) - 1
		if k >= p.cur.parts {
			return
		}
		if lo, hi := p.cur.bound(k), p.cur.bound(k+1); lo < hi {
			j.Do(lo, hi)
		}
	}
}

// send hands c to w and wakes w if it is parked.
func (p *Pool) send(w *poolWorker, c chunk) {
	w.c = c
	w.seq.Add(1)
	if w.parked.Load() && w.parked.CompareAndSwap(true, false) {
		w.wake <- struct{}{}
	}
}

// wait returns once the workers have done their chunks of the current job,
// spinning first and then parking on p.done (announced in p.waiting, with
// the job's id, and checked again as in await).
func (p *Pool) wait() {
	start := time.Now()
	for i := 1; ; i++ {
		if p.pending.Load() == 0 {
			return
		}
		if i%spinCheck == 0 && time.Since(start) >= p.spin {
			break
		}
	}
	p.waiting.Swap(p.jobs) // Swap, not Store: see Pool
	if p.pending.Load() == 0 {
		if !p.waiting.CompareAndSwap(p.jobs, 0) {
			<-p.done // the last worker took the flag: take its wake-up too
		}
		return
	}
	<-p.done
}

// Close stops the worker goroutines and returns once they have ended. The
// pool must not be used afterwards.
func (p *Pool) Close() {
	for _, w := range p.workers {
		p.send(w, chunk{})
	}
	p.workers = nil
	p.exited.Wait()
}

// MatVecJob is the reusable state of Pool.MatVec: one per caller, so that a
// parallel matrix-vector product allocates nothing.
type MatVecJob struct {
	t        Type
	w        []byte
	rowBytes int
	a        *Activation
	out      []float32
}

// Do computes rows [lo, hi) of the product.
func (j *MatVecJob) Do(lo, hi int) {
	MatVec(j.t, j.w[lo*j.rowBytes:hi*j.rowBytes], j.rowBytes, j.a, j.out[lo:hi])
}

// MatVec is the parallel form of the package's MatVec: out[r] = row r of w · a,
// with the rows split over the pool's threads.
func (p *Pool) MatVec(job *MatVecJob, t Type, w []byte, rowBytes int, a *Activation, out []float32) {
	*job = MatVecJob{t, w, rowBytes, a, out}
	p.Run(len(out), 16, job)
}

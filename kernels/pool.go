package kernels

import (
	"runtime"
	"sync"
)

// Job is work that can be split over a range of indices: Do handles [lo, hi).
// Implementations are usually pointers to preallocated structs, so running a
// job allocates nothing.
type Job interface {
	Do(lo, hi int)
}

// Pool is a fixed set of worker goroutines that split jobs into contiguous
// chunks, one per thread; the goroutine calling Run works on the first chunk
// itself. A Pool runs one job at a time; it is not safe for concurrent Runs.
type Pool struct {
	threads int
	start   []chan chunk // one per helper goroutine
	done    sync.WaitGroup
}

type chunk struct {
	job    Job
	lo, hi int
}

// NewPool starts a pool of the given number of threads (the caller counts as
// one). threads <= 0 means the number of CPUs the process may use.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads, start: make([]chan chunk, threads-1)}
	for i := range p.start {
		p.start[i] = make(chan chunk, 1)
		go p.worker(p.start[i])
	}
	return p
}

func (p *Pool) worker(start <-chan chunk) {
	for c := range start {
		c.job.Do(c.lo, c.hi)
		p.done.Done()
	}
}

// Threads is the number of threads jobs are split over.
func (p *Pool) Threads() int { return p.threads }

// Run splits [0, n) into at most Threads contiguous chunks whose boundaries are
// multiples of grain (except the end), runs them in parallel and returns when
// all are done.
func (p *Pool) Run(n, grain int, j Job) {
	if grain < 1 {
		grain = 1
	}
	units := (n + grain - 1) / grain
	parts := min(p.threads, units)
	if parts <= 1 {
		j.Do(0, n)
		return
	}
	per, extra := units/parts, units%parts
	bound := func(k int) int { return min(n, (k*per+min(k, extra))*grain) }
	p.done.Add(parts - 1)
	for k := 1; k < parts; k++ {
		p.start[k-1] <- chunk{j, bound(k), bound(k + 1)}
	}
	j.Do(0, bound(1))
	p.done.Wait()
}

// Close stops the worker goroutines. The pool must not be used afterwards.
func (p *Pool) Close() {
	for _, c := range p.start {
		close(c)
	}
	p.start = nil
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

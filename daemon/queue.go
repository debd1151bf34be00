package daemon

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/edgellm/edgellm/api"
)

// ErrQueueFull is returned by Queue.Push when queue.size jobs already wait;
// the request is answered at once with error code busy.
var ErrQueueFull = errors.New("the queue is full; try again later")

// ErrDuplicate is returned by Queue.Push for a redelivery of a request that
// is already queued or running: its answer acknowledges both.
var ErrDuplicate = errors.New("this delivery is already queued or running")

// Entry is a queued job with what the worker needs to run and answer it.
type Entry struct {
	Job      Job
	Arrived  time.Time
	Deadline time.Time // Arrived + queue.job_timeout
	// Delivery identifies the MQTT delivery the job came from, and
	// Redelivery says whether the broker flagged it as a repeat (zero and
	// false for a transport without redeliveries).
	Delivery   Delivery
	Redelivery bool
	// Responder answers the job on its transport; the queue does not call
	// it. Whoever takes an entry out of the queue calls its Final exactly
	// once: the worker, a cancel, or the shutdown (CodeUnavailable).
	Responder api.Responder

	cancel context.CancelCauseFunc // set while running
	stop   context.CancelFunc      // releases the deadline timer
}

// Queue is the bounded FIFO in front of the inference workers. It knows the
// running jobs too (one per slot), so that a cancel finds a job wherever it
// is and a redelivered request is never run twice at once. Several jobs may
// share a request id (a new request may reuse one). It is safe for
// concurrent use.
type Queue struct {
	mu      sync.Mutex
	size    int
	waiting []*Entry
	running []*Entry // oldest first
	wake    chan struct{}
	changed func() // called (without the lock) after every change
}

// NewQueue makes a queue for at most size waiting jobs. onChange, when set,
// is called after each change of depth or running job (for the status); it
// must not block.
func NewQueue(size int, onChange func()) *Queue {
	return &Queue{size: size, wake: make(chan struct{}, 1), changed: onChange}
}

// SetSize changes the bound (a reload); jobs already waiting stay.
func (q *Queue) SetSize(size int) {
	q.mu.Lock()
	q.size = size
	q.mu.Unlock()
}

// holds reports whether a running or a waiting job came from delivery d.
// Call with q.mu held.
func (q *Queue) holds(d Delivery) bool {
	for _, r := range q.running {
		if r.Delivery == d {
			return true
		}
	}
	for _, w := range q.waiting {
		if w.Delivery == d {
			return true
		}
	}
	return false
}

// Push appends e. It fails with ErrDuplicate when e is a redelivery of a
// delivery queued or running, and ErrQueueFull when size jobs wait already.
func (q *Queue) Push(e *Entry) error {
	q.mu.Lock()
	if e.Redelivery && q.holds(e.Delivery) {
		q.mu.Unlock()
		return ErrDuplicate
	}
	if len(q.waiting) >= q.size {
		q.mu.Unlock()
		return ErrQueueFull
	}
	q.waiting = append(q.waiting, e)
	q.mu.Unlock()
	q.signal()
	q.notify()
	return nil
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue) notify() {
	if q.changed != nil {
		q.changed()
	}
}

// Next waits for the oldest job, marks it running and returns it with a
// context that is cancelled by Cancel (cause ErrCancelled) or when its
// deadline passes. Call Finish when it is answered. Next returns ctx's error
// when ctx is done first.
func (q *Queue) Next(ctx context.Context) (*Entry, context.Context, error) {
	for {
		q.mu.Lock()
		if len(q.waiting) > 0 {
			e := q.waiting[0]
			q.waiting[0] = nil
			q.waiting = q.waiting[1:]
			causeCtx, cancel := context.WithCancelCause(context.Background())
			jobCtx, stop := context.WithDeadline(causeCtx, e.Deadline)
			e.cancel = cancel
			e.stop = stop
			q.running = append(q.running, e)
			q.mu.Unlock()
			q.notify()
			return e, jobCtx, nil
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// Finish marks the running job e done.
func (q *Queue) Finish(e *Entry) {
	q.mu.Lock()
	if i := slices.Index(q.running, e); i >= 0 {
		q.running = slices.Delete(q.running, i, i+1)
	}
	if e.cancel != nil {
		e.stop()
		e.cancel(nil)
	}
	q.mu.Unlock()
	q.notify()
}

// ErrCancelled is the cause of a job context cancelled by a cancel request.
var ErrCancelled = errors.New("cancelled by request")

// ErrShutdown is the cause of a job context cancelled because the daemon is
// stopping; such a job is answered with api.CodeUnavailable, which MQTT does
// not publish, so it runs again after the restart.
var ErrShutdown = errors.New("the daemon is stopping")

// Cancel cancels every job with the given id, with cause as the running
// jobs' context cause. Queued jobs are removed and returned (the caller
// answers them through their Responder); a running job's context is
// cancelled (its worker answers it) and running is true. Other running jobs
// go on.
func (q *Queue) Cancel(id string, cause error) (removed []*Entry, running bool) {
	q.mu.Lock()
	for _, e := range q.running {
		if e.Job.ID == id {
			e.cancel(cause)
			running = true
		}
	}
	kept := q.waiting[:0]
	for _, w := range q.waiting {
		if w.Job.ID == id {
			removed = append(removed, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(q.waiting[len(kept):])
	q.waiting = kept
	q.mu.Unlock()
	if len(removed) > 0 {
		q.notify()
	}
	return removed, running
}

// RunningIDs returns the ids of the running jobs, oldest first.
func (q *Queue) RunningIDs() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids := make([]string, len(q.running))
	for i, e := range q.running {
		ids[i] = e.Job.ID
	}
	return ids
}

// Active is the number of running jobs.
func (q *Queue) Active() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.running)
}

// CancelRunning cancels every running job with cause (the shutdown's
// ErrShutdown) and returns how many there were.
func (q *Queue) CancelRunning(cause error) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.running {
		e.cancel(cause)
	}
	return len(q.running)
}

// Depth is the number of waiting jobs (not counting the running ones).
func (q *Queue) Depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// Drain removes and returns every waiting job; at shutdown the caller
// answers each with CodeUnavailable (an MQTT request is then left
// unacknowledged, so the broker delivers it again after a restart).
func (q *Queue) Drain() []*Entry {
	q.mu.Lock()
	w := q.waiting
	q.waiting = nil
	q.mu.Unlock()
	q.notify()
	return w
}

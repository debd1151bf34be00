package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/api"
)

// recorder is a Responder that keeps what it is given, as a transport
// would send it; failAt, when positive, makes the failAt-th text chunk fail
// (its client went away).
type recorder struct {
	failAt int
	chunks []string
	finals []api.Answer
}

func (r *recorder) Text(chunk string) error {
	if r.failAt > 0 && len(r.chunks)+1 == r.failAt {
		return errors.New("connection reset by peer")
	}
	r.chunks = append(r.chunks, chunk)
	return nil
}

func (r *recorder) Reasoning(string) error { return nil }

func (r *recorder) Final(a api.Answer) { r.finals = append(r.finals, a) }

// The worker answers a job through the responder the queue carries: the
// text streamed through Text is the final answer's, and a responder whose
// client went away stops the job at that chunk, is answered cancelled, and
// the next job is served in full.
func TestWorkerAnswersThroughTheResponder(t *testing.T) {
	e, err := LoadLLM(context.Background(), LoadOptions{Path: modelPath(t, "stories260K-tok512.gguf"), Context: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := &server{log: testLogger(t), engine: e, queue: NewQueue(4, nil), statusKick: make(chan struct{}, 1)}
	cfg, err := ParseConfig([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	maxTokens, greedy := 24, 0.0
	job := func(id string) Job {
		return NewJob(id, &api.Request{Prompt: "Once upon a time", MaxTokens: &maxTokens, Temperature: &greedy}, cfg)
	}
	runOne := func(id string, r *recorder) api.Answer {
		t.Helper()
		now := time.Now()
		if err := s.queue.Push(&Entry{Job: job(id), Arrived: now, Deadline: now.Add(time.Minute), Responder: r}); err != nil {
			t.Fatal(err)
		}
		en, jobCtx, err := s.queue.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s.run(en, jobCtx)
		s.queue.Finish(en)
		if len(r.finals) != 1 {
			t.Fatalf("%s: %d final answers, want 1", id, len(r.finals))
		}
		return r.finals[0]
	}

	full := &recorder{}
	a := runOne("full", full)
	if a.Error != nil || a.FinishReason != api.FinishLength || a.Usage == nil || a.Usage.CompletionTokens != maxTokens ||
		a.Text == "" || strings.Join(full.chunks, "") != a.Text {
		t.Fatalf("full job: %+v (usage %+v), chunks %q", a, a.Usage, full.chunks)
	}

	gone := &recorder{failAt: 3}
	a = runOne("gone", gone)
	if a.Error == nil || a.Error.Code != api.CodeCancelled || a.FinishReason != api.FinishCancelled ||
		!strings.Contains(a.Error.Message, "the client went away: connection reset by peer") {
		t.Fatalf("job of a client that went away: %+v, error %+v", a, a.Error)
	}
	// Greedy: the same prompt writes the same chunks. The answer's text
	// holds the chunk that failed too, the last one generated.
	if len(full.chunks) < 4 || len(gone.chunks) != 2 || a.Text != strings.Join(full.chunks[:3], "") ||
		a.Usage == nil || a.Usage.CompletionTokens < 3 || a.Usage.CompletionTokens >= maxTokens {
		t.Errorf("the job went on after its client left: chunks %q of %q, usage %+v, text %q", gone.chunks, full.chunks, a.Usage, a.Text)
	}

	again := &recorder{}
	if a = runOne("again", again); a.Error != nil || a.Usage.CompletionTokens != maxTokens || a.Text != full.finals[0].Text {
		t.Errorf("the job after: %+v (usage %+v), want the first job's answer %q", a, a.Usage, full.finals[0].Text)
	}
}

// The queue knows every running job: a cancel stops the one it names, a
// redelivery of any running job is refused until it finishes, and the
// shutdown cancels them all.
func TestQueueSeveralRunning(t *testing.T) {
	q := NewQueue(4, nil)
	now := time.Now()
	entry := func(id string, packet uint16) *Entry {
		return &Entry{Job: Job{ID: id}, Arrived: now, Deadline: now.Add(time.Hour), Delivery: Delivery{PacketID: packet}}
	}
	for i, id := range []string{"a", "b", "c"} {
		if err := q.Push(entry(id, uint16(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	a, aCtx, err := q.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, bCtx, err := q.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q.Active() != 2 || q.Depth() != 1 || strings.Join(q.RunningIDs(), ",") != "a,b" {
		t.Fatalf("active %d, depth %d, running %v", q.Active(), q.Depth(), q.RunningIDs())
	}
	for _, e := range []*Entry{a, b} {
		dup := entry("again", e.Delivery.PacketID)
		dup.Redelivery = true
		if err := q.Push(dup); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("redelivery of running %s: %v", e.Job.ID, err)
		}
	}
	if removed, running := q.Cancel("a", ErrCancelled); !running || len(removed) != 0 {
		t.Fatalf("cancel a: removed %d, running %v", len(removed), running)
	}
	if !errors.Is(context.Cause(aCtx), ErrCancelled) || bCtx.Err() != nil {
		t.Fatalf("after cancelling a: a %v, b %v", context.Cause(aCtx), bCtx.Err())
	}
	q.Finish(a)
	redo := entry("a", a.Delivery.PacketID)
	redo.Redelivery = true
	if err := q.Push(redo); err != nil || q.Active() != 1 {
		t.Fatalf("redelivery of a finished job: %v, active %d", err, q.Active())
	}
	if n := q.CancelRunning(ErrShutdown); n != 1 || !errors.Is(context.Cause(bCtx), ErrShutdown) {
		t.Fatalf("CancelRunning: %d, b %v", n, context.Cause(bCtx))
	}
	q.Finish(b)
	if q.Active() != 0 || len(q.RunningIDs()) != 0 {
		t.Fatalf("after both finished: active %d", q.Active())
	}
}

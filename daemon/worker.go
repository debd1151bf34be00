package daemon

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/mqtt"
)

// worker runs queued jobs one at a time until workCtx is done, and reloads
// the model between jobs when asked.
func (s *server) worker(workCtx, serveCtx context.Context) {
	for {
		waitCtx, stopWait := context.WithCancel(workCtx)
		go func() {
			select {
			case <-s.modelKick:
				s.modelKick <- struct{}{} // put it back for the loop below
				stopWait()
			case <-waitCtx.Done():
			}
		}()
		e, jobCtx, err := s.queue.Next(waitCtx)
		stopWait()
		if err != nil {
			if workCtx.Err() != nil {
				return
			}
			select {
			case <-s.modelKick:
				s.newEngine <- reloadResult{err: s.reloadModel(serveCtx)}
			default:
			}
			continue
		}
		s.run(serveCtx, e, jobCtx)
		s.queue.Finish(e)
	}
}

// run answers one job.
func (s *server) run(serveCtx context.Context, e *Entry, jobCtx context.Context) {
	rp := e.Reply.(reply)
	job := e.Job
	s.setState(mqtt.StateBusy)
	s.beat.Start()
	defer func() {
		s.beat.Done()
		s.setState(mqtt.StateIdle)
	}()
	s.log.Info("job started", "id", job.ID, "waited", time.Since(e.Arrived).Round(time.Millisecond))

	var st, rs *streamer // the answer's and the reasoning's streams
	if rp.stream != "" {
		st = newStreamer(s.currentClient(), rp.stream, job.ID, s.log)
	}
	if rp.reasoning != "" {
		rs = newStreamer(s.currentClient(), rp.reasoning, job.ID, s.log)
	}
	job.OnText = func(chunk string) error {
		if st != nil {
			st.add(chunk)
		}
		return nil
	}
	job.OnReasoning = func(chunk string) error {
		if rs != nil {
			rs.add(chunk)
		}
		return nil
	}
	job.Progress = s.beat.Beat
	out, err := s.engine.Run(jobCtx, job)
	if rs != nil {
		rs.close() // the reasoning's last chunk goes out before the answer's
	}
	if st != nil {
		st.close()
	}
	s.tokens.Add(uint64(out.Usage.CompletionTokens))
	s.decodeRates.add(time.Now(), out.Usage.CompletionTokens, out.Timings.DecodeTPS)

	var f mqtt.Final
	cause := context.Cause(jobCtx)
	switch {
	case err == nil:
		f = mqtt.Final{ID: job.ID, Status: mqtt.StatusOK, Text: out.Text, Reasoning: out.Reasoning, FinishReason: out.FinishReason,
			Usage: &out.Usage, Timings: &out.Timings, ToolCalls: out.ToolCalls}
	case errors.Is(cause, ErrShutdown):
		s.log.Info("job stopped by shutdown; it will run again after the restart", "id", job.ID)
		return
	case errors.Is(cause, ErrCancelled):
		f = mqtt.ErrorFinal(job.ID, api.CodeCancelled, ErrCancelled)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded):
		f = mqtt.ErrorFinal(job.ID, api.CodeTimeout, errors.New("the job passed queue.job_timeout"))
	case errors.Is(err, ErrPromptTooLong):
		f = mqtt.ErrorFinal(job.ID, api.CodeTooLong, err)
	default:
		var re *api.Error
		code := api.CodeInternal
		if errors.As(err, &re) {
			code = re.Code
		}
		s.log.Error("job failed", "id", job.ID, "err", err)
		f = mqtt.ErrorFinal(job.ID, code, err)
	}
	if f.Status == mqtt.StatusError {
		f.Text, f.Reasoning = out.Text, out.Reasoning
		if out.Usage.PromptTokens > 0 {
			f.Usage, f.Timings = &out.Usage, &out.Timings
		}
	}
	s.log.Info("job done", "id", job.ID, "status", f.Status, "finish", f.FinishReason,
		"prompt_tokens", out.Usage.PromptTokens, "tokens", out.Usage.CompletionTokens, "reasoning_tokens", out.Usage.ReasoningTokens,
		"decode_tps", math.Round(out.Timings.DecodeTPS*10)/10)
	s.answer(serveCtx, job.ID, rp, f)
	if len(f.ToolCalls) > 0 {
		s.publishToolCalls(serveCtx, job.ID, f.ToolCalls)
	}
}

// streamer publishes a job's text as QoS 0 chunks. Text is appended to a
// pending buffer; one goroutine publishes whatever accumulated since its
// previous publish, so a slow broker makes chunks bigger, never decoding
// slower.
type streamer struct {
	client *mqtt.Client
	topic  string
	id     string
	log    *slog.Logger

	mu      sync.Mutex
	pending strings.Builder
	closing bool
	wake    chan struct{}
	done    chan struct{}
}

// streamPublishTimeout bounds one chunk's publish.
const streamPublishTimeout = 5 * time.Second

func newStreamer(c *mqtt.Client, topic, id string, log *slog.Logger) *streamer {
	st := &streamer{client: c, topic: topic, id: id, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go st.run()
	return st
}

func (st *streamer) add(text string) {
	st.mu.Lock()
	st.pending.WriteString(text)
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

func (st *streamer) run() {
	defer close(st.done)
	seq := 0
	for range st.wake {
		st.mu.Lock()
		text := st.pending.String()
		st.pending.Reset()
		closing := st.closing
		st.mu.Unlock()
		if text != "" {
			payload, err := marshalJSON(mqtt.StreamChunk{ID: st.id, Seq: seq, Text: text})
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), streamPublishTimeout)
				err = st.client.Publish(ctx, st.topic, 0, false, payload)
				cancel()
			}
			if err != nil {
				st.log.Warn("stream chunk not published", "id", st.id, "seq", seq, "err", err)
			}
			seq++
		}
		if closing {
			return
		}
	}
}

// close publishes what is pending and waits until the last chunk is out.
func (st *streamer) close() {
	st.mu.Lock()
	st.closing = true
	st.mu.Unlock()
	// The wake channel holds one signal; run sees closing on its next turn.
	select {
	case st.wake <- struct{}{}:
	default:
	}
	<-st.done
}

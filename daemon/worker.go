package daemon

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/edgellm/edgellm/api"
)

// worker runs queued jobs, up to the engine's slots at once, each on a
// goroutine of its own, until workCtx is done; then it waits for the running
// ones. When asked to reload the model it takes no new job, waits until no
// job runs, reloads, and goes on with the new engine's slots.
func (s *server) worker(workCtx, serveCtx context.Context) {
	// done receives a value per job that ended; active counts the jobs
	// started and not yet reaped.
	done := make(chan struct{}, MaxSlots)
	active := 0
	defer func() {
		for ; active > 0; active-- {
			<-done
		}
	}()
	reload := func() {
		for ; active > 0; active-- {
			<-done
		}
		s.newEngine <- reloadResult{err: s.reloadModel(serveCtx)}
	}
	for {
		for reaped := false; !reaped; {
			select {
			case <-done:
				active--
			default:
				reaped = true
			}
		}
		select {
		case <-s.modelKick:
			reload()
			continue
		default:
		}
		if active >= s.engineSlots() {
			select {
			case <-done:
				active--
			case <-s.modelKick:
				reload()
			case <-workCtx.Done():
				return
			}
			continue
		}
		waitCtx, stopWait := context.WithCancel(workCtx)
		go func() {
			select {
			case <-s.modelKick:
				s.modelKick <- struct{}{} // put it back for the loop
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
			continue // a reload: the loop takes the kick
		}
		active++
		go func() {
			defer func() { done <- struct{}{} }()
			s.run(e, jobCtx)
			s.queue.Finish(e)
		}()
	}
}

// engineSlots is how many jobs the loaded engine runs at once.
func (s *server) engineSlots() int { return max(int(s.slots.Load()), 1) }

// run answers one job through its responder.
func (s *server) run(e *Entry, jobCtx context.Context) {
	rsp := e.Responder
	job := e.Job
	s.beat.Start()
	defer s.beat.Done()
	s.log.Info("job started", "id", job.ID, "waited", time.Since(e.Arrived).Round(time.Millisecond), "active", s.queue.Active())

	// gone is the first error a responder returned: its client went away,
	// which stops the job (the engine stops at an error of OnText or
	// OnReasoning). Responders buffer the text (api.Responder), so a slow
	// client never holds up the steps the slots share.
	var gone error
	noting := func(send func(string) error) func(string) error {
		return func(chunk string) error {
			err := send(chunk)
			if err != nil {
				gone = err
			}
			return err
		}
	}
	job.OnText, job.OnReasoning = noting(rsp.Text), noting(rsp.Reasoning)
	job.Progress = s.beat.Beat
	out, err := s.engine.Run(jobCtx, job)
	s.tokens.Add(uint64(out.Usage.CompletionTokens))
	s.decodeRates.add(time.Now(), out.Usage.CompletionTokens, out.Timings.DecodeTPS)

	var a api.Answer
	cause := context.Cause(jobCtx)
	switch {
	case err == nil:
		a = api.Answer{Text: out.Text, Reasoning: out.Reasoning, FinishReason: out.FinishReason,
			Usage: &out.Usage, Timings: &out.Timings, ToolCalls: out.ToolCalls}
	case errors.Is(cause, ErrShutdown):
		s.log.Info("job stopped by shutdown; it will run again after the restart", "id", job.ID)
		rsp.Final(api.ErrorAnswer(api.CodeUnavailable, ErrShutdown))
		return
	case gone != nil:
		a = api.ErrorAnswer(api.CodeCancelled, fmt.Errorf("the client went away: %w", gone))
	case errors.Is(cause, ErrCancelled):
		a = api.ErrorAnswer(api.CodeCancelled, ErrCancelled)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded):
		a = api.ErrorAnswer(api.CodeTimeout, errors.New("the job passed queue.job_timeout"))
	case errors.Is(err, ErrPromptTooLong):
		a = api.ErrorAnswer(api.CodeTooLong, err)
	default:
		a = api.ErrorAnswer(api.CodeInternal, err) // the code of an *api.Error in err wins
		s.log.Error("job failed", "id", job.ID, "err", err)
	}
	status := "ok"
	if a.Error != nil {
		status = a.Error.Code
		a.Text, a.Reasoning = out.Text, out.Reasoning
		if out.Usage.PromptTokens > 0 {
			a.Usage, a.Timings = &out.Usage, &out.Timings
		}
	}
	s.log.Info("job done", "id", job.ID, "status", status, "finish", a.FinishReason,
		"prompt_tokens", out.Usage.PromptTokens, "tokens", out.Usage.CompletionTokens, "reasoning_tokens", out.Usage.ReasoningTokens,
		"decode_tps", math.Round(out.Timings.DecodeTPS*10)/10)
	rsp.Final(a)
}

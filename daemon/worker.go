package daemon

import (
	"context"
	"errors"
	"fmt"
	"math"
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
		s.run(e, jobCtx)
		s.queue.Finish(e)
	}
}

// run answers one job through its responder.
func (s *server) run(e *Entry, jobCtx context.Context) {
	rsp := e.Responder
	job := e.Job
	s.setState(mqtt.StateBusy)
	s.beat.Start()
	defer func() {
		s.beat.Done()
		s.setState(mqtt.StateIdle)
	}()
	s.log.Info("job started", "id", job.ID, "waited", time.Since(e.Arrived).Round(time.Millisecond))

	// gone is the first error a responder returned: its client went away,
	// which stops the job (the engine stops at an error of OnText or
	// OnReasoning).
	var gone error
	job.OnText = func(chunk string) error {
		if err := rsp.Text(chunk); err != nil {
			gone = err
			return err
		}
		return nil
	}
	job.OnReasoning = func(chunk string) error {
		if err := rsp.Reasoning(chunk); err != nil {
			gone = err
			return err
		}
		return nil
	}
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

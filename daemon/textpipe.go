package daemon

import (
	"sync"

	"github.com/edgellm/edgellm/api"
)

// textPipe hands a job's streamed text to its responder from a goroutine of
// its own. The engine's slots compute in shared steps, and a job's text
// callbacks run between them: a client that reads slowly (a full TCP window,
// a busy broker) must hold up its own stream only, never every job's
// tokens. The text waiting in the pipe is at most the job's output, which
// max_tokens bounds.
type textPipe struct {
	rsp  api.Responder
	mu   sync.Mutex
	todo []pipeChunk // waiting for the responder, in order
	err  error       // the responder's first error: its client went away
	shut bool        // no more chunks come
	wake chan struct{}
	done chan struct{}
}

// pipeChunk is a piece of answer text, or of reasoning.
type pipeChunk struct {
	text      string
	reasoning bool
}

// newTextPipe starts a pipe to rsp; close ends it.
func newTextPipe(rsp api.Responder) *textPipe {
	p := &textPipe{rsp: rsp, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go p.run()
	return p
}

// text and reasoning queue a chunk for the responder without waiting for
// it; they return the responder's error once it has failed, which stops the
// job.
func (p *textPipe) text(s string) error      { return p.put(pipeChunk{text: s}) }
func (p *textPipe) reasoning(s string) error { return p.put(pipeChunk{text: s, reasoning: true}) }

func (p *textPipe) put(c pipeChunk) error {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return p.err
	}
	p.todo = append(p.todo, c)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// close waits until every queued chunk has gone to the responder (or the
// responder failed) and returns the responder's error, if any.
func (p *textPipe) close() error {
	p.mu.Lock()
	p.shut = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	<-p.done
	return p.err
}

// run passes the chunks on in order until the pipe is closed and empty; once
// the responder fails, the rest are dropped.
func (p *textPipe) run() {
	defer close(p.done)
	var batch []pipeChunk
	for range p.wake {
		p.mu.Lock()
		batch, p.todo = p.todo, batch[:0]
		shut, failed := p.shut, p.err != nil
		p.mu.Unlock()
		for _, c := range batch {
			if failed {
				break
			}
			var err error
			if c.reasoning {
				err = p.rsp.Reasoning(c.text)
			} else {
				err = p.rsp.Text(c.text)
			}
			if err != nil {
				p.mu.Lock()
				p.err, failed = err, true
				p.mu.Unlock()
			}
		}
		clear(batch)
		p.mu.Lock()
		empty := len(p.todo) == 0
		p.mu.Unlock()
		if shut && empty {
			return
		}
	}
}

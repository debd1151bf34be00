package api

import (
	"fmt"
	"sync"
)

// Piece is a chunk of an answer's text or reasoning waiting to be sent.
type Piece struct {
	Text      string
	Reasoning bool // a chunk of the reasoning, not of the text
}

// Buffered is the Responder of one request whose handler writes the answer
// from its own goroutine (the HTTP APIs). The worker's chunks are buffered
// and the handler takes them when woken, so a slow client never slows
// decoding; once a write failed (Fail: the client is gone) the next chunk is
// refused, which stops the job.
type Buffered struct {
	streaming bool
	holdText  bool          // drop text chunks: the final answer's text is sent instead
	wake      chan struct{} // a chunk is pending
	final     chan Answer   // the final answer, once

	mu      sync.Mutex
	pending []Piece
	gone    error
}

// NewBuffered returns a Buffered. Without streaming the chunks are dropped
// (the final answer carries the whole text); with holdText only the text
// chunks are (a stream that must not show the text of tool calls as the
// model writes them sends the final answer's text instead).
func NewBuffered(streaming, holdText bool) *Buffered {
	return &Buffered{streaming: streaming, holdText: holdText, wake: make(chan struct{}, 1), final: make(chan Answer, 1)}
}

// Text takes a chunk of the answer.
func (r *Buffered) Text(chunk string) error { return r.add(Piece{Text: chunk}) }

// Reasoning takes a chunk of the reasoning.
func (r *Buffered) Reasoning(chunk string) error { return r.add(Piece{Text: chunk, Reasoning: true}) }

func (r *Buffered) add(p Piece) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone != nil {
		return r.gone
	}
	if !r.streaming || p.Text == "" || r.holdText && !p.Reasoning {
		return nil
	}
	r.pending = append(r.pending, p)
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// Final takes the final answer; it never blocks (the channel holds one).
func (r *Buffered) Final(a Answer) {
	select {
	case r.final <- a:
	default:
	}
}

// HoldsText reports whether text chunks are dropped for the final text.
func (r *Buffered) HoldsText() bool { return r.holdText }

// Woken receives when chunks are pending (Take them).
func (r *Buffered) Woken() <-chan struct{} { return r.wake }

// Answered receives the final answer, once; chunks that came before it may
// still be pending (Take them first).
func (r *Buffered) Answered() <-chan Answer { return r.final }

// Take returns and clears the pending chunks, merging neighbours of the
// same kind.
func (r *Buffered) Take() []Piece {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Piece
	for _, p := range r.pending {
		if n := len(out); n > 0 && out[n-1].Reasoning == p.Reasoning {
			out[n-1].Text += p.Text
			continue
		}
		out = append(out, p)
	}
	r.pending = nil
	return out
}

// Fail records that the client is gone: the next chunk stops the job.
func (r *Buffered) Fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone == nil {
		r.gone = fmt.Errorf("writing to the HTTP client: %w", err)
	}
}

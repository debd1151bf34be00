package api

import (
	"fmt"
	"strings"
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
	wake      chan struct{} // a chunk is pending
	final     chan Answer   // the final answer, once

	mu       sync.Mutex
	pending  []Piece
	streamed strings.Builder // the text taken so far
	gone     error
}

// NewBuffered returns a Buffered. Without streaming the chunks are dropped
// (the final answer carries the whole text).
func NewBuffered(streaming bool) *Buffered {
	return &Buffered{streaming: streaming, wake: make(chan struct{}, 1), final: make(chan Answer, 1)}
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
	if !r.streaming || p.Text == "" {
		return nil
	}
	r.pending = append(r.pending, p)
	if !p.Reasoning {
		r.streamed.WriteString(p.Text)
	}
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

// Unsent returns what of the final answer's text has not streamed: with
// tools the daemon streams the text before the calls, and the final text is
// then that text with the space around it trimmed, or, when the calls did
// not parse, the whole text. Call it once the pending chunks are taken.
func (r *Buffered) Unsent(final string) string {
	r.mu.Lock()
	streamed := r.streamed.String()
	r.mu.Unlock()
	return unsent(final, streamed)
}

// unsent returns what of final has not streamed, streamed being a prefix of
// the model's text.
func unsent(final, streamed string) string {
	if strings.HasPrefix(final, streamed) {
		return final[len(streamed):]
	}
	body, done := strings.TrimLeft(final, " \t\r\n"), strings.TrimSpace(streamed)
	if strings.HasPrefix(body, done) {
		return body[len(done):]
	}
	return "" // not a continuation: nothing is sent twice
}

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

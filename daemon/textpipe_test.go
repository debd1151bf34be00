package daemon

import (
	"errors"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/api"
)

// slowResponder is a client that takes its text only when let: each Text
// or Reasoning waits for a value of let, then records the chunk, or fails
// once failAt chunks are recorded.
type slowResponder struct {
	let    chan struct{}
	got    []string
	failAt int
}

func (r *slowResponder) take(s string) error {
	<-r.let
	if r.failAt > 0 && len(r.got) == r.failAt {
		return errors.New("the client went away")
	}
	r.got = append(r.got, s)
	return nil
}
func (r *slowResponder) Text(s string) error      { return r.take(s) }
func (r *slowResponder) Reasoning(s string) error { return r.take("<r>" + s) }
func (r *slowResponder) Final(api.Answer)         {}

// A job's text goes into the pipe without waiting for a client that is not
// reading; close waits for all of it, in order; once the client fails, the
// job's next chunk gets its error.
func TestTextPipe(t *testing.T) {
	r := &slowResponder{let: make(chan struct{})}
	p := newTextPipe(r)
	for i, s := range []string{"a", "b", "c"} {
		var err error
		if i == 1 {
			err = p.reasoning(s)
		} else {
			err = p.text(s)
		}
		if err != nil {
			t.Fatal(err) // nothing has been taken yet: the calls did not wait
		}
	}
	closed := make(chan error)
	go func() { closed <- p.close() }()
	for range 3 {
		r.let <- struct{}{}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.got, ","); got != "a,<r>b,c" {
		t.Fatalf("the client got %q", got)
	}

	r = &slowResponder{let: make(chan struct{}), failAt: 1}
	p = newTextPipe(r)
	if err := p.text("x"); err != nil {
		t.Fatal(err)
	}
	if err := p.text("y"); err != nil {
		t.Fatal(err)
	}
	r.let <- struct{}{} // x is taken
	r.let <- struct{}{} // y fails
	err := p.close()
	if err == nil || p.text("z") == nil {
		t.Fatalf("close: %v; a chunk after the client failed was accepted", err)
	}
	if len(r.got) != 1 {
		t.Fatalf("the client got %q", r.got)
	}
}

// Package web holds what the HTTP APIs (api/openai, api/ollama) share: their
// options, the API key check, reading and decoding a request body within its
// limits, the HTTP status of an error code, and writing a streamed object.
// Each API writes errors in its own shape.
package web

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/edgellm/edgellm/api"
)

// Options configures an HTTP API's handler.
type Options struct {
	// Backend runs requests and describes the model. Required.
	Backend api.Backend
	// APIKey, when set, is the bearer token every API request must carry.
	APIKey string
	// MaxBodyBytes bounds a request body; larger ones are answered 413.
	MaxBodyBytes int64
	// Logger receives the handler's log; nil means slog.Default().
	Logger *slog.Logger
}

// Log is the logger of the options.
func (o Options) Log() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// KeyHelp is what a 401 says.
const KeyHelp = "missing or wrong API key: send Authorization: Bearer <key> (http.api_key_file)"

// Guard is next behind the API key: a request that does not carry key as
// its bearer token is answered by deny, after WWW-Authenticate is set.
// Without a key every request passes.
func Guard(key string, next http.HandlerFunc, deny func(http.ResponseWriter)) http.HandlerFunc {
	if key == "" {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(key)) == 1 {
			next(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="edgellm"`)
		deny(w)
	}
}

// BodyError is a request body that could not be read: too large (413) or
// broken off (400).
type BodyError struct {
	Status  int
	Message string
}

// BodyTimeout bounds the reading of a request body.
const BodyTimeout = time.Minute

// ReadBody reads a request body of at most limit bytes, within BodyTimeout:
// a read deadline on the body only, since the server's ReadTimeout would
// stay on the connection while the answer streams, and net/http cancels the
// request when it passes.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *BodyError) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &BodyError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes (http.max_body_bytes)", mbe.Limit)}
		}
		return nil, &BodyError{http.StatusBadRequest, fmt.Sprintf("reading the request body: %v", err)}
	}
	return body, nil
}

// Decode decodes a JSON request body into v. Fields v does not have are
// ignored; a field of the wrong type is an error naming it. Errors are
// *api.Error with CodeBadRequest.
func Decode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return api.BadField("", "missing request body")
	}
	if api.TooDeep(body, api.MaxDepth) {
		return api.BadField("", "JSON nested more than %d levels deep", api.MaxDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return api.BadField(te.Field, "wrong type: %s is not %s", te.Value, te.Type)
		}
		return api.BadField("", "the body is not a valid JSON request: %v", err)
	}
	if dec.More() {
		return api.BadField("", "the body holds more than one JSON value")
	}
	return nil
}

// DecodeStop reads stop sequences given as a string or an array of strings;
// field names the parameter in the error.
func DecodeStop(raw json.RawMessage, field string) ([]string, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return nil, api.BadField(field, "must be a string or an array of strings")
	}
	return many, nil
}

// Failure is err as an *api.Error (CodeInternal for an error that is none)
// with the HTTP status of its code, and the message a client sees: naming
// the field unless it says it already (an answer's error carries the whole
// explanation).
func Failure(err error) (status int, e *api.Error, msg string) {
	e = &api.Error{Code: api.CodeInternal, Message: err.Error()}
	var ae *api.Error
	if errors.As(err, &ae) {
		e = ae
	}
	status = http.StatusInternalServerError
	switch e.Code {
	case api.CodeBadRequest, api.CodeTooLong:
		status = http.StatusBadRequest
	case api.CodeBusy, api.CodeUnavailable:
		status = http.StatusServiceUnavailable
	case api.CodeTimeout:
		status = http.StatusGatewayTimeout
	case api.CodeCancelled:
		status = 499 // nginx's "client closed request": nobody reads it
	}
	msg = e.Message
	if e.Field != "" && !strings.Contains(msg, `"`+e.Field+`"`) {
		msg = e.Error()
	}
	return status, e, msg
}

// WriteJSON writes v as the JSON body of a response with status; a busy or
// stopping daemon's 503 gets Retry-After.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a write error means the client is gone
}

// Await waits for the final answer of a job that does not stream; false
// when the client went away first (the backend then cancels the job).
func Await(ctx context.Context, rsp *api.Buffered) (api.Answer, bool) {
	select {
	case a := <-rsp.Answered():
		return a, true
	case <-ctx.Done():
		return api.Answer{}, false
	}
}

// Stream writes a streamed answer: one framed JSON object at a time, each
// flushed. It starts (status 200, the headers, then what Begin sends) with
// the first object, so a job that fails before it has produced anything
// can still be answered with its HTTP error status. A failed write means
// the client is gone, which the responder is told (its job then stops at
// the next chunk).
type Stream struct {
	W           http.ResponseWriter
	Rsp         *api.Buffered
	ContentType string
	Frame       func(json []byte) []byte // the bytes that carry one object
	Begin       func() bool              // sends what opens the stream; nil: nothing

	started bool
}

// Started reports whether the stream has started.
func (s *Stream) Started() bool { return s.started }

// Send writes v, starting the stream first if need be.
func (s *Stream) Send(v any) bool {
	if !s.started {
		s.started = true
		h := s.W.Header()
		h.Set("Content-Type", s.ContentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		s.W.WriteHeader(http.StatusOK)
		if s.Begin != nil && !s.Begin() {
			return false
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.Rsp.Fail(err)
		return false
	}
	return s.Raw(s.Frame(b))
}

// Raw writes b as it is (the stream must have started) and flushes it.
func (s *Stream) Raw(b []byte) bool {
	if _, err := s.W.Write(b); err != nil {
		s.Rsp.Fail(err)
		return false
	}
	if fl, ok := s.W.(http.Flusher); ok {
		fl.Flush()
	}
	return true
}

// Run sends each piece of the answer as it comes, as the object piece
// makes of it (nil: nothing), until the final answer, which it returns (ok false: the
// client went away or a write failed, and nothing more is to be sent). The
// pieces that came with the final answer are sent first, unless the job
// failed before the stream started: then nothing is sent.
func (s *Stream) Run(ctx context.Context, piece func(api.Piece) any) (a api.Answer, ok bool) {
	sendAll := func(ps []api.Piece) bool {
		for _, p := range ps {
			if v := piece(p); v != nil && !s.Send(v) { // nil: a piece not sent
				return false
			}
		}
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return a, false
		case <-s.Rsp.Woken():
			if !sendAll(s.Rsp.Take()) {
				return a, false
			}
		case a = <-s.Rsp.Answered():
			pending := s.Rsp.Take() // chunks that came with the final answer
			if !s.started && a.Error != nil && len(pending) == 0 {
				return a, true
			}
			return a, sendAll(pending)
		}
	}
}

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Error codes: why a request was answered with an error. Each transport maps
// them to its own shape (MQTT's error.code; an HTTP status and error body).
const (
	CodeBadRequest = "bad_request" // the request is malformed or out of range
	CodeBusy       = "busy"        // the queue is full; try again later
	CodeTooLong    = "too_long"    // the payload or prompt does not fit
	CodeCancelled  = "cancelled"   // the client cancelled the job
	CodeTimeout    = "timeout"     // the job passed queue.job_timeout
	CodeInternal   = "internal"    // the daemon failed; see its log
	// CodeUnavailable: the daemon is stopping and did not run the job. MQTT
	// never sends it (the request stays unacknowledged and is delivered
	// again after the restart); HTTP answers 503.
	CodeUnavailable = "unavailable"
)

// Finish reasons of an answer.
const (
	FinishStop      = "stop"      // end of text or a stop sequence
	FinishLength    = "length"    // max_tokens reached
	FinishToolCall  = "tool_call" // the model called a tool (see Answer.ToolCalls)
	FinishCancelled = "cancelled" // cancelled
	FinishTimeout   = "timeout"   // deadline passed
	FinishError     = "error"     // any other error
)

// Error is a typed failure: Code is one of the Code constants, Field the
// request field at fault ("" for the request as a whole or a failure that
// is no field's), Message what is wrong.
type Error struct {
	Code    string // one of the Code constants
	Field   string // the request field at fault (its JSON name), or ""
	Message string // what is wrong, for the client
}

// Error formats as `field "top_p": must be …`, or the message alone without
// a field.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("field %q: %s", e.Field, e.Message)
	}
	return e.Message
}

// BadField is a CodeBadRequest error naming field.
func BadField(field, format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Usage counts tokens. DroppedTokens is how many tokens of a conversation
// were trimmed to fit the context (oldest turns first, the system message
// kept). ReasoningTokens is how many of the CompletionTokens were reasoning,
// its markers included (a reasoning closed early counts too).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`              // tokens of the prompt as run
	CompletionTokens int `json:"completion_tokens"`          // tokens generated, reasoning included
	CachedTokens     int `json:"cached_tokens"`              // prompt tokens reused from the KV cache
	DroppedTokens    int `json:"dropped_tokens,omitempty"`   // conversation tokens trimmed to fit
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"` // generated tokens of the reasoning
}

// Timings measure a job: time to first token and the two phases' speeds.
type Timings struct {
	TTFTMs     float64 `json:"ttft_ms"`     // milliseconds from start to the first token
	PrefillTPS float64 `json:"prefill_tps"` // prompt tokens per second
	DecodeTPS  float64 `json:"decode_tps"`  // generated tokens per second
}

// ToolCall is a call the model made; Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"id,omitempty"` // names the call, for the tool message answering it
	Name      string          `json:"name"`         // the function called
	Arguments json.RawMessage `json:"arguments"`    // its arguments, a JSON object
}

// UnmarshalJSON reads a call in the answer's shape {"id","name","arguments"}
// or in the OpenAI shape {"id","type":"function","function":{"name",
// "arguments"}}, whose arguments may be a JSON string holding the object.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Function  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("tool call: %w", err)
	}
	if w.Type != "" && w.Type != "function" {
		return fmt.Errorf("tool call type %q is not \"function\"", w.Type)
	}
	*c = ToolCall{ID: w.ID, Name: w.Name, Arguments: w.Arguments}
	if f := w.Function; f != nil {
		if w.Name != "" || len(w.Arguments) > 0 {
			return errors.New("a tool call has name and arguments either at the top or in function, not both")
		}
		c.Name, c.Arguments = f.Name, f.Arguments
	}
	return nil
}

// Answer is the final answer to a request. Error is nil for a success; for
// a failure the text and reasoning are what was generated before it (partial
// when cancelled), and Usage and Timings are set when the job ran.
type Answer struct {
	Text         string     // the answer, never the reasoning
	Reasoning    string     // what a thinking model reasoned before the answer
	ToolCalls    []ToolCall // calls the model made, each with an id
	FinishReason string     // one of the Finish constants
	Usage        *Usage     // token counts, when the job ran
	Timings      *Timings   // speeds, when the job ran
	// Error says why the request failed. Its Message is the whole
	// explanation (the failure's error text, naming the field when there
	// is one); Field is kept for transports that report it apart.
	Error *Error
}

// ErrorAnswer is the answer to a request that failed with err: the code and
// field come from an *Error in err's chain, else the code is code
// (CodeInternal when empty). The finish reason follows the code.
func ErrorAnswer(code string, err error) Answer {
	e := &Error{Code: code, Message: err.Error()}
	var ae *Error
	if errors.As(err, &ae) {
		e.Code, e.Field = ae.Code, ae.Field
	}
	if e.Code == "" {
		e.Code = CodeInternal
	}
	finish := FinishError
	switch e.Code {
	case CodeCancelled:
		finish = FinishCancelled
	case CodeTimeout:
		finish = FinishTimeout
	}
	return Answer{FinishReason: finish, Error: e}
}

// Responder answers one request on its transport. The daemon's queue carries
// one per job. The worker calls Text and Reasoning from one goroutine as the
// answer is generated (whether or not the request asked to stream: a
// responder that does not stream drops the chunks), then Final; whoever
// takes a job out of the queue calls Final exactly once. An error from Text
// or Reasoning means the client is gone: the job stops at that chunk and is
// answered with CodeCancelled.
//
// A job the daemon did not finish because it is stopping is answered with
// CodeUnavailable: MQTT publishes nothing then (the request stays
// unacknowledged and is delivered again after the restart); HTTP answers
// 503.
type Responder interface {
	// Text takes the next piece of the answer's text. It must not wait for
	// the client (MQTT's streamer and Buffered keep what is not sent yet):
	// the jobs that run at once compute in shared steps, and a job's text
	// is taken between them.
	Text(chunk string) error
	// Reasoning takes the next piece of a thinking model's reasoning, as
	// Text does.
	Reasoning(chunk string) error
	// Final takes the final answer; it must not block on the worker.
	Final(Answer)
}

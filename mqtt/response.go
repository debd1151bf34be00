package mqtt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Error codes of a final answer's error.code.
const (
	CodeBadRequest = "bad_request" // the request is malformed or out of range
	CodeBusy       = "busy"        // the queue is full; try again later
	CodeTooLong    = "too_long"    // the payload or prompt does not fit
	CodeCancelled  = "cancelled"   // a cancel message stopped the job
	CodeTimeout    = "timeout"     // the job passed queue.job_timeout
	CodeInternal   = "internal"    // the daemon failed; see its log
)

// Final answer statuses.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// Finish reasons of a final answer.
const (
	FinishStop      = "stop"      // end of text or a stop sequence
	FinishLength    = "length"    // max_tokens reached
	FinishToolCall  = "tool_call" // the model called a tool (see Final.ToolCalls)
	FinishCancelled = "cancelled" // cancelled
	FinishTimeout   = "timeout"   // deadline passed
	FinishError     = "error"     // any other error
)

// StreamChunk is one piece of a streamed answer on Topics.Stream(id), or of
// its reasoning on Topics.ReasoningStream(id), QoS 0. Seq counts from 0 on
// each topic; chunks may be lost but never reordered by the daemon.
type StreamChunk struct {
	ID   string `json:"id"`   // the request id
	Seq  int    `json:"seq"`  // 0, 1, 2, … within the request
	Text string `json:"text"` // the text since the previous chunk
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

// ErrorBody is a final answer's error.
type ErrorBody struct {
	Code    string `json:"code"`    // one of the Code constants
	Message string `json:"message"` // a human-readable explanation
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

// Final is the final answer on Topics.ResponseFor(id) or reply_to, QoS 1.
type Final struct {
	ID           string     `json:"id"`                      // the request id
	Status       string     `json:"status"`                  // StatusOK or StatusError
	Text         string     `json:"text"`                    // the answer (partial when cancelled), never the reasoning
	Reasoning    string     `json:"reasoning,omitempty"`     // what a thinking model reasoned before the answer
	FinishReason string     `json:"finish_reason,omitempty"` // one of the Finish constants
	Usage        *Usage     `json:"usage,omitempty"`         // token counts, when the job ran
	Timings      *Timings   `json:"timings,omitempty"`       // speeds, when the job ran
	Error        *ErrorBody `json:"error,omitempty"`         // set when Status is StatusError
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`    // calls the model made
}

// ErrorFinal builds the final answer for a job that failed with err: the
// code comes from a *RequestError, else it is code (CodeInternal when
// empty). The finish reason follows the code.
func ErrorFinal(id, code string, err error) Final {
	msg := err.Error()
	var re *RequestError
	if errors.As(err, &re) {
		code = re.Code
	}
	if code == "" {
		code = CodeInternal
	}
	finish := FinishError
	switch code {
	case CodeCancelled:
		finish = FinishCancelled
	case CodeTimeout:
		finish = FinishTimeout
	}
	return Final{ID: id, Status: StatusError, FinishReason: finish, Error: &ErrorBody{Code: code, Message: msg}}
}

// PlainText is the answer to a plain-text request: the text, or
// "error: <code>: <message>".
func (f *Final) PlainText() []byte {
	if f.Status == StatusError && f.Error != nil {
		return []byte("error: " + f.Error.Code + ": " + f.Error.Message)
	}
	return []byte(f.Text)
}

// Daemon states reported in Status.State.
const (
	StateStarting  = "starting"
	StateLoading   = "loading"
	StateIdle      = "idle"
	StateBusy      = "busy"
	StateReloading = "reloading"
	StateStopping  = "stopping"
)

// Status is the retained JSON on Topics.Status().
type Status struct {
	State           string `json:"state"`            // one of the State constants (States lists them)
	Model           string `json:"model"`            // the served model's name
	Version         string `json:"version"`          // edgellm's version
	Started         string `json:"started"`          // when the daemon started, RFC 3339 in UTC
	UptimeS         int64  `json:"uptime_s"`         // seconds since start
	QueueDepth      int    `json:"queue_depth"`      // jobs waiting, not counting the running one
	JobsOK          uint64 `json:"jobs_ok"`          // requests answered with status ok
	JobsFailed      uint64 `json:"jobs_failed"`      // requests answered with an error other than cancelled
	JobsCancelled   uint64 `json:"jobs_cancelled"`   // requests cancelled by a cancel message
	TokensGenerated uint64 `json:"tokens_generated"` // tokens generated since start
	// DecodeTPS is the decoding speed of the jobs that finished in the last
	// DecodeWindow (their tokens over their decoding time), in tokens per
	// second; omitted when none did, so a restart or an idle hour reads as
	// "unknown" rather than 0.
	DecodeTPS   *float64 `json:"decode_tps,omitempty"`
	MemoryUsed  uint64   `json:"memory_used"`  // resident memory in bytes
	MemoryLimit uint64   `json:"memory_limit"` // the memory budget in bytes
	// CPUTempC and Throttled are omitted where the board does not expose
	// them (thermal zones; the Raspberry Pi firmware's throttled flags).
	CPUTempC  *float64 `json:"cpu_temp_c,omitempty"` // CPU temperature in °C
	Throttled *bool    `json:"throttled,omitempty"`  // the firmware reports throttling or under-voltage now
}

// DecodeWindow is how far back Status.DecodeTPS looks.
const DecodeWindow = 5 * time.Minute

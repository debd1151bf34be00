package mqtt

import (
	"time"

	"github.com/edgellm/edgellm/api"
)

// Final answer statuses.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// StreamChunk is one piece of a streamed answer on Topics.Stream(id), or of
// its reasoning on Topics.ReasoningStream(id), QoS 0. Seq counts from 0 on
// each topic; chunks may be lost but never reordered by the daemon.
type StreamChunk struct {
	ID   string `json:"id"`   // the request id
	Seq  int    `json:"seq"`  // 0, 1, 2, … within the request
	Text string `json:"text"` // the text since the previous chunk
}

// ErrorBody is a final answer's error.
type ErrorBody struct {
	Code    string `json:"code"`    // one of api's Code constants
	Message string `json:"message"` // a human-readable explanation
}

// Final is the final answer on Topics.ResponseFor(id) or reply_to, QoS 1.
type Final struct {
	ID           string         `json:"id"`                      // the request id
	Status       string         `json:"status"`                  // StatusOK or StatusError
	Text         string         `json:"text"`                    // the answer (partial when cancelled), never the reasoning
	Reasoning    string         `json:"reasoning,omitempty"`     // what a thinking model reasoned before the answer
	FinishReason string         `json:"finish_reason,omitempty"` // one of api's Finish constants
	Usage        *api.Usage     `json:"usage,omitempty"`         // token counts, when the job ran
	Timings      *api.Timings   `json:"timings,omitempty"`       // speeds, when the job ran
	Error        *ErrorBody     `json:"error,omitempty"`         // set when Status is StatusError
	ToolCalls    []api.ToolCall `json:"tool_calls,omitempty"`    // calls the model made
}

// FinalOf is the final answer to request id that a carries.
func FinalOf(id string, a api.Answer) Final {
	f := Final{ID: id, Status: StatusOK, Text: a.Text, Reasoning: a.Reasoning, FinishReason: a.FinishReason,
		Usage: a.Usage, Timings: a.Timings, ToolCalls: a.ToolCalls}
	if a.Error != nil {
		f.Status, f.Error = StatusError, &ErrorBody{Code: a.Error.Code, Message: a.Error.Message}
	}
	return f
}

// ErrorFinal builds the final answer for a request that failed with err
// (see api.ErrorAnswer for the code and finish reason).
func ErrorFinal(id, code string, err error) Final {
	return FinalOf(id, api.ErrorAnswer(code, err))
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
	State      string `json:"state"`       // one of the State constants (States lists them)
	Model      string `json:"model"`       // the served model's name
	Version    string `json:"version"`     // edgellm's version
	Started    string `json:"started"`     // when the daemon started, RFC 3339 in UTC
	UptimeS    int64  `json:"uptime_s"`    // seconds since start
	QueueDepth int    `json:"queue_depth"` // jobs waiting, not counting the running ones
	// Slots is how many jobs the node runs at once (queue.slots resolved)
	// and ActiveSlots how many run now; slots is left out before a model
	// is loaded.
	Slots           int    `json:"slots,omitempty"`
	ActiveSlots     int    `json:"active_slots"`
	JobsOK          uint64 `json:"jobs_ok"`          // requests answered with status ok
	JobsFailed      uint64 `json:"jobs_failed"`      // requests answered with an error other than cancelled
	JobsCancelled   uint64 `json:"jobs_cancelled"`   // requests cancelled by a cancel message
	TokensGenerated uint64 `json:"tokens_generated"` // tokens generated since start
	// JobsHTTP counts the requests of the three above that came over the
	// HTTP APIs (OpenAI, Ollama) rather than MQTT.
	JobsHTTP uint64 `json:"jobs_http"`
	// DecodeTPS is the aggregate decoding speed of the jobs that finished
	// in the last DecodeWindow (their tokens over the time during which any
	// of them decoded, so jobs running at once add up), in tokens per
	// second; omitted when none did, so a restart or an idle hour reads as
	// "unknown" rather than 0.
	DecodeTPS   *float64 `json:"decode_tps,omitempty"`
	MemoryUsed  uint64   `json:"memory_used"`  // resident memory in bytes
	MemoryLimit uint64   `json:"memory_limit"` // the memory budget in bytes
	// KVType is how the model's attention layers store keys and values
	// (model.kv_type: f16 or q8_0) and KVCacheBytes the memory of its
	// caches at the configured context, over every slot; omitted before a
	// model is loaded.
	KVType       string `json:"kv_type,omitempty"`
	KVCacheBytes uint64 `json:"kv_cache_bytes,omitempty"`
	// CPUTempC and Throttled are omitted where the board does not expose
	// them (thermal zones; the Raspberry Pi firmware's throttled flags).
	CPUTempC  *float64 `json:"cpu_temp_c,omitempty"` // CPU temperature in °C
	Throttled *bool    `json:"throttled,omitempty"`  // the firmware reports throttling or under-voltage now
}

// DecodeWindow is how far back Status.DecodeTPS looks.
const DecodeWindow = 5 * time.Minute

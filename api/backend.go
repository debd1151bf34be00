package api

import "context"

// Backend is what an HTTP adapter (the OpenAI- and the Ollama-compatible
// API) needs from the daemon: a way to run a request and a description of
// the loaded model. The daemon implements it over its
// queue and worker, so HTTP and MQTT requests share one queue.
type Backend interface {
	// Submit validates req and queues it as a job answered through rsp.
	// A nil error means the job is queued and rsp.Final will be called
	// exactly once; cancelling ctx then cancels the job (queued or
	// running), which is still answered through rsp. An error (an *Error:
	// CodeBadRequest for a request the daemon cannot run, CodeBusy for a
	// full queue, CodeUnavailable while stopping) means rsp is never
	// called.
	Submit(ctx context.Context, req *Request, rsp Responder) error
	// Model describes the loaded model.
	Model() ModelInfo
}

// ModelInfo describes the loaded model to API clients.
type ModelInfo struct {
	// Name is the model's stable name: GGUF general.name, else the file
	// name without .gguf.
	Name string
	// Context is the context length the daemon runs it with, in tokens.
	Context int
	// Created is when the model was loaded, in Unix seconds.
	Created int64
	// Family is the model's architecture (GGUF general.architecture, e.g.
	// "qwen3"); Quantization the type most of its tensors have (e.g.
	// "Q8_0"); Parameters how many weights it has; Size the file's bytes.
	Family       string
	Quantization string
	Parameters   int64
	Size         int64
}

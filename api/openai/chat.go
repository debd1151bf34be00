package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/edgellm/edgellm/api"
)

// chat answers POST /v1/chat/completions.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	cr, err := decodeChat(body)
	if err == nil {
		var req *api.Request
		if req, err = cr.toRequest(); err == nil {
			h.run(w, r, cr, req)
			return
		}
	}
	writeAPIError(w, err)
}

// run submits req and answers it, streamed or whole.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, cr *chatRequest, req *api.Request) {
	// With tools the engine streams a call's text as the model writes it;
	// OpenAI clients must see calls only as tool_calls, so the content of
	// such a stream is held and sent whole, without the calls, at the end.
	holdText := len(req.Tools) > 0 && (req.ToolChoice == nil || req.ToolChoice.Mode != api.ToolChoiceNone)
	rsp := newResponder(req.Stream)
	rsp.holdText = holdText
	// The request's context ends when the client goes away: the backend
	// then cancels the job.
	if err := h.opts.Backend.Submit(r.Context(), req, rsp); err != nil {
		writeAPIError(w, err)
		return
	}
	c := completion{id: newID(), created: time.Now().Unix(), model: h.opts.Backend.Model().Name}
	if req.Stream {
		h.stream(r.Context(), w, rsp, c, cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage)
		return
	}
	select {
	case a := <-rsp.final:
		if a.Error != nil {
			writeAPIError(w, a.Error)
			return
		}
		msg := map[string]any{"role": "assistant", "content": nullIfEmpty(a.Text)}
		if a.Reasoning != "" {
			msg["reasoning_content"] = a.Reasoning
		}
		if len(a.ToolCalls) > 0 {
			msg["tool_calls"] = toolCalls(a.ToolCalls)
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": c.id, "object": "chat.completion", "created": c.created, "model": c.model,
			"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finishReason(a.FinishReason), "logprobs": nil}},
			"usage":   usage(a.Usage),
		})
	case <-r.Context().Done():
		// The client is gone; the backend cancels the job.
	}
}

// completion names one answer in every chunk of it.
type completion struct {
	id      string
	created int64
	model   string
}

// chunk is one SSE chunk's JSON.
func (c completion) chunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{
		"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
		"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
	}
}

// stream answers as server-sent events: a first delta with the role, the
// text and reasoning as they come, tool calls as indexed fragments, a last
// chunk with the finish reason, the usage when asked, and [DONE].
func (h *Handler) stream(ctx context.Context, w http.ResponseWriter, rsp *responder, c completion, includeUsage bool) {
	fl, _ := w.(http.Flusher)
	// The stream starts at the first chunk or a successful final answer,
	// so a job that fails before it has produced anything (a request the
	// engine refuses) is answered with its HTTP error status instead.
	started := false
	var send func(v any) bool
	start := func() bool {
		if started {
			return true
		}
		started = true
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		// Home Assistant streams to TTS only after the role arrives.
		return send(c.chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	}
	send = func(v any) bool {
		b, err := json.Marshal(v)
		if err == nil {
			_, err = fmt.Fprintf(w, "data: %s\n\n", b)
		}
		if err != nil {
			rsp.fail(err)
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-rsp.wake:
			if !start() {
				return
			}
			for _, p := range rsp.take() {
				key := "content"
				if p.reasoning {
					key = "reasoning_content"
				}
				if !send(c.chunk(map[string]any{key: p.text}, nil)) {
					return
				}
			}
		case a := <-rsp.final:
			pending := rsp.take() // chunks that came with the final answer
			if !started && a.Error != nil && len(pending) == 0 {
				writeAPIError(w, a.Error)
				return
			}
			if !start() {
				return
			}
			for _, p := range pending {
				key := "content"
				if p.reasoning {
					key = "reasoning_content"
				}
				if !send(c.chunk(map[string]any{key: p.text}, nil)) {
					return
				}
			}
			if rsp.holdText && a.Text != "" && a.Error == nil {
				if !send(c.chunk(map[string]any{"content": a.Text}, nil)) {
					return
				}
			}
			if a.Error != nil {
				// openai-python raises on a data line with an error key.
				_, d := apiError(a.Error)
				send(errorBody{Error: d})
				return
			}
			for i, tc := range a.ToolCalls {
				// The first fragment of each call carries its id and name,
				// the next its arguments, as OpenAI streams them.
				first := map[string]any{"index": i, "id": tc.ID, "type": "function",
					"function": map[string]any{"name": tc.Name, "arguments": ""}}
				args := map[string]any{"index": i, "function": map[string]any{"arguments": argumentString(tc.Arguments)}}
				if !send(c.chunk(map[string]any{"tool_calls": []any{first}}, nil)) ||
					!send(c.chunk(map[string]any{"tool_calls": []any{args}}, nil)) {
					return
				}
			}
			if !send(c.chunk(map[string]any{}, finishReason(a.FinishReason))) {
				return
			}
			if includeUsage {
				u := map[string]any{"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
					"choices": []any{}, "usage": usage(a.Usage)}
				if !send(u) {
					return
				}
			}
			if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err == nil && fl != nil {
				fl.Flush()
			}
			return
		}
	}
}

// piece is a chunk of text or reasoning waiting to be sent.
type piece struct {
	text      string
	reasoning bool
}

// responder is the api.Responder of one HTTP request. The worker's chunks
// are buffered and the handler's goroutine writes them, so a slow client
// never slows decoding; once a write failed (the client is gone) the next
// chunk is refused, which stops the job.
type responder struct {
	streaming bool
	holdText  bool            // drop text chunks: the final answer's text is sent instead
	wake      chan struct{}   // a chunk is pending
	final     chan api.Answer // the final answer, once

	mu      sync.Mutex
	pending []piece
	gone    error
}

func newResponder(streaming bool) *responder {
	return &responder{streaming: streaming, wake: make(chan struct{}, 1), final: make(chan api.Answer, 1)}
}

// Text takes a chunk of the answer.
func (r *responder) Text(chunk string) error { return r.add(piece{text: chunk}) }

// Reasoning takes a chunk of the reasoning.
func (r *responder) Reasoning(chunk string) error { return r.add(piece{text: chunk, reasoning: true}) }

func (r *responder) add(p piece) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone != nil {
		return r.gone
	}
	if !r.streaming || p.text == "" || r.holdText && !p.reasoning {
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
func (r *responder) Final(a api.Answer) {
	select {
	case r.final <- a:
	default:
	}
}

// take returns and clears the pending chunks, merging neighbours of the
// same kind.
func (r *responder) take() []piece {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []piece
	for _, p := range r.pending {
		if n := len(out); n > 0 && out[n-1].reasoning == p.reasoning {
			out[n-1].text += p.text
			continue
		}
		out = append(out, p)
	}
	r.pending = nil
	return out
}

// fail records that the client is gone.
func (r *responder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone == nil {
		r.gone = fmt.Errorf("writing to the HTTP client: %w", err)
	}
}

// finishReason maps an answer's finish reason to OpenAI's.
func finishReason(f string) string {
	switch f {
	case api.FinishToolCall:
		return "tool_calls"
	case api.FinishLength:
		return "length"
	}
	return "stop"
}

// toolCalls writes calls in OpenAI's shape, arguments as a JSON string.
func toolCalls(calls []api.ToolCall) []map[string]any {
	out := make([]map[string]any, len(calls))
	for i, tc := range calls {
		out[i] = map[string]any{"id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": argumentString(tc.Arguments)}}
	}
	return out
}

// argumentString is a call's arguments as the JSON string OpenAI sends:
// the object's text ("{}" when there is none); a string holding the object
// already is unwrapped.
func argumentString(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return "{}"
	}
	var s string
	if b[0] == '"' && json.Unmarshal(b, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) == nil {
		return buf.String()
	}
	return string(b)
}

// usage writes token counts in OpenAI's shape.
func usage(u *api.Usage) map[string]any {
	if u == nil {
		u = &api.Usage{}
	}
	return map[string]any{
		"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens,
		"total_tokens":              u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details":     map[string]int{"cached_tokens": u.CachedTokens},
		"completion_tokens_details": map[string]int{"reasoning_tokens": u.ReasoningTokens},
	}
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

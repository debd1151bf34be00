package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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

// run submits a chat request and answers it, streamed or whole.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, cr *chatRequest, req *api.Request) {
	c := completion{id: newID("chatcmpl-"), object: "chat.completion.chunk", chat: true}
	h.answer(w, r, req, c, cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage, func(c completion, a api.Answer) {
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
	})
}

// answer submits req and answers it: streamed as c's chunks, or whole by
// whole (called with a successful answer only, and c with its created time
// and model set).
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, req *api.Request, c completion, includeUsage bool, whole func(completion, api.Answer)) {
	rsp := newResponder(req.Stream)
	// The request's context ends when the client goes away: the backend
	// then cancels the job.
	if err := h.opts.Backend.Submit(r.Context(), req, rsp); err != nil {
		writeAPIError(w, err)
		return
	}
	c.created, c.model = time.Now().Unix(), h.opts.Backend.Model().Name
	if req.Stream {
		c.stream(r.Context(), w, rsp, includeUsage)
		return
	}
	select {
	case a := <-rsp.final:
		if a.Error != nil {
			writeAPIError(w, a.Error)
			return
		}
		whole(c, a)
	case <-r.Context().Done():
		// The client is gone; the backend cancels the job.
	}
}

// completion names one answer in every chunk of it, and says which API's
// chunks they are: chat (deltas) or text completion (text).
type completion struct {
	id      string
	object  string // of each chunk
	created int64
	model   string
	chat    bool
	echo    string // a text completion's prompt, sent first (echo: true)
}

// chunk is one SSE chunk's JSON: for a chat, delta is the choice's delta;
// for a text completion, its "content" is the choice's text.
func (c completion) chunk(delta map[string]any, finish any) map[string]any {
	choice := map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil}
	if c.chat {
		choice["delta"] = delta
	} else {
		text, _ := delta["content"].(string)
		choice["text"] = text
	}
	return map[string]any{"id": c.id, "object": c.object, "created": c.created, "model": c.model, "choices": []map[string]any{choice}}
}

// stream answers as server-sent events: for a chat a first delta with the
// role; the text and reasoning as they come; tool calls as indexed
// fragments; a last chunk with the finish reason; the usage when asked; and
// [DONE].
func (c completion) stream(ctx context.Context, w http.ResponseWriter, rsp *responder, includeUsage bool) {
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
		if !c.chat {
			return c.echo == "" || send(c.chunk(map[string]any{"content": c.echo}, nil))
		}
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
	sendPieces := func(ps []piece) bool {
		for _, p := range ps {
			key := "content"
			if p.reasoning {
				if !c.chat {
					continue // a text completion has no reasoning
				}
				key = "reasoning_content"
			}
			if !send(c.chunk(map[string]any{key: p.text}, nil)) {
				return false
			}
		}
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-rsp.wake:
			if !start() || !sendPieces(rsp.take()) {
				return
			}
		case a := <-rsp.final:
			pending := rsp.take() // chunks that came with the final answer
			if !started && a.Error != nil && len(pending) == 0 {
				writeAPIError(w, a.Error)
				return
			}
			if !start() || !sendPieces(pending) {
				return
			}
			// With tools the backend streams the text before the calls;
			// what the calls did not take of the rest comes with the
			// answer.
			if rest := unsent(a.Text, rsp.sent()); rest != "" && a.Error == nil {
				if !send(c.chunk(map[string]any{"content": rest}, nil)) {
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
				u := map[string]any{"id": c.id, "object": c.object, "created": c.created, "model": c.model,
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
	wake      chan struct{}   // a chunk is pending
	final     chan api.Answer // the final answer, once

	mu       sync.Mutex
	pending  []piece
	streamed strings.Builder // the answer text taken so far
	gone     error
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
	if !r.streaming || p.text == "" {
		return nil
	}
	r.pending = append(r.pending, p)
	if !p.reasoning {
		r.streamed.WriteString(p.text)
	}
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

// sent returns the answer text taken so far (all of it is sent before the
// final answer is).
func (r *responder) sent() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streamed.String()
}

// unsent returns what of the final text has not streamed. The streamed
// text is a prefix of the model's text; the final text is that whole text,
// or the part of it before the tool calls with the space around it trimmed.
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

package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/api/internal/web"
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
	rsp := api.NewBuffered(req.Stream, holdText)
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
	a, ok := web.Await(r.Context(), rsp)
	switch {
	case !ok: // the client is gone; the backend cancels the job
	case a.Error != nil:
		writeAPIError(w, a.Error)
	default:
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
func (h *Handler) stream(ctx context.Context, w http.ResponseWriter, rsp *api.Buffered, c completion, includeUsage bool) {
	st := &web.Stream{W: w, Rsp: rsp, ContentType: "text/event-stream",
		Frame: func(b []byte) []byte { return fmt.Appendf(nil, "data: %s\n\n", b) }}
	// Home Assistant streams to TTS only after the role arrives.
	st.Begin = func() bool { return st.Send(c.chunk(map[string]any{"role": "assistant", "content": ""}, nil)) }
	a, ok := st.Run(ctx, func(p api.Piece) any {
		key := "content"
		if p.Reasoning {
			key = "reasoning_content"
		}
		return c.chunk(map[string]any{key: p.Text}, nil)
	})
	switch {
	case !ok:
		return
	case !st.Started() && a.Error != nil:
		writeAPIError(w, a.Error)
		return
	case a.Error != nil:
		// openai-python raises on a data line with an error key.
		_, d := apiError(a.Error)
		st.Send(errorBody{Error: d})
		return
	}
	if rsp.HoldsText() && a.Text != "" && !st.Send(c.chunk(map[string]any{"content": a.Text}, nil)) {
		return
	}
	for i, tc := range a.ToolCalls {
		// The first fragment of each call carries its id and name, the
		// next its arguments, as OpenAI streams them.
		first := map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}
		args := map[string]any{"index": i, "function": map[string]any{"arguments": argumentString(tc.Arguments)}}
		if !st.Send(c.chunk(map[string]any{"tool_calls": []any{first}}, nil)) ||
			!st.Send(c.chunk(map[string]any{"tool_calls": []any{args}}, nil)) {
			return
		}
	}
	if !st.Send(c.chunk(map[string]any{}, finishReason(a.FinishReason))) {
		return
	}
	if includeUsage {
		u := map[string]any{"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
			"choices": []any{}, "usage": usage(a.Usage)}
		if !st.Send(u) {
			return
		}
	}
	st.Raw([]byte("data: [DONE]\n\n"))
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

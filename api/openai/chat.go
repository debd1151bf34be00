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
	rsp := api.NewBuffered(req.Stream)
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
	a, ok := web.Await(r.Context(), rsp)
	switch {
	case !ok: // the client is gone; the backend cancels the job
	case a.Error != nil:
		writeAPIError(w, a.Error)
	default:
		whole(c, a)
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
// role; the text and reasoning as they come (a text completion has no
// reasoning); tool calls as indexed fragments; a last chunk with the finish
// reason; the usage when asked; and [DONE].
func (c completion) stream(ctx context.Context, w http.ResponseWriter, rsp *api.Buffered, includeUsage bool) {
	st := &web.Stream{W: w, Rsp: rsp, ContentType: "text/event-stream",
		Frame: func(b []byte) []byte { return fmt.Appendf(nil, "data: %s\n\n", b) }}
	st.Begin = func() bool {
		if !c.chat {
			return c.echo == "" || st.Send(c.chunk(map[string]any{"content": c.echo}, nil))
		}
		// Home Assistant streams to TTS only after the role arrives.
		return st.Send(c.chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	}
	a, ok := st.Run(ctx, func(p api.Piece) any {
		switch {
		case !p.Reasoning:
			return c.chunk(map[string]any{"content": p.Text}, nil)
		case c.chat:
			return c.chunk(map[string]any{"reasoning_content": p.Text}, nil)
		}
		return nil // a text completion's reasoning is not sent
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
	// With tools the backend streams the text before the calls; what the
	// calls did not take of the rest comes with the answer.
	if rest := rsp.Unsent(a.Text); rest != "" && !st.Send(c.chunk(map[string]any{"content": rest}, nil)) {
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
		u := map[string]any{"id": c.id, "object": c.object, "created": c.created, "model": c.model,
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

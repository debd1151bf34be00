package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/api/internal/web"
)

// options are the model options of a chat or generate request that
// edgellm uses. Ollama's others (num_keep, typical_p, repeat_last_n,
// presence_penalty, num_thread, …) are ignored, as Ollama ignores options a
// model does not use; a known one of the wrong type is an error.
type options struct {
	NumCtx        *int            `json:"num_ctx"`
	NumPredict    *int            `json:"num_predict"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	MinP          *float64        `json:"min_p"`
	Seed          *int64          `json:"seed"`
	Stop          json.RawMessage `json:"stop"` // an array of strings (or one string)
	RepeatPenalty *float64        `json:"repeat_penalty"`
}

// common are the fields chat and generate share.
type common struct {
	Model     string            `json:"model"`
	Format    json.RawMessage   `json:"format"`
	Options   *options          `json:"options"`
	Stream    *bool             `json:"stream"`
	KeepAlive json.RawMessage   `json:"keep_alive"`
	Think     json.RawMessage   `json:"think"`
	Images    []json.RawMessage `json:"images"`
}

// chatRequest is the body of POST /api/chat.
type chatRequest struct {
	common
	Messages []message `json:"messages"`
	Tools    []tool    `json:"tools"`
}

// generateRequest is the body of POST /api/generate. Context (the tokens a
// previous answer returned) is ignored: edgellm returns none.
type generateRequest struct {
	common
	Prompt   string `json:"prompt"`
	Suffix   string `json:"suffix"`
	System   string `json:"system"`
	Template string `json:"template"`
	Raw      bool   `json:"raw"`
}

// message is one message of a chat. Thinking, an earlier answer's
// reasoning, is read and dropped (templates leave past reasoning out).
type message struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	Thinking   string            `json:"thinking"`
	Images     []json.RawMessage `json:"images"`
	ToolCalls  []toolCall        `json:"tool_calls"`
	ToolName   string            `json:"tool_name"`
	ToolCallID string            `json:"tool_call_id"`
}

// toolCall is a call in Ollama's shape; Arguments is a JSON object.
type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// tool is a tool in Ollama's (OpenAI's) shape; type defaults to function.
type tool struct {
	Type     string           `json:"type"`
	Function api.ToolFunction `json:"function"`
}

// toRequest fills the request fields chat and generate share.
func (c *common) toRequest(req *api.Request) error {
	if len(c.Images) > 0 {
		return api.BadField("images", "this server's model reads text only")
	}
	if err := keepAlive(c.KeepAlive); err != nil {
		return err
	}
	if c.Stream == nil || *c.Stream {
		req.Stream = true
	}
	think, err := decodeThink(c.Think)
	if err != nil {
		return err
	}
	req.Think = think
	if err := decodeFormat(c.Format, req); err != nil {
		return err
	}
	if o := c.Options; o != nil {
		// The context is model.context whatever num_ctx says: a larger one
		// is capped to it (Ollama clients ask for more than a small board
		// runs; Home Assistant sends 8192), a smaller one changes nothing.
		if o.NumCtx != nil && *o.NumCtx < 0 {
			return api.BadField("options.num_ctx", "must not be negative, got %d", *o.NumCtx)
		}
		if n := o.NumPredict; n != nil {
			switch {
			case *n == -1 || *n == -2:
				// Ollama's "no limit" and "fill the context": up to
				// limits.max_tokens.
			case *n < 1:
				return api.BadField("options.num_predict", "must be at least 1 (or -1 for no limit), got %d", *n)
			default:
				req.MaxTokens = n
			}
		}
		req.Temperature, req.TopP, req.TopK, req.MinP, req.Seed = o.Temperature, o.TopP, o.TopK, o.MinP, o.Seed
		req.RepeatPenalty = o.RepeatPenalty
		if req.Stop, err = web.DecodeStop(o.Stop, "options.stop"); err != nil {
			return err
		}
	}
	return nil
}

// keepAlive checks keep_alive's type (a duration string like "5m", or
// seconds as a number, -1 for ever); its value is ignored: the model stays
// loaded.
func keepAlive(raw json.RawMessage) error {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var s string
	var n float64
	if json.Unmarshal(b, &s) != nil && json.Unmarshal(b, &n) != nil {
		return api.BadField("keep_alive", "must be a duration string (\"5m\") or a number of seconds, got %s", abbreviate(string(b)))
	}
	return nil
}

// decodeThink reads think: a boolean, or Ollama's levels "high", "medium",
// "low", which turn thinking on (edgellm has no levels).
func decodeThink(raw json.RawMessage) (*bool, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var on bool
	if json.Unmarshal(b, &on) == nil {
		return &on, nil
	}
	var level string
	if json.Unmarshal(b, &level) == nil {
		switch level {
		case "high", "medium", "low":
			on = true
			return &on, nil
		}
	}
	return nil, api.BadField("think", `must be true, false, "high", "medium" or "low", got %s`, abbreviate(string(b)))
}

// decodeFormat reads format: "json" (an object, as Ollama's JSON grammar
// answers) or a JSON Schema object.
func decodeFormat(raw json.RawMessage, req *api.Request) error {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" || string(b) == `""` {
		return nil
	}
	if string(b) == `"json"` {
		req.Schema = json.RawMessage(`{"type":"object"}`)
		return nil
	}
	if b[0] != '{' {
		return api.BadField("format", `must be "json" or a JSON Schema object, got %s`, abbreviate(string(b)))
	}
	req.Schema = b
	return nil
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// toRequest turns a chat request into the transport-neutral request. The
// model name is not checked: whatever it names, the loaded model answers.
// Ollama's calls carry no ids and its tool messages name no call: the
// calls of an assistant turn get ids here, and each tool message that
// follows answers the first call not yet answered (of its tool_name, when
// it gives one), so templates that pair results with calls by id can.
func (cr *chatRequest) toRequest() (*api.Request, error) {
	req := &api.Request{}
	if err := cr.common.toRequest(req); err != nil {
		return nil, err
	}
	for _, t := range cr.Tools {
		if t.Type == "" {
			t.Type = "function"
		}
		req.Tools = append(req.Tools, api.Tool{Type: t.Type, Function: t.Function})
	}
	type open struct{ id, name string }
	var pending []open
	req.Messages = make([]api.Message, 0, len(cr.Messages))
	for i, msg := range cr.Messages {
		if len(msg.Images) > 0 {
			return nil, api.BadField("messages", "messages[%d].images: this server's model reads text only", i)
		}
		am := api.Message{Role: strings.ToLower(msg.Role), Content: msg.Content}
		switch am.Role {
		case api.RoleAssistant:
			pending = pending[:0]
			for k, tc := range msg.ToolCalls {
				id := tc.ID
				if id == "" {
					id = fmt.Sprintf("call_%d_%d", i, k)
				}
				am.ToolCalls = append(am.ToolCalls, api.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
				pending = append(pending, open{id, tc.Function.Name})
			}
		case api.RoleTool:
			am.ToolCallID, am.Name = msg.ToolCallID, msg.ToolName
			for k, p := range pending {
				if am.ToolCallID == p.id || am.ToolCallID == "" && (am.Name == "" || am.Name == p.name) {
					am.ToolCallID, am.Name = p.id, p.name
					pending = append(pending[:k], pending[k+1:]...)
					break
				}
			}
		default:
			if len(msg.ToolCalls) > 0 {
				return nil, api.BadField("messages", "messages[%d]: only assistant messages have tool_calls", i)
			}
		}
		req.Messages = append(req.Messages, am)
	}
	return req, nil
}

// toRequest turns a generate request into the transport-neutral request:
// the prompt as one user turn of the chat template, or with raw as it is.
func (gr *generateRequest) toRequest() (*api.Request, error) {
	req := &api.Request{Prompt: gr.Prompt, System: gr.System}
	if err := gr.common.toRequest(req); err != nil {
		return nil, err
	}
	switch {
	case gr.Suffix != "":
		return nil, api.BadField("suffix", "fill-in-the-middle is not supported")
	case gr.Template != "":
		return nil, api.BadField("template", "Ollama's Go templates are not supported; set model.chat_template in edgellm's configuration")
	}
	req.Raw = gr.Raw
	return req, nil
}

// chat answers POST /api/chat.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) { h.answer(w, r, true) }

// generate answers POST /api/generate.
func (h *Handler) generate(w http.ResponseWriter, r *http.Request) { h.answer(w, r, false) }

// answer answers a chat or a generate request.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, chat bool) {
	sh := shape{chat: chat, model: Name(h.opts.Backend.Model()), started: time.Now()}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	var req *api.Request
	var err error
	if chat {
		var cr chatRequest
		if err = web.Decode(body, &cr); err == nil {
			req, err = cr.toRequest()
		}
	} else {
		var gr generateRequest
		if err = web.Decode(body, &gr); err == nil {
			req, err = gr.toRequest()
		}
	}
	if err != nil {
		writeAPIError(w, err)
		return
	}
	if len(req.Messages) == 0 && req.Prompt == "" {
		// Ollama loads the model for a chat without messages or a
		// generate without a prompt, and says so.
		o := sh.object("", "")
		o["done"], o["done_reason"] = true, "load"
		writeJSON(w, http.StatusOK, o)
		return
	}
	h.run(w, r, req, sh)
}

// run submits req and answers it, streamed as NDJSON or whole.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, req *api.Request, sh shape) {
	rsp := api.NewBuffered(req.Stream)
	// The request's context ends when the client goes away: the backend
	// then cancels the job.
	switch err := h.opts.Backend.Submit(r.Context(), req, rsp); {
	case err != nil:
		writeAPIError(w, err)
	case req.Stream:
		h.stream(r.Context(), w, rsp, sh)
	default:
		// Without an answer the client is gone; the backend cancels the job.
		if a, ok := web.Await(r.Context(), rsp); ok && a.Error != nil {
			writeAPIError(w, a.Error)
		} else if ok {
			writeJSON(w, http.StatusOK, sh.final(a, a.Text, a.Reasoning))
		}
	}
}

// stream answers as NDJSON: an object per piece of text or reasoning as
// it comes, then the last one (done: true) with the tool calls, the done
// reason, the counters and any text that did not stream. A failure after the stream started is an
// {"error"} line, as Ollama sends it.
func (h *Handler) stream(ctx context.Context, w http.ResponseWriter, rsp *api.Buffered, sh shape) {
	st := &web.Stream{W: w, Rsp: rsp, ContentType: "application/x-ndjson",
		Frame: func(b []byte) []byte { return append(b, '\n') }}
	a, ok := st.Run(ctx, func(p api.Piece) any { return sh.chunk(p) })
	switch {
	case !ok:
	case !st.Started() && a.Error != nil:
		writeAPIError(w, a.Error)
	case a.Error != nil:
		_, _, msg := web.Failure(a.Error)
		st.Send(map[string]string{"error": msg})
	default:
		// With tools the daemon streams the text before the calls; the
		// last object carries what of the rest the calls did not take.
		st.Send(sh.final(a, rsp.Unsent(a.Text), ""))
	}
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// shape writes the objects of an answer: /api/chat's (the text and
// reasoning in message.content and message.thinking) or /api/generate's
// (in response and thinking).
type shape struct {
	chat    bool
	model   string
	started time.Time // when the request arrived
}

// object is an object of the answer with text and reasoning.
func (s shape) object(text, reasoning string) map[string]any {
	o := map[string]any{"model": s.model, "created_at": now()}
	body := o
	if s.chat {
		body = map[string]any{"role": "assistant"}
		o["message"] = body
		body["content"] = text
	} else {
		o["response"] = text
	}
	if reasoning != "" {
		body["thinking"] = reasoning
	}
	return o
}

// chunk is the object of a streamed piece.
func (s shape) chunk(p api.Piece) map[string]any {
	var o map[string]any
	if p.Reasoning {
		o = s.object("", p.Text)
	} else {
		o = s.object(p.Text, "")
	}
	o["done"] = false
	return o
}

// final is the last object, with text and reasoning: the whole answer's,
// or in a stream what was held back (the text with tools; never the
// reasoning, which streams).
func (s shape) final(a api.Answer, text, reasoning string) map[string]any {
	o := s.object(text, reasoning)
	if len(a.ToolCalls) > 0 && s.chat {
		o["message"].(map[string]any)["tool_calls"] = toolCalls(a.ToolCalls)
	}
	return done(o, a, s.started)
}

// done adds to a last object done, done_reason and the counters, durations
// in nanoseconds: total since the request arrived, load 0 (the model stays
// loaded), the prompt's until the first token, the generation's at the
// decoding speed.
func done(o map[string]any, a api.Answer, started time.Time) map[string]any {
	reason := "stop"
	if a.FinishReason == api.FinishLength {
		reason = "length"
	}
	var u api.Usage
	if a.Usage != nil {
		u = *a.Usage
	}
	var promptNs, evalNs int64
	if t := a.Timings; t != nil {
		promptNs = int64(t.TTFTMs * 1e6)
		if t.DecodeTPS > 0 {
			evalNs = int64(float64(u.CompletionTokens) / t.DecodeTPS * 1e9)
		}
	}
	o["done"], o["done_reason"] = true, reason
	o["total_duration"], o["load_duration"] = time.Since(started).Nanoseconds(), 0
	o["prompt_eval_count"], o["prompt_eval_duration"] = u.PromptTokens, promptNs
	o["eval_count"], o["eval_duration"] = u.CompletionTokens, evalNs
	return o
}

// toolCalls writes calls in Ollama's shape, arguments as a JSON object.
func toolCalls(calls []api.ToolCall) []map[string]any {
	out := make([]map[string]any, len(calls))
	for i, tc := range calls {
		c := map[string]any{"function": map[string]any{"index": i, "name": tc.Name, "arguments": argumentObject(tc.Arguments)}}
		if tc.ID != "" {
			c["id"] = tc.ID
		}
		out[i] = c
	}
	return out
}

// argumentObject is a call's arguments as a JSON object: a string holding
// the object is unwrapped, none is {}.
func argumentObject(raw json.RawMessage) json.RawMessage {
	b := bytes.TrimSpace(raw)
	var s string
	if len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &s) == nil {
		b = bytes.TrimSpace([]byte(s))
	}
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return json.RawMessage(`{}`)
	}
	return b
}

package openai

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/api/internal/web"
)

// textRequest is the body of POST /v1/completions: a plain text completion
// of prompt, without the chat template. As for chats, parameters edgellm
// does not use (frequency_penalty, logit_bias, user, …) are ignored and a
// field of the wrong type is an error; those that would change the answer
// in ways it cannot give (suffix, logprobs, n or best_of above 1, a prompt
// of token ids) are refused.
type textRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"` // a string, or an array of one string
	MaxTokens     *int            `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	Seed          *int64          `json:"seed"`
	Stop          json.RawMessage `json:"stop"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Echo     bool    `json:"echo"`
	Suffix   *string `json:"suffix"`
	Logprobs *int    `json:"logprobs"`
	N        *int    `json:"n"`
	BestOf   *int    `json:"best_of"`
	User     string  `json:"user"`
}

// toRequest turns a text completion request into a raw-prompt request.
func (tr *textRequest) toRequest() (*api.Request, error) {
	req := &api.Request{Raw: true, Temperature: tr.Temperature, TopP: tr.TopP, Seed: tr.Seed, Stream: tr.Stream, MaxTokens: tr.MaxTokens}
	switch {
	case tr.N != nil && *tr.N != 1:
		return nil, badRequest("n", "only n = 1 is supported, got %d", *tr.N)
	case tr.BestOf != nil && *tr.BestOf != 1:
		return nil, badRequest("best_of", "only best_of = 1 is supported, got %d", *tr.BestOf)
	case tr.Suffix != nil && *tr.Suffix != "":
		return nil, badRequest("suffix", "insertion (a suffix) is not supported")
	case tr.Logprobs != nil && *tr.Logprobs != 0:
		return nil, badRequest("logprobs", "log probabilities are not supported")
	case tr.MaxTokens != nil && *tr.MaxTokens < 1:
		return nil, badRequest("max_tokens", "must be at least 1, got %d", *tr.MaxTokens)
	}
	prompt, err := textPrompt(tr.Prompt)
	if err != nil {
		return nil, err
	}
	req.Prompt = prompt
	if req.Stop, err = web.DecodeStop(tr.Stop, "stop"); err != nil {
		return nil, err
	}
	return req, nil
}

// textPrompt reads prompt: a string, or an array holding one string (the
// API allows batches; one completion is answered at a time here).
func textPrompt(raw json.RawMessage) (string, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return "", badRequest("prompt", "missing: give the text to complete")
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		return one, nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return "", badRequest("prompt", "must be a string or an array of one string (token ids are not supported)")
	}
	if len(many) != 1 {
		return "", badRequest("prompt", "one prompt at a time: got an array of %d", len(many))
	}
	return many[0], nil
}

// completions answers POST /v1/completions.
func (h *Handler) completions(w http.ResponseWriter, r *http.Request) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	var tr textRequest
	var req *api.Request
	err := web.Decode(body, &tr)
	if err == nil {
		req, err = tr.toRequest()
	}
	if err != nil {
		writeAPIError(w, err)
		return
	}
	c := completion{id: newID("cmpl-"), object: "text_completion"}
	if tr.Echo {
		c.echo = req.Prompt
	}
	h.answer(w, r, req, c, tr.StreamOptions != nil && tr.StreamOptions.IncludeUsage, func(c completion, a api.Answer) {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": c.id, "object": "text_completion", "created": c.created, "model": c.model,
			"choices": []map[string]any{{"index": 0, "text": c.echo + a.Text, "finish_reason": finishReason(a.FinishReason), "logprobs": nil}},
			"usage":   usage(a.Usage),
		})
	})
}

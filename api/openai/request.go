package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/api/internal/web"
)

// chatRequest is the body of POST /v1/chat/completions. Fields OpenAI
// defines that edgellm does not use (frequency_penalty, logit_bias,
// parallel_tool_calls, store, metadata, …) are ignored, as llama.cpp's
// server ignores them; a field of the wrong type is an error.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"` // a string or an array of strings
	User                string          `json:"user"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// ReasoningEffort (OpenAI's reasoning models) and
	// ChatTemplateKwargs.EnableThinking (llama.cpp's and vLLM's server) turn
	// a thinking model's reasoning on or off for this request.
	ReasoningEffort    *string `json:"reasoning_effort"`
	ChatTemplateKwargs *struct {
		EnableThinking *bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
	Tools          []api.Tool      `json:"tools"`
	ToolChoice     *api.ToolChoice `json:"tool_choice"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// chatMessage is one message; Content is a string, null, or an array of
// content parts of which only text parts are supported.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []api.ToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// badRequest is a CodeBadRequest error naming an OpenAI parameter.
func badRequest(param, format string, args ...any) *api.Error {
	return api.BadField(param, format, args...)
}

// decodeChat decodes a chat completion body. Errors are *api.Error with
// CodeBadRequest.
func decodeChat(body []byte) (*chatRequest, error) {
	var cr chatRequest
	if err := web.Decode(body, &cr); err != nil {
		return nil, err
	}
	return &cr, nil
}

// toRequest turns a chat completion request into the transport-neutral
// request. The model name is not checked: whatever it names, the loaded
// model answers (as llama.cpp's server does).
func (cr *chatRequest) toRequest() (*api.Request, error) {
	req := &api.Request{
		Temperature: cr.Temperature,
		TopP:        cr.TopP,
		Seed:        cr.Seed,
		Stream:      cr.Stream,
		Tools:       cr.Tools,
		ToolChoice:  cr.ToolChoice,
	}
	if cr.N != nil && *cr.N != 1 {
		return nil, badRequest("n", "only n = 1 is supported, got %d", *cr.N)
	}
	switch {
	case cr.MaxCompletionTokens != nil:
		req.MaxTokens = cr.MaxCompletionTokens
		if cr.MaxTokens != nil && *cr.MaxTokens != *cr.MaxCompletionTokens {
			return nil, badRequest("max_tokens", "max_tokens %d and max_completion_tokens %d disagree; give one", *cr.MaxTokens, *cr.MaxCompletionTokens)
		}
	case cr.MaxTokens != nil:
		req.MaxTokens = cr.MaxTokens
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		param := "max_tokens"
		if cr.MaxCompletionTokens != nil {
			param = "max_completion_tokens"
		}
		return nil, badRequest(param, "must be at least 1, got %d", *req.MaxTokens)
	}
	if err := cr.thinking(req); err != nil {
		return nil, err
	}
	stop, err := web.DecodeStop(cr.Stop, "stop")
	if err != nil {
		return nil, err
	}
	req.Stop = stop
	if rf := cr.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			// OpenAI's JSON mode answers with an object, never another
			// JSON value.
			req.Schema = json.RawMessage(`{"type":"object"}`)
		case "json_schema":
			if rf.JSONSchema == nil || len(bytes.TrimSpace(rf.JSONSchema.Schema)) == 0 {
				return nil, badRequest("response_format", "json_schema needs json_schema.schema")
			}
			req.Schema = rf.JSONSchema.Schema
		default:
			return nil, badRequest("response_format", "type %q is not text, json_object or json_schema", rf.Type)
		}
	}
	if cr.Messages == nil {
		return nil, badRequest("messages", "missing: give the conversation")
	}
	req.Messages = make([]api.Message, 0, len(cr.Messages))
	for i, m := range cr.Messages {
		text, err := messageText(m.Content)
		if err != nil {
			return nil, badRequest("messages", "messages[%d].content: %v", i, err)
		}
		role := m.Role
		if role == "developer" { // OpenAI's newer name for system
			role = api.RoleSystem
		}
		am := api.Message{Role: role, Content: text, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		if role == api.RoleTool {
			am.Name = m.Name // other roles' names are a label for the client only
		}
		req.Messages = append(req.Messages, am)
	}
	return req, nil
}

// thinking sets req.Think from reasoning_effort ("none" and "minimal" turn
// the reasoning off, "low", "medium" and "high" on: a small model has no
// degrees between) or chat_template_kwargs.enable_thinking; unset, the
// daemon's sampling.think applies. The two must agree when both are given.
func (cr *chatRequest) thinking(req *api.Request) error {
	if e := cr.ReasoningEffort; e != nil {
		var on bool
		switch *e {
		case "none", "minimal":
		case "low", "medium", "high":
			on = true
		default:
			return badRequest("reasoning_effort", "must be none, minimal, low, medium or high, got %q", *e)
		}
		req.Think = &on
	}
	if k := cr.ChatTemplateKwargs; k != nil && k.EnableThinking != nil {
		if req.Think != nil && *req.Think != *k.EnableThinking {
			return badRequest("chat_template_kwargs", "enable_thinking %v disagrees with reasoning_effort %q", *k.EnableThinking, *cr.ReasoningEffort)
		}
		on := *k.EnableThinking
		req.Think = &on
	}
	return nil
}

// messageText reads a message's content: a string, null, or an array of
// {"type":"text","text":…} parts, joined with newlines.
func messageText(raw json.RawMessage) (string, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return "", errors.New("must be a string, null or an array of text parts")
	}
	texts := make([]string, 0, len(parts))
	for k, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", fmt.Errorf("part %d: only {\"type\":\"text\",\"text\":…} parts are supported, got type %q", k, p.Type)
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

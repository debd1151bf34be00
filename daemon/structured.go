package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/grammar"
	"github.com/edgellm/edgellm/inference/sampler"
	"github.com/edgellm/edgellm/mqtt"
)

// toolMode is how a job may use its tools.
type toolMode int

const (
	toolsOff      toolMode = iota // no tools (or tool_choice "none")
	toolsAuto                     // the model may answer or call a tool
	toolsRequired                 // the answer is a call (of the named tool, if one is named)
)

func jobToolMode(job Job) toolMode {
	if len(job.Tools) == 0 {
		return toolsOff
	}
	if job.ToolChoice == nil {
		return toolsAuto
	}
	switch job.ToolChoice.Mode {
	case mqtt.ToolChoiceNone:
		return toolsOff
	case mqtt.ToolChoiceRequired, mqtt.ToolChoiceFunction:
		return toolsRequired
	}
	return toolsAuto
}

// callableTools are the tools a required call may name: the named one, or all.
func callableTools(job Job) []mqtt.Tool {
	if job.ToolChoice != nil && job.ToolChoice.Mode == mqtt.ToolChoiceFunction {
		for _, t := range job.Tools {
			if t.Function.Name == job.ToolChoice.Function {
				return []mqtt.Tool{t}
			}
		}
		return nil
	}
	return job.Tools
}

func badField(field string, err error) error {
	return &mqtt.RequestError{Code: mqtt.CodeBadRequest, Field: field, Msg: err.Error()}
}

// jobGrammar compiles the constraint of a job: a required tool call, a JSON
// Schema, or any JSON value; nil when the output is free text.
//
// With tool_choice "auto" the grammar is that of a call of any tool, and
// start (non-nil) tells where a call begins: the output is free text until
// then and constrained from there.
func jobGrammar(job Job) (g *grammar.Grammar, start func([]byte) int, err error) {
	if mode := jobToolMode(job); mode == toolsRequired || mode == toolsAuto && len(job.Schema) == 0 && !job.JSON {
		tools := callableTools(job)
		if len(tools) == 0 {
			return nil, nil, badField("tool_choice", fmt.Errorf("names %q, which is not in tools", job.ToolChoice.Function))
		}
		gt := make([]grammar.Tool, len(tools))
		for i, t := range tools {
			gt[i] = grammar.Tool{Name: t.Function.Name, Parameters: t.Function.Parameters}
		}
		if g, err = grammar.CompileToolCall(gt, grammar.Options{}); err != nil {
			return nil, nil, badField("tools", err)
		}
		if mode == toolsAuto {
			start = toolCallStart
		}
		return g, start, nil
	}
	if len(job.Schema) > 0 {
		g, err := grammar.CompileSchema(job.Schema, grammar.Options{})
		if err != nil {
			return nil, nil, badField("schema", err)
		}
		return g, nil, nil
	}
	if job.JSON {
		return grammar.JSON(grammar.Options{}), nil, nil
	}
	return nil, nil, nil
}

// constraint is a job's compiled output constraint (see jobGrammar).
type constraint struct {
	grammar *grammar.Grammar
	start   func([]byte) int
}

// samplerParams are the sampler's parameters for a job.
func samplerParams(s Sampling) sampler.Params {
	return sampler.Params{
		Temperature:   float32(s.Temperature),
		TopK:          s.TopK,
		TopP:          float32(s.TopP),
		MinP:          float32(s.MinP),
		RepeatPenalty: float32(s.RepeatPenalty),
		RepeatLastN:   sampler.DefaultParams().RepeatLastN,
		Seed:          s.Seed,
	}
}

// checkJob refuses, before the job is queued, what would make it fail once
// it runs: sampling parameters the sampler cannot use and a schema or tools
// the grammar cannot compile. It keeps the compiled constraint in the job.
func checkJob(job *Job) error {
	if err := samplerParams(job.Sampling).Validate(); err != nil {
		return &mqtt.RequestError{Code: mqtt.CodeBadRequest, Msg: err.Error()}
	}
	g, start, err := jobGrammar(*job)
	if err != nil {
		return err
	}
	job.constraint = &constraint{grammar: g, start: start}
	return nil
}

// toolCallStart finds where a tool call begins in free output: after a
// "<tool_call>" tag (ChatML and the families given the same convention), or
// at a "{" that opens the answer (Llama 3.1's bare calls). -1 while none has.
func toolCallStart(out []byte) int {
	if i := bytes.Index(out, []byte("<tool_call>")); i >= 0 {
		return i + len("<tool_call>")
	}
	if t := bytes.TrimLeft(out, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return len(out) - len(t)
	}
	return -1
}

// toolCall reads a call {"name": …, "arguments": {…}} (Llama 3.1 writes
// "parameters") from text: the whole text, or the first
// <tool_call>…</tool_call> block. ok is false when the text is no call of one
// of tools.
func toolCall(text string, tools []mqtt.Tool) (mqtt.ToolCall, bool) {
	body := strings.TrimSpace(text)
	if i := strings.Index(body, "<tool_call>"); i >= 0 {
		body = body[i+len("<tool_call>"):]
		if j := strings.Index(body, "</tool_call>"); j >= 0 {
			body = body[:j]
		}
		body = strings.TrimSpace(body)
	}
	if !strings.HasPrefix(body, "{") {
		return mqtt.ToolCall{}, false
	}
	var call struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&call); err != nil {
		return mqtt.ToolCall{}, false
	}
	args := call.Arguments
	if args == nil {
		args = call.Parameters
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || args[0] != '{' {
		return mqtt.ToolCall{}, false
	}
	for _, t := range tools {
		if t.Function.Name == call.Name {
			return mqtt.ToolCall{ID: "call_0", Name: call.Name, Arguments: args}, true
		}
	}
	return mqtt.ToolCall{}, false
}

// errNoToolTemplate refuses tools for a model without a chat template.
var errNoToolTemplate = errors.New("tools need a chat template to be presented to the model; set model.chat_template or the request's chat_template")

// isGrammarBudget reports a max_tokens too small for the constraint.
func isGrammarBudget(err error) bool { return errors.Is(err, inference.ErrGrammarBudget) }

package daemon

import (
	"errors"
	"fmt"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/inference/chat/toolcall"
	"github.com/edgellm/edgellm/inference/grammar"
	"github.com/edgellm/edgellm/inference/sampler"
	"github.com/edgellm/edgellm/inference/tokenizer"
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
	case api.ToolChoiceNone:
		return toolsOff
	case api.ToolChoiceRequired, api.ToolChoiceFunction:
		return toolsRequired
	}
	return toolsAuto
}

// callableTools are the tools a required call may name: the named one, or all.
func callableTools(job Job) []api.Tool {
	if job.ToolChoice != nil && job.ToolChoice.Mode == api.ToolChoiceFunction {
		for _, t := range job.Tools {
			if t.Function.Name == job.ToolChoice.Function {
				return []api.Tool{t}
			}
		}
		return nil
	}
	return job.Tools
}

func badField(field string, err error) error {
	return &api.Error{Code: api.CodeBadRequest, Field: field, Message: err.Error()}
}

// jobGrammar compiles the constraint of a job: tool calls written in
// syntax syn, a JSON Schema, or any JSON value; nil when the output is free
// text.
//
// With tool_choice "required" the grammar is that of an answer made of
// calls (the syntax's trigger, then one or more calls). With "auto" it is
// that of the calls after the trigger, and start (non-nil) tells where they
// begin: the output is free text until then and constrained from there.
func jobGrammar(job Job, syn toolcall.Syntax) (g *grammar.Grammar, start func([]byte) int, err error) {
	if mode := jobToolMode(job); mode == toolsRequired || mode == toolsAuto && len(job.Schema) == 0 && !job.JSON {
		tools := callableTools(job)
		if len(tools) == 0 {
			return nil, nil, badField("tool_choice", fmt.Errorf("names %q, which is not in tools", job.ToolChoice.Function))
		}
		if g, err = syn.Grammar(grammarTools(tools), mode == toolsRequired, grammar.Options{}); err != nil {
			return nil, nil, badField("tools", err)
		}
		if mode == toolsAuto {
			start = syn.Start
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

// grammarTools are the names and parameter schemas of tools.
func grammarTools(tools []api.Tool) []toolcall.Tool {
	gt := make([]toolcall.Tool, len(tools))
	for i, t := range tools {
		gt[i] = toolcall.Tool{Name: t.Function.Name, Parameters: t.Function.Parameters}
	}
	return gt
}

// constraint is a job's compiled output constraint (see jobGrammar), for
// tool calls in syntax.
type constraint struct {
	grammar *grammar.Grammar
	start   func([]byte) int
	syntax  toolcall.Syntax
}

// jobConstraint compiles the constraint of a job whose tool calls are
// written in syntax syn.
func jobConstraint(job Job, syn toolcall.Syntax) (*constraint, error) {
	g, start, err := jobGrammar(job, syn)
	if err != nil {
		return nil, err
	}
	return &constraint{grammar: g, start: start, syntax: syn}, nil
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
// the grammar cannot compile. It keeps the compiled constraint in the job,
// for tool calls in the syntax of the request's chat template (Hermes when
// it names none; the job recompiles when it runs with a template of another
// syntax).
func checkJob(job *Job) error {
	if err := samplerParams(job.Sampling).Validate(); err != nil {
		return &api.Error{Code: api.CodeBadRequest, Message: err.Error()}
	}
	syn := toolcall.Hermes
	if job.ChatTemplate != "" {
		syn = requestSyntax(job.ChatTemplate)
	}
	c, err := jobConstraint(*job, syn)
	if err != nil {
		return err
	}
	job.constraint = c
	return nil
}

// requestSyntax is the tool-call syntax of a request's chat_template: a
// family name or Jinja text.
func requestSyntax(name string) toolcall.Syntax {
	if t, err := chat.ByName(name); err == nil {
		return toolcall.OfFormat(&chat.Format{Family: t})
	}
	return toolcall.Detect(name)
}

// templateSyntax is the tool-call syntax a template teaches its model (see
// toolcall.OfFormat); the generic JSON without a template.
func templateSyntax(t promptTemplate) toolcall.Syntax {
	if c, ok := t.(chatTemplate); ok {
		return toolcall.OfFormat(c.f)
	}
	return toolcall.JSON
}

// markTokens returns the control tokens of tok whose text is a mark of
// syntax syn: the generator writes them into the output (which otherwise
// leaves control tokens out) so that the trigger is seen and the calls
// parse.
func markTokens(tok *tokenizer.Tokenizer, syn toolcall.Syntax) []int32 {
	var ids []int32
	for _, m := range syn.Marks() {
		if id, ok := tok.ID(m); ok && tok.IsControl(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// toolCalls reads the calls of tools in text, written in syntax syn: all
// of them, each with an id unique in the answer (nil when text holds none),
// and the text the model wrote before them, which is the answer's content.
func toolCalls(syn toolcall.Syntax, text string, tools []api.Tool) ([]api.ToolCall, string) {
	p := syn.Parse(text, grammarTools(tools))
	if len(p.Calls) == 0 {
		return nil, text
	}
	calls := make([]api.ToolCall, len(p.Calls))
	for i, c := range p.Calls {
		calls[i] = api.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return calls, p.Content
}

// errNoToolTemplate refuses tools for a model without a chat template.
var errNoToolTemplate = errors.New("tools need a chat template to be presented to the model; set model.chat_template or the request's chat_template")

// isGrammarBudget reports a max_tokens too small for the constraint.
func isGrammarBudget(err error) bool { return errors.Is(err, inference.ErrGrammarBudget) }

package daemon

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/inference/chat/toolcall"
	"github.com/edgellm/edgellm/inference/grammar"
)

// Pipeline is the one place where a job becomes what the generator runs,
// for one model: the prompt's tokens (rendered with the chat template and
// trimmed to fit the context), the output constraint (JSON, a JSON Schema,
// or tool calls in the syntax the template teaches), the stop strings (the
// job's and the template's) and the tool-call marks the output keeps. The
// daemon's engine prepares every job with it, whatever transport the job
// came from, and `edgellm run` its command line's prompt, so the two cannot
// drift apart.
type Pipeline struct {
	model *inference.Model
	ctx   int            // the context's length in tokens
	tmpl  promptTemplate // nil: a raw completion
	// tmplErr says why there is no template (for a job with messages).
	tmplErr error
	// rawSpecial reads special-token text in a raw prompt as those tokens.
	rawSpecial bool
}

// PipelineOptions configures NewPipeline.
type PipelineOptions struct {
	// Context is the context's length in tokens.
	Context int
	// Format is the chat template prompts are formatted with; nil runs a
	// job's prompt as a raw completion (and refuses messages and tools).
	Format *chat.Format
	// RawSpecial reads special-token text (<|user|>) in a raw prompt as
	// those tokens and adds BOS and EOS as the model's metadata says: for
	// the operator's command line, never for a client's request.
	RawSpecial bool
}

// NewPipeline is the pipeline of model m.
func NewPipeline(m *inference.Model, opts PipelineOptions) *Pipeline {
	p := &Pipeline{model: m, ctx: opts.Context, rawSpecial: opts.RawSpecial,
		tmplErr: errors.New("no chat template was given")}
	if opts.Format != nil {
		p.tmpl, p.tmplErr = chatTemplate{f: opts.Format, now: time.Now}, nil
	}
	return p
}

// Prepared is a job ready to generate.
type Prepared struct {
	IDs     []int32 // the prompt's tokens
	Dropped int     // conversation tokens trimmed to fit the context
	// Grammar constrains the output (nil: free text); GrammarStart, when
	// set, tells where in the text the constrained part begins (tool calls
	// in "auto" mode), else the whole output is constrained.
	Grammar      *grammar.Grammar
	GrammarStart func([]byte) int
	// Stops are the strings the answer ends at (not included): the job's
	// and the template's; none when the grammar ends the whole output.
	Stops []string
	// Marks are the tool-call marks that are control tokens, written into
	// the output so the calls parse (generation's ShowTokens).
	Marks []int32
	// Syntax is the tool-call syntax of the template, to read the calls.
	Syntax toolcall.Syntax
}

// Prepare turns job into a Prepared: the constraint (the job's compiled one
// when its syntax is the template's), then the prompt. Errors the client
// can fix are *api.Error (bad_request); a prompt that cannot fit wraps
// ErrPromptTooLong.
func (p *Pipeline) Prepare(job Job) (Prepared, error) {
	var pp Prepared
	pp.Syntax = templateSyntax(p.tmpl) // the tool-call syntax the template teaches
	c := job.constraint
	if c == nil || c.syntax != pp.Syntax {
		var err error
		if c, err = jobConstraint(job, pp.Syntax); err != nil {
			return pp, err
		}
	}
	pp.Grammar, pp.GrammarStart = c.grammar, c.start
	if jobToolMode(job) != toolsOff {
		pp.Marks = markTokens(p.model.Tokenizer, pp.Syntax)
	}
	var err error
	if pp.IDs, pp.Dropped, err = p.prompt(job); err != nil {
		return pp, err
	}
	pp.Stops = job.Stop
	if p.tmpl != nil && !job.Raw {
		pp.Stops = append(append([]string(nil), pp.Stops...), p.tmpl.StopStrings()...)
	}
	if pp.Grammar != nil && pp.GrammarStart == nil {
		pp.Stops = nil // the grammar ends the value; a stop string must not cut it
	}
	return pp, nil
}

// prompt renders and tokenizes the job's prompt, trimming a conversation to
// fit: it keeps the system message and the newest turns, dropping the
// oldest turns until prompt + max_tokens fit the context, and returns how
// many prompt tokens were dropped. A prompt that cannot fit even alone is an
// error wrapping ErrPromptTooLong.
func (p *Pipeline) prompt(job Job) (ids []int32, dropped int, err error) {
	tok, tmpl := p.model.Tokenizer, p.tmpl
	if tmpl == nil && jobToolMode(job) != toolsOff {
		return nil, 0, badField("tools", errNoToolTemplate)
	}
	if tmpl == nil || job.Raw {
		if len(job.Messages) > 0 {
			return nil, 0, &api.Error{Code: api.CodeBadRequest, Field: "messages",
				Message: fmt.Sprintf("this model has no chat template to format messages (%v); set model.chat_template or the request's chat_template, or send a prompt", p.tmplErr)}
		}
		// Raw completion: the system text, if any, goes before the prompt.
		text := job.Prompt
		if job.System != "" {
			text = job.System + "\n\n" + text
		}
		if least := p.leastTokens(len(text)); least >= p.ctx {
			return nil, 0, fmt.Errorf("%w: the prompt has at least %d tokens, the context holds %d", ErrPromptTooLong, least, p.ctx)
		}
		if p.rawSpecial {
			// The command line's prompt: special-token text is those
			// tokens, and BOS and EOS are added as the metadata says.
			if ids, err = tok.Encode(text, true); err != nil {
				return nil, 0, err
			}
		} else {
			if ids, err = tok.Encode(text, false); err != nil {
				return nil, 0, err
			}
			if tok.AddBOS() {
				ids = append([]int32{tok.BOS()}, ids...)
			}
		}
		return ids, 0, p.fits(len(ids), len(ids))
	}

	msgs := job.Messages
	if len(msgs) == 0 {
		msgs = []api.Message{{Role: api.RoleUser, Content: job.Prompt}}
	}
	var system []api.Message
	if len(msgs) > 0 && msgs[0].Role == api.RoleSystem {
		system, msgs = msgs[:1], msgs[1:]
	} else if job.System != "" {
		system = []api.Message{{Role: api.RoleSystem, Content: job.System}}
	}
	var tools []api.Tool
	if jobToolMode(job) != toolsOff {
		tools = job.Tools
	}
	// encode renders and tokenizes turns. A text too long to fit even at
	// the fewest tokens its bytes allow is not tokenized, which would cost
	// memory in proportion to its length for nothing: ids is nil then, n
	// that least number of tokens, and text the rendering.
	encode := func(turns []api.Message) (ids []int32, n int, text string, err error) {
		text, err = tmpl.Render(append(append([]api.Message(nil), system...), turns...), tools, job.Think)
		if err != nil {
			return nil, 0, "", &api.Error{Code: api.CodeBadRequest, Field: "messages", Message: err.Error()}
		}
		if least := p.leastTokens(len(text)); least >= p.ctx {
			return nil, least, text, nil
		}
		ids, err = tok.Encode(text, true)
		return ids, len(ids), text, err
	}
	ids, n, text, err := encode(msgs)
	if err != nil {
		return nil, 0, err
	}
	total := n
	if ids == nil { // counted piecewise, for the dropped tokens
		if total, err = p.countTokens(0, text); err != nil {
			return nil, 0, err
		}
	}
	trimmed := false
	for len(msgs) > 1 && n+job.MaxTokens > p.ctx {
		trimmed = true
		msgs = msgs[1:]
		// A conversation continues with the user, not with an answer.
		for len(msgs) > 1 && msgs[0].Role != api.RoleUser {
			msgs = msgs[1:]
		}
		if ids, n, _, err = encode(msgs); err != nil {
			return nil, 0, err
		}
	}
	if ids == nil {
		if trimmed {
			return nil, 0, fmt.Errorf("%w: even trimmed to the system message and the last turn the prompt has at least %d tokens, the context holds %d",
				ErrPromptTooLong, n, p.ctx)
		}
		return nil, 0, fmt.Errorf("%w: the prompt has at least %d tokens, the context holds %d", ErrPromptTooLong, n, p.ctx)
	}
	return ids, total - len(ids), p.fits(len(ids), total)
}

// leastTokens is the fewest tokens a text of n bytes can encode to.
func (p *Pipeline) leastTokens(n int) int {
	per := p.model.Tokenizer.MaxTokenBytes()
	return (n + per - 1) / per
}

// countTokens adds the number of tokens of text to n, encoding it in pieces
// no longer than a context's worth of bytes, so the memory it takes stays
// bounded whatever the text's length.
func (p *Pipeline) countTokens(n int, text string) (int, error) {
	piece := p.ctx * p.model.Tokenizer.MaxTokenBytes()
	var ids []int32
	for text != "" {
		cut := min(piece, len(text))
		for cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut--
		}
		var err error
		if ids, err = p.model.Tokenizer.AppendEncode(ids[:0], text[:cut], false); err != nil {
			return n, err
		}
		n += len(ids)
		text = text[cut:]
	}
	return n, nil
}

// fits checks that a prompt of n tokens leaves room for at least one
// generated token; total is its length before trimming.
func (p *Pipeline) fits(n, total int) error {
	if n < p.ctx {
		return nil
	}
	if total != n {
		return fmt.Errorf("%w: even trimmed to the system message and the last turn the prompt has %d tokens, the context holds %d",
			ErrPromptTooLong, n, p.ctx)
	}
	return fmt.Errorf("%w: the prompt has %d tokens, the context holds %d", ErrPromptTooLong, n, p.ctx)
}

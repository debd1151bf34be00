package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ardanlabs/jinja"
)

// ErrTemplate is wrapped by the errors of CompileJinja for a template that
// does not parse and of Jinja.Render for one that fails while rendering,
// including a template's own raise_exception (whose message the error
// carries).
var ErrTemplate = errors.New("chat template error")

// ErrRenderTimeout is wrapped by Jinja.Render's error when the context ends
// before the template finishes.
var ErrRenderTimeout = errors.New("chat template did not finish rendering in time")

// Jinja is a chat template compiled from its Jinja source, rendered the way
// Hugging Face transformers renders chat templates (apply_chat_template):
// trim_blocks and lstrip_blocks on, loop controls, raise_exception,
// strftime_now, tojson as Python's json.dumps (non-ASCII kept, keys in their
// order, indent honoured), and dicts that keep their keys' order. It is
// compiled once and safe for concurrent use.
type Jinja struct {
	src  string
	tmpl *jinja.Template

	mu      sync.Mutex
	settled bool // typed is known
	typed   bool // the template reads content only as a list of parts (see needsTypedContent)
}

// CompileJinja compiles a chat template's Jinja source (a GGUF file's
// tokenizer.chat_template, or a .jinja file). A template that does not parse
// is an error wrapping ErrTemplate.
func CompileJinja(src string) (*Jinja, error) {
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("%w: compiling the Jinja template: %v", ErrTemplate, err)
	}
	return &Jinja{src: src, tmpl: t}, nil
}

// Source returns the template's Jinja source.
func (j *Jinja) Source() string { return j.src }

// Input is what a chat template is rendered with: the variables
// transformers' apply_chat_template passes.
type Input struct {
	// Messages is the conversation, a JSON array of OpenAI-style messages:
	// role; content (a string, null, or an array of parts such as
	// {"type":"text","text":…}); tool_calls ([{"id","type":"function",
	// "function":{"name","arguments"}}]); tool_call_id and name for tool
	// results; reasoning_content or thinking for earlier reasoning. Objects
	// reach the template with their keys in the order given. MessagesJSON
	// writes typed Messages in this form.
	Messages json.RawMessage
	// Tools is the JSON array of tools ({"type":"function","function":{…}}),
	// or empty for none (the template then sees tools = none).
	Tools json.RawMessage
	// Documents is the JSON array of documents for retrieval templates, or
	// empty for none (documents = none).
	Documents json.RawMessage
	// AddGenerationPrompt ends the prompt with the opening of an assistant
	// turn for the model to write.
	AddGenerationPrompt bool
	// BOS and EOS are the texts of the model's begin- and end-of-sequence
	// tokens (bos_token, eos_token).
	BOS, EOS string
	// Kwargs are further variables, such as enable_thinking. A value is a
	// Go bool, string, number, nil, []any or map[string]any, or a
	// json.RawMessage (decoded keeping its keys' order). They cannot replace
	// the variables above.
	Kwargs map[string]any
	// Now is the time strftime_now reports; the zero Time means the clock's
	// time at rendering. Callers that want prompts to share a cached prefix
	// across requests pass a time that changes once a day (see Day).
	Now time.Time
	// DecodeArguments turns tool-call arguments given as a JSON string (the
	// OpenAI wire form) into the object the string holds, as llama.cpp does,
	// so templates that write arguments|tojson see an object. Off, messages
	// reach the template exactly as given, as under transformers.
	DecodeArguments bool
}

// Day returns midnight of t's day in t's location: the Now to render with
// so that a template printing today's date (or time) prints the same text
// for every request of a day, and those prompts share a cached prefix.
func Day(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// Render renders the template with in and returns the text exactly as the
// template writes it, a BOS text at its start included. The template's own
// errors (raise_exception, a failed operation) wrap ErrTemplate; malformed
// JSON in in wraps ErrConversation.
//
// The Jinja engine cannot be interrupted: when ctx ends first, Render
// returns an error wrapping ErrRenderTimeout at once, but the rendering goes
// on in the background until it finishes. Templates that never finish or
// exhaust memory must therefore be refused before use (see Probe).
func (j *Jinja) Render(ctx context.Context, in Input) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("chat: %w: %v", ErrRenderTimeout, context.Cause(ctx))
	}
	vars, err := in.values()
	if err != nil {
		return "", err
	}
	if j.typedContent(ctx) {
		typeContent(vars["messages"])
	}
	return j.render(ctx, vars)
}

// render renders the template with vars; see Render.
func (j *Jinja) render(ctx context.Context, vars map[string]jinja.Value) (string, error) {
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1) // buffered: an abandoned rendering does not block
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("%w: the engine failed: %v", ErrTemplate, p)}
			}
			done <- r
		}()
		r.text, r.err = j.tmpl.RenderValues(vars)
		if r.err != nil {
			r.err = fmt.Errorf("%w: %v", ErrTemplate, r.err)
		}
	}()
	select {
	case r := <-done:
		return r.text, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("chat: %w: %v", ErrRenderTimeout, context.Cause(ctx))
	}
}

// typedContent returns whether the template needs typed content, finding
// out on the first rendering that finishes its probes within ctx.
func (j *Jinja) typedContent(ctx context.Context) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.settled {
		j.typed, j.settled = j.needsTypedContent(ctx)
	}
	return j.typed
}

// needsTypedContent reports whether the template reads a message's content
// only as a list of parts ([{"type":"text","text":…}]), as the GGUF files
// of Gemma 3 1B do for the system message (messages[0]['content'][0]
// ['text']): given a string, such a template silently drops the text. It is
// so when a system and a user message given as strings do not both appear
// in the prompt and given as text parts do (llama.cpp's server checks its
// templates the same way and converts the content). A template that fails
// or drops a message either way is left as it is. settled is false when
// ctx ended before the probes did.
func (j *Jinja) needsTypedContent(ctx context.Context) (typed, settled bool) {
	const sys, user = "edgellm-system-text", "edgellm-user-text"
	probe := func(msgs string) (shown, done bool) {
		vars, err := Input{Messages: json.RawMessage(msgs), AddGenerationPrompt: true}.values()
		if err != nil {
			return false, true
		}
		out, err := j.render(ctx, vars)
		if errors.Is(err, ErrRenderTimeout) {
			return false, false
		}
		return err == nil && strings.Contains(out, sys) && strings.Contains(out, user), true
	}
	asStrings, done := probe(`[{"role":"system","content":"` + sys + `"},{"role":"user","content":"` + user + `"}]`)
	if !done || asStrings {
		return false, done
	}
	asParts, done := probe(`[{"role":"system","content":[{"type":"text","text":"` + sys + `"}]},{"role":"user","content":[{"type":"text","text":"` + user + `"}]}]`)
	return asParts, done
}

// typeContent replaces each message's string content by a list of one text
// part.
func typeContent(msgs jinja.Value) {
	if !msgs.IsList() {
		return
	}
	for _, m := range msgs.AsList().Items {
		if !m.IsDict() {
			continue
		}
		c, ok := m.AsDict().Get("content")
		if !ok || !c.IsString() {
			continue
		}
		part := jinja.NewDict()
		part.AsDict().Set("type", jinja.NewString("text"))
		part.AsDict().Set("text", c)
		m.AsDict().Set("content", jinja.NewList([]jinja.Value{part}))
	}
}

// values returns the template's variables for in.
func (in Input) values() (map[string]jinja.Value, error) {
	vars := make(map[string]jinja.Value, 8+len(in.Kwargs))
	for _, k := range slices.Sorted(maps.Keys(in.Kwargs)) {
		v, err := goValue(in.Kwargs[k])
		if err != nil {
			return nil, fmt.Errorf("chat: template variable %s: %v: %w", k, err, ErrConversation)
		}
		vars[k] = v
	}
	msgs, err := decodeJSON(in.Messages, jinja.NewList(nil))
	if err != nil {
		return nil, fmt.Errorf("chat: messages: %v: %w", err, ErrConversation)
	}
	if !msgs.IsList() {
		return nil, fmt.Errorf("chat: messages: not a JSON array: %w", ErrConversation)
	}
	if in.DecodeArguments {
		decodeArguments(msgs)
	}
	tools, err := decodeJSON(in.Tools, jinja.None())
	if err != nil {
		return nil, fmt.Errorf("chat: tools: %v: %w", err, ErrConversation)
	}
	if tools.IsList() && tools.AsList().Len() == 0 {
		tools = jinja.None() // as transformers passes no tools
	}
	docs, err := decodeJSON(in.Documents, jinja.None())
	if err != nil {
		return nil, fmt.Errorf("chat: documents: %v: %w", err, ErrConversation)
	}
	now := in.Now
	vars["messages"] = msgs
	vars["tools"] = tools
	vars["documents"] = docs
	vars["add_generation_prompt"] = jinja.NewBool(in.AddGenerationPrompt)
	vars["bos_token"] = jinja.NewString(in.BOS)
	vars["eos_token"] = jinja.NewString(in.EOS)
	vars["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		t := now
		if t.IsZero() {
			t = time.Now()
		}
		return jinja.NewString(strftime(t, args[0].AsString())), nil
	})
	return vars, nil
}

// decodeArguments replaces, in each message's tool_calls, a function's
// arguments given as a string of a JSON object by that object.
func decodeArguments(msgs jinja.Value) {
	for _, m := range msgs.AsList().Items {
		if !m.IsDict() {
			continue
		}
		calls, ok := m.AsDict().Get("tool_calls")
		if !ok || !calls.IsList() {
			continue
		}
		for _, c := range calls.AsList().Items {
			if !c.IsDict() {
				continue
			}
			fn, ok := c.AsDict().Get("function")
			if !ok || !fn.IsDict() {
				continue
			}
			args, ok := fn.AsDict().Get("arguments")
			if !ok || !args.IsString() {
				continue
			}
			if v, err := decodeJSON(json.RawMessage(args.AsString()), jinja.Undefined()); err == nil && v.IsDict() {
				fn.AsDict().Set("arguments", v)
			}
		}
	}
}

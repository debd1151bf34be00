package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
)

// renderTimeout bounds one rendering of a chat template. Templates are
// probed when chosen, so a correct one renders in well under a millisecond
// to a few; the bound only stops a request from waiting on a template that
// turned out to loop on its conversation.
const renderTimeout = 5 * time.Second

// promptTemplate turns a conversation into prompt text ending where the
// assistant's answer begins.
type promptTemplate interface {
	// Render formats msgs, presenting tools (when any) the template's way;
	// think is the template's enable_thinking. The text is ready to
	// tokenize (with the tokenizer's own BOS).
	Render(msgs []api.Message, tools []api.Tool, think bool) (string, error)
	StopStrings() []string
}

// chatTemplate is a promptTemplate over a chat.Format: the model's Jinja
// template, or a hand-written family.
type chatTemplate struct {
	f *chat.Format
	// now is the clock; the prompt gets its day (chat.Day), so every
	// request of a day renders the same date and shares cached prefixes.
	now func() time.Time
}

// Render renders msgs. A template that raises on a system message (Gemma
// 2's "System role not supported") gets the system text at the start of
// the next message instead, as llama.cpp's server gives it: Home Assistant
// sends its instructions as a system message with every request.
func (c chatTemplate) Render(msgs []api.Message, tools []api.Tool, think bool) (string, error) {
	text, err := c.render(msgs, tools, think)
	if err == nil || len(msgs) < 2 || msgs[0].Role != api.RoleSystem || !errors.Is(err, chat.ErrTemplate) {
		return text, err
	}
	merged := append([]api.Message(nil), msgs[1:]...)
	merged[0].Content = msgs[0].Content + "\n" + merged[0].Content
	if text, merr := c.render(merged, tools, think); merr == nil {
		return text, nil
	}
	return "", err
}

func (c chatTemplate) render(msgs []api.Message, tools []api.Tool, think bool) (string, error) {
	cm := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chat.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			cm[i].ToolCalls = append(cm[i].ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
	}
	ct := make([]chat.Tool, len(tools))
	for i, t := range tools {
		ct[i] = chat.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
	}
	in, err := chat.NewInput(cm, ct)
	if err != nil {
		return "", err
	}
	in.Kwargs["enable_thinking"] = think
	in.Now = chat.Day(c.now())
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	return c.f.Prompt(ctx, in)
}

func (c chatTemplate) StopStrings() []string { return c.f.StopStrings() }

// templateGuard probes Jinja chat templates in a child process before
// they are used, remembering its verdicts by source so a template sent with
// many requests is probed once.
type templateGuard struct {
	probe    *chat.Prober // nil: every template passes unprobed
	mu       sync.Mutex
	verdicts map[string]error
}

// maxVerdicts bounds the verdicts a templateGuard remembers; past it they
// are forgotten all at once.
const maxVerdicts = 64

// check probes f's Jinja template (a family passes as it is).
func (g *templateGuard) check(ctx context.Context, f *chat.Format) error {
	if g == nil || g.probe == nil || f.Jinja == nil {
		return nil
	}
	src := f.Jinja.Source()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err, ok := g.verdicts[src]; ok {
		return err
	}
	err := g.probe.Check(ctx, src, f.BOS, f.EOS)
	if err != nil && !errors.Is(err, chat.ErrTemplateRefused) {
		return err // the probe could not run: no verdict to remember
	}
	if g.verdicts == nil || len(g.verdicts) >= maxVerdicts {
		g.verdicts = map[string]error{}
	}
	g.verdicts[src] = err
	return err
}

// resolveRequestTemplate picks a request's chat_template: Jinja text or a
// family name. A file path is refused: a request must not make the daemon
// read files.
func resolveRequestTemplate(ctx context.Context, name string, m *inference.Model, g *templateGuard) (promptTemplate, error) {
	if isTemplateFile(name) {
		return nil, errors.New("a request's chat_template is a family name or Jinja text, not a file; set a file with model.chat_template")
	}
	f, err := m.ChatFormat(name)
	if err != nil {
		return nil, err
	}
	if err := g.check(ctx, f); err != nil {
		return nil, err
	}
	return chatTemplate{f: f, now: time.Now}, nil
}

// loadTemplate picks the model's chat template at load: override
// (model.chat_template) when set, else the model's own, probed by g. The
// model's own template, when refused, gives way to the hand-written family
// it belongs to, if any (with a warning logged). The error says why there
// is no template; with an override set the caller refuses the model.
func loadTemplate(ctx context.Context, override string, m *inference.Model, g *templateGuard, log *slog.Logger) (promptTemplate, error) {
	f, err := m.ChatFormat(override)
	if err == nil {
		err = g.check(ctx, f)
	}
	switch {
	case err == nil:
		return chatTemplate{f: f, now: time.Now}, nil
	case override == "" && f != nil && f.Family.Family != 0 && errors.Is(err, chat.ErrTemplateRefused):
		log.Warn("the model's chat template is refused; using the hand-written family it belongs to", "family", f.Family.Family.String(), "err", err)
		fallback := *f
		fallback.Jinja, fallback.Origin = nil, "family "+f.Family.Family.String()+" (the model's template was refused)"
		return chatTemplate{f: &fallback, now: time.Now}, nil
	case override == "" && errors.Is(err, chat.ErrTemplateRefused):
		log.Error("the model's chat template is refused; requests with messages need model.chat_template or the request's chat_template", "err", err)
	}
	return nil, err
}

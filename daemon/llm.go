package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/grammar"
)

// llm is the Engine over the inference package: one model, one state (KV
// cache) and one generator, reused by every job.
type llm struct {
	model *inference.Model
	state *inference.State
	gen   *inference.Generator
	info  ModelInfo
	ctx   int
	tmpl  promptTemplate // nil: the model has no chat template
	cache string         // prompt cache file ("" = none)
	// prefixes keeps the KV cache of recent prompts (nil = only the
	// previous request's is reused).
	prefixes *inference.PrefixCache
	log      *slog.Logger
	// tmplErr says why there is no template (for requests with messages).
	tmplErr error
	// think are the tokens of the reasoning markers.
	think thinkTokens
	// guard probes Jinja templates before use (the model's, a request's).
	guard *templateGuard
}

// LoadLLM loads a GGUF model with the inference engine. opts.Check, when
// set, is called with the model's description before the KV cache is
// allocated, so a context that does not fit the memory budget is refused
// before it takes the memory.
func LoadLLM(ctx context.Context, opts LoadOptions) (Engine, error) {
	kv, err := inference.ParseKVType(opts.KVType)
	if err != nil {
		return nil, fmt.Errorf("model.kv_type: %w", err)
	}
	m, err := inference.Load(opts.Path)
	if err != nil {
		return nil, err
	}
	if err := m.Config.CheckKVType(kv); err != nil {
		m.Close()
		return nil, fmt.Errorf("model.kv_type: %w", err)
	}
	cost := m.Config.CacheCost(kv)
	info := ModelInfo{Name: m.Config.Name, Path: opts.Path, Layers: m.Config.NLayer, ContextTrain: m.Config.NCtxTrain,
		CacheBytesPerToken: uint64(cost.PerToken), CacheBytesFixed: uint64(cost.Fixed), KVType: kv.String()}
	ctxLen := opts.Context
	if ctxLen <= 0 {
		ctxLen = m.Config.NCtxTrain
	}
	info.KVCacheBytes = uint64(m.Config.CacheBytes(ctxLen, kv))
	if info.Name == "" {
		info.Name = strings.TrimSuffix(filepath.Base(opts.Path), filepath.Ext(opts.Path))
	}
	if st, err := os.Stat(opts.Path); err == nil {
		info.FileBytes = uint64(st.Size())
	}
	info.Arch = string(m.Config.Arch)
	info.Params, info.Quant = weightsOf(m.File)
	fail := func(err error) (Engine, error) {
		m.Close()
		return nil, err
	}
	if opts.Check != nil {
		if err := opts.Check(info); err != nil {
			return fail(err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	e := &llm{model: m, info: info, ctx: opts.Context, log: opts.Logger, guard: &templateGuard{probe: opts.TemplateProbe}}
	if e.log == nil {
		e.log = slog.Default()
	}
	e.tmpl, e.tmplErr = loadTemplate(ctx, opts.ChatTemplate, m, e.guard, e.log)
	if opts.ChatTemplate != "" && e.tmplErr != nil {
		return fail(fmt.Errorf("model.chat_template: %w", e.tmplErr))
	}
	if e.state, err = m.NewStateKV(opts.Context, opts.Threads, kv); err != nil {
		return fail(err)
	}
	e.gen = inference.NewGenerator(e.state, m.Tokenizer)
	if e.think, err = newThinkTokens(m.Tokenizer); err != nil {
		e.state.Close()
		return fail(err)
	}
	e.cache = opts.CacheFile
	if opts.PrefixCacheBytes != nil {
		if b := opts.PrefixCacheBytes(); b > 0 {
			e.prefixes = inference.NewPrefixCache(b)
		}
	}
	if e.cache != "" {
		switch toks, err := e.state.LoadCache(e.cache); {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			e.log.Warn("prompt cache not loaded", "err", err)
		default:
			e.gen.Adopt(toks)
			e.log.Info("prompt cache loaded", "file", e.cache, "tokens", len(toks))
		}
	}
	return e, nil
}

// Model describes the loaded model.
func (e *llm) Model() ModelInfo { return e.info }

// Close saves the prompt cache (when configured) and releases the state and
// the model.
func (e *llm) Close() error {
	if toks := e.gen.Tokens(); e.cache != "" && len(toks) > 0 {
		if err := e.state.SaveCache(e.cache, toks); err != nil {
			e.log.Warn("prompt cache not saved", "err", err)
		} else {
			e.log.Info("prompt cache saved", "file", e.cache, "tokens", len(toks))
		}
	}
	e.state.Close()
	return e.model.Close()
}

// errStop ends a generation at a stop sequence.
var errStop = errors.New("stop sequence")

// Run answers one job; see Engine.
func (e *llm) Run(ctx context.Context, job Job) (Outcome, error) {
	var out Outcome
	tmpl, terr := e.tmpl, e.tmplErr
	if job.ChatTemplate != "" {
		if tmpl, terr = resolveRequestTemplate(ctx, job.ChatTemplate, e.model, e.guard); terr != nil {
			return out, &api.Error{Code: api.CodeBadRequest, Field: "chat_template", Message: terr.Error()}
		}
	}
	pp, err := (&Pipeline{model: e.model, ctx: e.ctx, tmpl: tmpl, tmplErr: terr}).Prepare(job)
	if err != nil {
		return out, err
	}
	ids, gr, grStart := pp.IDs, pp.Grammar, pp.GrammarStart
	m := StopMatcher{Stops: pp.Stops}
	var text, reasoning strings.Builder
	stopped := false
	// With tools the stream carries the text before the calls only (see
	// callSplitter); Outcome.Text has all of it until the calls are read.
	onText := job.OnText
	var calls *callSplitter
	if onText != nil && jobToolMode(job) != toolsOff {
		calls = newCallSplitter(pp.Syntax, onText)
		onText = calls.feed
	}
	emit := func(s string) error {
		if s == "" {
			return nil
		}
		text.WriteString(s)
		if onText != nil {
			return onText(s)
		}
		return nil
	}
	// answer takes the answer from the reasoning splitter: stop sequences
	// apply to it alone.
	answer := func(b []byte) error {
		s, stop := m.Feed(string(b))
		if err := emit(s); err != nil {
			return err
		}
		if stop {
			stopped = true
			return errStop
		}
		return nil
	}
	reason := func(b []byte) error {
		reasoning.Write(b)
		if job.OnReasoning != nil {
			return job.OnReasoning(string(b))
		}
		return nil
	}
	th, gr, grStart, err := e.reasoning(job, ids, gr, grStart, reason, answer)
	if err != nil {
		return out, err
	}
	var checkpoint int
	if e.prefixes != nil {
		if toks := e.prefixes.Restore(e.state, ids, e.gen.Tokens()); toks != nil {
			e.gen.Adopt(toks)
		}
		// Caches that cannot be rewound (sliding windows, recurrent
		// states) are also kept where this prompt parts from a kept one.
		checkpoint = e.prefixes.Checkpoint(e.state, ids, e.gen.Tokens())
	}
	res, err := e.gen.Generate(ctx, ids, inference.GenerateOptions{
		Checkpoint:   checkpoint,
		OnCheckpoint: e.keepPrefix(ids[:checkpoint]),
		MaxTokens:    job.MaxTokens,
		Sampling:     samplerParams(job.Sampling),
		OnProgress:   job.Progress,
		ReusePrefix:  true,
		OnPrefilled:  e.keepPrefix(ids),
		Grammar:      gr,
		GrammarStart: grStart,
		Force:        th.force,
		NoEnd:        th.noEnd,
		ShowTokens:   showTokens(e.think.show, pp.Marks),
		OnText:       th.split.feed,
	})
	if err == nil || errors.Is(err, errStop) {
		// The end of the output: what the splitter and the stop matcher
		// held back is settled (and may still hit a stop sequence).
		if ferr := th.split.flush(); ferr != nil && !errors.Is(ferr, errStop) {
			return out, ferr
		}
		if !stopped {
			if ferr := emit(m.Flush()); ferr != nil {
				return out, ferr
			}
		}
		if calls != nil {
			if ferr := calls.flush(); ferr != nil {
				return out, ferr
			}
		}
	}
	out.Usage = api.Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.Tokens, CachedTokens: res.CachedTokens, DroppedTokens: pp.Dropped,
		ReasoningTokens: th.reasoningTokens(res.Tokens)}
	out.Timings = api.Timings{
		TTFTMs:     float64(res.FirstToken.Microseconds()) / 1000,
		PrefillTPS: res.PrefillTPS(),
		DecodeTPS:  res.DecodeTPS(),
	}
	out.Text, out.Reasoning = text.String(), reasoning.String()
	switch {
	case stopped:
		out.FinishReason = api.FinishStop
	case err != nil:
		if ctx.Err() != nil {
			out.FinishReason = api.FinishCancelled
			return out, ctx.Err()
		}
		if isGrammarBudget(err) {
			return out, badField("max_tokens", err)
		}
		return out, err
	case res.Finish == inference.FinishStop:
		out.FinishReason = api.FinishStop
	default: // length, or the context window is full
		out.FinishReason = api.FinishLength
	}
	if mode := jobToolMode(job); mode != toolsOff {
		// Only the answer is read: a call the model considered in its
		// reasoning is no call. The text keeps what the model wrote before
		// its calls; the calls are in ToolCalls (the stream has had the
		// text only, up to the calls).
		if calls, content := toolCalls(pp.Syntax, out.Text, job.Tools); calls != nil {
			out.ToolCalls, out.Text = calls, content
			out.FinishReason = api.FinishToolCall
		}
	}
	return out, nil
}

// reasoning sets up the reasoning split of a job whose prompt is ids: the
// splitter in front of the answer's sink, the tokens to force, and the
// constraint moved after the reasoning. A constraint on the whole answer
// (gr without start) starts right after the reasoning when there is one: a
// prompt that opened it, or a job that asked for it with a model that has
// the markers as tokens (the opening marker is then forced first, so no
// token before the value is free). Then the reasoning is closed early
// enough to leave the value its tokens, and the output cannot end inside
// it. A constraint that starts in the
// answer (start: tool calls in "auto" mode) looks for its start in the
// answer only.
func (e *llm) reasoning(job Job, ids []int32, gr *grammar.Grammar, start func([]byte) int,
	reason, answer func([]byte) error) (*thinkRun, *grammar.Grammar, func([]byte) int, error) {
	opened := promptOpensThinking(e.model.Tokenizer, ids)
	th := &thinkRun{tokens: e.think, think: job.Think}
	th.split = newThinkSplitter(thinkOpen, thinkClose, opened, reason, answer)
	th.split.onOpen, th.split.onClose = th.opened, th.closed
	if job.lead != "" {
		lead, err := encodeLead(e.model.Tokenizer, e.think, job.lead)
		if err != nil {
			return nil, nil, nil, err
		}
		th.lead = lead
	}
	if opened && !job.Think {
		th.close()
	}
	switch {
	case gr == nil:
	case start != nil:
		start = th.answerStart(start)
	case opened || job.Think && e.think.own:
		cost, err := e.gen.GrammarCost(gr)
		if err != nil {
			return nil, nil, nil, err
		}
		th.reserve = cost + len(e.think.close)
		need := th.reserve
		if !opened {
			th.queue = e.think.open
			need += len(e.think.open)
		}
		if need > job.MaxTokens {
			return nil, nil, nil, badField("max_tokens", fmt.Errorf("%w: the reasoning markers and the shortest value take %d tokens, max tokens is %d",
				inference.ErrGrammarBudget, need, job.MaxTokens))
		}
		start = th.afterReasoning
	}
	return th, gr, start, nil
}

// keepPrefix returns the OnPrefilled hook that keeps the caches of the
// prompt ids in the prefix cache, once the state holds exactly them (nil
// without a prefix cache).
func (e *llm) keepPrefix(ids []int32) func() {
	if e.prefixes == nil {
		return nil
	}
	return func() { e.prefixes.Store(e.state, ids) }
}

// weightsOf counts a model file's weights and names the type most of them
// have (its quantization, e.g. Q8_0; the norms' F32 rarely counts).
func weightsOf(f *gguf.File) (params uint64, quant string) {
	byType := map[string]uint64{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		n := t.Elements()
		params += n
		byType[t.Type.String()] += n
	}
	var most uint64
	for typ, n := range byType {
		if n > most || n == most && typ < quant {
			most, quant = n, typ
		}
	}
	return params, quant
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/grammar"
)

// llm is the Engine over the inference package: one model and a batcher of
// slots, each a state (KV cache) and a generator, reused by the jobs that run
// at once.
type llm struct {
	model   *inference.Model
	batcher *inference.Batcher
	slots   []*slot
	// free holds a token per free slot: Run takes one before it picks a
	// slot, so a slot is always free when it looks.
	free chan struct{}
	// mu guards the slots' busy flags and last-use stamps, and use.
	mu    sync.Mutex
	use   uint64 // the stamp of the latest job
	info  ModelInfo
	ctx   int
	tmpl  promptTemplate // nil: the model has no chat template
	cache string         // prompt cache file ("" = none)
	// prefixes keeps the KV cache of recent prompts (nil = only the
	// slot's previous request's is reused); every slot shares it, under
	// prefixMu.
	prefixes *inference.PrefixCache
	prefixMu sync.Mutex
	// inflight are the prompts being prefilled now that others may wait
	// for (guarded by prefixMu).
	inflight []*inflight
	// sharedWait, when set (tests), is called when a job starts waiting
	// for another's prompt.
	sharedWait func()
	log        *slog.Logger
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
	ctxLen := opts.Context
	if ctxLen <= 0 {
		ctxLen = m.Config.NCtxTrain
	}
	info := ModelInfo{Name: m.Config.Name, Path: opts.Path, Layers: m.Config.NLayer, ContextTrain: m.Config.NCtxTrain,
		CacheBytesPerToken: uint64(cost.PerToken), CacheBytesFixed: uint64(cost.Fixed), KVType: kv.String(),
		StateBytes: uint64(m.Config.SequenceBytes())}
	if info.Name == "" {
		info.Name = strings.TrimSuffix(filepath.Base(opts.Path), filepath.Ext(opts.Path))
	}
	if st, err := os.Stat(opts.Path); err == nil {
		info.FileBytes = uint64(st.Size())
	}
	info.Arch = string(m.Config.Arch)
	info.Params, info.Quant = weightsOf(m.File)
	if opts.Repack {
		heap, file := m.InterleaveBytes()
		info.RepackBytes, info.RepackFileBytes = uint64(heap), uint64(file)
	}
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
	slots := opts.Slots
	if opts.PlannedSlots != nil {
		slots = opts.PlannedSlots()
	}
	slots = max(slots, 1)
	info.Slots = slots
	info.KVCacheBytes = uint64(slots) * uint64(m.Config.CacheBytes(ctxLen, kv))
	e := &llm{model: m, info: info, ctx: opts.Context, log: opts.Logger, guard: &templateGuard{probe: opts.TemplateProbe}}
	if e.log == nil {
		e.log = slog.Default()
	}
	if opts.Repack {
		n, err := m.Interleave()
		if err != nil {
			return fail(fmt.Errorf("model.repack: %w", err))
		}
		e.log.Info("model weights repacked", "bytes", n)
	}
	e.tmpl, e.tmplErr = loadTemplate(ctx, opts.ChatTemplate, m, e.guard, e.log)
	if opts.ChatTemplate != "" && e.tmplErr != nil {
		return fail(fmt.Errorf("model.chat_template: %w", e.tmplErr))
	}
	if e.think, err = newThinkTokens(m.Tokenizer); err != nil {
		return fail(err)
	}
	if e.batcher, err = inference.NewBatcher(m, opts.Context, opts.Threads, slots, kv); err != nil {
		return fail(fmt.Errorf("daemon: %d slots: %w", slots, err))
	}
	e.free = make(chan struct{}, slots)
	for i := range slots {
		st, err := e.batcher.NewState()
		if err != nil {
			e.closeSlots()
			return fail(fmt.Errorf("daemon: the state of slot %d: %w", i, err))
		}
		e.slots = append(e.slots, &slot{state: st, gen: inference.NewGenerator(st, m.Tokenizer)})
		e.free <- struct{}{}
	}
	if err := e.warmUp(ctx); err != nil {
		e.closeSlots()
		return fail(err)
	}
	e.cache = opts.CacheFile
	if opts.PrefixCacheBytes != nil {
		if b := opts.PrefixCacheBytes(); b > 0 {
			e.prefixes = inference.NewPrefixCache(b)
		}
	}
	if e.cache != "" {
		first := e.slots[0]
		switch toks, err := first.state.LoadCache(e.cache); {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			e.log.Warn("prompt cache not loaded", "err", err)
		default:
			first.gen.Adopt(toks)
			e.log.Info("prompt cache loaded", "file", e.cache, "tokens", len(toks))
		}
	}
	return e, nil
}

// warmUpTokens is the length of the prompt warmUp runs: a batch, so that
// the kernels of several tokens and their buffers are made too.
const warmUpTokens = 8

// warmUp runs a short prompt through the last slot and forgets it, as
// llama.cpp's server warms up before it serves: every weight matrix is read
// once, so the pages of the mapped file come in (from the disk, on a first
// start: on a board with an SD card, seconds for each GiB) and the buffers
// of a batch are made now, while the status says loading, instead of during
// the first request. systemd's start timeout covers it; its watchdog starts
// after READY.
func (e *llm) warmUp(ctx context.Context) error {
	st := e.slots[len(e.slots)-1].state
	ids := make([]int32, min(warmUpTokens, st.Ctx()))
	for i := range ids {
		ids[i] = int32(i % e.model.Config.NVocab)
	}
	start := time.Now()
	_, err := st.Prefill(ctx, ids, true)
	st.Reset()
	st.Idle()
	if err != nil {
		return fmt.Errorf("daemon: warming the model up: %w", err)
	}
	e.log.Info("model warmed up", "tokens", len(ids), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// slot is one of the jobs the engine runs at once: a state (the KV cache)
// and the generator over it.
type slot struct {
	state *inference.State
	gen   *inference.Generator
	busy  bool   // a job runs on it (guarded by llm.mu)
	used  uint64 // the stamp of its latest job, 0 = never (guarded by llm.mu)
}

// closeSlots releases the slots' states, then the batcher.
func (e *llm) closeSlots() {
	for _, sl := range e.slots {
		sl.state.Close()
	}
	e.slots = nil
	e.batcher.Close()
}

// acquire waits for a free slot and takes the one whose tokens share the
// longest prefix with ids (the least recently used among equals, so a
// kept prompt stays longest), or returns ctx's error.
func (e *llm) acquire(ctx context.Context, ids []int32) (*slot, error) {
	select {
	case <-e.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var best *slot
	bestLen := -1
	for _, sl := range e.slots {
		if sl.busy {
			continue
		}
		n := sl.gen.Reuse(ids)
		if n > bestLen || n == bestLen && sl.used < best.used {
			best, bestLen = sl, n
		}
	}
	best.busy = true
	e.use++
	best.used = e.use
	return best, nil
}

// release gives a slot back.
func (e *llm) release(sl *slot) {
	e.mu.Lock()
	sl.busy = false
	e.mu.Unlock()
	e.free <- struct{}{}
}

// Model describes the loaded model.
func (e *llm) Model() ModelInfo { return e.info }

// Close saves the prompt cache (when configured) from the slot used last
// that holds tokens, and releases the slots and the model. No job may run.
func (e *llm) Close() error {
	if e.cache != "" {
		var last *slot
		for _, sl := range e.slots {
			if len(sl.gen.Tokens()) > 0 && (last == nil || sl.used > last.used) {
				last = sl
			}
		}
		if last != nil {
			toks := last.gen.Tokens()
			if err := last.state.SaveCache(e.cache, toks); err != nil {
				e.log.Warn("prompt cache not saved", "err", err)
			} else {
				e.log.Info("prompt cache saved", "file", e.cache, "tokens", len(toks))
			}
		}
	}
	e.closeSlots()
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
	sl, err := e.acquire(ctx, ids)
	if err != nil {
		out.FinishReason = api.FinishCancelled
		return out, err
	}
	defer e.release(sl)
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
	th, gr, grStart, err := e.reasoning(sl.gen, job, ids, gr, grStart, reason, answer)
	if err != nil {
		return out, err
	}
	var checkpoint int
	var mine *inflight
	if e.prefixes != nil {
		var err error
		if mine, err = e.awaitShared(ctx, sl, ids); err != nil {
			out.FinishReason = api.FinishCancelled
			return out, err
		}
		defer mine.finish(e)
		e.prefixMu.Lock()
		if toks := e.prefixes.Restore(sl.state, ids, sl.gen.Tokens()); toks != nil {
			sl.gen.Adopt(toks)
		}
		// Caches that cannot be rewound (sliding windows, recurrent
		// states) are also kept where this prompt parts from a kept one.
		checkpoint = e.prefixes.Checkpoint(sl.state, ids, sl.gen.Tokens())
		e.prefixMu.Unlock()
	}
	if job.inSlot != nil {
		if err := job.inSlot(ctx); err != nil {
			out.FinishReason = api.FinishCancelled
			return out, err
		}
	}
	res, err := sl.gen.Generate(ctx, ids, inference.GenerateOptions{
		Checkpoint:   checkpoint,
		OnCheckpoint: e.keepPrefix(sl, ids[:checkpoint], nil),
		MaxTokens:    job.MaxTokens,
		Sampling:     samplerParams(job.Sampling),
		OnProgress:   job.Progress,
		ReusePrefix:  true,
		OnPrefilled:  e.keepPrefix(sl, ids, mine),
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
func (e *llm) reasoning(gen *inference.Generator, job Job, ids []int32, gr *grammar.Grammar, start func([]byte) int,
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
		cost, err := gen.GrammarCost(gr)
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
// prompt ids in the prefix cache, once slot sl's state holds exactly them
// (nil without a prefix cache), and then lets the jobs waiting for them (f,
// when set) go on. The lock is held for the copy only.
func (e *llm) keepPrefix(sl *slot, ids []int32, f *inflight) func() {
	if e.prefixes == nil {
		return nil
	}
	return func() {
		e.prefixMu.Lock()
		e.prefixes.Store(sl.state, ids)
		e.prefixMu.Unlock()
		f.finish(e)
	}
}

// inflight is a prompt being prefilled now. A job whose prompt shares a
// long prefix with it waits until its caches are in the prefix cache, then
// restores that prefix instead of prefilling it too: four requests that
// arrive at once with Home Assistant's long system prompt and tools
// prefill it once.
type inflight struct {
	ids  []int32
	done chan struct{} // closed once its caches are kept, or its job ended
	once sync.Once
}

// finish lets the jobs waiting for f go on and forgets f (nil: nothing).
func (f *inflight) finish(e *llm) {
	if f == nil {
		return
	}
	f.once.Do(func() {
		e.prefixMu.Lock()
		e.inflight = slices.DeleteFunc(e.inflight, func(g *inflight) bool { return g == f })
		e.prefixMu.Unlock()
		close(f.done)
	})
}

// minShared is the shortest prefix a job waits for another's prefill to
// share: shorter ones cost little to prefill again.
const minShared = inference.MinCheckpoint

// awaitShared waits, when a prompt being prefilled in another slot would
// give slot sl more of ids than the prefix cache and the slot's own cache
// give now (at least minShared tokens), until that prompt's caches are
// kept; otherwise it registers ids as in flight and returns them (finish
// them). It returns ctx's error when ctx ends while it waits.
func (e *llm) awaitShared(ctx context.Context, sl *slot, ids []int32) (*inflight, error) {
	e.prefixMu.Lock()
	have := e.prefixes.Reuse(sl.state, ids, sl.gen.Tokens())
	var lead *inflight
	best := max(have, minShared-1)
	for _, f := range e.inflight {
		if n := inference.Reusable(sl.state, f.ids, ids); n > best {
			lead, best = f, n
		}
	}
	if lead == nil {
		f := &inflight{ids: ids, done: make(chan struct{})}
		e.inflight = append(e.inflight, f)
		e.prefixMu.Unlock()
		return f, nil
	}
	e.prefixMu.Unlock()
	if e.sharedWait != nil {
		e.sharedWait()
	}
	select {
	case <-lead.done:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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

package daemon

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference/chat"
)

// Engine is what the daemon's workers need from the inference engine: one
// loaded model that answers up to Model().Slots jobs at once (at least one).
// An adapter over the inference package implements it.
type Engine interface {
	// Model describes the loaded model.
	Model() ModelInfo
	// Run answers one job: it renders the prompt (chat template), fits it in
	// the context (trimming a conversation by the documented rule and
	// counting the dropped tokens in Outcome.Usage), generates, and streams
	// the answer through job.OnText and any reasoning before it through
	// job.OnReasoning. When ctx is done it stops and returns the
	// partial Outcome with FinishCancelled or FinishTimeout and ctx's error.
	// A prompt that cannot fit returns an error wrapping ErrPromptTooLong.
	// Run is safe for up to Model().Slots concurrent calls (one when Slots
	// is 0); a call beyond them waits for one to end.
	Run(ctx context.Context, job Job) (Outcome, error)
	// Close releases the model; no Run may be in progress.
	Close() error
}

// LoadOptions is what loading a model needs from the configuration.
type LoadOptions struct {
	Path         string // model.path
	Context      int    // model.context
	Threads      int    // model.threads (resolved, ≥ 1)
	ChatTemplate string // model.chat_template ("" = the model's own)
	KVType       string // model.kv_type ("" = f16)
	Repack       bool   // model.repack
	// Slots is how many jobs run at once (queue.slots resolved, ≥ 1; 0
	// means 1) unless PlannedSlots is set.
	Slots int
	// PlannedSlots, when set, is called after Check and gives the slots
	// the memory plan resolved (queue.slots 0 depends on the model).
	PlannedSlots func() int
	// TemplateProbe, when set, probes Jinja chat templates (the model's,
	// model.chat_template's, a request's) in a child process before they
	// are used; nil uses them unprobed.
	TemplateProbe *chat.Prober
	// CacheFile, when set, is the prompt cache file: loaded (if it fits this
	// model) after the model, saved by Close.
	CacheFile string
	// PrefixCacheBytes, when set, is called after Check and gives how many
	// bytes of KV copies of recent prompts the engine may keep.
	PrefixCacheBytes func() int64
	// Logger receives the prompt cache's warnings; nil means slog.Default().
	Logger *slog.Logger
	// Check, when set, is called with the model's description before the
	// KV cache is allocated; an error refuses the model (the memory plan).
	Check func(ModelInfo) error
}

// Loader loads a model; the daemon calls it at start and when SIGHUP changes
// model.path.
type Loader func(ctx context.Context, opts LoadOptions) (Engine, error)

// ModelInfo describes a loaded model, for the memory plan, the status and
// Home Assistant discovery.
type ModelInfo struct {
	Name         string // the model's name (GGUF general.name, else the file name)
	Path         string // the file it was loaded from
	FileBytes    uint64 // the file's size (memory-mapped)
	Layers       int    // blocks
	ContextTrain int    // context length the model was trained with
	Arch         string // the architecture (GGUF general.architecture)
	Params       uint64 // weights in the file
	Quant        string // the type most weights have (e.g. Q8_0)
	// CacheBytesPerToken and CacheBytesFixed give one slot's layers' caches
	// at a context of n tokens: at most CacheBytesFixed + n ×
	// CacheBytesPerToken (global attention layers grow with the context;
	// sliding-window rings and convolution states do not).
	CacheBytesPerToken, CacheBytesFixed uint64
	// StateBytes is what one slot needs beside its caches (0: unknown):
	// the slots share one workspace, so only each slot's logits; the memory
	// plan counts it for every slot past the first.
	StateBytes uint64
	// KVType is how the attention layers store keys and values (f16,
	// q8_0), and KVCacheBytes the caches of all slots at the loaded
	// context; both reported in the status.
	KVType       string
	KVCacheBytes uint64
	// Slots is how many jobs Run answers at once (0 means 1).
	Slots int
	// RepackBytes is the heap the weights model.repack copies take (0:
	// none), RepackFileBytes their size in the file, whose pages it lets
	// go; the memory plan counts the heap beside the KV cache.
	RepackBytes, RepackFileBytes uint64
}

// CacheBytes is the memory of the model's caches at a context of n tokens
// (an upper bound, exact once n exceeds every sliding window).
func (m ModelInfo) CacheBytes(n int) uint64 {
	return uint64(n)*m.CacheBytesPerToken + m.CacheBytesFixed
}

// ErrPromptTooLong is wrapped by Engine.Run when a prompt cannot fit in the
// context even after trimming; the answer's error code is too_long.
var ErrPromptTooLong = errors.New("the prompt does not fit in the context")

// Sampling is a job's resolved sampling parameters.
type Sampling struct {
	Temperature   float64
	TopP          float64
	TopK          int
	MinP          float64
	RepeatPenalty float64
	Seed          uint64 // resolved: a random one when the request and config say -1
}

// Job is one request ready to run: every default resolved.
type Job struct {
	ID           string
	Prompt       string        // set for a single prompt…
	Messages     []api.Message // …or a conversation
	System       string        // system prompt ("" = none)
	Raw          bool          // Prompt without the chat template
	ChatTemplate string        // override for this job ("" = the engine's)
	MaxTokens    int           // ≥ 1
	Sampling     Sampling
	Stop         []string
	JSON         bool            // answer with JSON
	Schema       json.RawMessage // JSON Schema the answer follows (implies JSON)
	Tools        []api.Tool      // functions the model may call
	ToolChoice   *api.ToolChoice // nil = auto
	// Think lets a thinking model reason before it answers. A template
	// renderer passes it to the template as enable_thinking (the
	// hand-written families have no such switch); whatever the template
	// does, with Think false a reasoning the model or the prompt opens is
	// closed at once by the engine.
	Think  bool
	OnText func(string) error // receives the answer as it is generated; an error stops the job
	// OnReasoning, when set, receives the reasoning as it is generated
	// (never part of OnText's text); an error stops the job.
	OnReasoning func(string) error
	Progress    func() // called per prefill chunk and per token (the watchdog heartbeat)

	constraint *constraint // compiled by checkJob; nil = compile when run
	// lead, when set, is text the generation begins with, forced token by
	// token as if the model wrote it (tests drive the reasoning split
	// through the real generation with it; random test models never write
	// reasoning markers of their own).
	lead string
	// inSlot, when set, is called once the job has its slot, before its
	// generation starts; an error ends the job with it (tests hold jobs in
	// their slots with it: a job held inside the generation would hold up
	// the steps every slot shares).
	inSlot func(ctx context.Context) error
}

// Outcome is what a job produced.
type Outcome struct {
	Text         string // the answer, after any reasoning
	Reasoning    string // the reasoning before it (markers and surrounding whitespace left out)
	FinishReason string // one of api's Finish constants
	Usage        api.Usage
	Timings      api.Timings
	ToolCalls    []api.ToolCall
}

// NewJob resolves a validated request, named id (in logs and cancels),
// against the configuration: request fields win, unset ones take the
// sampling defaults, max_tokens defaults to limits.max_tokens, and a seed of
// -1 becomes a random one.
func NewJob(id string, req *api.Request, cfg *Config) Job {
	s := cfg.Sampling
	j := Job{
		ID:           id,
		Prompt:       req.Prompt,
		Messages:     req.Messages,
		System:       req.System,
		Raw:          req.Raw,
		ChatTemplate: req.ChatTemplate,
		MaxTokens:    cfg.Limits.MaxTokens,
		Stop:         req.Stop,
		JSON:         req.JSON || req.Schema != nil,
		Schema:       req.Schema,
		Tools:        req.Tools,
		ToolChoice:   req.ToolChoice,
		Think:        pick(req.Think, s.Think),
		Sampling: Sampling{
			Temperature:   pick(req.Temperature, s.Temperature),
			TopP:          pick(req.TopP, s.TopP),
			TopK:          pick(req.TopK, s.TopK),
			MinP:          pick(req.MinP, s.MinP),
			RepeatPenalty: pick(req.RepeatPenalty, s.RepeatPenalty),
		},
	}
	if req.MaxTokens != nil {
		j.MaxTokens = *req.MaxTokens
	}
	seed := pick(req.Seed, s.Seed)
	if seed < 0 {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
		j.Sampling.Seed = binary.LittleEndian.Uint64(b[:])
	} else {
		j.Sampling.Seed = uint64(seed)
	}
	return j
}

func pick[T any](v *T, def T) T {
	if v != nil {
		return *v
	}
	return def
}

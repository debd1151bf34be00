package inference

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/edgellm/edgellm/inference/grammar"
	"github.com/edgellm/edgellm/inference/sampler"
	"github.com/edgellm/edgellm/inference/tokenizer"
)

// FinishReason says why a generation ended.
type FinishReason string

// The reasons a generation ends.
const (
	FinishStop      FinishReason = "stop"      // the model produced an end-of-generation token
	FinishLength    FinishReason = "length"    // MaxTokens were generated
	FinishContext   FinishReason = "context"   // the context window is full
	FinishCancelled FinishReason = "cancelled" // the context was cancelled or the callback stopped it
)

// GenerateOptions configures Generate.
type GenerateOptions struct {
	MaxTokens int            // tokens to generate at most (> 0)
	Sampling  sampler.Params // how the next token is chosen
	// OnText receives the generated text as it becomes valid UTF-8. The slice
	// is only valid during the call. Returning an error stops the generation,
	// which then ends with FinishCancelled and that error.
	OnText func(text []byte) error
	// OnProgress, when set, is called after each batch of the prompt and
	// each generated token (a liveness signal for watchdogs: a long prompt
	// produces no text for a while).
	OnProgress func()
	// Grammar, when set, constrains the output to the JSON value it
	// describes (see inference/grammar): tokens that cannot continue a valid
	// value are masked, the value is closed before MaxTokens runs out, and
	// generation stops once it is complete.
	Grammar *grammar.Grammar
	// GrammarStart, when set with Grammar, leaves the output free until the
	// constrained value begins: it is called with the output so far after
	// each token and returns the offset where the value starts, or -1 while
	// it has not (e.g. a tool call after "<tool_call>"). The bytes from that
	// offset are fed to the grammar, and from then on the output is
	// constrained; if they cannot begin a valid value, the output stays free.
	GrammarStart func(out []byte) int
	// Force, when set, is called once before each token is chosen, with
	// the number of tokens that may still be generated (this one included).
	// A token id it returns (≥ 0) is taken as the next token instead of a
	// sampled one; -1 lets the sampler choose. Forced tokens are generated
	// tokens like the others: they count against MaxTokens, stream through
	// OnText, and an active Grammar must accept them (else the generation
	// ends with an error). It is how a caller writes a few tokens for the
	// model, e.g. closing a reasoning block a request did not ask for.
	Force func(left int) int32
	// NoEnd, when set, is called once before each token is sampled; while
	// it returns true the end-of-generation tokens cannot be sampled (a
	// reasoning that a constrained answer must follow may not end the
	// output).
	NoEnd func() bool
	// ShowTokens lists control tokens whose text OnText receives although
	// control tokens are otherwise left out of the text (reasoning markers
	// that some vocabularies make control tokens). Kept short: it is
	// searched once per token.
	ShowTokens []int32
	// OnPrefilled, when set, is called once the prompt is consumed, before
	// the first token is sampled: the state then holds exactly the prompt,
	// the moment to keep its caches (PrefixCache.Store) for layers that
	// cannot be rewound to it later.
	OnPrefilled func()
	// Checkpoint, with OnCheckpoint, prefills the prompt up to that many
	// tokens first and calls OnCheckpoint with the state holding exactly
	// them (to keep its caches: PrefixCache.Checkpoint says where), then the
	// rest. It is ignored when it is not after the reused prefix and before
	// the prompt's last token.
	Checkpoint   int
	OnCheckpoint func()
	// ReusePrefix keeps the KV cache of the longest common prefix of this
	// prompt and the tokens of the previous generation (its prompt and
	// output), and prefills only the rest (Result.CachedTokens says how
	// many were reused). The outputs are the same as without it. It assumes
	// nothing but this generator moves the State between calls.
	ReusePrefix bool
}

// Result reports on a finished generation.
type Result struct {
	PromptTokens int           // tokens of the prompt
	CachedTokens int           // prompt tokens whose KV cache was reused (ReusePrefix)
	Tokens       int           // tokens generated
	Finish       FinishReason  // why it ended
	Prefill      time.Duration // time to consume the prompt
	Decode       time.Duration // time spent generating after the first token
	FirstToken   time.Duration // time from the start to the first generated token
}

// PrefillTPS is prefilled prompt tokens (those not reused from the cache)
// per second.
func (r *Result) PrefillTPS() float64 { return perSecond(r.PromptTokens-r.CachedTokens, r.Prefill) }

// DecodeTPS is generated tokens per second, not counting the first token, whose
// time is part of the time to first token.
func (r *Result) DecodeTPS() float64 { return perSecond(r.Tokens-1, r.Decode) }

func perSecond(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generator produces text from prompts with one State, one tokenizer and one
// sampler, reusing all of them: after the first call, generating a token
// allocates nothing.
type Generator struct {
	State     *State
	Tokenizer *tokenizer.Tokenizer
	sampler   *sampler.Sampler
	params    sampler.Params // the parameters sampler was made with
	stream    *tokenizer.Decoder

	eog     []int32          // the end-of-generation tokens (for NoEnd)
	out     []byte           // the output so far, while GrammarStart waits
	kv      []int32          // the tokens in the State's KV cache, in order
	vocab   *grammar.Vocab   // built on first use of a grammar
	matcher *grammar.Matcher // for grammar, reused while it is the same
	grammar *grammar.Grammar
}

// Adopt tells the generator that the State's KV cache holds tokens (for
// example after State.LoadCache), so that the next Generate with
// ReusePrefix reuses them. It does nothing unless the state's position is
// len(tokens).
func (g *Generator) Adopt(tokens []int32) {
	if g.State.Pos() == len(tokens) {
		g.kv = append(g.kv[:0], tokens...)
	}
}

// Tokens returns the tokens whose KV cache the State holds after the last
// Generate (its prompt and the generated tokens), or nil when the state was
// moved by something else. The slice is the generator's: copy it to keep it.
func (g *Generator) Tokens() []int32 {
	if g.State.Pos() != len(g.kv) {
		return nil
	}
	return g.kv
}

// Reuse is how many tokens of prompt the next Generate with ReusePrefix
// would keep from what the state holds instead of prefilling them: the
// prefix they share, short of the prompt's last token, when the state can
// go back to it (see State.CanRewind).
func (g *Generator) Reuse(prompt []int32) int { return selfReuse(g.State, prompt, g.Tokens()) }

// ErrGrammarBudget is returned by Generate when MaxTokens cannot hold even
// the shortest value the grammar allows.
var ErrGrammarBudget = errors.New("inference: max tokens too small for the shortest value the grammar allows")

// constraint returns a reset matcher for gr, building the vocabulary index
// once per generator.
func (g *Generator) constraint(gr *grammar.Grammar) (*grammar.Matcher, error) {
	if g.vocab == nil {
		g.vocab = grammar.NewVocab(g.Tokenizer)
	}
	if g.grammar != gr {
		m, err := gr.NewMatcher(g.vocab)
		if err != nil {
			return nil, fmt.Errorf("inference: %w", err)
		}
		g.matcher, g.grammar = m, gr
	}
	g.matcher.Reset()
	return g.matcher, nil
}

// NewGenerator makes a generator over a state and the model's tokenizer.
func NewGenerator(s *State, tok *tokenizer.Tokenizer) *Generator {
	return &Generator{State: s, Tokenizer: tok, stream: tok.NewDecoder(false), kv: make([]int32, 0, s.Ctx()), eog: tok.EOG()}
}

// Prefill consumes prompt tokens from the state's current position and returns
// the logits after the last one.
func (g *Generator) Prefill(ctx context.Context, prompt []int32) ([]float32, error) {
	return g.prefill(ctx, prompt, nil)
}

// prefillPart consumes prompt tokens without computing logits, calling
// progress (when set) after each batch.
func (g *Generator) prefillPart(ctx context.Context, prompt []int32, progress func()) error {
	s := g.State
	if n := s.Pos() + len(prompt); n > s.Ctx() {
		return fmt.Errorf("inference: prompt of %d tokens does not fit in the context of %d tokens", n, s.Ctx())
	}
	for step := s.MaxBatch(); len(prompt) > 0; {
		part := prompt[:min(step, len(prompt))]
		if _, err := s.Prefill(ctx, part, false); err != nil {
			return err
		}
		if progress != nil {
			progress()
		}
		prompt = prompt[len(part):]
	}
	return nil
}

// prefill is Prefill calling progress after each batch.
func (g *Generator) prefill(ctx context.Context, prompt []int32, progress func()) ([]float32, error) {
	s := g.State
	if len(prompt) == 0 {
		return nil, fmt.Errorf("inference: empty prompt")
	}
	if n := s.Pos() + len(prompt); n > s.Ctx() {
		return nil, fmt.Errorf("inference: prompt of %d tokens does not fit in the context of %d tokens", n, s.Ctx())
	}
	if progress == nil {
		return s.Prefill(ctx, prompt, true)
	}
	// Whole batches first, then the last (1 to MaxBatch tokens) with logits.
	last := (len(prompt) - 1) / s.MaxBatch() * s.MaxBatch()
	if err := g.prefillPart(ctx, prompt[:last], progress); err != nil {
		return nil, err
	}
	logits, err := s.Prefill(ctx, prompt[last:], true)
	if err == nil {
		progress()
	}
	return logits, err
}

// Generate resets the state, consumes prompt and generates up to
// opts.MaxTokens tokens, streaming their text to opts.OnText. A batcher's
// state takes part in the batcher's steps from its first forward pass until
// Generate returns (State.Idle): the callbacks run between its steps, and
// the others' steps wait for them, so they must not block.
func (g *Generator) Generate(ctx context.Context, prompt []int32, opts GenerateOptions) (Result, error) {
	defer g.State.Idle()
	res := Result{PromptTokens: len(prompt)}
	if opts.MaxTokens <= 0 {
		return res, fmt.Errorf("inference: max tokens %d must be positive", opts.MaxTokens)
	}
	if err := g.setSampler(opts.Sampling); err != nil {
		return res, err
	}
	var cons, armed *grammar.Matcher // the active constraint, or one waiting for GrammarStart
	if opts.Grammar != nil {
		m, err := g.constraint(opts.Grammar)
		if err != nil {
			return res, err
		}
		fits := m.CloseCost() <= opts.MaxTokens
		switch {
		case !fits && opts.GrammarStart == nil:
			return res, fmt.Errorf("%w: it needs %d tokens, max tokens is %d", ErrGrammarBudget, m.CloseCost(), opts.MaxTokens)
		case opts.GrammarStart == nil:
			cons = m
		case fits:
			armed, g.out = m, g.out[:0]
		}
		// A lazy grammar (a tool call the model may or may not start) that
		// cannot fit is not armed: the model answers in text, as a short
		// probe such as Home Assistant's max_tokens 3 expects.
	}
	s := g.State
	reuse := 0
	if opts.ReusePrefix && s.Pos() == len(g.kv) {
		for reuse < min(len(g.kv), len(prompt)) && g.kv[reuse] == prompt[reuse] {
			reuse++
		}
		reuse = max(min(reuse, len(prompt)-1), 0) // the last prompt token gives the logits
	}
	// A state that cannot continue from the shared prefix (a sliding-window
	// ring or a convolution state that moved past it) prefills it again.
	if reuse == 0 || !s.Rewind(reuse) {
		reuse = 0
		s.Reset()
	}
	res.CachedTokens = reuse
	g.kv = append(g.kv[:reuse], prompt[reuse:]...)
	g.stream.Reset()
	start := time.Now()
	from := reuse
	var err error
	if cp := opts.Checkpoint; opts.OnCheckpoint != nil && cp > reuse && cp < len(prompt) {
		if err = g.prefillPart(ctx, prompt[reuse:cp], opts.OnProgress); err == nil {
			opts.OnCheckpoint()
			from = cp
		}
	}
	var logits []float32
	if err == nil {
		logits, err = g.prefill(ctx, prompt[from:], opts.OnProgress)
	}
	if err != nil {
		g.kv = g.kv[:0]
		s.Reset()
		return res, err
	}
	res.Prefill = time.Since(start)
	if opts.OnPrefilled != nil {
		opts.OnPrefilled()
	}
	for _, id := range prompt {
		g.sampler.Accept(id)
	}
	var firstAt time.Time
	for {
		if err := ctx.Err(); err != nil {
			res.Finish = FinishCancelled
			return res, err
		}
		if cons != nil {
			// Tokens that can still be sampled, this one included.
			remaining := min(opts.MaxTokens-res.Tokens, s.Ctx()-s.Pos()+1)
			if err := cons.Mask(logits, remaining); err != nil {
				return res, fmt.Errorf("inference: constrained decoding: %w", err)
			}
		}
		id := int32(-1)
		if opts.Force != nil {
			id = opts.Force(opts.MaxTokens - res.Tokens)
		}
		if id < 0 {
			if opts.NoEnd != nil && opts.NoEnd() {
				for _, e := range g.eog {
					if int(e) < len(logits) {
						logits[e] = float32(math.Inf(-1))
					}
				}
			}
			id = g.sampler.Sample(logits)
		}
		if cons != nil {
			if err := cons.Accept(id); err != nil {
				return res, fmt.Errorf("inference: constrained decoding: %w", err)
			}
		}
		res.Tokens++
		if opts.OnProgress != nil {
			opts.OnProgress()
		}
		if res.Tokens == 1 {
			firstAt = time.Now()
			res.FirstToken = firstAt.Sub(start)
		}
		if g.Tokenizer.IsEOG(id) {
			res.Finish = FinishStop
			break
		}
		g.sampler.Accept(id)
		var text []byte
		if shown(opts.ShowTokens, id) {
			text = g.stream.AddSpecial(id)
		} else {
			text = g.stream.Add(id)
		}
		if err := g.emit(text, opts.OnText); err != nil {
			res.Finish = FinishCancelled
			return res, err
		}
		if armed != nil {
			g.out = append(g.out, text...)
			if off := opts.GrammarStart(g.out); off >= 0 {
				// Constrain only a value that can begin here and still close
				// within the tokens left.
				if armed.AcceptBytes(g.out[off:]) == nil && armed.CloseCost() <= opts.MaxTokens-res.Tokens {
					cons = armed
				}
				armed = nil
			}
		}
		if cons != nil && cons.Done() {
			res.Finish = FinishStop
			break
		}
		if res.Tokens >= opts.MaxTokens {
			res.Finish = FinishLength
			break
		}
		if s.Pos() >= s.Ctx() {
			res.Finish = FinishContext
			break
		}
		if logits, err = s.Forward(id, true); err != nil {
			g.kv = g.kv[:0]
			return res, err
		}
		g.kv = append(g.kv, id)
	}
	res.Decode = time.Since(firstAt)
	return res, g.emit(g.stream.Flush(), opts.OnText)
}

// shown reports whether id is in ids (GenerateOptions.ShowTokens).
func shown(ids []int32, id int32) bool {
	for _, s := range ids {
		if s == id {
			return true
		}
	}
	return false
}

// GrammarCost is the fewest tokens a value of gr takes with this
// generator's vocabulary: what a caller must leave for it when something
// comes before the constrained value (GrammarStart).
func (g *Generator) GrammarCost(gr *grammar.Grammar) (int, error) {
	m, err := g.constraint(gr)
	if err != nil {
		return 0, err
	}
	return m.CloseCost(), nil
}

func (g *Generator) emit(text []byte, onText func([]byte) error) error {
	if len(text) == 0 || onText == nil {
		return nil
	}
	return onText(text)
}

// setSampler makes or re-seeds the sampler for p without allocating when the
// parameters are unchanged.
func (g *Generator) setSampler(p sampler.Params) error {
	if g.sampler != nil && g.params == p {
		g.sampler.Reset()
		return nil
	}
	smp, err := sampler.New(p, g.State.Model().Config.NVocab)
	if err != nil {
		return fmt.Errorf("inference: %w", err)
	}
	g.sampler, g.params = smp, p
	return nil
}

// Package bench measures how fast a model prefills prompts and decodes tokens,
// and how close decoding comes to the limit the memory bandwidth sets.
//
// Decoding one token reads every weight matrix once, so its speed is bounded
// by the memory read bandwidth divided by the bytes of weights read per token.
// The report gives that ratio as the "roofline" fraction: decode tokens per
// second × weight bytes per token ÷ measured bandwidth.
package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/edgellm/edgellm/inference"
)

// Options configures Run. Zero values take the defaults.
type Options struct {
	PromptTokens int    // tokens of the prefill test (0: 64; negative: no prefill test)
	GenTokens    int    // tokens of the decode test (0: 32; negative: no decode test)
	Threads      int    // threads (0: the CPUs the process may use)
	Reps         int    // repetitions of each test (default 3)
	Seed         uint64 // seed of the random token ids
	// Depth is the number of random tokens in the KV cache before each test
	// (0: none), as llama-bench -d: they are prefilled, untimed, and the
	// prefill test then consumes PromptTokens more at positions Depth…, the
	// decode test GenTokens at positions Depth… (after the Depth tokens, not
	// after the prefill test).
	Depth int
	// KVType is how the state stores keys and values (the zero value:
	// f16).
	KVType inference.KVType
	// Parallel, when positive, runs the tests on the sequences of an
	// inference.Batcher, as the daemon does: the decode test decodes
	// GenTokens tokens in each of Parallel sequences at once and reports
	// their tokens per second together; the prefill test runs in one of
	// them alone. With 2 or more, a join test measures how long a short
	// prompt (JoinShort tokens) that arrives while another sequence
	// prefills a long one (JoinLong tokens) waits for its logits.
	Parallel int
	// BandwidthBytes, when positive, is the size of a buffer that the
	// bandwidth measurement reads instead of what it picks itself (the
	// model's tensor data when they are large enough, see bandwidth.go);
	// negative skips the measurement.
	BandwidthBytes int64
	// BandwidthTime is how long the bandwidth measurement reads, in all
	// (0: 5 s), shared out between the repetitions.
	BandwidthTime time.Duration

	// timed, when set (by tests), is called after each timed test with the
	// test's name ("prefill" or "decode") and the state's positions before
	// and after it.
	timed func(test string, before, after int)
}

func (o *Options) defaults() {
	if o.PromptTokens == 0 {
		o.PromptTokens = 64
	}
	if o.GenTokens == 0 {
		o.GenTokens = 32
	}
	if o.Reps == 0 {
		o.Reps = 3
	}
	if o.BandwidthTime == 0 {
		o.BandwidthTime = 5 * time.Second
	}
}

// Stat is the mean and sample standard deviation of repeated measurements.
type Stat struct {
	Mean    float64   `json:"mean"`
	SD      float64   `json:"sd"`
	Samples []float64 `json:"samples"`
}

func newStat(samples []float64) Stat {
	s := Stat{Samples: samples}
	for _, v := range samples {
		s.Mean += v
	}
	s.Mean /= float64(len(samples))
	if len(samples) > 1 {
		var ss float64
		for _, v := range samples {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(samples)-1))
	}
	return s
}

// Report is the result of Run.
type Report struct {
	Model        string         `json:"model"`
	Arch         string         `json:"arch"`
	Params       int64          `json:"params"`
	FileBytes    int64          `json:"file_bytes"`
	Types        map[string]int `json:"tensor_types"`
	Threads      int            `json:"threads"`
	Reps         int            `json:"reps"`
	PromptTokens int            `json:"prompt_tokens"`
	GenTokens    int            `json:"gen_tokens"`
	Prefill      Stat           `json:"prefill_tok_s"`
	Decode       Stat           `json:"decode_tok_s"`
	// WeightBytesPerToken is the bytes of weights one decode step reads:
	// every layer matrix, the output matrix and one row of the token
	// embeddings.
	WeightBytesPerToken int64 `json:"weight_bytes_per_token"`
	// Streamed is the bytes of weights decode reads per second: decode
	// steps per second × WeightBytesPerToken (with Parallel sequences, a
	// step decodes a token of each).
	Streamed float64 `json:"streamed_bytes_s"`
	// Bandwidth is the measured memory read bandwidth (bytes per second)
	// with the same number of threads: the median of BandwidthPasses passes
	// over BandwidthBytes bytes made after the repetitions, 0 when not
	// measured. BandwidthMin and
	// BandwidthMax are the slowest and the fastest pass.
	Bandwidth       float64 `json:"bandwidth_bytes_s"`
	BandwidthMin    float64 `json:"bandwidth_min_bytes_s,omitempty"`
	BandwidthMax    float64 `json:"bandwidth_max_bytes_s,omitempty"`
	BandwidthPasses int     `json:"bandwidth_passes,omitempty"`
	BandwidthBytes  int64   `json:"bandwidth_buffer_bytes,omitempty"`
	// BandwidthSource is what the measurement read: SourceModel or
	// SourceBuffer. BandwidthWanted is the bytes it wanted to read; a
	// BandwidthBytes smaller than that means the available memory held no
	// more, and caches may have served part of the reads.
	BandwidthSource string `json:"bandwidth_source,omitempty"`
	BandwidthWanted int64  `json:"bandwidth_wanted_bytes,omitempty"`
	// Roofline is Streamed ÷ Bandwidth, in percent.
	Roofline float64 `json:"roofline_percent"`
	// Depth is the number of tokens in the KV cache before each test
	// (Options.Depth).
	Depth int `json:"depth"`
	// Parallel is Options.Parallel: the sequences the decode test ran at
	// once (Decode is their tokens per second together), 0 without a
	// batcher.
	Parallel int `json:"parallel,omitempty"`
	// Join is the join test (Parallel ≥ 2), when the context holds it.
	Join *JoinReport `json:"join,omitempty"`
	// KVType is the KV cache type (Options.KVType): f16 or q8_0.
	KVType string `json:"kv_type"`
}

// WeightBytesPerToken returns the bytes of weights a decode step of m reads:
// all matrices of every layer, the output matrix, one row of the token
// embeddings, and with per-layer inputs (gemma4) per_layer_model_proj and one
// row of per_layer_token_embd (norm weights and biases are negligible and not
// counted).
func WeightBytesPerToken(m *inference.Model) int64 {
	size := func(w *inference.Matrix) int64 { return int64(w.Rows) * int64(w.RowBytes) }
	n := size(m.Output) + int64(m.Embed.RowBytes)
	if m.PerLayerProj != nil {
		n += size(m.PerLayerProj) + int64(m.PerLayerEmbd.RowBytes)
	}
	for i := range m.Layers {
		for _, w := range m.Layers[i].Matrices() {
			n += size(w)
		}
	}
	return n
}

// Run measures model m (loaded from the file named name): opts.Reps
// repetitions of a prefill of opts.PromptTokens random tokens and of
// opts.GenTokens single-token decode steps, each after opts.Depth random
// tokens in the cache (none by default: from an empty context), after a
// warm-up (one step, and one untimed prefill test, as llama-bench's); and
// the memory read bandwidth, in passes after each repetition, so that it is
// measured over the same period as the speeds it is compared with (see
// bandwidth.go). The depth tokens are prefilled untimed
// before each test, or kept from the previous test when the state can rewind
// to them (see inference.State.CanRewind).
func Run(ctx context.Context, name string, m *inference.Model, opts Options) (Report, error) {
	opts.defaults()
	opts.PromptTokens, opts.GenTokens = max(opts.PromptTokens, 0), max(opts.GenTokens, 0)
	if opts.PromptTokens+opts.GenTokens == 0 || opts.Reps < 1 || opts.Threads < 0 || opts.Depth < 0 {
		return Report{}, fmt.Errorf("bench: invalid options %+v", opts)
	}
	c := &m.Config
	longest := max(opts.PromptTokens, opts.GenTokens)
	if n := opts.Depth + longest; c.NCtxTrain > 0 && n > c.NCtxTrain {
		if opts.Depth > 0 {
			return Report{}, fmt.Errorf("bench: depth %d + %d test tokens = %d positions, more than the model's context length of %d",
				opts.Depth, longest, n, c.NCtxTrain)
		}
		return Report{}, fmt.Errorf("bench: %d test tokens, more than the model's context length of %d", longest, c.NCtxTrain)
	}
	r := Report{
		Model: name, Arch: string(c.Arch), FileBytes: int64(m.File.Size), Types: m.TypeHistogram(),
		Reps: opts.Reps, PromptTokens: opts.PromptTokens, GenTokens: opts.GenTokens, Depth: opts.Depth, KVType: opts.KVType.String(),
		WeightBytesPerToken: WeightBytesPerToken(m),
	}
	for _, t := range m.File.Tensors {
		r.Params += int64(t.Elements())
	}
	if opts.Parallel < 0 || opts.Parallel > MaxParallel {
		return r, fmt.Errorf("bench: parallel %d: between 0 (none) and %d", opts.Parallel, MaxParallel)
	}
	ctxLen := opts.Depth + max(longest, 1)
	var joins joinSamples
	joins.longTokens = JoinLong
	if c.NCtxTrain > 0 {
		joins.longTokens = min(JoinLong, c.NCtxTrain-JoinShort)
	}
	join := opts.Parallel >= 2 && joins.longTokens > 2*JoinShort
	if join {
		ctxLen = max(ctxLen, joins.longTokens+JoinShort)
	}
	states, closeStates, err := newStates(m, ctxLen, opts)
	if err != nil {
		return r, fmt.Errorf("bench: %w", err)
	}
	defer closeStates()
	s := states[0]
	r.Threads, r.Parallel = s.Threads(), opts.Parallel
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	tokens := make([]int32, longest+opts.Depth)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(c.NVocab))
	}
	// The test tokens first, so that they are the same whatever the depth.
	tokens, depth := tokens[:longest], tokens[longest:]
	// Warm up as llama-bench does: one step reads every matrix, paging the
	// weights in, and an untimed run of the prefill test itself touches
	// what only a batch uses (the kernels of several tokens, their buffers,
	// the embedding rows of its tokens) before the timed runs.
	if _, err := s.Forward(tokens[0], true); err != nil {
		return r, err
	}
	s.Reset()
	if opts.PromptTokens > 0 {
		if _, err := s.Prefill(ctx, tokens[:opts.PromptTokens], true); err != nil {
			return r, fmt.Errorf("bench: warm-up prefill: %w", err)
		}
	}
	s.Idle()
	s.Reset() // toDepth keeps what the state holds only when it is the depth tokens
	var probe *bandwidthProbe
	if opts.BandwidthBytes >= 0 {
		buffer, want := probePlan(m, opts.BandwidthBytes)
		probe = newBandwidthProbe(m, r.Threads, buffer, want)
		defer probe.close()
	}
	g := inference.NewGenerator(s, m.Tokenizer)
	timed := func(test string, n int, run func() error) (float64, error) {
		for _, st := range states {
			if err := toDepth(ctx, st, depth); err != nil {
				return 0, err
			}
		}
		before := s.Pos()
		start := time.Now()
		if err := run(); err != nil {
			return 0, fmt.Errorf("bench: %s test: %w", test, err)
		}
		tps := float64(n) / time.Since(start).Seconds()
		if opts.timed != nil {
			opts.timed(test, before, s.Pos())
		}
		return tps, nil
	}
	var prefill, decode []float64
	for range opts.Reps {
		if opts.PromptTokens > 0 {
			tps, err := timed("prefill", opts.PromptTokens, func() error {
				_, err := g.Prefill(ctx, tokens[:opts.PromptTokens])
				return err
			})
			if err != nil {
				return r, err
			}
			prefill = append(prefill, tps)
		}
		if opts.GenTokens > 0 {
			tps, err := timed("decode", len(states)*opts.GenTokens, func() error {
				return decodeAll(states, tokens[:opts.GenTokens])
			})
			if err != nil {
				return r, err
			}
			decode = append(decode, tps)
		}
		if join {
			if err := joinTest(ctx, states, rng, c.NVocab, &joins); err != nil {
				return r, err
			}
		}
		if probe != nil {
			probe.Read(opts.BandwidthTime / time.Duration(opts.Reps))
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
	}
	if len(prefill) > 0 {
		r.Prefill = newStat(prefill)
	}
	if len(decode) > 0 {
		r.Decode = newStat(decode)
		r.Streamed = r.Decode.Mean / float64(max(r.Parallel, 1)) * float64(r.WeightBytesPerToken) // a step reads the weights once for all its sequences
	}
	if join {
		r.Join = joins.report()
	}
	if probe != nil {
		probe.record(&r)
	}
	if r.Bandwidth > 0 {
		r.Roofline = 100 * r.Streamed / r.Bandwidth
	}
	return r, nil
}

// toDepth leaves s holding exactly the depth tokens: it rewinds to them when
// the state holds them and can, and otherwise resets it and prefills them.
// Without depth tokens it resets the state. A state of at least len(depth)
// positions must hold the depth tokens first.
func toDepth(ctx context.Context, s *inference.State, depth []int32) error {
	if len(depth) > 0 && s.Pos() >= len(depth) && s.Rewind(len(depth)) {
		return nil
	}
	s.Reset()
	if len(depth) == 0 {
		return nil
	}
	defer s.Idle()
	if _, err := s.Prefill(ctx, depth, false); err != nil {
		return fmt.Errorf("bench: prefill of the %d depth tokens: %w", len(depth), err)
	}
	return nil
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/daemon"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/inference/sampler"
)

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	prompt := fs.String("p", "", "the `PROMPT` text (default: read standard input)")
	n := fs.Int("n", 256, "generate at most `N` tokens")
	temp := fs.Float64("t", 0.8, "temperature `TEMP`, 0 for greedy")
	topP := fs.Float64("k", 0.9, "top-p (nucleus sampling) threshold `P` in (0, 1], 1 for off; PicoLM's -k, not top-k")
	fs.Var(fs.Lookup("k").Value, "top-p", fs.Lookup("k").Usage)
	topK := fs.Int("top-k", 0, "keep the `K` most likely tokens only, 0 for off")
	seed := fs.Uint64("s", 42, "random `SEED`")
	ctxLen := fs.Int("c", 0, "context length `CTX` in tokens (default: the model's, at most 2048)")
	threads := fs.Int("j", 0, "use `THREADS` threads (default: the CPUs this process may use)")
	kvName := kvTypeFlag(fs)
	repack := repackFlag(fs)
	asChat := fs.Bool("chat", false, "send the prompt as a user message, formatted with the chat template")
	tmplName := fs.String("chat-template", "", "chat template for --chat: a `NAME` (chatml, zephyr, llama2, llama3, llama3.1, phi3) or a FILE.jinja (default: the model's own)")
	asJSON := fs.Bool("json", false, "answer with one JSON value")
	schemaFile := fs.String("schema", "", "answer with JSON that follows the JSON Schema in `FILE`")
	cacheFile := fs.String("cache", "", "prompt cache `FILE`: reuse the saved KV cache of a prompt sharing a prefix, and save this prompt's")
	toolsFile := fs.String("tools", "", "answer with calls of the tools in `FILE`, a JSON array of {\"name\",\"description\",\"parameters\"}, in the chat template's call syntax (needs --chat)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one MODEL argument, got %d", len(pos))
	}
	if *n <= 0 {
		return usagef("-n %d: must be positive", *n)
	}
	if *ctxLen < 0 || *threads < 0 {
		return usagef("-c and -j must not be negative")
	}
	kv, err := kvTypeOf(*kvName)
	if err != nil {
		return err
	}
	if !(*temp >= 0 && *temp <= 100) {
		return usagef("-t %v: temperature must be between 0 and 100", *temp)
	}
	if !(*topP > 0 && *topP <= 1) {
		return usagef("-k/--top-p %v: top-p must be in (0, 1]", *topP)
	}
	if *topK < 0 {
		return usagef("--top-k %d: must not be negative (0 is off)", *topK)
	}
	params := sampler.DefaultParams()
	params.Temperature, params.TopP, params.Seed = float32(*temp), float32(*topP), *seed
	params.TopK, params.MinP = *topK, 0 // PicoLM's sampler (temperature, top-p) plus an optional top-k
	if err := params.Validate(); err != nil {
		return usageError{err.Error()}
	}
	text := *prompt
	if !flagSet(fs, "p") {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("reading the prompt from standard input: %w", err)
		}
		text = string(b)
	}

	m, err := loadModel(pos[0], *repack, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.AdviseFor(0); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	ctx := *ctxLen
	if ctx == 0 {
		ctx = min(m.Config.NCtxTrain, 2048)
	}
	job, err := runJob(text, *n, *asJSON, *schemaFile, *toolsFile)
	if err != nil {
		return err
	}
	if len(job.Tools) > 0 && !*asChat {
		return usagef("--tools needs --chat (the chat template presents the tools)")
	}
	var format *chat.Format // nil: a raw completion
	if *asChat {
		if format, err = m.ChatFormat(*tmplName); err != nil {
			return fmt.Errorf("--chat: %w", err)
		}
		if p := templateProber(); p != nil && format.Jinja != nil {
			if err := p.Check(context.Background(), format.Jinja.Source(), format.BOS, format.EOS); err != nil {
				return fmt.Errorf("--chat: %s: %w", format.Origin, err)
			}
		}
	} else if *tmplName != "" {
		return usagef("--chat-template needs --chat")
	}
	// The daemon's pipeline: the same prompt tokens, constraint and stop
	// strings as a request to `edgellm serve` would get.
	pp, err := daemon.NewPipeline(m, daemon.PipelineOptions{Context: ctx, Format: format, RawSpecial: true}).Prepare(job)
	switch {
	case errors.Is(err, daemon.ErrPromptTooLong):
		return fmt.Errorf("the prompt does not fit in the context of %d tokens (raise -c): %w", ctx, err)
	case err != nil:
		return fmt.Errorf("%s: %w", runFlagOf(err, *schemaFile, *toolsFile), err)
	}
	ids := pp.IDs
	s, err := m.NewStateKV(ctx, *threads, kv)
	if err != nil {
		return err
	}
	defer s.Close()
	g := inference.NewGenerator(s, m.Tokenizer)
	if *cacheFile != "" {
		switch toks, err := s.LoadCache(*cacheFile); {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			fmt.Fprintf(stderr, "warning: %v; prefilling the whole prompt\n", err)
		default:
			g.Adopt(toks)
		}
	}

	out := bufio.NewWriter(stdout)
	write := func(text string) error {
		if _, err := out.WriteString(text); err != nil {
			return err
		}
		return out.Flush()
	}
	stops := daemon.StopMatcher{Stops: pp.Stops}
	stopped := false
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := g.Generate(sigCtx, ids, inference.GenerateOptions{
		MaxTokens:    *n,
		Sampling:     params,
		Grammar:      pp.Grammar,
		GrammarStart: pp.GrammarStart,
		ShowTokens:   pp.Marks,
		ReusePrefix:  *cacheFile != "",
		OnText: func(b []byte) error {
			text, hit := stops.Feed(string(b))
			if err := write(text); err != nil {
				return err
			}
			if hit {
				stopped = true
				return errStopString
			}
			return nil
		},
	})
	finish := string(res.Finish)
	switch {
	case stopped:
		err, finish = nil, string(inference.FinishStop)
	case err == nil:
		err = write(stops.Flush())
	}
	out.WriteString("\n")
	out.Flush()
	if err != nil && res.Finish != inference.FinishCancelled {
		return err
	}
	if *cacheFile != "" {
		fmt.Fprintf(stderr, "prompt cache: reused %d of %d prompt tokens\n", res.CachedTokens, res.PromptTokens)
		if res.CachedTokens < len(ids)-1 {
			if err := s.SaveCache(*cacheFile, ids); err != nil {
				fmt.Fprintf(stderr, "warning: %v\n", err)
			}
		}
	}
	fmt.Fprintf(stderr, "prefill: %d tokens, %.1f tok/s\n", res.PromptTokens-res.CachedTokens, res.PrefillTPS())
	fmt.Fprintf(stderr, "decode: %d tokens, %.1f tok/s (%s)\n", res.Tokens, res.DecodeTPS(), finish)
	mem := inference.MeasureMemory(s)
	fmt.Fprintf(stderr, "memory: heap %.1f MiB (KV cache %.1f MiB, %s), model mapped %.1f MiB, RSS %.1f MiB, threads %d\n",
		mib(mem.Heap), mib(mem.KVCache), s.KVType(), mib(mem.Mapped), mib(mem.RSS), s.Threads())
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// errStopString ends run's generation at a stop string.
var errStopString = errors.New("stop string")

// runJob is the job of run's prompt: at most n tokens, and the output
// constraint of --json, --schema or --tools (at most one; --tools makes a
// call required). Sampling is run's own (its flags).
func runJob(prompt string, n int, asJSON bool, schemaFile, toolsFile string) (daemon.Job, error) {
	job := daemon.Job{Prompt: prompt, MaxTokens: n, JSON: asJSON}
	set := 0
	for _, on := range []bool{asJSON, schemaFile != "", toolsFile != ""} {
		if on {
			set++
		}
	}
	switch {
	case set > 1:
		return job, usagef("--json, --schema and --tools exclude each other")
	case schemaFile != "":
		data, err := os.ReadFile(schemaFile)
		if err != nil {
			return job, fmt.Errorf("--schema: %w", err)
		}
		job.Schema = data
	case toolsFile != "":
		data, err := os.ReadFile(toolsFile)
		if err != nil {
			return job, fmt.Errorf("--tools: %w", err)
		}
		var raw []api.ToolFunction
		if err := json.Unmarshal(data, &raw); err != nil || len(raw) == 0 {
			return job, fmt.Errorf("--tools %s: want a JSON array of {\"name\",\"description\",\"parameters\"} (%v)", toolsFile, err)
		}
		for _, f := range raw {
			job.Tools = append(job.Tools, api.Tool{Type: "function", Function: f})
		}
		job.ToolChoice = &api.ToolChoice{Mode: api.ToolChoiceRequired}
	}
	return job, nil
}

// runFlagOf names the flag that set what a pipeline error is about: the
// --schema or --tools file, else --chat (the template) or -p (the prompt).
func runFlagOf(err error, schemaFile, toolsFile string) string {
	var e *api.Error
	errors.As(err, &e)
	switch {
	case e != nil && e.Field == "schema":
		return "--schema " + schemaFile
	case e != nil && (e.Field == "tools" || e.Field == "tool_choice"):
		return "--tools " + toolsFile
	case e != nil && e.Field == "messages":
		return "--chat"
	}
	return "-p"
}

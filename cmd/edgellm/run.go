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
	"time"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/inference/chat/toolcall"
	"github.com/edgellm/edgellm/inference/grammar"
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

	m, err := inference.Load(pos[0])
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
	gr, tools, err := runGrammar(*asJSON, *schemaFile, *toolsFile)
	if err != nil {
		return err
	}
	if len(tools) > 0 && !*asChat {
		return usagef("--tools needs --chat (the chat template presents the tools)")
	}
	if *asChat {
		f, err := m.ChatFormat(*tmplName)
		if err != nil {
			return fmt.Errorf("--chat: %w", err)
		}
		if p := templateProber(); p != nil && f.Jinja != nil {
			if err := p.Check(context.Background(), f.Jinja.Source(), f.BOS, f.EOS); err != nil {
				return fmt.Errorf("--chat: %s: %w", f.Origin, err)
			}
		}
		if len(tools) > 0 {
			if gr, err = toolsGrammar(f, tools); err != nil {
				return err
			}
		}
		in, err := chat.NewInput([]chat.Message{{Role: chat.RoleUser, Content: text}}, tools)
		if err != nil {
			return fmt.Errorf("--chat: %w", err)
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		text, err = f.Prompt(rctx, in)
		cancel()
		if err != nil {
			return fmt.Errorf("--chat: %w", err)
		}
	} else if *tmplName != "" {
		return usagef("--chat-template needs --chat")
	}
	ids, err := m.Tokenizer.Encode(text, true)
	if err != nil {
		return err
	}
	if len(ids) >= ctx {
		return fmt.Errorf("prompt of %d tokens does not fit in the context of %d tokens (raise -c)", len(ids), ctx)
	}
	s, err := m.NewState(ctx, *threads)
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
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := g.Generate(sigCtx, ids, inference.GenerateOptions{
		MaxTokens:   *n,
		Sampling:    params,
		Grammar:     gr,
		ReusePrefix: *cacheFile != "",
		OnText: func(b []byte) error {
			if _, err := out.Write(b); err != nil {
				return err
			}
			return out.Flush()
		},
	})
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
	fmt.Fprintf(stderr, "decode: %d tokens, %.1f tok/s (%s)\n", res.Tokens, res.DecodeTPS(), res.Finish)
	mem := inference.MeasureMemory(s)
	fmt.Fprintf(stderr, "memory: heap %.1f MiB (KV cache %.1f MiB), model mapped %.1f MiB, RSS %.1f MiB, threads %d\n",
		mib(mem.Heap), mib(mem.KVCache), mib(mem.Mapped), mib(mem.RSS), s.Threads())
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

// runGrammar compiles run's output constraint: --json, --schema or --tools
// (at most one), or none.
//
// The tools' grammar is compiled later (toolsGrammar), once the chat
// template, whose call syntax it follows, is known.
func runGrammar(asJSON bool, schemaFile, toolsFile string) (*grammar.Grammar, []chat.Tool, error) {
	set := 0
	for _, on := range []bool{asJSON, schemaFile != "", toolsFile != ""} {
		if on {
			set++
		}
	}
	switch {
	case set > 1:
		return nil, nil, usagef("--json, --schema and --tools exclude each other")
	case asJSON:
		return grammar.JSON(grammar.Options{}), nil, nil
	case schemaFile != "":
		data, err := os.ReadFile(schemaFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--schema: %w", err)
		}
		g, err := grammar.CompileSchema(data, grammar.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf("--schema %s: %w", schemaFile, err)
		}
		return g, nil, nil
	case toolsFile != "":
		data, err := os.ReadFile(toolsFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--tools: %w", err)
		}
		var tools []chat.Tool
		var raw []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(data, &raw); err != nil || len(raw) == 0 {
			return nil, nil, fmt.Errorf("--tools %s: want a JSON array of {\"name\",\"description\",\"parameters\"} (%v)", toolsFile, err)
		}
		for _, t := range raw {
			tools = append(tools, chat.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
		return nil, tools, nil
	}
	return nil, nil, nil
}

// toolsGrammar compiles the constraint of run's --tools: a whole answer of
// calls of tools in the call syntax of the chat template f.
func toolsGrammar(f *chat.Format, tools []chat.Tool) (*grammar.Grammar, error) {
	gt := make([]toolcall.Tool, len(tools))
	for i, t := range tools {
		gt[i] = toolcall.Tool{Name: t.Name, Parameters: t.Parameters}
	}
	g, err := toolcall.OfFormat(f).Grammar(gt, true, grammar.Options{})
	if err != nil {
		return nil, fmt.Errorf("--tools: %w", err)
	}
	return g, nil
}

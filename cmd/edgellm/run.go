package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/inference/sampler"
)

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	prompt := fs.String("p", "", "prompt (default: read standard input)")
	n := fs.Int("n", 256, "tokens to generate at most")
	temp := fs.Float64("t", 0.8, "temperature (0 = greedy)")
	topP := fs.Float64("k", 0.9, "top-p (nucleus) sampling threshold")
	seed := fs.Uint64("s", 42, "random seed")
	ctxLen := fs.Int("c", 0, "context length (default: the model's, at most 2048)")
	threads := fs.Int("j", 0, "threads (default: the CPUs this process may use)")
	asChat := fs.Bool("chat", false, "send the prompt as a user message, formatted with the chat template")
	tmplName := fs.String("chat-template", "", "chat template for --chat: chatml, zephyr, llama2, llama3, llama3.1, phi3 (default: the model's)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one MODEL argument, got %d (usage: edgellm run MODEL [-p PROMPT] [-n N] [-t TEMP] [-k TOP_P] [-s SEED] [-c CTX] [-j THREADS] [--chat [--chat-template NAME]])", len(pos))
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
		return usagef("-k %v: top-p must be in (0, 1]", *topP)
	}
	params := sampler.DefaultParams()
	params.Temperature, params.TopP, params.Seed = float32(*temp), float32(*topP), *seed
	params.TopK, params.MinP = 0, 0 // PicoLM's sampler: temperature and top-p only
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
	if *asChat {
		t, err := m.ChatTemplate(*tmplName)
		if err != nil {
			return fmt.Errorf("--chat: %w (choose one with --chat-template)", err)
		}
		if text, err = t.Render([]chat.Message{{Role: chat.RoleUser, Content: text}}, true); err != nil {
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

	out := bufio.NewWriter(stdout)
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := g.Generate(sigCtx, ids, inference.GenerateOptions{
		MaxTokens: *n,
		Sampling:  params,
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
	fmt.Fprintf(stderr, "prefill: %d tokens, %.1f tok/s\n", res.PromptTokens, res.PrefillTPS())
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

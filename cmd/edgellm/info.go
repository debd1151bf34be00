package main

import (
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/edgellm/edgellm/inference"
)

func cmdInfo(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	ctxLen := fs.Int("c", 0, "context length for the memory estimate (default: the model's, at most 2048)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one MODEL argument (usage: edgellm info MODEL [-c CTX])")
	}
	if *ctxLen < 0 {
		return usagef("-c must not be negative")
	}
	m, err := inference.Load(pos[0])
	if err != nil {
		return err
	}
	defer m.Close()
	c := m.Config
	ctx := *ctxLen
	if ctx == 0 {
		ctx = min(c.NCtxTrain, 2048)
	}
	p := func(format string, a ...any) { fmt.Fprintf(stdout, format, a...) }
	p("file:            %s (%.1f MiB, GGUF v%d)\n", pos[0], mib(int64(m.File.Size)), m.File.Version)
	p("name:            %s\n", c.Name)
	p("architecture:    %s\n", c.Arch)
	p("layers:          %d\n", c.NLayer)
	p("embedding:       %d\n", c.NEmbd)
	p("heads:           %d query, %d key/value, head dim %d\n", c.NHead, c.NHeadKV, c.HeadDim)
	p("feed-forward:    %d\n", c.NFF)
	p("vocabulary:      %d (%s tokenizer, pre-tokenizer %q)\n", c.NVocab, m.Tokenizer.Model(), m.Tokenizer.Pre())
	p("context:         %d trained\n", c.NCtxTrain)
	style := "norm"
	if c.RopeStyle == inference.RopeNeox {
		style = "neox"
	}
	p("rope:            %s, base %g, dim %d, scale %g\n", style, c.RopeBase, c.RopeDim, c.RopeScale)
	p("rms norm eps:    %g\n", c.NormEps)
	hist := m.TypeHistogram()
	types := make([]string, 0, len(hist))
	for t := range hist {
		types = append(types, t)
	}
	sort.Strings(types)
	p("tensor types:   ")
	for _, t := range types {
		p(" %s×%d", t, hist[t])
	}
	p("\n")
	est := m.EstimateMemory(ctx)
	p("memory at context %d: weights %.1f MiB (mapped), KV cache %.1f MiB, buffers %.1f MiB, total %.1f MiB\n",
		ctx, mib(est.Weights), mib(est.KVCache), mib(est.Buffers), mib(est.Weights+est.KVCache+est.Buffers))
	return nil
}

package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference"
)

// cmdInfo is `edgellm info MODEL`: what the file holds (size, metadata,
// tensors), then what the engine makes of it (hyper-parameters, memory at a
// context). A file the engine cannot run is described all the same, its
// tensors listed, before the error that says why.
func cmdInfo(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	ctxLen := fs.Int("c", 0, "context length `CTX` of the memory estimate (default: the model's, at most 2048)")
	kvName := kvTypeFlag(fs)
	slots := fs.Int("slots", 1, "jobs at once `N` of the memory estimate (queue.slots): each has its own caches and logits, all share one workspace")
	tensors := fs.Bool("tensors", false, "list every tensor: name, type, shape, bytes (always for a file edgellm cannot run)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one MODEL argument, got %d", len(pos))
	}
	if *ctxLen < 0 {
		return usagef("-c must not be negative")
	}
	if *slots < 1 {
		return usagef("--slots must be at least 1")
	}
	kv, err := kvTypeOf(*kvName)
	if err != nil {
		return err
	}
	f, err := gguf.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	m, loadErr := inference.FromFile(f)
	fmt.Fprintf(stdout, "file:            %s (%s, GGUF v%d)\n", pos[0], gguf.FormatBytes(f.Size), f.Version)
	if err := f.Describe(stdout, *tensors || loadErr != nil); err != nil {
		return err
	}
	if loadErr != nil {
		return fmt.Errorf("%s: edgellm cannot run it: %w", pos[0], loadErr)
	}
	c := m.Config
	ctx := *ctxLen
	if ctx == 0 {
		ctx = min(c.NCtxTrain, 2048)
	}
	p := func(format string, a ...any) { fmt.Fprintf(stdout, format, a...) }
	p("model:\n")
	p("  name:          %s\n", c.Name)
	p("  architecture:  %s\n", c.Arch)
	p("  layers:        %s\n", c.Summary())
	p("  embedding:     %d\n", c.NEmbd)
	p("  heads:         %d query, %d key/value, head dim %d\n", c.NHead, c.NHeadKV, c.HeadDim)
	p("  feed-forward:  %d\n", c.NFF)
	p("  vocabulary:    %d (%s tokenizer, pre-tokenizer %q)\n", c.NVocab, m.Tokenizer.Model(), m.Tokenizer.Pre())
	p("  context:       %d trained\n", c.NCtxTrain)
	p("  rope:          %s, base %g, dim %d, scale %g\n", c.RopeStyle, c.RopeBase, c.RopeDim, c.RopeScale)
	p("  rms norm eps:  %g\n", c.NormEps)
	if err := c.CheckKVType(kv); err != nil {
		return fmt.Errorf("--kv-type %v: %w", kv, err)
	}
	est := m.EstimateMemory(ctx, kv)
	p("memory at context %d: weights %.1f MiB (mapped), KV cache %.1f MiB (%v), buffers %.1f MiB, total %.1f MiB\n",
		ctx, mib(est.Weights), mib(est.KVCache), kv, mib(est.Buffers), mib(est.Weights+est.KVCache+est.Buffers))
	if n := int64(*slots); n > 1 {
		// The slots share one workspace; each adds its caches and logits.
		buffers := est.Buffers + (n-1)*c.SequenceBytes()
		p("  with %d slots (queue.slots): KV caches %.1f MiB, buffers %.1f MiB, total %.1f MiB\n",
			n, mib(n*est.KVCache), mib(buffers), mib(est.Weights+n*est.KVCache+buffers))
	}
	if kv != inference.KVF16 {
		p("  keys and values in %v: %.2f MiB, where f16 takes %.2f MiB\n", kv,
			mib(est.KVCache-recurrentBytes(&c, ctx)), mib(c.CacheBytes(ctx, inference.KVF16)-recurrentBytes(&c, ctx)))
	}
	if rec := recurrentBytes(&c, ctx); rec > 0 {
		p("  of which recurrent states (convolution, Gated DeltaNet; F32, fixed whatever the context): %.2f MiB\n", mib(rec))
	}
	if n := sharedKVLayers(&c, ctx); n > 0 {
		p("  %d layers attend to an earlier layer's KV cache and keep none of their own (counted as 0)\n", n)
	}
	if full := fullKVBytes(&c, ctx, kv); full > est.KVCache {
		p("  sliding-window layers keep only their window: a full KV cache in every layer would take %.1f MiB\n", mib(full))
	}
	return nil
}

// recurrentBytes is the part of the cache at ctx that recurrent layers
// (short convolutions, DeltaNet) keep: a fixed size per sequence.
func recurrentBytes(c *inference.Config, ctx int) int64 {
	var n int64
	for _, s := range c.CacheSpecs(ctx, inference.KVF16) {
		if s.Kind.Recurrent() {
			n += s.Bytes()
		}
	}
	return n
}

// sharedKVLayers counts the layers that read another layer's KV cache
// (gemma4's shared-KV layers).
func sharedKVLayers(c *inference.Config, ctx int) int {
	n := 0
	for _, s := range c.CacheSpecs(ctx, inference.KVF16) {
		if s.Kind == inference.CacheNone {
			n++
		}
	}
	return n
}

// fullKVBytes is the KV cache the model would need at ctx if every attention
// layer kept the whole context (no sliding-window rings).
func fullKVBytes(c *inference.Config, ctx int, kv inference.KVType) int64 {
	var n int64
	for _, s := range c.CacheSpecs(ctx, kv) {
		if s.Kind == inference.CacheKV {
			s.Rows = ctx
		}
		n += s.Bytes()
	}
	return n
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"time"

	"github.com/edgellm/edgellm/inference/bench"
)

func cmdBench(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	model := fs.String("m", "", "model file (GGUF)")
	prompt := fs.Int("p", 64, "prompt tokens of the prefill test (0: skip)")
	gen := fs.Int("n", 32, "tokens of the decode test (0: skip)")
	depth := fs.Int("d", 0, "cached tokens before each test (like llama-bench -d)")
	threads := fs.Int("j", 0, "threads (default: the CPUs this process may use)")
	reps := fs.Int("r", 3, "repetitions of each test")
	parallel := fs.Int("parallel", 0, "decode this many sequences at once through the batcher the daemon uses (tok/s of all together), and time a short prompt joining a long prefill (0: one state of its own)")
	kvName := kvTypeFlag(fs)
	repack := repackFlag(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	bwMiB := fs.Int64("bw-mib", 0, "measure the bandwidth on a buffer of this many MiB (default: the model's tensor data when they are at least 512 MiB, else a buffer that large; -1: skip)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (pprof format) to `FILE`")
	bwTime := fs.Duration("bw-time", 5*time.Second, "measure the bandwidth for `DURATION` in all, in passes after each repetition")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	const usage = "usage: edgellm bench -m MODEL [-p 64] [-n 32] [-d DEPTH] [--kv-type f16|q8_0] [--repack] [--parallel N] [-j THREADS] [-r REPS] [--json]"
	if len(pos) != 0 || *model == "" {
		return usagef("want -m MODEL and no other arguments (%s)", usage)
	}
	if *prompt < 0 || *gen < 0 || *depth < 0 || *threads < 0 || *reps < 1 || (*prompt == 0 && *gen == 0) || *bwTime <= 0 || *parallel < 0 || *parallel > bench.MaxParallel {
		return usagef("-p and -n must not be negative (nor both 0), -d and -j not negative, -r at least 1, --bw-time positive, --parallel 0 to %d", bench.MaxParallel)
	}
	kv, err := kvTypeOf(*kvName)
	if err != nil {
		return err
	}
	m, err := loadModel(*model, *repack, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	opts := bench.Options{Threads: *threads, Reps: *reps, Depth: *depth, KVType: kv, BandwidthBytes: *bwMiB << 20, BandwidthTime: *bwTime, Parallel: *parallel}
	// Zero means "default" to bench.Options; a test that is skipped is -1 there.
	opts.PromptTokens, opts.GenTokens = orSkip(*prompt), orSkip(*gen)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := bench.Run(ctx, *model, m, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&r)
	}
	return r.WriteText(stdout)
}

// orSkip maps a token count of 0 (skip the test) to bench's -1.
func orSkip(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

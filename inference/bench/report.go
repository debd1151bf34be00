package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText writes the report as a table for people, e.g.
//
//	model: tl-q4km.gguf (llama, 1100.0 M weights, 636.9 MiB; F32×45 Q4_K×135 Q6_K×21)
//	threads 2, 5 repetitions
//
//	test         tok/s
//	prefill 64   30.40 ± 1.64
//	decode 32    23.85 ± 1.23
//
//	weights read per token: 600.7 MiB
//	decode streams:         15.02 GB/s (decode steps/s × weights read per step)
//	memory read bandwidth:  21.57 GB/s (median of 165 passes, 15.67–27.91; 2 threads reading the model's 636.2 MiB of tensor data)
//	roofline:               69.6 % (decode streams ÷ bandwidth)
//
// With a depth, the test names say it as llama-bench does: "prefill 64 @
// d1024", "decode 32 @ d1024".
func (r *Report) WriteText(w io.Writer) error {
	types := make([]string, 0, len(r.Types))
	for t, n := range r.Types {
		types = append(types, fmt.Sprintf("%s×%d", t, n))
	}
	sort.Strings(types)
	var b strings.Builder
	fmt.Fprintf(&b, "model: %s (%s, %.1f M weights, %.1f MiB; %s)\n", r.Model, r.Arch,
		float64(r.Params)/1e6, mib(r.FileBytes), strings.Join(types, " "))
	kv := ""
	if r.KVType != "" && r.KVType != "f16" {
		kv = ", KV cache " + r.KVType
	}
	fmt.Fprintf(&b, "threads %d, %d repetitions%s\n\n", r.Threads, r.Reps, kv)
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "test\ttok/s")
	if r.PromptTokens > 0 {
		fmt.Fprintf(tw, "prefill %d%s\t%s\n", r.PromptTokens, r.atDepth(), r.Prefill)
	}
	if r.GenTokens > 0 && r.Parallel > 1 {
		fmt.Fprintf(tw, "decode %d%s × %d sequences\t%s (all together)\n", r.GenTokens, r.atDepth(), r.Parallel, r.Decode)
	} else if r.GenTokens > 0 {
		fmt.Fprintf(tw, "decode %d%s\t%s\n", r.GenTokens, r.atDepth(), r.Decode)
	}
	tw.Flush()
	if j := r.Join; j != nil {
		fmt.Fprintf(&b, "\njoin: a %d-token prompt arriving during a %d-token prefill has its first token after %s ms;\n", JoinShort, j.LongTokens, j.Wait)
		fmt.Fprintf(&b, "      one step of that prefill alone takes %s ms; the whole prefill beside it %s ms\n", j.Step, j.Long)
	}
	fmt.Fprintf(&b, "\nweights read per token: %.1f MiB\n", mib(r.WeightBytesPerToken))
	if r.GenTokens > 0 {
		fmt.Fprintf(&b, "decode streams:         %.2f GB/s (decode steps/s × weights read per step)\n", r.Streamed/1e9)
	}
	if r.Bandwidth > 0 {
		fmt.Fprintf(&b, "memory read bandwidth:  %.2f GB/s (median of %d passes, %.2f–%.2f; %d threads reading %s)\n",
			r.Bandwidth/1e9, r.BandwidthPasses, r.BandwidthMin/1e9, r.BandwidthMax/1e9, r.Threads, r.probed())
		if r.BandwidthBytes < r.BandwidthWanted {
			fmt.Fprintf(&b, "                        less than the %.0f MiB wanted, for want of memory: caches may have served part of it\n",
				mib(r.BandwidthWanted))
		}
	}
	if r.Bandwidth > 0 && r.GenTokens > 0 {
		fmt.Fprintf(&b, "roofline:               %.1f %% (decode streams ÷ bandwidth)\n", r.Roofline)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// atDepth is the suffix of the test names that gives the depth, as
// llama-bench's "pp512 @ d1024": " @ d1024", or "" without depth.
func (r *Report) atDepth() string {
	if r.Depth == 0 {
		return ""
	}
	return fmt.Sprintf(" @ d%d", r.Depth)
}

// probed says what the bandwidth measurement read.
func (r *Report) probed() string {
	if r.BandwidthSource == SourceModel {
		return fmt.Sprintf("the model's %.1f MiB of tensor data", mib(r.BandwidthBytes))
	}
	return fmt.Sprintf("a %.0f MiB buffer", mib(r.BandwidthBytes))
}

// String formats the statistic as "mean ± sd".
func (s Stat) String() string { return fmt.Sprintf("%.2f ± %.2f", s.Mean, s.SD) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }

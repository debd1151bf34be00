package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/edgellm/edgellm/inference/synth"
)

func cmdSynth(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	shapeName := fs.String("shape", "", "model shape `NAME`: "+strings.Join(synth.ShapeNames(), ", "))
	typeName := fs.String("type", "", "file `TYPE`: "+strings.Join(synth.FileTypeNames(), ", "))
	out := fs.String("o", "", "output GGUF `FILE`")
	seed := fs.Uint64("seed", 1, "`SEED` of the random weights")
	pure := fs.Bool("pure", false, "every matrix in the type's default tensor type (no per-tensor mix)")
	threads := fs.Int("j", 0, "use `THREADS` threads (default: the CPUs this process may use)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *shapeName == "" || *typeName == "" || *out == "" {
		return usagef("--shape, --type and -o are required")
	}
	if *threads < 0 {
		return usagef("-j must not be negative")
	}
	shape, err := synth.LookupShape(*shapeName)
	if err != nil {
		return usageError{err.Error()}
	}
	ft, err := synth.ParseFileType(*typeName)
	if err != nil {
		return usageError{err.Error()}
	}
	start := time.Now()
	sum, err := synth.WriteFile(*out, synth.Options{Shape: shape, Type: ft, Seed: *seed, Pure: *pure, Threads: *threads})
	if err != nil {
		return err
	}
	types := make([]string, 0, len(sum.Types))
	for t, n := range sum.Types {
		types = append(types, fmt.Sprintf("%s×%d", t, n))
	}
	sort.Strings(types)
	fmt.Fprintf(stdout, "%s: %s (%s), %s, %.1f M weights, %d tensors (%s), %.1f MiB, %.1f s\n",
		*out, shape.Name, shape.Model, ft, float64(shape.Params())/1e6, sum.Tensors,
		strings.Join(types, " "), mib(sum.Bytes), time.Since(start).Seconds())
	return nil
}

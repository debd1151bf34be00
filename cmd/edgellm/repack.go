package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/edgellm/edgellm/inference"
)

// repackFlag defines --repack, which loadModel reads.
func repackFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("repack", false, "copy the Q4_0 and Q4_K weight matrices into the interleaved layouts this CPU's kernels multiply faster (AVX2; on the heap, about as large as those matrices, instead of the file's reclaimable pages)")
}

// loadModel loads the model at path and, with repack, interleaves its
// weights (Model.Interleave), saying on stderr how much it copied.
func loadModel(path string, repack bool, stderr io.Writer) (*inference.Model, error) {
	m, err := inference.Load(path)
	if err != nil {
		return nil, err
	}
	if !repack {
		return m, nil
	}
	n, err := m.Interleave()
	if err != nil {
		m.Close()
		return nil, err
	}
	if n == 0 {
		fmt.Fprintln(stderr, "--repack: nothing to repack (no Q4_0 or Q4_K matrix, or no kernels for the interleaved layouts on this CPU)")
	} else {
		fmt.Fprintf(stderr, "--repack: %.1f MiB of weights interleaved\n", float64(n)/(1<<20))
	}
	return m, nil
}

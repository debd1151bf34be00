package main

import (
	"bufio"
	"flag"
	"io"
	"strconv"

	"github.com/edgellm/edgellm/inference"
)

func cmdTokenize(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	model := fs.String("m", "", "`MODEL` or vocabulary file (GGUF)")
	special := fs.Bool("special", false, "add BOS/EOS as the model says and parse special tokens in the text")
	text := fs.String("p", "", "`TEXT` (default: the exact bytes of standard input)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *model == "" {
		return usagef("-m MODEL is required")
	}
	in := *text
	if !flagSet(fs, "p") {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		in = string(b)
	}
	tok, closeFn, err := inference.LoadTokenizer(*model)
	if err != nil {
		return err
	}
	defer closeFn()
	ids, err := tok.Encode(in, *special)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	for i, id := range ids {
		if i > 0 {
			w.WriteByte(' ')
		}
		w.WriteString(strconv.Itoa(int(id)))
	}
	w.WriteByte('\n')
	return w.Flush()
}

package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// printUsage writes the top-level usage: the commands and where to start.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `edgellm runs language models from GGUF files on this machine and serves
them over MQTT.

usage: edgellm COMMAND [arguments]
       edgellm help COMMAND      (or edgellm COMMAND --help) describes a command
       edgellm --version

commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
examples:
  edgellm run testdata/models/stories260K-tok512.gguf -p "Once upon a time"
  make demo    # then, in a second terminal:
  edgellm send --node demo "Once upon a time"
`)
}

// printCommandUsage writes c's usage: synopsis, description, one line per
// flag with its default, and examples. fs may be nil (no flag list then).
func printCommandUsage(w io.Writer, c command, fs *flag.FlagSet) {
	for i, s := range c.synopsis {
		lead := "usage:"
		if i > 0 {
			lead = "      "
		}
		fmt.Fprintf(w, "%s edgellm %s %s\n", lead, c.name, s)
	}
	fmt.Fprintf(w, "\n%s\n", c.about)
	if fs != nil {
		fmt.Fprint(w, "\nflags:\n")
		writeFlags(w, fs)
	}
	if len(c.examples) > 0 {
		fmt.Fprint(w, "\nexamples:\n")
		for _, e := range c.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// flagLine is one line of a flag list: the names of a flag and its aliases
// (flags sharing one variable), its argument and what it means.
type flagLine struct {
	names      []string
	arg, usage string
}

// writeFlags writes fs's flags, one line each, in name order: "-k, --top-p X"
// for aliases, "-x" for one-letter names and "--name" for longer ones (Go's
// flag package takes either form), the argument named by a `quoted` word of
// the usage text, and the default unless it is the zero value or the usage
// text already says it.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	var lines []*flagLine
	byValue := map[uintptr]*flagLine{}
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		var ptr uintptr
		if v := reflect.ValueOf(f.Value); v.Kind() == reflect.Pointer {
			ptr = v.Pointer()
		}
		if l, ok := byValue[ptr]; ok && ptr != 0 {
			l.names = append(l.names, dash+f.Name)
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		switch arg {
		case "int", "uint":
			arg = "N"
		case "float":
			arg = "X"
		case "duration":
			arg = "DURATION"
		case "string", "value":
			arg = "VALUE"
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			arg = ""
		}
		l := &flagLine{names: []string{dash + f.Name}, arg: arg, usage: usage}
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			if !strings.Contains(usage, "(default") {
				l.usage += " (default " + f.DefValue + ")"
			}
		}
		lines = append(lines, l)
		if ptr != 0 {
			byValue[ptr] = l
		}
	})
	left := make([]string, len(lines))
	width := 0
	for i, l := range lines {
		left[i] = strings.Join(l.names, ", ")
		if l.arg != "" {
			left[i] += " " + l.arg
		}
		width = max(width, len(left[i]))
	}
	for i, l := range lines {
		fmt.Fprintf(w, "  %-*s  %s\n", width, left[i], l.usage)
	}
}

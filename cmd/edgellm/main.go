// Command edgellm runs local language models from GGUF files and serves them.
//
// Subcommands:
//
//	edgellm run MODEL [-p PROMPT] [-n N] [-t TEMP] [-k TOP_P] [-s SEED] [-c CTX] [-j THREADS]
//		[--chat [--chat-template NAME]] [--json | --schema FILE | --tools FILE]
//	edgellm eval -m MODEL (--ids 1,2,3 | --text TEXT) --logits OUT.f32 [-j N]
//	edgellm tokenize -m MODEL [--special] [-p TEXT]
//	edgellm info MODEL [-c CTX]
//	edgellm synth --shape NAME --type TYPE -o FILE [--seed N] [--pure] [-j THREADS]
//	edgellm bench -m MODEL [-p 64] [-n 32] [-j THREADS] [-r REPS] [--json]
//	edgellm serve [--config FILE] [--check] [--debug]
//	edgellm pull NAME|URL [-o DIR] [--sha256 HEX] [--list]
//	edgellm send [--broker URL] [--node N] [--base B] [-n MAX] [-t TEMP] [--timeout D] PROMPT
//
// Errors are one line on stderr; the exit code is 2 for bad usage and 1 for
// failures at run time.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// usageError marks errors in the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

type command struct {
	name    string
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "generate text from a prompt", cmdRun},
		{"eval", "write the logits of every position of a token sequence", cmdEval},
		{"tokenize", "print the token ids of a text", cmdTokenize},
		{"info", "describe a model file", cmdInfo},
		{"synth", "write a random-weight model in the shape of a real one", cmdSynth},
		{"bench", "measure prefill and decode speed against memory bandwidth", cmdBench},
		{"serve", "answer prompts over MQTT (the daemon)", cmdServe},
		{"pull", "download a model (resumable, checksum verified)", cmdPull},
		{"send", "ask a node over MQTT and stream its answer", cmdSend},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, "edgellm", version)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdin, stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		}
		fmt.Fprintf(stderr, "edgellm %s: %v\n", c.name, oneLine(err))
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stderr, "edgellm: unknown command %q (run 'edgellm help')\n", args[0])
	return 2
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: edgellm COMMAND [arguments]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n'edgellm COMMAND -h' describes a command's flags; 'edgellm --version' prints the version.")
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// parseFlags parses args with fs, allowing positional arguments between flags
// (edgellm run MODEL -p …), and returns the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(os.Stderr)
				fs.Usage()
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

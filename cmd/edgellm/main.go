// Command edgellm runs local language models from GGUF files and serves them.
//
// Subcommands:
//
//	edgellm run MODEL [-p PROMPT] [-n N] [-t TEMP] [-k|--top-p P] [--top-k K] [-s SEED] [-c CTX] [--kv-type f16|q8_0] [-j THREADS]
//		[--chat [--chat-template NAME|FILE.jinja]] [--json | --schema FILE | --tools FILE] [--cache FILE]
//	edgellm eval -m MODEL (--ids 1,2,3 | --text TEXT) --logits OUT.f32 [--kv-type f16|q8_0] [-j N]
//	edgellm tokenize -m MODEL [--special] [-p TEXT]
//	edgellm template (-m MODEL | --template FILE.jinja [--bos TEXT] [--eos TEXT]) --messages FILE.json
//		[--tools FILE.json] [--no-generation-prompt] [--think] [--date YYYY-MM-DD]
//	edgellm info MODEL [-c CTX] [--kv-type f16|q8_0] [--tensors]
//	edgellm synth --shape NAME --type TYPE -o FILE [--seed N] [--pure] [-j THREADS]
//	edgellm bench -m MODEL [-p 64] [-n 32] [-d DEPTH] [--kv-type f16|q8_0] [-j THREADS] [-r REPS] [--json]
//	edgellm serve [--config FILE] [--check] [--debug]
//	edgellm pull NAME|URL [-o DIR] [--sha256 HEX] | pull --list
//	edgellm send [--broker URL] [--node N] [--base B] [-n MAX] [-t TEMP] [--timeout D] [PROMPT...]
//
// `edgellm help COMMAND` or `edgellm COMMAND --help` prints a command's usage
// on stdout. Errors are one line on stderr; the exit code is 2 for bad usage
// (the command's usage follows the error) and 1 for failures at run time.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/edgellm/edgellm/inference/chat"
)

// probeCommand is the hidden subcommand that renders a chat template in a
// child process for chat.Prober: edgellm re-executes itself with it.
const probeCommand = "__probe-chat-template"

// templateProber returns the chat template prober that re-executes this
// binary, or nil (no probe) when the binary cannot be found.
func templateProber() *chat.Prober {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return &chat.Prober{Command: []string{exe, probeCommand}}
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// usageError marks errors in the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// command is one subcommand: its usage text and the function that runs it.
// run parses the flags with parseFlags before it does anything else, so
// that -h returns at once (see flagsOf).
type command struct {
	name     string
	summary  string   // one line, for the command list
	synopsis []string // the forms of the command line, after "edgellm NAME"
	about    string   // what it does: arguments, input, output
	examples []string
	run      func(args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{
			name: "run", summary: "generate text from a prompt",
			synopsis: []string{"MODEL [-p PROMPT] [flags]"},
			about: `Generates text from PROMPT (-p, else standard input) with the GGUF model file
MODEL and prints it as it is generated; prefill and decode speeds and memory go
to stderr (--kv-type q8_0: the KV cache in Q8_0, 34/64 of f16's memory). The flags follow PicoLM's: -k is top-p (nucleus sampling), NOT
top-k; --top-p is its long name and --top-k N adds a top-k filter (0: off).
-t 0 is greedy.`,
			examples: []string{
				`edgellm run testdata/models/stories260K-tok512.gguf -p "Once upon a time" -n 64`,
				`edgellm run model.gguf --chat -p "Name three colours." --top-k 40 --top-p 0.95`,
			},
			run: cmdRun,
		},
		{
			name: "eval", summary: "write the logits of every position of a token sequence",
			synopsis: []string{"-m MODEL (--ids 1,2,3 | --text TEXT) --logits OUT.f32 [--kv-type f16|q8_0] [-j N]"},
			about: `Feeds the token ids (or the tokens of TEXT, with BOS) to MODEL one position at a
time and writes, for each position, the logits after it as one row of
little-endian float32 to OUT.f32; prints {"ids":[...]} on stdout. --kv-type
q8_0 stores keys and values in Q8_0 (f16 by default).`,
			examples: []string{`edgellm eval -m testdata/models/stories260K.gguf --ids 1,461,461 --logits /tmp/l.f32`},
			run:      cmdEval,
		},
		{
			name: "tokenize", summary: "print the token ids of a text",
			synopsis: []string{"-m MODEL [--special] [-p TEXT]"},
			about: `Prints the token ids of TEXT (-p, else the exact bytes of standard input) on one
line. MODEL may be a vocabulary-only GGUF file.`,
			examples: []string{`edgellm tokenize -m testdata/models/stories260K-tok512.gguf -p "Hello world"`},
			run:      cmdTokenize,
		},
		{
			name: "template", summary: "print the prompt a chat template renders for a conversation",
			synopsis: []string{"(-m MODEL | --template FILE.jinja [--bos TEXT] [--eos TEXT]) --messages FILE.json [--tools FILE.json] [--no-generation-prompt] [--think] [--date YYYY-MM-DD]"},
			about: `Renders the chat template of MODEL (its tokenizer.chat_template), or the Jinja
template in FILE.jinja, for the conversation in --messages (an OpenAI-style JSON
array of messages) and the tools in --tools, as Hugging Face transformers
renders it, and writes the prompt to stdout exactly as rendered: a BOS text the
template writes is kept, no newline is added. enable_thinking is false unless
--think; strftime_now reports --date (default today). A template that raises
(raise_exception) exits 1 with its message.`,
			examples: []string{`edgellm template --template qwen.jinja --messages chat.json --date 2025-03-14`},
			run:      cmdTemplate,
		},
		{
			name: "info", summary: "describe a model file",
			synopsis: []string{"MODEL [-c CTX] [--kv-type f16|q8_0] [--tensors]"},
			about: `Describes the GGUF file MODEL: size, metadata and tensor types, and for a model
edgellm runs its hyper-parameters and the memory it needs at context CTX, its
KV cache in the --kv-type given (f16 by default, or q8_0: 34/64 of it). A
file edgellm cannot run (another architecture, say) is still described, its
tensors listed, before the reason; the exit code is then 1.`,
			examples: []string{`edgellm info testdata/models/stories260K-tok512.gguf -c 512`},
			run:      cmdInfo,
		},
		{
			name: "synth", summary: "write a random-weight model in the shape of a real one",
			synopsis: []string{"--shape NAME --type TYPE -o FILE [--seed N] [--pure] [-j THREADS]"},
			about: `Writes a deterministic random-weight GGUF file with the exact shape of a real
model, for benchmarks without downloads.`,
			examples: []string{`edgellm synth --shape tinyllama-1.1b --type Q4_K_M -o /tmp/tl.gguf`},
			run:      cmdSynth,
		},
		{
			name: "bench", summary: "measure prefill and decode speed against memory bandwidth",
			synopsis: []string{"-m MODEL [-p 64] [-n 32] [-d DEPTH] [--kv-type f16|q8_0] [-j THREADS] [-r REPS] [--json]"},
			about: `Measures prefill and decode tokens per second of MODEL over -r repetitions,
the bytes of weights decode streams per second, the machine's memory read
bandwidth (median and spread of passes over the model's tensor data, or over a
buffer when the model is small), and the decode stream as a share of that
bandwidth (the roofline). With -d DEPTH, each test runs after DEPTH random
tokens already in the KV cache (prefilled untimed), as llama-bench -d does;
--kv-type q8_0 keeps that cache in Q8_0 (llama-bench -ctk q8_0 -ctv q8_0).`,
			examples: []string{
				`edgellm bench -m /tmp/tl.gguf -p 64 -n 32 -j 2 -r 5`,
				`edgellm bench -m /tmp/tl.gguf -p 512 -n 32 -d 1024 -j 2 --json`,
			},
			run: cmdBench,
		},
		{
			name: "serve", summary: "answer prompts over MQTT (the daemon)",
			synopsis: []string{"[--config FILE] [--check] [--debug]"},
			about: `Loads the model named by the configuration file, connects to the MQTT broker
(or runs its own) and answers requests until SIGTERM; SIGHUP reloads the
configuration. config.yaml in the repository documents every key. --check
validates the file and the files it names, then exits.`,
			examples: []string{
				`edgellm serve --config quickstart.yaml`,
				`edgellm serve --check --config /etc/edgellm/config.yaml`,
			},
			run: cmdServe,
		},
		{
			name: "pull", summary: "download a model (resumable, checksum verified)",
			synopsis: []string{"NAME|URL [-o DIR] [--sha256 HEX]", "--list"},
			about: `Downloads a known model (--list shows them) or the GGUF file at URL, resuming
an interrupted download and checking size, SHA-256 and GGUF header before the
file is renamed into place; prints its path. DIR defaults to
/var/lib/edgellm/models when writable, else the current directory;
$HF_ENDPOINT names a Hugging Face mirror.`,
			examples: []string{`edgellm pull qwen2.5-0.5b -o .`},
			run:      cmdPull,
		},
		{
			name: "send", summary: "ask a node over MQTT and stream its answer",
			synopsis: []string{"[--node NODE] [--broker URL] [-n N] [-t TEMP] [flags] [PROMPT...]"},
			about: `Publishes PROMPT (the arguments joined by spaces, else standard input) as a
request to node NODE and prints the answer as it streams in; token counts and
speeds go to stderr. An error answer, or none within --timeout, exits 1.`,
			examples: []string{`edgellm send --node demo "Once upon a time"`},
			run:      cmdSend,
		},
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) < 2 {
			printUsage(stdout)
			return 0
		}
		c, ok := lookup(args[1])
		if !ok {
			fmt.Fprintf(stderr, "edgellm help: unknown command %q\n\n", args[1])
			printUsage(stderr)
			return 2
		}
		printCommandUsage(stdout, c, flagsOf(c))
		return 0
	case "--version", "version":
		fmt.Fprintln(stdout, "edgellm", version)
		return 0
	case probeCommand: // hidden: the child of a chat template probe
		if err := chat.ProbeChild(stdin, stdout); err != nil {
			fmt.Fprintln(stderr, "edgellm:", err)
			return 1
		}
		return 0
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "edgellm: unknown command %q (run 'edgellm help')\n", args[0])
		return 2
	}
	err := c.run(args[1:], stdin, stdout, stderr)
	var help helpRequest
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		printCommandUsage(stdout, c, help.fs)
		return 0
	}
	fmt.Fprintf(stderr, "edgellm %s: %v\n", c.name, oneLine(err))
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr)
		printCommandUsage(stderr, c, flagsOf(c))
		return 2
	}
	return 1
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// helpRequest is what parseFlags returns for -h or --help: the command's
// flag set, for its usage text.
type helpRequest struct{ fs *flag.FlagSet }

func (helpRequest) Error() string { return "help requested" }
func (helpRequest) Unwrap() error { return flag.ErrHelp }

// parseFlags parses args with fs, allowing positional arguments between flags
// (edgellm run MODEL -p …), and returns the positional arguments. -h and
// --help give a helpRequest; a bad flag, a usageError.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpRequest{fs}
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

// flagsOf returns c's flag set, or nil: run with -h, a command defines its
// flags and returns them in a helpRequest before it reads or writes anything.
func flagsOf(c command) *flag.FlagSet {
	var help helpRequest
	if err := c.run([]string{"-h"}, strings.NewReader(""), io.Discard, io.Discard); errors.As(err, &help) {
		return help.fs
	}
	return nil
}

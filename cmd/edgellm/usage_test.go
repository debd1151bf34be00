package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/kernels"
)

// Every command's usage, asked for with -h, --help or `edgellm help NAME`,
// goes to stdout with exit 0: its synopsis, what it does, one line per flag
// and an example. A flag it does not have exits 2 with the error and the same
// usage on stderr, and nothing on stdout.
func TestCommandUsage(t *testing.T) {
	flagLine := regexp.MustCompile(`^  --?[a-z]`)
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			var want string
			for i, form := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
				code, out, errs := runCLI(t, "", form...)
				if code != 0 || errs != "" {
					t.Fatalf("%q: exit %d, stderr %q", form, code, errs)
				}
				if i == 0 {
					want = out
				} else if out != want {
					t.Fatalf("%q prints another text than %q:\n%s", form, []string{c.name, "--help"}, out)
				}
			}
			if !strings.HasPrefix(want, "usage: edgellm "+c.name+" ") {
				t.Errorf("no synopsis first:\n%s", want)
			}
			_, flags, ok := strings.Cut(want, "\nflags:\n")
			flags, examples, ok2 := strings.Cut(flags, "\nexamples:\n")
			if !ok || !ok2 || !strings.HasPrefix(examples, "  edgellm "+c.name+" ") {
				t.Fatalf("want flags:, then examples: with an `edgellm %s` command line:\n%s", c.name, want)
			}
			fs := flagsOf(c)
			n := 0
			fs.VisitAll(func(*flag.Flag) { n++ })
			lines := strings.Split(strings.TrimSuffix(flags, "\n"), "\n")
			for _, l := range lines {
				if !flagLine.MatchString(l) {
					t.Errorf("flag line %q", l)
				}
			}
			if len(lines) == 0 || len(lines) > n {
				t.Errorf("%d flag lines for %d flags:\n%s", len(lines), n, flags)
			}

			code, out, errs := runCLI(t, "", c.name, "--no-such-flag")
			if code != 2 || out != "" {
				t.Fatalf("bad flag: exit %d, stdout %q", code, out)
			}
			first, rest, _ := strings.Cut(errs, "\n")
			if first != "edgellm "+c.name+": flag provided but not defined: -no-such-flag" || strings.TrimPrefix(rest, "\n") != want {
				t.Errorf("bad flag: want the error, a blank line and the usage on stderr, got:\n%s", errs)
			}
		})
	}
}

// run's usage names its MODEL argument and says that -k is top-p, with its
// long forms; each flag line carries its default.
func TestRunUsage(t *testing.T) {
	_, out, _ := runCLI(t, "", "run", "--help")
	for _, want := range []string{
		"usage: edgellm run MODEL [-p PROMPT] [flags]\n",
		"-k is top-p (nucleus sampling), NOT\ntop-k",
		"\n  -k, --top-p P ", "(default 0.9)\n",
		"\n  --top-k K ", "\n  -n N ", "(default 256)\n", "\n  -t TEMP ", "(default 0.8)\n",
		"\n  -c CTX ", "(default: the model's, at most 2048)\n",
		"\n  --chat ", "\n  --schema FILE ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q:\n%s", want, out)
		}
	}
}

// The top-level usage goes to stdout when asked for and to stderr, exit 2,
// without a command.
func TestTopLevelUsage(t *testing.T) {
	for _, form := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, errs := runCLI(t, "", form...)
		if code != 0 || errs != "" || !strings.Contains(out, "usage: edgellm COMMAND") {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", form, code, out, errs)
		}
		for _, c := range commands() {
			if !strings.Contains(out, "\n  "+c.name+" ") {
				t.Errorf("%q does not list %s", form, c.name)
			}
		}
	}
	code, out, errs := runCLI(t, "")
	if code != 2 || out != "" || !strings.Contains(errs, "usage: edgellm COMMAND") {
		t.Fatalf("no command: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runCLI(t, "", "help", "frobnicate")
	if code != 2 || out != "" || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Fatalf("help of an unknown command: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// --top-k 1 keeps the most likely token only, so sampling at temperature 1
// writes the greedy text; --top-p is -k.
func TestRunTopKTopP(t *testing.T) {
	m := models + "stories260K-tok512.gguf"
	_, greedy, _ := runCLI(t, "", "run", m, "-p", "Once upon a time", "-n", "40", "-t", "0")
	_, topK1, _ := runCLI(t, "", "run", m, "-p", "Once upon a time", "-n", "40", "-t", "1", "--top-k", "1", "-s", "9")
	_, sampled, _ := runCLI(t, "", "run", m, "-p", "Once upon a time", "-n", "40", "-t", "1", "-s", "9")
	if greedy == "" || topK1 != greedy {
		t.Fatalf("--top-k 1 at temperature 1:\n%q\ngreedy:\n%q", topK1, greedy)
	}
	if sampled == greedy {
		t.Fatalf("temperature 1 without --top-k gives the greedy text: the test shows nothing")
	}
	_, short, _ := runCLI(t, "", "run", m, "-p", "Once upon a time", "-n", "40", "-t", "1", "-k", "0.5", "-s", "9")
	_, long, _ := runCLI(t, "", "run", m, "-p", "Once upon a time", "-n", "40", "-t", "1", "--top-p", "0.5", "-s", "9")
	if short == "" || short != long {
		t.Fatalf("-k 0.5 gives %q, --top-p 0.5 %q", short, long)
	}
}

// info describes a file of an architecture the engine does not run (its
// size, metadata and every tensor) on stdout, then says it cannot run it:
// one line on stderr, exit 1.
func TestInfoUnsupportedArchitecture(t *testing.T) {
	b := gguf.NewBuilder()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "mamba"},
		{"general.name", "mamba-tiny"},
		{"mamba.block_count", uint32(1)},
		{"mamba.ssm.state_size", uint32(16)},
		{"tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "a", "b", "c", "d", "e", "f", "g"}},
	} {
		if err := b.AddKV(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddTensor("token_embd.weight", kernels.F32, []uint64{32, 10}, make([]byte, 4*32*10)); err != nil {
		t.Fatal(err)
	}
	if err := b.AddTensor("blk.0.ssm_a", kernels.F32, []uint64{16, 64}, make([]byte, 4*16*64)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mamba.gguf")
	if err := gguf.WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "", "info", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errs)
	}
	for _, re := range []string{
		`(?m)^file: +` + regexp.QuoteMeta(path) + ` \(` + regexp.QuoteMeta(gguf.FormatBytes(uint64(st.Size()))) + `, GGUF v3\)$`,
		`(?m)^metadata: +5 keys$`,
		`(?m)^  general\.architecture +"mamba"$`,
		`(?m)^  mamba\.ssm\.state_size +16$`,
		`(?m)^  tokenizer\.ggml\.tokens +\[10 strings\]$`,
		`(?m)^tensors: +2, 5\.2 KiB: F32×2$`,
		`(?m)^  token_embd\.weight +F32 +\[32 10\] +1\.2 KiB$`,
		`(?m)^  blk\.0\.ssm_a +F32 +\[16 64\] +4\.0 KiB$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stdout does not match %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "model:") {
		t.Errorf("stdout describes a model it cannot load:\n%s", out)
	}
	want := "edgellm info: " + path + `: edgellm cannot run it: inference: unsupported architecture "mamba" (supported: ` +
		strings.Join(inference.Architectures(), ", ") + ")\n"
	if errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

// The demo's model (quickstart.yaml) writes English: from BOS alone, greedy
// generation prints the text llama2.c's run.c prints for the same weights
// and vocabulary (run.c drops the space the first piece starts with), and
// quickstart.yaml passes serve --check with it.
func TestDemoModelWritesEnglish(t *testing.T) {
	want, err := os.ReadFile("../../testdata/reference/stories260K-tok512.llama2c-greedy200.txt")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "", "run", models+"stories260K-tok512.gguf", "-p", "", "-n", "200", "-t", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := strings.TrimPrefix(out, " "); got != string(want) {
		t.Fatalf("greedy text:\n%s\nllama2.c's:\n%s", got, want)
	}
	code, out, errs = runCLI(t, "", "serve", "--check", "--config", "../../quickstart.yaml")
	if code != 0 || !strings.Contains(out, "stories260K-tok512.gguf") || !strings.Contains(out, "slots auto") {
		t.Fatalf("quickstart.yaml: exit %d, %s%s", code, out, errs)
	}
}

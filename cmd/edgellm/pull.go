package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	hub "github.com/edgellm/edgellm/inference/models"
)

// systemModelDir is where the .deb keeps models; pull uses it by default
// when it exists and this user may write to it.
const systemModelDir = "/var/lib/edgellm/models"

// cmdPull is `edgellm pull NAME|URL [-o DIR]`: it downloads a known model
// (see --list) or any GGUF URL, resuming an interrupted download, checking
// the SHA-256 and renaming the file into place only when complete. The
// download goes to -o DIR, by default /var/lib/edgellm/models when it
// exists and is writable (the packaged service's model directory), else the
// current directory. Known models come from Hugging Face, or from the
// mirror named by $HF_ENDPOINT. The file's path is printed on stdout.
func cmdPull(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	dir := fs.String("o", "", "put the model in `DIR` (default "+systemModelDir+" when writable, else the current directory)")
	sum := fs.String("sha256", "", "expected SHA-256 of a URL download, in `HEX`")
	list := fs.Bool("list", false, "list the known models and exit")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *list {
		printCatalogue(stdout)
		return nil
	}
	if len(pos) != 1 {
		return usagef("want one model NAME or URL; known names: %s", knownNames())
	}
	opts := hub.Options{UserAgent: "edgellm/" + version}
	if strings.Contains(pos[0], "://") {
		opts.URL, opts.SHA256 = huggingFaceFileURL(pos[0]), *sum
	} else {
		m, ok := hub.Lookup(pos[0])
		if !ok {
			return usagef("unknown model %q; known names: %s (or give the URL of a GGUF file)", pos[0], knownNames())
		}
		if *sum != "" {
			return usagef("--sha256 is for URL downloads; %s has a published hash", m.Name)
		}
		endpoint := os.Getenv("HF_ENDPOINT")
		if endpoint == "" {
			endpoint = hub.DefaultEndpoint
		}
		opts.URL, opts.Name, opts.Size, opts.SHA256 = m.URLAt(endpoint), m.File, m.Size, m.SHA256
		fmt.Fprintf(stderr, "%s: %s (licence: %s)\n", m.Name, m.Description, m.License)
	}
	opts.Dir = *dir
	if opts.Dir == "" {
		opts.Dir = defaultModelDir(systemModelDir)
	}
	name := opts.Name
	if name == "" {
		if u, err := url.Parse(opts.URL); err == nil {
			name = path.Base(u.Path)
		}
	}
	opts.Progress = hub.NewReporter(stderr, name, isTerminal(stderr))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := hub.Download(ctx, opts)
	if err != nil {
		return err
	}
	switch {
	case res.Existed && res.Verified:
		fmt.Fprintf(stderr, "%s is already downloaded; its sha256 matches the published one\n", res.Path)
	case res.Existed:
		fmt.Fprintf(stderr, "%s is already downloaded (it parses as GGUF)\n", res.Path)
	case res.Verified:
		fmt.Fprintf(stderr, "sha256 %s verified\n", res.SHA256)
	default:
		fmt.Fprintf(stderr, "sha256 %s (no published hash to compare with; the file parses as GGUF)\n", res.SHA256)
	}
	fmt.Fprintln(stdout, res.Path)
	return nil
}

// defaultModelDir is system when it is a directory this user can write to,
// else the current directory.
func defaultModelDir(system string) string {
	if st, err := os.Stat(system); err == nil && st.IsDir() && unix.Access(system, unix.W_OK) == nil {
		return system
	}
	return "."
}

// huggingFaceFileURL turns the link of a file's page on Hugging Face
// (…/blob/<rev>/<file>) into its download link (…/resolve/<rev>/<file>).
func huggingFaceFileURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host != "huggingface.co" {
		return s
	}
	if before, after, ok := strings.Cut(u.Path, "/blob/"); ok && strings.Count(before, "/") == 2 {
		u.Path = before + "/resolve/" + after
		u.RawPath = ""
		return u.String()
	}
	return s
}

// isTerminal reports whether w is a terminal, where a redrawn progress bar
// makes sense (a character device other than a dumb terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func knownNames() string {
	var names []string
	for _, m := range hub.Catalogue() {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// printCatalogue lists the known models: name, size, quantisation and what
// the model is; the Raspberry Pi boards it fits; where it comes from.
func printCatalogue(w io.Writer) {
	for _, m := range hub.Catalogue() {
		fmt.Fprintf(w, "%-17s %7.0f MiB  %s\n", m.Name, float64(m.Size)/(1<<20), m.Description)
		fmt.Fprintf(w, "%-17s %11s  fits %s at a %d-token context\n", "", "", m.Boards(), hub.FitContext)
		fmt.Fprintf(w, "%-17s %11s  %s, licence %s\n", "", "", m.URL(), m.License)
	}
}

package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edgellm/edgellm/gguf"
)

// Defaults for Options' zero values.
const (
	DefaultRetries      = 5
	DefaultRetryDelay   = time.Second
	DefaultStallTimeout = time.Minute
	maxRetryDelay       = 30 * time.Second
)

// PartSuffix ends the name of a file being downloaded.
const PartSuffix = ".part"

// Options says what to download where.
type Options struct {
	// URL is the http:// or https:// address of the file.
	URL string
	// Dir is the directory the file goes to; it is created if missing.
	Dir string
	// Name is the file name in Dir; empty means the last element of URL's
	// path.
	Name string
	// Size is the expected size in bytes; 0 means unknown.
	Size int64
	// SHA256 is the expected SHA-256 in hex; empty means unknown, and the
	// file is then checked only by parsing it as GGUF.
	SHA256 string
	// Client makes the requests; nil means a client with connection and
	// response-header timeouts (and no overall timeout: models are large).
	Client *http.Client
	// UserAgent is sent with every request when set.
	UserAgent string
	// Progress receives the progress; nil means none.
	Progress Progress
	// Retries is how many times a broken transfer (network error, stalled
	// or cut connection, HTTP 5xx, 408 or 429) is resumed automatically:
	// 0 means DefaultRetries, negative means never.
	Retries int
	// RetryDelay is the wait before the first automatic resume, doubled
	// for each further one up to 30s (default DefaultRetryDelay).
	RetryDelay time.Duration
	// StallTimeout abandons a transfer (then resumed like a broken one)
	// when no byte arrives for this long (default DefaultStallTimeout).
	StallTimeout time.Duration
}

// Result describes the downloaded file.
type Result struct {
	Path     string // the file, Dir/Name
	Size     int64  // its size in bytes
	SHA256   string // its SHA-256 in hex
	Verified bool   // SHA256 matched Options.SHA256 (false when none was given)
	Resumed  int64  // bytes kept from an earlier, interrupted download
	Existed  bool   // the file was already there: nothing was downloaded
}

// ErrChecksum is wrapped by the error of a download whose size or SHA-256
// differs from the expected one.
var ErrChecksum = errors.New("the file does not match its published size and SHA-256")

// ErrNotGGUF is wrapped by the error of a download that is not a GGUF file.
var ErrNotGGUF = errors.New("not a GGUF model file")

// HTTPError is a response status that ends a download.
type HTTPError struct {
	URL        string // the requested URL
	StatusCode int    // the HTTP status
}

// Error formats as "GET <url>: 404 Not Found".
func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("GET %s: %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden {
		msg += " (the file may need a login, or accepting its licence on the model's page)"
	}
	return msg
}

// transient reports whether retrying may get a different answer.
func (e *HTTPError) transient() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests
}

// Download fetches opts.URL into opts.Dir. Bytes go to Dir/Name.part,
// which is kept when the transfer breaks: the next attempt (automatic, or
// the next call) resumes it with an HTTP Range request, and starts over
// when the server ignores the range. The SHA-256 covers the whole file,
// resumed part included. The finished file must have the expected size and
// hash (when known) and parse as GGUF; it is then synced and renamed to
// Dir/Name, so Dir/Name is never a partial file. A file already at Dir/Name
// is kept: it is only checked against the expected hash. Cancelling ctx
// stops the download and keeps the part for later.
func Download(ctx context.Context, opts Options) (Result, error) {
	d, err := newDownload(opts)
	if err != nil {
		return Result{}, err
	}
	if res, done, err := d.existing(); done || err != nil {
		return res, err
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return Result{}, fmt.Errorf("models: %w", err)
	}
	f, err := os.OpenFile(d.part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return Result{}, fmt.Errorf("models: %w", err)
	}
	d.f = f
	defer d.closePart()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return Result{}, fmt.Errorf("models: %s is being downloaded by another process (%v)", d.part, err)
	}
	if err := d.fetch(ctx); err != nil {
		return Result{}, err
	}
	return d.finish()
}

// download is the state of one Download call.
type download struct {
	Options
	dir, name, part, final string

	f       *os.File
	hasher  hash.Hash
	hashed  int64 // bytes of the part the hasher has seen, from the start
	resumed int64 // bytes kept from before this call
	started bool  // resumed is set
}

func newDownload(opts Options) (*download, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("models: %q is not an http:// or https:// URL", opts.URL)
	}
	if opts.Name == "" {
		opts.Name = path.Base(u.Path)
	}
	if opts.Name == "" || opts.Name == "." || opts.Name == "/" || strings.ContainsAny(opts.Name, `/\`) || opts.Name[0] == '.' {
		return nil, fmt.Errorf("models: cannot name a file %q after %s", opts.Name, opts.URL)
	}
	if opts.Dir == "" {
		opts.Dir = "."
	}
	opts.SHA256 = strings.ToLower(opts.SHA256)
	if opts.SHA256 != "" {
		if b, err := hex.DecodeString(opts.SHA256); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("models: SHA-256 %q is not 64 hex digits", opts.SHA256)
		}
	}
	if opts.Client == nil {
		opts.Client = defaultClient()
	}
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = DefaultRetryDelay
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = DefaultStallTimeout
	}
	if opts.Progress == nil {
		opts.Progress = noProgress{}
	}
	final := filepath.Join(opts.Dir, opts.Name)
	return &download{Options: opts, dir: opts.Dir, name: opts.Name, final: final, part: final + PartSuffix}, nil
}

// defaultClient bounds connecting and waiting for headers, not the body.
func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: t}
}

// existing handles a file already at the final path: it is kept, after a
// check against the expected hash (or of its GGUF header when none).
func (d *download) existing() (Result, bool, error) {
	st, err := os.Stat(d.final)
	if errors.Is(err, os.ErrNotExist) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, fmt.Errorf("models: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Result{}, false, fmt.Errorf("models: %s exists and is not a regular file", d.final)
	}
	sum, err := fileSHA256(d.final)
	if err != nil {
		return Result{}, false, err
	}
	res := Result{Path: d.final, Size: st.Size(), SHA256: sum, Existed: true}
	if d.SHA256 != "" {
		if sum != d.SHA256 || (d.Size > 0 && st.Size() != d.Size) {
			return Result{}, false, fmt.Errorf("models: %s already exists but differs from the published file (sha256 %s, want %s); move it away to download it again: %w",
				d.final, sum, d.SHA256, ErrChecksum)
		}
		res.Verified = true
		return res, true, nil
	}
	if err := checkGGUF(d.final); err != nil {
		return Result{}, false, fmt.Errorf("models: %s already exists: %w; move it away to download it again", d.final, err)
	}
	return res, true, nil
}

// fetch fills the part file, resuming after transient failures.
func (d *download) fetch(ctx context.Context) error {
	wait := d.RetryDelay
	for attempt := 0; ; attempt++ {
		err := d.attempt(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return d.interrupted(ctx.Err())
		}
		var re *restartError
		if errors.As(err, &re) && attempt == 0 {
			continue // start over at once, once
		}
		if !isTransient(err) {
			return fmt.Errorf("models: download of %s: %w", d.URL, err)
		}
		if d.Retries < 0 || attempt >= d.Retries {
			return d.interrupted(err)
		}
		d.Progress.Retry(err, wait)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return d.interrupted(ctx.Err())
		case <-timer.C:
		}
		wait = min(2*wait, maxRetryDelay)
	}
}

// interrupted wraps the error that broke off fetch, saying how much is
// kept for the next run.
func (d *download) interrupted(err error) error {
	if st, serr := d.f.Stat(); serr == nil && st.Size() > 0 {
		return fmt.Errorf("models: download of %s stopped: %w (%s kept in %s; run again to resume)", d.URL, err, mib(st.Size()), d.part)
	}
	return fmt.Errorf("models: download of %s: %w", d.URL, err)
}

// restartError marks a failure after which the part was emptied, so the
// next attempt starts from zero.
type restartError struct{ msg string }

func (e *restartError) Error() string { return e.msg }

// transientError marks failures worth retrying: network errors, stalls,
// connections cut short.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

func isTransient(err error) bool {
	var te *transientError
	var he *HTTPError
	var re *restartError
	return errors.As(err, &te) || errors.As(err, &re) || errors.As(err, &he) && he.transient()
}

// attempt runs one request, appending what arrives to the part file. It
// returns nil when the part holds the whole file.
func (d *download) attempt(ctx context.Context) error {
	st, err := d.f.Stat()
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	have := st.Size()
	if d.Size > 0 && have > d.Size {
		if err := d.truncate(); err != nil {
			return err
		}
		have = 0
	}
	if !d.started {
		d.started, d.resumed = true, have
	}
	if d.Size > 0 && have == d.Size {
		return nil // complete already; finish verifies it
	}
	// Hash what is kept before asking for the rest (on a Pi Zero a large
	// part takes a while, and a server may drop an idle connection).
	if err := d.catchUpHash(have); err != nil {
		return err
	}

	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stalled atomic.Bool
	watchdog := time.AfterFunc(d.StallTimeout, func() { stalled.Store(true); cancel() })
	defer watchdog.Stop()
	stallErr := func(err error) error {
		if stalled.Load() && ctx.Err() == nil {
			return &transientError{fmt.Errorf("no data for %v", d.StallTimeout)}
		}
		return &transientError{err}
	}

	req, err := http.NewRequestWithContext(actx, http.MethodGet, d.URL, nil)
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	// Identity encoding: byte ranges must count the file's own bytes (and
	// models do not compress anyway).
	req.Header.Set("Accept-Encoding", "identity")
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	if d.UserAgent != "" {
		req.Header.Set("User-Agent", d.UserAgent)
	}
	resp, err := d.Client.Do(req)
	if err != nil {
		return stallErr(err)
	}
	defer resp.Body.Close()

	var total int64 // 0: unknown
	switch resp.StatusCode {
	case http.StatusOK:
		if have > 0 { // the server ignored the range: start over
			if err := d.truncate(); err != nil {
				return err
			}
			have = 0
		}
		total = max(resp.ContentLength, 0)
	case http.StatusPartialContent:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			if err := d.truncate(); err != nil {
				return err
			}
			return &restartError{fmt.Sprintf("the server answered the range request from byte %d with %q; starting over", have, resp.Header.Get("Content-Range"))}
		}
		total = max(size, 0)
	case http.StatusRequestedRangeNotSatisfiable:
		// The part is complete (the server has nothing after it), or the
		// file on the server is now shorter than the part: start over.
		if _, size, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && size == have {
			return nil
		}
		if err := d.truncate(); err != nil {
			return err
		}
		return &restartError{fmt.Sprintf("the server has no bytes after the %s downloaded; starting over", mib(have))}
	default:
		return &HTTPError{URL: d.URL, StatusCode: resp.StatusCode}
	}
	if d.Size > 0 && total > 0 && total != d.Size {
		return fmt.Errorf("the server offers %d bytes, but the published file has %d: %w", total, d.Size, ErrChecksum)
	}
	if total == 0 {
		total = d.Size
	}
	if err := d.catchUpHash(have); err != nil { // after a 200, from zero
		return err
	}
	if _, err := d.f.Seek(have, io.SeekStart); err != nil {
		return fmt.Errorf("models: %w", err)
	}

	d.Progress.Start(have, total)
	w := &progressWriter{w: io.MultiWriter(d.f, d.hasher), have: have, p: d.Progress, watchdog: watchdog, stall: d.StallTimeout}
	n, err := io.Copy(w, resp.Body)
	d.hashed += n
	have += n
	if err != nil {
		var werr *writeError
		if errors.As(err, &werr) {
			// The hasher may have missed bytes the file got: redo it.
			d.hasher, d.hashed = nil, 0
			return fmt.Errorf("models: writing %s: %w", d.part, werr.err)
		}
		return stallErr(err)
	}
	if total > 0 && have < total {
		return &transientError{fmt.Errorf("the connection closed after %s of %s", mib(have), mib(total))}
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("models: sync %s: %w", d.part, err)
	}
	d.Progress.Finish(have)
	return nil
}

// truncate empties the part file and resets the hash.
func (d *download) truncate() error {
	if err := d.f.Truncate(0); err != nil {
		return fmt.Errorf("models: truncate %s: %w", d.part, err)
	}
	d.hasher, d.hashed, d.resumed = nil, 0, 0
	return nil
}

// catchUpHash makes the hasher cover the first have bytes of the part,
// reading the ones it has not seen (a part kept from an earlier call).
func (d *download) catchUpHash(have int64) error {
	if d.hasher == nil || d.hashed > have {
		d.hasher, d.hashed = sha256.New(), 0
	}
	if d.hashed == have {
		return nil
	}
	if _, err := io.Copy(d.hasher, io.NewSectionReader(d.f, d.hashed, have-d.hashed)); err != nil {
		return fmt.Errorf("models: reading %s: %w", d.part, err)
	}
	d.hashed = have
	return nil
}

// finish verifies the complete part and renames it into place.
func (d *download) finish() (Result, error) {
	st, err := d.f.Stat()
	if err != nil {
		return Result{}, fmt.Errorf("models: %w", err)
	}
	size := st.Size()
	if err := d.catchUpHash(size); err != nil {
		return Result{}, err
	}
	sum := hex.EncodeToString(d.hasher.Sum(nil))
	if d.Size > 0 && size != d.Size {
		d.discard()
		return Result{}, fmt.Errorf("models: %s is %d bytes, the published file %d; removed it: %w", d.URL, size, d.Size, ErrChecksum)
	}
	if d.SHA256 != "" && sum != d.SHA256 {
		d.discard()
		return Result{}, fmt.Errorf("models: %s has sha256 %s, the published file %s; removed it (run again to download it anew): %w",
			d.URL, sum, d.SHA256, ErrChecksum)
	}
	if err := checkGGUF(d.part); err != nil {
		d.discard()
		return Result{}, fmt.Errorf("models: %s: %w; removed it", d.URL, err)
	}
	if err := os.Rename(d.part, d.final); err != nil {
		return Result{}, fmt.Errorf("models: %w", err)
	}
	if err := syncDir(d.dir); err != nil {
		return Result{}, err
	}
	return Result{Path: d.final, Size: size, SHA256: sum, Verified: d.SHA256 != "", Resumed: d.resumed}, nil
}

// discard removes the part file, whose content can never become right.
func (d *download) discard() {
	_ = d.f.Truncate(0)
	_ = os.Remove(d.part)
}

// closePart closes the part file, removing it when it is empty (nothing
// to resume).
func (d *download) closePart() {
	if st, err := d.f.Stat(); err == nil && st.Size() == 0 {
		_ = os.Remove(d.part)
	}
	_ = d.f.Close()
}

// checkGGUF checks that path parses as a GGUF file (header, metadata and
// tensor table, all within the file).
func checkGGUF(path string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotGGUF, err)
	}
	return f.Close()
}

// fileSHA256 hashes a whole file.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("models: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("models: reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("models: sync %s: %w", dir, err)
	}
	return nil
}

// parseContentRange parses "bytes <start>-<end>/<size>" (size -1 for "*")
// and "bytes */<size>" (start -1).
func parseContentRange(s string) (start, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	size = -1
	if sz != "*" {
		n, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false
		}
		size = n
	}
	if rng == "*" {
		return -1, size, true
	}
	first, _, found := strings.Cut(rng, "-")
	n, err := strconv.ParseInt(first, 10, 64)
	if !found || err != nil || n < 0 {
		return 0, 0, false
	}
	return n, size, true
}

// writeError marks a failure to write the part file (not the network's).
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// progressWriter writes to the part file and hasher, reports progress and
// feeds the stall watchdog.
type progressWriter struct {
	w        io.Writer
	have     int64
	p        Progress
	watchdog *time.Timer
	stall    time.Duration
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	pw.watchdog.Reset(pw.stall)
	n, err := pw.w.Write(b)
	pw.have += int64(n)
	pw.p.Update(pw.have)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

// noProgress is the Progress used when none is given.
type noProgress struct{}

func (noProgress) Start(int64, int64)         {}
func (noProgress) Update(int64)               {}
func (noProgress) Retry(error, time.Duration) {}
func (noProgress) Finish(int64)               {}

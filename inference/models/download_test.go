package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testModel is the file the test servers serve: a real GGUF model.
const testModel = "../../testdata/models/stories260K.gguf"

func readModel(t *testing.T) (data []byte, sum string) {
	t.Helper()
	data, err := os.ReadFile(testModel)
	if err != nil {
		t.Fatalf("test model missing: %v", err)
	}
	h := sha256.Sum256(data)
	return data, hex.EncodeToString(h[:])
}

// server is a test HTTP server whose handler gets the request's number
// (from 1), and which records the Range header of each request.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	ranges []string
}

func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *server {
	s := &server{}
	mux := http.NewServeMux()
	mux.HandleFunc("/m/model.gguf", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		n := len(s.ranges)
		s.mu.Unlock()
		handle(w, r, n)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/m/model.gguf", http.StatusFound)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *server) url() string { return s.URL + "/m/model.gguf" }

// requests returns the Range headers of the requests so far.
func (s *server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

// serve answers like a real file server, ranges and 416 included.
func serve(w http.ResponseWriter, r *http.Request, data []byte) {
	http.ServeContent(w, r, "model.gguf", time.Time{}, bytes.NewReader(data))
}

// cut sends the headers of the whole file but only its first n bytes,
// then drops the connection.
func cut(w http.ResponseWriter, data []byte, n int) {
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data[:n])
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// stall sends the first n bytes, then nothing until the client gives up.
func stall(w http.ResponseWriter, r *http.Request, data []byte, n int) {
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data[:n])
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// recorder is a Progress that records calls and can act on updates.
type recorder struct {
	starts   [][2]int64
	retries  []error
	finished int64
	onUpdate func(have int64)
}

func (p *recorder) Start(have, total int64) { p.starts = append(p.starts, [2]int64{have, total}) }
func (p *recorder) Update(have int64) {
	if p.onUpdate != nil {
		p.onUpdate(have)
	}
}
func (p *recorder) Retry(err error, _ time.Duration) { p.retries = append(p.retries, err) }
func (p *recorder) Finish(have int64)                { p.finished = have }

// opts returns options for a test download into a fresh directory.
func opts(t *testing.T, s *server, data []byte, sum string, p Progress) Options {
	return Options{
		URL: s.url(), Dir: t.TempDir(), Size: int64(len(data)), SHA256: sum,
		Client: s.Client(), Progress: p, RetryDelay: time.Millisecond,
	}
}

// checkDone checks the result and that the directory holds just the file.
func checkDone(t *testing.T, res Result, o Options, data []byte, sum string) {
	t.Helper()
	if res.Path != filepath.Join(o.Dir, "model.gguf") || res.Size != int64(len(data)) || res.SHA256 != sum {
		t.Fatalf("result %+v, want %d bytes with sha256 %s", res, len(data), sum)
	}
	got, err := os.ReadFile(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("downloaded bytes differ from the served file")
	}
	assertFiles(t, o.Dir, "model.gguf")
}

// assertFiles checks the names in dir.
func assertFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("files in %s: %v, want %v", dir, names, want)
	}
}

func TestDownload(t *testing.T) {
	data, sum := readModel(t)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { serve(w, r, data) })
	p := &recorder{}
	o := opts(t, s, data, sum, p)
	o.Dir = filepath.Join(o.Dir, "new", "dir") // created
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	if !res.Verified || res.Existed || res.Resumed != 0 {
		t.Fatalf("result %+v", res)
	}
	if len(p.starts) != 1 || p.starts[0] != [2]int64{0, int64(len(data))} || p.finished != int64(len(data)) {
		t.Fatalf("progress: starts %v, finished %d", p.starts, p.finished)
	}
	// Again: the file is there and checked, nothing is fetched.
	res, err = Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Existed || !res.Verified || res.SHA256 != sum {
		t.Fatalf("second result %+v", res)
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func TestResumeAfterCutConnection(t *testing.T) {
	data, sum := readModel(t)
	half := len(data) * 2 / 5
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			cut(w, data, half)
		}
		serve(w, r, data)
	})
	p := &recorder{}
	o := opts(t, s, data, sum, p)
	o.URL, o.Name = s.URL+"/redirect", "model.gguf" // the range survives a redirect
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	want := []string{"", fmt.Sprintf("bytes=%d-", half)}
	if got := s.requests(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Range headers %q, want %q", got, want)
	}
	if len(p.retries) != 1 || len(p.starts) != 2 || p.starts[1][0] != int64(half) {
		t.Fatalf("progress: retries %v, starts %v", p.retries, p.starts)
	}
	if !res.Verified || res.Resumed != 0 {
		t.Fatalf("result %+v", res)
	}
}

func TestResumeAcrossCalls(t *testing.T) {
	data, sum := readModel(t)
	half := len(data) / 2
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			cut(w, data, half)
		}
		serve(w, r, data)
	})
	o := opts(t, s, data, sum, nil)
	o.Retries = -1
	_, err := Download(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "run again to resume") {
		t.Fatalf("error %v, want a broken transfer to resume", err)
	}
	part := filepath.Join(o.Dir, "model.gguf"+PartSuffix)
	if st, err := os.Stat(part); err != nil || st.Size() != int64(half) {
		t.Fatalf("part file: %v, %v; want %d bytes", st, err, half)
	}
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	if res.Resumed != int64(half) || !res.Verified {
		t.Fatalf("result %+v, want %d bytes resumed", res, half)
	}
	if got := s.requests(); len(got) != 2 || got[1] != fmt.Sprintf("bytes=%d-", half) {
		t.Fatalf("Range headers %q", got)
	}
}

func TestWrongChecksum(t *testing.T) {
	data, sum := readModel(t)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { serve(w, r, data) })
	bad := strings.Repeat("0", 64)
	o := opts(t, s, data, bad, nil)
	_, err := Download(context.Background(), o)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), sum) {
		t.Fatalf("error %v, want a checksum mismatch naming the real sha256", err)
	}
	assertFiles(t, o.Dir) // neither the file nor the part is left

	// A size that differs from the server's is refused before downloading.
	o = opts(t, s, data, sum, nil)
	o.Size++
	_, err = Download(context.Background(), o)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "offers") {
		t.Fatalf("error %v, want the size mismatch", err)
	}
	assertFiles(t, o.Dir)
}

func TestHTTPErrors(t *testing.T) {
	data, sum := readModel(t)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { http.NotFound(w, r) })
	o := opts(t, s, data, sum, nil)
	_, err := Download(context.Background(), o)
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusNotFound || strings.Contains(err.Error(), "resume") {
		t.Fatalf("error %v, want HTTP 404 (and no offer to resume)", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d requests, want 1: a 404 is not retried", n)
	}
	assertFiles(t, o.Dir)

	// A 503 is retried.
	s = newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		serve(w, r, data)
	})
	o = opts(t, s, data, sum, nil)
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
}

func TestSlowServerCancelThenResume(t *testing.T) {
	data, sum := readModel(t)
	half := len(data) / 2
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			stall(w, r, data, half)
			return
		}
		serve(w, r, data)
	})
	ctx, cancel := context.WithCancel(context.Background())
	p := &recorder{onUpdate: func(have int64) {
		if have > 0 {
			cancel() // the user presses ^C once bytes arrive
		}
	}}
	o := opts(t, s, data, sum, p)
	_, err := Download(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	part := filepath.Join(o.Dir, "model.gguf"+PartSuffix)
	st, err := os.Stat(part)
	if err != nil || st.Size() == 0 || st.Size() > int64(half) {
		t.Fatalf("part file: %v, %v; want 1 to %d bytes", st, err, half)
	}
	assertFiles(t, o.Dir, "model.gguf"+PartSuffix)

	o.Progress = nil
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	if res.Resumed != st.Size() {
		t.Fatalf("resumed %d bytes, want %d", res.Resumed, st.Size())
	}
	if got := s.requests(); got[1] != fmt.Sprintf("bytes=%d-", st.Size()) {
		t.Fatalf("Range headers %q", got)
	}
}

func TestSlowServerDeadline(t *testing.T) {
	data, sum := readModel(t)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { stall(w, r, data, 1000) })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	o := opts(t, s, data, sum, nil)
	_, err := Download(ctx, o)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d requests after the deadline, want 1", n)
	}
}

func TestStalledTransferIsResumed(t *testing.T) {
	data, sum := readModel(t)
	third := len(data) / 3
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			stall(w, r, data, third)
			return
		}
		serve(w, r, data)
	})
	p := &recorder{}
	o := opts(t, s, data, sum, p)
	o.StallTimeout = 100 * time.Millisecond
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	if len(p.retries) != 1 || !strings.Contains(p.retries[0].Error(), "no data for") {
		t.Fatalf("retries %v, want one stall", p.retries)
	}
	if got := s.requests(); len(got) != 2 || got[1] != fmt.Sprintf("bytes=%d-", third) {
		t.Fatalf("Range headers %q", got)
	}
}

// writePart leaves a partial download in dir.
func writePart(t *testing.T, dir string, content []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "model.gguf"+PartSuffix), content, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestServerIgnoresRange(t *testing.T) {
	data, sum := readModel(t)
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.Write(data) // 200 with the whole file, whatever the Range
	})
	o := opts(t, s, data, sum, nil)
	// Bytes that are not the file's start: appending to them would fail
	// the checksum.
	writePart(t, o.Dir, bytes.Repeat([]byte{0xEE}, 1000))
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	if got := s.requests(); len(got) != 1 || got[0] != "bytes=1000-" {
		t.Fatalf("Range headers %q", got)
	}
	if res.Resumed != 0 {
		t.Fatalf("resumed %d bytes from a part the server ignored", res.Resumed)
	}
}

func TestRangeNotSatisfiable(t *testing.T) {
	data, sum := readModel(t)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { serve(w, r, data) })

	// A complete part (a run killed before the rename) of a URL download
	// without a published size: the server has nothing after it (416).
	o := opts(t, s, data, "", nil)
	o.Size = 0
	writePart(t, o.Dir, data)
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	if res.Resumed != int64(len(data)) || res.Verified {
		t.Fatalf("result %+v", res)
	}
	if got := s.requests(); len(got) != 1 || got[0] != fmt.Sprintf("bytes=%d-", len(data)) {
		t.Fatalf("Range headers %q", got)
	}

	// A part longer than the file on the server: 416, then a fresh start.
	o = opts(t, s, data, sum, nil)
	o.Size = 0
	writePart(t, o.Dir, append(append([]byte{}, data...), "tail"...))
	res, err = Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	if got := s.requests()[1:]; len(got) != 2 || got[0] != fmt.Sprintf("bytes=%d-", len(data)+4) || got[1] != "" {
		t.Fatalf("Range headers %q, want the range then a plain GET", got)
	}

	// With the published size known, a complete part needs no request.
	before := len(s.requests())
	o = opts(t, s, data, sum, nil)
	writePart(t, o.Dir, data)
	res, err = Download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkDone(t, res, o, data, sum)
	if n := len(s.requests()) - before; n != 0 || !res.Verified {
		t.Fatalf("%d requests for a complete part; result %+v", n, res)
	}
}

func TestNotGGUF(t *testing.T) {
	page := []byte("<html><body>Please log in to download this model.</body></html>")
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { serve(w, r, page) })
	o := opts(t, s, page, "", nil)
	o.Size = 0
	_, err := Download(context.Background(), o)
	if !errors.Is(err, ErrNotGGUF) {
		t.Fatalf("error %v, want ErrNotGGUF", err)
	}
	assertFiles(t, o.Dir)
}

func TestExistingFileIsKept(t *testing.T) {
	data, sum := readModel(t)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { serve(w, r, data) })
	o := opts(t, s, data, sum, nil)
	other := append([]byte{}, data...)
	other[len(other)-1] ^= 1
	final := filepath.Join(o.Dir, "model.gguf")
	if err := os.WriteFile(final, other, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Download(context.Background(), o)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("error %v, want the existing file refused", err)
	}
	if got, _ := os.ReadFile(final); !bytes.Equal(got, other) {
		t.Fatal("the existing file was changed")
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("%d requests", n)
	}
}

func TestConcurrentDownloadRefused(t *testing.T) {
	data, sum := readModel(t)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) { serve(w, r, data) })
	o := opts(t, s, data, sum, nil)
	f, err := os.OpenFile(filepath.Join(o.Dir, "model.gguf"+PartSuffix), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, err = Download(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("error %v, want the part locked", err)
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("%d requests", n)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{URL: "ftp://example.com/m.gguf"},
		{URL: "model.gguf"},
		{URL: "https://example.com/"},
		{URL: "https://example.com/m.gguf", Name: "../m.gguf"},
		{URL: "https://example.com/m.gguf", SHA256: "abc"},
	} {
		if _, err := Download(context.Background(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, c := range []struct {
		in          string
		start, size int64
		ok          bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 0-0/*", 0, -1, true},
		{"bytes */1000", -1, 1000, true},
		{"bytes 5-/10", 5, 10, true},
		{"bytes x-1/10", 0, 0, false},
		{"items 0-1/2", 0, 0, false},
		{"bytes 0-1", 0, 0, false},
		{"", 0, 0, false},
	} {
		start, size, ok := parseContentRange(c.in)
		if start != c.start || size != c.size || ok != c.ok {
			t.Errorf("%q: %d %d %v, want %d %d %v", c.in, start, size, ok, c.start, c.size, c.ok)
		}
	}
}

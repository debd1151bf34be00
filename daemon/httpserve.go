package daemon

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/api/ollama"
	"github.com/edgellm/edgellm/api/openai"
	"github.com/edgellm/edgellm/mqtt"
)

// The HTTP adapter: httpBackend is the api.Backend the HTTP APIs run on. Its
// requests go through the same validation, queue and worker as MQTT's.

// httpBackend implements api.Backend over the daemon's queue.
type httpBackend struct {
	s      *server
	loaded time.Time // when the model was loaded, for /v1/models
}

// Submit validates req, queues it as a job answered through rsp, and
// cancels the job when ctx ends before its answer.
func (b *httpBackend) Submit(ctx context.Context, req *api.Request, rsp api.Responder) error {
	s := b.s
	if s.stopping.Load() {
		return &api.Error{Code: api.CodeUnavailable, Message: "the daemon is stopping"}
	}
	cfg := s.config()
	// OpenAI clients ask for more than a small board allows (Home
	// Assistant sends max_tokens 3000): as llama.cpp's server bounds
	// n_predict, a larger max_tokens is lowered to limits.max_tokens, and
	// the answer's finish_reason "length" says when it was reached.
	if req.MaxTokens != nil && *req.MaxTokens > cfg.Limits.MaxTokens {
		lim := cfg.Limits.MaxTokens
		req.MaxTokens = &lim
	}
	if err := req.Validate(api.Limits{MaxTokens: cfg.Limits.MaxTokens}); err != nil {
		return err
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:]) // crypto/rand.Read never fails (Go 1.24+)
	id := "http-" + hex.EncodeToString(idb[:])
	job := NewJob(id, req, cfg)
	if err := checkJob(&job); err != nil {
		return err
	}
	done := make(chan struct{})
	now := time.Now()
	e := &Entry{Job: job, Arrived: now, Deadline: now.Add(cfg.Queue.JobTimeout), Responder: &doneResponder{Responder: rsp, done: done, s: s, id: id}}
	switch err := s.queue.Push(e); {
	case errors.Is(err, ErrQueueFull):
		s.log.Warn("queue full; answering 503", "id", id, "size", cfg.Queue.Size)
		return &api.Error{Code: api.CodeBusy, Message: err.Error()}
	case err != nil:
		return fmt.Errorf("queueing the HTTP request: %w", err)
	}
	s.log.Info("HTTP request queued", "id", id, "depth", s.queue.Depth())
	// A client that goes away cancels its job: a queued one is answered
	// here, a running one by its worker.
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
			removed, _ := s.queue.Cancel(id, ErrCancelled)
			for _, e := range removed {
				s.log.Info("HTTP client gone; cancelled its queued job", "id", id)
				e.Responder.Final(api.ErrorAnswer(api.CodeCancelled, errors.New("the client went away")))
			}
		}
	}()
	return nil
}

// Model describes the loaded model.
func (b *httpBackend) Model() api.ModelInfo {
	info, _ := b.s.model.Load().(ModelInfo)
	return api.ModelInfo{Name: info.Name, Context: b.s.config().Model.Context, Created: b.loaded.Unix(),
		Family: info.Arch, Quantization: info.Quant, Parameters: int64(info.Params), Size: int64(info.FileBytes)}
}

// doneResponder counts the final answer in the status (as MQTT answers
// are) and closes done after it, which ends the watch on the client's
// context.
type doneResponder struct {
	api.Responder
	done chan struct{}
	s    *server
	id   string
}

// Final passes the answer on, counts it and closes done. A job left by
// the shutdown (CodeUnavailable) is not counted, as MQTT does not count
// the answers it leaves unpublished.
func (r *doneResponder) Final(a api.Answer) {
	r.Responder.Final(a)
	if a.Error == nil || a.Error.Code != api.CodeUnavailable {
		r.s.count(mqtt.FinalOf(r.id, a))
		r.s.jobsHTTP.Add(1)
		r.s.kickStatus()
	}
	close(r.done)
}

// startHTTP starts the HTTP APIs that are configured: the OpenAI-compatible
// one on http.listen, the Ollama-compatible one on http.ollama_listen; over
// TLS when http.tls is set. The returned function
// stops them gracefully (requests in flight are answered first, within
// ctx); it is nil when no API is on.
func (s *server) startHTTP(cfg *Config) (func(ctx context.Context), error) {
	var key string
	if cfg.HTTP.APIKeyFile != "" {
		data, err := os.ReadFile(cfg.HTTP.APIKeyFile)
		if err != nil {
			return nil, fmt.Errorf("daemon: http.api_key_file: %w", err)
		}
		if key = strings.TrimRight(string(data), "\r\n"); strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("daemon: http.api_key_file %s is empty", cfg.HTTP.APIKeyFile)
		}
	}
	var tlsConf *tls.Config
	if cfg.HTTP.TLS.Cert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.HTTP.TLS.Cert, cfg.HTTP.TLS.Key)
		if err != nil {
			return nil, fmt.Errorf("daemon: http.tls: %w", err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	backend := &httpBackend{s: s, loaded: time.Now()}
	var stops []func(context.Context)
	stopAll := func(ctx context.Context) {
		for _, stop := range stops {
			stop(ctx)
		}
	}
	for _, a := range []struct {
		name, key, addr string
		handler         func() http.Handler
	}{
		{"OpenAI-compatible", "http.listen", cfg.HTTP.Listen, func() http.Handler {
			return openai.New(openai.Options{Backend: backend, APIKey: key, MaxBodyBytes: int64(cfg.HTTP.MaxBodyBytes), Logger: s.log})
		}},
		{"Ollama-compatible", "http.ollama_listen", cfg.HTTP.OllamaListen, func() http.Handler {
			return ollama.New(ollama.Options{Backend: backend, APIKey: key, MaxBodyBytes: int64(cfg.HTTP.MaxBodyBytes), Logger: s.log})
		}},
	} {
		if a.addr == "" {
			continue
		}
		stop, err := s.serveHTTP(a.name, a.key, a.addr, a.handler(), tlsConf, key != "")
		if err != nil {
			stopAll(context.Background())
			return nil, err
		}
		stops = append(stops, stop)
	}
	if len(stops) == 0 {
		return nil, nil
	}
	return stopAll, nil
}

// serveHTTP listens on addr (the config key names it in errors) and serves
// h there until the returned function stops it.
func (s *server) serveHTTP(name, key, addr string, h http.Handler, tlsConf *tls.Config, withKey bool) (func(ctx context.Context), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("daemon: %s: %w", key, err)
	}
	scheme := "http"
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
		scheme = "https"
	}
	// An idle connection is closed after two minutes. There is no
	// ReadTimeout: it would stay on the connection while the answer
	// streams, and net/http cancels the request when it passes (the
	// handlers bound the reading of a body themselves); nor a write
	// deadline: a stream lasts as long as its job.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("an HTTP API stopped", "api", name, "err", err)
		}
	}()
	s.log.Info(name+" HTTP API listening", "url", scheme+"://"+ln.Addr().String(), "api_key", withKey)
	return func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			s.log.Warn("an HTTP API did not stop gracefully; closing its connections", "api", name, "err", err)
			srv.Close()
		}
		<-served
	}, nil
}

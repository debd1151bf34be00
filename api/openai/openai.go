// Package openai serves the OpenAI-compatible HTTP API (GET /v1/models,
// POST /v1/chat/completions, POST /v1/completions, GET /health) over an api.Backend, for Home
// Assistant's llama.cpp integration and other OpenAI clients. It knows
// nothing of the inference engine: requests go to the backend's queue like
// MQTT requests.
package openai

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/api/internal/web"
)

// Options configures a Handler.
type Options = web.Options

// Handler serves the OpenAI-compatible API.
type Handler struct {
	opts Options
	mux  *http.ServeMux
	log  *slog.Logger
}

// New returns the API's handler.
func New(opts Options) *Handler {
	h := &Handler{opts: opts, mux: http.NewServeMux(), log: opts.Log()}
	h.mux.HandleFunc("GET /health", h.health)
	h.mux.HandleFunc("GET /v1/models", h.authed(h.models))
	h.mux.HandleFunc("GET /v1/models/{id}", h.authed(h.model))
	h.mux.HandleFunc("POST /v1/chat/completions", h.authed(h.chat))
	h.mux.HandleFunc("POST /v1/completions", h.authed(h.completions))
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "not_found",
			fmt.Sprintf("%s %s is not an endpoint of this server", r.Method, r.URL.Path))
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// authed checks the bearer token when an API key is configured.
func (h *Handler) authed(next http.HandlerFunc) http.HandlerFunc {
	return web.Guard(h.opts.APIKey, next, func(w http.ResponseWriter) {
		writeError(w, http.StatusUnauthorized, "authentication_error", "", "invalid_api_key", web.KeyHelp)
	})
}

// health answers GET /health as llama.cpp's server does.
func (h *Handler) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// models answers GET /v1/models with the loaded model.
func (h *Handler) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{h.modelObject()}})
}

// model answers GET /v1/models/{id}: the loaded model, or 404 for another
// name.
func (h *Handler) model(w http.ResponseWriter, r *http.Request) {
	m := h.modelObject()
	if id := r.PathValue("id"); id != m["id"] {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			fmt.Sprintf("the model %q is not loaded; this server serves %q", id, m["id"]))
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// modelObject is the loaded model in OpenAI's model shape.
func (h *Handler) modelObject() map[string]any {
	m := h.opts.Backend.Model()
	return map[string]any{"id": m.Name, "object": "model", "created": m.Created, "owned_by": "edgellm",
		"meta": map[string]any{"n_ctx": m.Context}}
}

// errorBody is OpenAI's error shape.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeError writes an error in OpenAI's shape; empty param and code are
// null.
func writeError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	d := errorDetail{Message: msg, Type: typ}
	if param != "" {
		d.Param = &param
	}
	if code != "" {
		d.Code = &code
	}
	writeJSON(w, status, errorBody{Error: d})
}

// apiError maps an *api.Error (or any error) to its HTTP status and OpenAI
// error.
func apiError(err error) (int, errorDetail) {
	status, e, msg := web.Failure(err)
	typ, code := "server_error", e.Code
	switch e.Code {
	case api.CodeBadRequest:
		typ, code = "invalid_request_error", "invalid_value"
	case api.CodeTooLong:
		typ, code = "invalid_request_error", "context_length_exceeded"
	}
	d := errorDetail{Message: msg, Type: typ, Code: &code}
	if e.Field != "" {
		f := e.Field
		d.Param = &f
	}
	return status, d
}

// writeAPIError writes err with its status; a busy or stopping daemon adds
// Retry-After.
func writeAPIError(w http.ResponseWriter, err error) {
	status, d := apiError(err)
	writeJSON(w, status, errorBody{Error: d})
}

func writeJSON(w http.ResponseWriter, status int, v any) { web.WriteJSON(w, status, v) }

// readBody reads a request body within the size limit; the error is
// already answered.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "", "unsupported_media_type",
			fmt.Sprintf("Content-Type %q is not application/json", ct))
		return nil, false
	}
	body, berr := web.ReadBody(w, r, h.opts.MaxBodyBytes)
	if berr != nil {
		code := ""
		if berr.Status == http.StatusRequestEntityTooLarge {
			code = "request_too_large"
		}
		writeError(w, berr.Status, "invalid_request_error", "", code, berr.Message)
		return nil, false
	}
	return body, true
}

// newID returns a fresh completion id.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b[:])
}

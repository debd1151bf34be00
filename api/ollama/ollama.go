// Package ollama serves the Ollama-compatible HTTP API (GET /api/version,
// /api/tags, /api/ps; POST /api/show, /api/chat, /api/generate, /api/pull;
// HEAD and GET / answer "Ollama is running") over an api.Backend, for Home
// Assistant's Ollama integration and other Ollama clients. It knows nothing
// of the inference engine: requests go to the backend's queue like MQTT and
// OpenAI requests.
//
// The one loaded model is listed as "<name>:latest" (Name), the name Ollama
// clients expect of a model with the default tag. What the reference servers
// do decides the rest:
//   - chat and generate serve whatever model they name, as llama.cpp's server
//     does (a client set up with another name keeps working; the answers'
//     model field says which model answered);
//   - options.num_ctx does not change the context: the daemon runs the model
//     with model.context, so a larger num_ctx is capped to it (Home
//     Assistant sends 8192 by default) and a smaller one changes nothing;
//   - show and pull of another name are 404 {"error": …}, as Ollama answers
//     a model it does not have; pull never downloads (the loaded model's
//     name succeeds at once, the error of another name says how to change
//     the model);
//   - keep_alive is accepted and ignored: the model stays loaded.
package ollama

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/api/internal/web"
)

// Version is what GET /api/version reports: a version of Ollama whose API
// this one follows, for clients that check it before using a feature.
const Version = "0.12.6"

// Options configures a Handler.
type Options = web.Options

// Handler serves the Ollama-compatible API.
type Handler struct {
	opts Options
	mux  *http.ServeMux
}

// New returns the API's handler.
func New(opts Options) *Handler {
	h := &Handler{opts: opts, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.root) // GET also answers HEAD
	h.mux.HandleFunc("GET /api/version", h.authed(h.version))
	h.mux.HandleFunc("GET /api/tags", h.authed(h.tags))
	h.mux.HandleFunc("GET /api/ps", h.authed(h.ps))
	h.mux.HandleFunc("POST /api/show", h.authed(h.show))
	h.mux.HandleFunc("POST /api/pull", h.authed(h.pull))
	h.mux.HandleFunc("POST /api/chat", h.authed(h.chat))
	h.mux.HandleFunc("POST /api/generate", h.authed(h.generate))
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s is not an endpoint of this server", r.Method, r.URL.Path))
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
		writeError(w, http.StatusUnauthorized, web.KeyHelp)
	})
}

// root answers / as Ollama does; clients probe it.
func (h *Handler) root(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "Ollama is running")
}

func (h *Handler) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": Version})
}

// Name is the loaded model's name in the Ollama API: the backend's name
// made a valid Ollama model name (lower case letters, digits, '.', '_'
// and the ':' of a tag; every run of other characters becomes one '-'),
// with the tag ":latest" unless it has one.
func Name(m api.ModelInfo) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(m.Name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == ':':
			b.WriteRune(r)
			dash = false
		case !dash: // '-' or a run of other characters
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.Trim(b.String(), "-.:_")
	if name == "" {
		name = "edgellm"
	}
	if !strings.Contains(name, ":") {
		name += ":latest"
	}
	return name
}

// isLoaded reports whether a request's model name names the loaded model:
// its Name, or that without ":latest", in any case.
func isLoaded(name string, m api.ModelInfo) bool {
	full := Name(m)
	name = strings.TrimSpace(name)
	return strings.EqualFold(name, full) || strings.EqualFold(name+":latest", full)
}

// details is the model's "details" object.
func details(m api.ModelInfo) map[string]any {
	family := m.Family
	if family == "" {
		family = "unknown"
	}
	return map[string]any{"parent_model": "", "format": "gguf", "family": family, "families": []string{family},
		"parameter_size": parameterSize(m.Parameters), "quantization_level": m.Quantization}
}

// parameterSize writes a weight count as Ollama does: "7.6B", "494.03M".
func parameterSize(n int64) string {
	switch {
	case n >= 1e9:
		return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + "B"
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64) + "M"
	case n >= 1e3:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 2, 64) + "K"
	}
	return strconv.FormatInt(n, 10)
}

// digest is a stable digest of the model (its name and size): Ollama lists
// the manifest's sha256, which edgellm does not have.
func digest(m api.ModelInfo) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", m.Name, m.Size))
	return hex.EncodeToString(sum[:])
}

// modelEntry is the model as /api/tags lists it.
func modelEntry(m api.ModelInfo) map[string]any {
	name := Name(m)
	return map[string]any{"name": name, "model": name, "modified_at": time.Unix(m.Created, 0).UTC().Format(time.RFC3339Nano),
		"size": m.Size, "digest": digest(m), "details": details(m)}
}

// tags answers GET /api/tags with the loaded model.
func (h *Handler) tags(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{modelEntry(h.opts.Backend.Model())}})
}

// ps answers GET /api/ps: the loaded model, which stays loaded (as with
// keep_alive -1, its expiry is as far as Ollama's).
func (h *Handler) ps(w http.ResponseWriter, _ *http.Request) {
	m := h.opts.Backend.Model()
	e := modelEntry(m)
	delete(e, "modified_at")
	e["expires_at"] = time.Now().Add(math.MaxInt64).UTC().Format(time.RFC3339Nano)
	e["size_vram"] = 0
	e["context_length"] = m.Context
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{e}})
}

// nameRequest is the body of show and pull: the model as "model" (or the
// older "name").
type nameRequest struct {
	Model    string `json:"model"`
	Name     string `json:"name"`
	Stream   *bool  `json:"stream"`
	Insecure bool   `json:"insecure"`
	Verbose  bool   `json:"verbose"`
}

// loaded reads the body of show or pull and answers one that does not name
// the loaded model (false); else it returns the request and the model.
func (h *Handler) loaded(w http.ResponseWriter, r *http.Request) (*nameRequest, api.ModelInfo, bool) {
	m := h.opts.Backend.Model()
	body, ok := h.readBody(w, r)
	if !ok {
		return nil, m, false
	}
	var nr nameRequest
	if err := web.Decode(body, &nr); err != nil {
		writeAPIError(w, err)
		return nil, m, false
	}
	name := nr.Model
	if name == "" {
		name = nr.Name
	}
	switch {
	case strings.TrimSpace(name) == "":
		writeError(w, http.StatusBadRequest, "model is required")
		return nil, m, false
	case !isLoaded(name, m):
		writeError(w, http.StatusNotFound, fmt.Sprintf("model %q not found: this server runs only %q; "+
			"it does not download models through the API: set model.path in edgellm's configuration to another GGUF file "+
			"(`edgellm pull NAME` downloads a catalogue model) and restart it", name, Name(m)))
		return nil, m, false
	}
	return &nr, m, true
}

// show answers POST /api/show for the loaded model.
func (h *Handler) show(w http.ResponseWriter, r *http.Request) {
	_, m, ok := h.loaded(w, r)
	if !ok {
		return
	}
	info := map[string]any{"general.architecture": m.Family, "general.name": m.Name,
		"general.parameter_count": m.Parameters, m.Family + ".context_length": m.Context}
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":    fmt.Sprintf("# %s, served by edgellm (model.path in its configuration)\n", Name(m)),
		"parameters":   fmt.Sprintf("num_ctx %d", m.Context),
		"template":     "",
		"details":      details(m),
		"model_info":   info,
		"capabilities": []string{"completion", "tools"},
		"modified_at":  time.Unix(m.Created, 0).UTC().Format(time.RFC3339Nano),
	})
}

// pull answers POST /api/pull. Nothing is downloaded: the loaded model's
// name succeeds at once (Home Assistant's setup pulls a model it does not
// find in /api/tags), another name is a 404 saying how to change the
// model.
func (h *Handler) pull(w http.ResponseWriter, r *http.Request) {
	nr, _, ok := h.loaded(w, r)
	if !ok {
		return
	}
	if nr.Stream != nil && !*nr.Stream {
		writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for _, status := range []string{"pulling manifest", "verifying sha256 digest", "writing manifest", "success"} {
		if enc.Encode(map[string]string{"status": status}) != nil {
			return
		}
	}
}

// writeAPIError writes err in Ollama's shape with its status.
func writeAPIError(w http.ResponseWriter, err error) {
	status, _, msg := web.Failure(err)
	writeError(w, status, msg)
}

// writeError writes Ollama's error shape, {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) { web.WriteJSON(w, status, v) }

// readBody reads a request body within the size limit; the error is
// already answered. Ollama reads JSON whatever the Content-Type says, and
// so does this.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := web.ReadBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, err.Status, err.Message)
		return nil, false
	}
	return body, true
}

package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// startOllamaDaemon starts the daemon with the Ollama API on a free
// loopback port (and the OpenAI API off) and the given extra keys, and
// returns the API's base URL.
func startOllamaDaemon(t *testing.T, set map[string]any, opts Options) (string, *daemonUnderTest) {
	t.Helper()
	b := mqtttest.Start(t, mqtttest.Options{})
	addr := freeAddr(t)
	// The tiny test model has no chat template of its own.
	keys := map[string]any{"http.ollama_listen": addr, "model.chat_template": "chatml"}
	for k, v := range set {
		keys[k] = v
	}
	d := startServe(t, b, writeConfig(t, t.TempDir(), b, keys), opts)
	d.broker = b
	return "http://" + addr, d
}

// TestOllamaClient runs the official ollama npm client's checks against the
// daemon: every scenario the harness runs must pass.
func TestOllamaClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clients := npmClients(t, ctx)
	const key = "ollama-test-key"
	scenarios := []string{"version", "tags", "ps", "show", "chat", "chat_stream", "chat_tools", "chat_format_schema",
		"chat_format_json", "chat_options", "generate", "pull_unknown_model"}
	url, _ := startOllamaDaemon(t, map[string]any{"http.api_key_file": writeKey(t, key), "model.context": 2048, "limits.max_tokens": 128}, Options{Load: toolLoader()})
	runHarness(t, ctx, scenarios, []string{"EDGELLM_TIMEOUT_MS=60000", "EDGELLM_SCENARIOS=" + strings.Join(scenarios, ",")},
		filepath.Join(clients, "ollama_check.mjs"), url, key)
}

// toolLoader loads the model with LoadLLM and makes every job that offers
// tools after a user's message begin with the template's tool-call marker,
// forced token by token through the real generator: the random test model
// never chooses to call a tool, and the Ollama API has no tool_choice to
// make it; the grammar then holds the call to the tools' schemas.
func toolLoader() Loader {
	return func(ctx context.Context, o LoadOptions) (Engine, error) {
		e, err := LoadLLM(ctx, o)
		if err != nil {
			return nil, err
		}
		return toolLeadEngine{e}, nil
	}
}

type toolLeadEngine struct{ Engine }

func (e toolLeadEngine) Run(ctx context.Context, job Job) (Outcome, error) {
	if n := len(job.Messages); len(job.Tools) > 0 && n > 0 && job.Messages[n-1].Role == "user" {
		job.lead = "<tool_call>"
	}
	return e.Engine.Run(ctx, job)
}

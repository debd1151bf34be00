package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/daemon"
	"github.com/edgellm/edgellm/mqtt"
	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// serveNode runs `edgellm serve` in this process as node pi1 on broker b
// until the test ends, and returns once the node is online.
func serveNode(t *testing.T, b *mqtttest.Broker) {
	t.Helper()
	model, err := filepath.Abs(models + "tiny-q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("test model missing: %v", err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	yaml := fmt.Sprintf(`model:
  path: %s
  context: 512
  threads: 1
mqtt:
  broker: %s
  node_id: pi1
  status_interval: 1h
limits:
  max_tokens: 64
state_dir: %s
`, model, b.URL(), filepath.Join(dir, "state"))
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	watch := b.Peer(t, mqtttest.PeerOptions{})
	watch.Subscribe("edgellm/pi1/availability", 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Serve(ctx, daemon.Options{ConfigPath: config, Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
	})
	for {
		if m := watch.Next(time.Minute); m.Payload == mqtt.Online {
			break
		}
	}
	watch.Disconnect()
}

func TestSendToServe(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	serveNode(t, b)
	watch := b.Peer(t, mqtttest.PeerOptions{})
	watch.Subscribe("edgellm/pi1/response/+", 1) // final answers only

	code, out, errs := runCLI(t, "", "send", "--broker", b.URL(), "--node", "pi1", "-n", "16", "-t", "0", "Once", "upon", "a", "time")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var f mqtt.Final
	if err := json.Unmarshal([]byte(watch.Next(time.Minute).Payload), &f); err != nil {
		t.Fatal(err)
	}
	// What was printed as it streamed is the final answer, plus a newline.
	if f.Status != mqtt.StatusOK || f.Text == "" || strings.TrimSuffix(out, "\n") != f.Text {
		t.Fatalf("stdout %q, final %+v", out, f)
	}
	for _, want := range []string{"finish length", "16 generated", "decode "} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q: %s", want, errs)
		}
	}

	// The prompt from stdin, greedy again: the same answer.
	code, out2, errs := runCLI(t, "Once upon a time", "send", "--broker", b.URL(), "--node", "pi1", "-n", "16", "-t", "0")
	if code != 0 || out2 != out {
		t.Fatalf("stdin prompt: exit %d, stdout %q, want %q (%s)", code, out2, out, errs)
	}

	// An error answer: exit 1 with the node's message.
	code, _, errs = runCLI(t, "", "send", "--broker", b.URL(), "--node", "pi1", "-n", "1000", "hi")
	if code != 1 || !strings.Contains(errs, "answered bad_request") || !strings.Contains(errs, "max_tokens") {
		t.Fatalf("too many tokens: exit %d, stderr %s", code, errs)
	}
}

func TestSendNoNode(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	code, out, errs := runCLI(t, "", "send", "--broker", b.URL(), "--node", "ghost", "--timeout", "300ms", "hello")
	if code != 1 || out != "" || !strings.Contains(errs, "deadline exceeded") || !strings.Contains(errs, "never reported its availability") {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
}

func TestSendUsage(t *testing.T) {
	for _, args := range [][]string{
		{"send"},
		{"send", "--broker", "http://x", "hi"},
		{"send", "--node", "a/b", "hi"},
		{"send", "-n", "0", "hi"},
		{"send", "--timeout", "0s", "hi"},
	} {
		if code, _, errs := runCLI(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errs)
		}
	}
}

// The stats line shows a thinking model's reasoning and its share of the
// generated tokens, and each tool call.
func TestPrintAnswerStatsReasoning(t *testing.T) {
	var b strings.Builder
	printAnswerStats(&b, &mqtt.Final{Reasoning: "two lamps", FinishReason: "tool_call",
		ToolCalls: []api.ToolCall{{Name: "light", Arguments: json.RawMessage(`{"on":true}`)}},
		Usage:     &api.Usage{PromptTokens: 9, CompletionTokens: 12, ReasoningTokens: 5}})
	want := "reasoning: two lamps\ntool call: light({\"on\":true})\nfinish tool_call; 9 prompt tokens; 12 generated (5 reasoning)\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

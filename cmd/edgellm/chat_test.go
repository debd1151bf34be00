package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/daemon"
	"github.com/edgellm/edgellm/inference/chat/toolcall"
)

// --chat formats the prompt with a chat template: the ChatML user turn
// around "hi" is many more tokens than the 2 of BOS and "hi" alone.
func TestRunChat(t *testing.T) {
	code, _, errs := runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "hi", "--chat", "--chat-template", "chatml", "-n", "2", "-t", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, _, plain := runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "hi", "-n", "2", "-t", "0")
	if !strings.Contains(plain, "prefill: 2 tokens") || strings.Contains(errs, "prefill: 2 tokens") || !strings.Contains(errs, "prefill: ") {
		t.Fatalf("prefill lines: plain %q, chat %q", plain, errs)
	}
	// The test models have no template of their own: a clear error.
	code, _, errs = runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "hi", "--chat")
	if code != 1 || !strings.Contains(errs, "no chat template") || !strings.Contains(errs, "--chat-template") {
		t.Fatalf("no template: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "hi", "--chat", "--chat-template", "nonsense")
	if code != 1 || !strings.Contains(errs, "chatml") {
		t.Fatalf("unknown template name: exit %d: %s", code, errs)
	}
	if code, _, _ = runCLI(t, "", "run", models+"tiny-q8_0.gguf", "--chat-template", "chatml"); code != 2 {
		t.Fatalf("--chat-template without --chat: exit %d", code)
	}
}

func TestRunConstrained(t *testing.T) {
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.json")
	os.WriteFile(schema, []byte(`{"type":"object","properties":{"n":{"type":"integer"},"ok":{"type":"boolean"}},"required":["n","ok"],"additionalProperties":false}`), 0o600)
	for seed := range 4 {
		code, out, errs := runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "x", "--schema", schema, "-n", "40", "-t", "1", "-s", fmt.Sprint(seed))
		var v struct {
			N  *int  `json:"n"`
			OK *bool `json:"ok"`
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if code != 0 || dec.Decode(&v) != nil || v.N == nil || v.OK == nil {
			t.Fatalf("--schema seed %d: exit %d, out %q, %s", seed, code, out, errs)
		}
	}
	code, out, errs := runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "x", "--json", "-n", "30", "-t", "1")
	if code != 0 || !json.Valid([]byte(strings.TrimSpace(out))) {
		t.Fatalf("--json: exit %d, out %q, %s", code, out, errs)
	}
	tools := filepath.Join(dir, "tools.json")
	os.WriteFile(tools, []byte(`[{"name":"light","description":"switch a light","parameters":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}}]`), 0o600)
	// The answer is calls in the call syntax of the template: Hermes for
	// chatml, Llama's JSON for llama3.1.
	for _, c := range []struct {
		family string
		syn    toolcall.Syntax
		mark   string
	}{{"chatml", toolcall.Hermes, "<tool_call>"}, {"llama3.1", toolcall.Llama3JSON, `"parameters"`}} {
		code, out, errs = runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "lights on", "--chat", "--chat-template", c.family, "--tools", tools, "-n", "90", "-c", "2048")
		p := c.syn.Parse(out, []toolcall.Tool{{Name: "light", Parameters: json.RawMessage(`{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}`)}})
		var args struct {
			On *bool `json:"on"`
		}
		if code != 0 || !strings.Contains(out, c.mark) || len(p.Calls) == 0 || p.Calls[0].Name != "light" ||
			json.Unmarshal(p.Calls[0].Arguments, &args) != nil || args.On == nil || strings.TrimSpace(p.Rest) != "" {
			t.Fatalf("--tools with %s: exit %d, out %q, parsed %+v, %s", c.family, code, out, p, errs)
		}
	}
	for _, args := range [][]string{{"--json", "--schema", schema}, {"--tools", tools}} {
		if code, _, _ := runCLI(t, "", append([]string{"run", models + "tiny-q8_0.gguf", "-p", "x"}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// run --cache: the first run saves the prompt's KV cache, the next one with
// the same prompt reuses all of it but the last token and prints the same text.
func TestRunPromptCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "prompt.kv")
	prompt := strings.Repeat("Once upon a time there was a robot. ", 8)
	args := []string{"run", models + "tiny-q4_k_m.gguf", "-p", prompt, "-n", "12", "-t", "0", "--cache", cache}
	code, out1, errs1 := runCLI(t, "", args...)
	if code != 0 || !strings.Contains(errs1, "prompt cache: reused 0 of ") {
		t.Fatalf("first run: exit %d: %s", code, errs1)
	}
	code, out2, errs2 := runCLI(t, "", args...)
	var reused, total int
	if code != 0 || out2 != out1 {
		t.Fatalf("second run: exit %d, %q vs %q", code, out2, out1)
	}
	if _, err := fmt.Sscanf(errs2[strings.Index(errs2, "prompt cache:"):], "prompt cache: reused %d of %d", &reused, &total); err != nil || reused != total-1 {
		t.Fatalf("second run: %s (%v)", errs2, err)
	}
	// A broken cache file is reported and ignored; the answer is the same.
	os.WriteFile(cache, []byte("garbage"), 0o600)
	code, out3, errs3 := runCLI(t, "", args...)
	if code != 0 || out3 != out1 || !strings.Contains(errs3, "prompt cache rejected") {
		t.Fatalf("broken cache: exit %d, %q: %s", code, out3, errs3)
	}
}

// run prepares its prompt with the daemon's pipeline: a greedy run of a
// chat prompt constrained to JSON prefills exactly the tokens the daemon's
// engine prefills for the same request, and writes the same answer.
func TestRunPromptIsTheDaemons(t *testing.T) {
	code, out, errs := runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "hi", "--chat", "--chat-template", "chatml", "--json", "-n", "12", "-t", "0")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	var prefill int
	for _, l := range strings.Split(errs, "\n") {
		if strings.HasPrefix(l, "prefill: ") {
			fmt.Sscanf(l, "prefill: %d tokens", &prefill)
		}
	}
	e, err := daemon.LoadLLM(context.Background(), daemon.LoadOptions{Path: models + "tiny-q8_0.gguf", Context: 256, Threads: 1, ChatTemplate: "chatml"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	o, err := e.Run(context.Background(), daemon.Job{ID: "r", Prompt: "hi", MaxTokens: 12, JSON: true,
		Sampling: daemon.Sampling{Temperature: 0, TopP: 1, RepeatPenalty: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if prefill == 0 || o.Usage.PromptTokens != prefill || strings.TrimSuffix(out, "\n") != o.Text || o.Text == "" {
		t.Errorf("run prefilled %d tokens and wrote %q; the daemon prefilled %d and answered %q", prefill, out, o.Usage.PromptTokens, o.Text)
	}
}

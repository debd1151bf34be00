package main

import (
	"strings"
	"testing"
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

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the chat template probe's child,
// as the edgellm binary does: re-executed with the hidden subcommand, it
// runs that instead of the tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == probeCommand {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// chatTestdata holds the chat templates and their reference renderings.
const chatTestdata = "../../inference/chat/testdata/"

// edgellm template writes exactly what Python's Jinja2 (set up as
// transformers sets it up) rendered for every case of the chat package's
// expected.json: stdout compared byte for byte, the template's BOS text
// included and no newline added.
func TestTemplateCommandMatchesReference(t *testing.T) {
	data, err := os.ReadFile(chatTestdata + "expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Conversations map[string]json.RawMessage `json:"conversations"`
		Tools         json.RawMessage            `json:"tools"`
		Cases         []struct {
			Template     string `json:"template"`
			Conversation string `json:"conversation"`
			AddGen       bool   `json:"add_generation_prompt"`
			Tools        bool   `json:"tools"`
			BOS          string `json:"bos"`
			EOS          string `json:"eos"`
			Output       string `json:"output"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Cases) == 0 {
		t.Fatal("no cases")
	}
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tools, e.Tools, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.Cases {
		msgs := filepath.Join(dir, c.Conversation+".json")
		if err := os.WriteFile(msgs, e.Conversations[c.Conversation], 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"template", "--template", chatTestdata + "templates/" + c.Template, "--bos", c.BOS, "--eos", c.EOS,
			"--messages", msgs, "--date", "2025-03-14"}
		if c.Tools {
			args = append(args, "--tools", tools)
		}
		if !c.AddGen {
			args = append(args, "--no-generation-prompt")
		}
		code, out, errs := runCLI(t, "", args...)
		if code != 0 || out != c.Output {
			t.Errorf("%s/%s gen=%v tools=%v: exit %d, %s\n got %q\nwant %q", c.Template, c.Conversation, c.AddGen, c.Tools, code, errs, out, c.Output)
		}
	}
}

// A template that raises exits 1 with its message and writes nothing;
// --think sets enable_thinking, false without it; bad command lines exit 2.
func TestTemplateCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	msgs := write("m.json", `[{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"b\": 2, \"a\": 1}"}}]}]`)
	tmpl := write("t.jinja", "{{ bos_token }}{{ enable_thinking }}|{{ messages[1].tool_calls[0].function.arguments|tojson }}|{{ strftime_now('%d %b %Y') }}")
	raises := write("r.jinja", "{{ raise_exception('Only user and assistant roles are supported!') }}")

	code, out, errs := runCLI(t, "", "template", "--template", tmpl, "--bos", "<s>", "--messages", msgs, "--date", "2024-02-29")
	if want := `<s>False|{"b": 2, "a": 1}|29 Feb 2024`; code != 0 || out != want {
		t.Errorf("exit %d, %q (%s), want %q", code, out, errs, want)
	}
	if code, out, _ = runCLI(t, "", "template", "--template", tmpl, "--messages", msgs, "--think", "--date", "2024-02-29"); code != 0 || !strings.HasPrefix(out, "True|") {
		t.Errorf("--think: exit %d, %q", code, out)
	}
	code, out, errs = runCLI(t, "", "template", "--template", raises, "--messages", msgs)
	if code != 1 || out != "" || !strings.Contains(errs, "Only user and assistant roles are supported!") {
		t.Errorf("raise_exception: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = runCLI(t, "", "template", "-m", models+"tiny-q8_0.gguf", "--messages", msgs)
	if code != 1 || !strings.Contains(errs, "no chat template") {
		t.Errorf("a model without a template: exit %d, %s", code, errs)
	}
	for _, args := range [][]string{
		{"--messages", msgs},
		{"--template", tmpl},
		{"--template", tmpl, "-m", models + "tiny-q8_0.gguf", "--messages", msgs},
		{"--template", tmpl, "--messages", msgs, "--date", "14/03/2025"},
	} {
		if code, _, _ := runCLI(t, "", append([]string{"template"}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errs := runCLI(t, "", "template", "--template", tmpl, "--messages", tmpl); code != 1 || !strings.Contains(errs, "not a JSON array") {
		t.Errorf("messages not JSON: exit %d, %s", code, errs)
	}
}

// run --chat probes a Jinja template in a child process first: a hostile
// one is refused with the reason, a good one formats the prompt.
func TestRunChatProbesTemplate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jinja")
	good := filepath.Join(dir, "good.jinja")
	os.WriteFile(bad, []byte("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), 0o600)
	os.WriteFile(good, []byte("{{ bos_token }}{% for m in messages %}<|user|>{{ m.content }}{% endfor %}<|assistant|>"), 0o600)
	code, _, errs := runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "hi", "--chat", "--chat-template", bad, "-n", "1")
	if code != 1 || !strings.Contains(errs, "chat template refused") || !strings.Contains(errs, "file bad.jinja") {
		t.Errorf("hostile template: exit %d, %s", code, errs)
	}
	code, _, errs = runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "hi", "--chat", "--chat-template", good, "-n", "1", "-t", "0")
	_, _, plain := runCLI(t, "", "run", models+"tiny-q8_0.gguf", "-p", "<|user|>hi<|assistant|>", "-n", "1", "-t", "0")
	prefill := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "prefill: ") {
				return strings.Fields(l)[1]
			}
		}
		return ""
	}
	// One BOS: the template's BOS text is dropped, the tokenizer adds its own.
	if code != 0 || prefill(errs) == "" || prefill(errs) != prefill(plain) {
		t.Errorf("good template: exit %d, prefill %q vs the plain prompt's %q: %s", code, prefill(errs), prefill(plain), errs)
	}
}

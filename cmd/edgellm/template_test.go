package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

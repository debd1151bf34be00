package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/mqtt"
)

// modelWithTemplate writes a copy of the tiny test model whose
// tokenizer.chat_template is src, and returns its path.
func modelWithTemplate(t *testing.T, src string) string {
	t.Helper()
	f, err := gguf.Open("../testdata/models/tiny-q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := gguf.NewBuilder()
	for _, e := range f.KVs {
		if err := b.AddKV(e.Key, e.Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddKV("tokenizer.chat_template", src); err != nil {
		t.Fatal(err)
	}
	for _, ti := range f.Tensors {
		if err := b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := gguf.WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	return path
}

// The daemon formats conversations with the model's own Jinja template: the
// prompt it runs has exactly the tokens of the rendered template (its BOS
// text replaced by the tokenizer's one BOS), a request's chat_template
// overrides it, and a template's raise_exception is the request's error.
func TestLLMRendersModelTemplate(t *testing.T) {
	src := "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system role') }}{% endif %}" +
		"{% if m.content == 'raise' %}{{ raise_exception('refused content') }}{% endif %}" +
		"<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}" +
		"{% if enable_thinking %}THINK{% endif %}"
	path := modelWithTemplate(t, src)
	e, err := LoadLLM(context.Background(), LoadOptions{Path: path, Context: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	m, err := inference.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want, err := m.Tokenizer.Encode("<|user|>Once upon a time</s><|assistant|>", true)
	if err != nil {
		t.Fatal(err)
	}
	bos := 0
	for _, id := range want {
		if id == m.Tokenizer.BOS() {
			bos++
		}
	}
	if want[0] != m.Tokenizer.BOS() || bos != 1 {
		t.Fatalf("reference tokens %v: want one BOS, first", want)
	}
	job := Job{Messages: []api.Message{{Role: api.RoleUser, Content: "Once upon a time"}}, MaxTokens: 3,
		Sampling: Sampling{Temperature: 0, TopP: 1, RepeatPenalty: 1}}
	out, err := e.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if out.Usage.PromptTokens != len(want) {
		t.Errorf("prompt of %d tokens, want the %d of the rendered template with one BOS (thinking off)", out.Usage.PromptTokens, len(want))
	}
	job.ChatTemplate = "chatml"
	if out2, err := e.Run(context.Background(), job); err != nil || out2.Usage.PromptTokens == len(want) {
		t.Errorf("chat_template chatml: %d prompt tokens, %v; want another prompt than the model's template", out2.Usage.PromptTokens, err)
	}
	job.ChatTemplate = ""
	// A template without a system role gets the system text in the first
	// user message.
	job.Messages = append([]api.Message{{Role: api.RoleSystem, Content: "s"}}, job.Messages...)
	merged, err := m.Tokenizer.Encode("<|user|>s\nOnce upon a time</s><|assistant|>", true)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := e.Run(context.Background(), job); err != nil || out.Usage.PromptTokens != len(merged) {
		t.Errorf("system message for a template without the role: %d prompt tokens, %v; want %d", out.Usage.PromptTokens, err, len(merged))
	}
	job.Messages = []api.Message{{Role: api.RoleUser, Content: "raise"}}
	_, err = e.Run(context.Background(), job)
	var re *api.Error
	if !errors.As(err, &re) || re.Field != "messages" || !strings.Contains(re.Message, "refused content") {
		t.Errorf("raise_exception: %v", err)
	}
}

// Prompts print the day's date, not the request's time, so every request
// of a day renders the same text and shares the cached prefix.
func TestTemplateDatePerDay(t *testing.T) {
	f, err := chat.ChooseFormat("{{ strftime_now('%Y-%m-%d %H:%M:%S') }}|{{ messages[0].content }}", "")
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2025, 3, 14, 8, 30, 5, 0, time.UTC)
	tmpl := chatTemplate{f: f, now: func() time.Time { return clock }}
	msgs := []api.Message{{Role: api.RoleUser, Content: "hi"}}
	morning, err := tmpl.Render(msgs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(14 * time.Hour)
	evening, _ := tmpl.Render(msgs, nil, false)
	clock = clock.Add(2 * time.Hour)
	nextDay, _ := tmpl.Render(msgs, nil, false)
	if morning != "2025-03-14 00:00:00|hi" || evening != morning || nextDay != "2025-03-15 00:00:00|hi" {
		t.Errorf("renderings %q, %q, %q", morning, evening, nextDay)
	}
}

// A request's chat_template cannot name a file.
func TestRequestTemplateNoFile(t *testing.T) {
	m, err := inference.Load("../testdata/models/tiny-q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := resolveRequestTemplate(context.Background(), "/etc/x.jinja", m, nil); err == nil || !strings.Contains(err.Error(), "not a file") {
		t.Errorf("a file: %v", err)
	}
	if _, err := resolveRequestTemplate(context.Background(), "{{ messages[0].content }}", m, nil); err != nil {
		t.Errorf("Jinja text: %v", err)
	}
}

// probeChildEnv makes the test binary a template probe's child (TestMain).
const probeChildEnv = "EDGELLM_TEST_PROBE_CHILD"

// testProber re-executes the test binary as the probe's child.
func testProber() *chat.Prober {
	return &chat.Prober{Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{probeChildEnv + "=1"}}
}

// A hostile template never takes the daemon down: the model's own gives
// way to its family's hand-written template, or leaves the model without
// one (messages refused with the reason, prompts still answered);
// model.chat_template's refuses the model; a request's is refused as a bad
// request.
func TestLLMRefusesHostileTemplates(t *testing.T) {
	endless := "{% for i in range(10**6) %}{% for j in range(10**6) %}{% endfor %}{% endfor %}"
	recursive := "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
	load := func(src, override string) (Engine, error) {
		return LoadLLM(context.Background(), LoadOptions{Path: modelWithTemplate(t, src), Context: 256, Threads: 1,
			ChatTemplate: override, TemplateProbe: testProber(), Logger: testLogger(t)})
	}
	job := Job{Messages: []api.Message{{Role: api.RoleUser, Content: "hi"}}, MaxTokens: 2, Sampling: Sampling{TopP: 1, RepeatPenalty: 1}}

	// A ChatML template (by its markers) that recurses: the chatml family.
	e, err := load("<|im_start|>"+recursive, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Run(context.Background(), job)
	if err != nil || out.Usage.PromptTokens < 10 {
		t.Errorf("chatml fallback: %+v, %v", out.Usage, err)
	}
	e.Close()

	// No family to fall back to: messages are refused with the reason
	// (the time limit, or on a busy machine the memory limit first: range()
	// builds its list).
	e, err = load(endless, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(context.Background(), job)
	var re *api.Error
	if !errors.As(err, &re) || re.Field != "messages" || !strings.Contains(re.Message, "chat template refused") {
		t.Errorf("refused template, messages: %v", err)
	}
	if _, err := e.Run(context.Background(), Job{Prompt: "hi", MaxTokens: 2, Sampling: Sampling{TopP: 1, RepeatPenalty: 1}}); err != nil {
		t.Errorf("refused template, a plain prompt: %v", err)
	}
	// A request's hostile Jinja text is a bad request; the engine lives on.
	job.ChatTemplate = recursive
	if _, err = e.Run(context.Background(), job); !errors.As(err, &re) || re.Field != "chat_template" || !strings.Contains(re.Message, "refused") {
		t.Errorf("a request's hostile template: %v", err)
	}
	job.ChatTemplate = "{% for m in messages %}{{ m.content }}{% endfor %}"
	if _, err = e.Run(context.Background(), job); err != nil {
		t.Errorf("a request's good template: %v", err)
	}
	e.Close()

	// model.chat_template that is hostile refuses the model, clearly.
	file := filepath.Join(t.TempDir(), "bad.jinja")
	if err := os.WriteFile(file, []byte(recursive), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := load("x", file); err == nil || !strings.Contains(err.Error(), "model.chat_template") || !errors.Is(err, chat.ErrTemplateRefused) {
		t.Errorf("hostile model.chat_template: %v", err)
	}
}

// model.chat_template names a .jinja file relative to the configuration's
// directory; serve --check checks that it (or the family name, or the
// Jinja text) is usable.
func TestConfigChatTemplate(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.jinja"), []byte("{{ messages[0].content }}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ setting, problem string }{
		{"t.jinja", ""},
		{"chatml", ""},
		{"'{{ messages[0].content }}'", ""},
		{"missing.jinja", "no such file"},
		{"nonsense", "unknown chat template"},
		{"'{% if %}'", "chat template error"},
	} {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte("model:\n  path: m.gguf\n  chat_template: "+c.setting+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		if err != nil {
			t.Fatalf("%s: %v", c.setting, err)
		}
		if c.setting == "t.jinja" && cfg.Model.ChatTemplate != filepath.Join(dir, "t.jinja") {
			t.Errorf("t.jinja resolved to %q", cfg.Model.ChatTemplate)
		}
		err = cfg.CheckFiles()
		if c.problem == "" && err != nil && strings.Contains(err.Error(), "chat_template") ||
			c.problem != "" && (err == nil || !strings.Contains(err.Error(), "model.chat_template") || !strings.Contains(err.Error(), c.problem)) {
			t.Errorf("%s: CheckFiles = %v", c.setting, err)
		}
	}
}

// A conversation's tool calls, their ids and the tool results' ids reach the
// template as OpenAI-style messages, and think reaches it as
// enable_thinking.
func TestTemplateToolRoundTripAndThink(t *testing.T) {
	f, err := chat.ChooseFormat(`{% for m in messages %}{{ m.role }}:{{ m.content }}`+
		`{% for c in m.tool_calls %}[{{ c.id }} {{ c.type }} {{ c.function.name }} {{ c.function.arguments | tojson }}]{% endfor %}`+
		`{% if m.tool_call_id %}<{{ m.tool_call_id }} {{ m.name }}>{% endif %}|{% endfor %}{{ enable_thinking }}`, "")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := chatTemplate{f: f, now: time.Now}
	req, err := mqtt.ParseRequest([]byte(`{"id":"r1","messages":[
		{"role":"user","content":"light?"},
		{"role":"assistant","content":"","tool_calls":[{"id":"call_1","name":"HassTurnOn","arguments":{"name":"lamp"}},
			{"id":"call_2","type":"function","function":{"name":"HassTurnOff","arguments":"{\"area\":\"Zürich\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","name":"HassTurnOn","content":"ok"}]}`), mqtt.RequestLimits{MaxBytes: 4096, MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, think := range []bool{false, true} {
		got, err := tmpl.Render(req.Messages, nil, think)
		if err != nil {
			t.Fatal(err)
		}
		want := `user:light?|assistant:[call_1 function HassTurnOn {"name": "lamp"}][call_2 function HassTurnOff {"area": "Zürich"}]|` +
			`tool:ok<call_1 HassTurnOn>|` + map[bool]string{false: "False", true: "True"}[think]
		if got != want {
			t.Errorf("think %v:\n got %q\nwant %q", think, got, want)
		}
	}
}

// TestTemplateWithoutSystemRole: Gemma 2's template raises on a system
// message; the system text then opens the first user message, as llama.cpp
// gives it. A template that raises for another reason still fails.
func TestTemplateWithoutSystemRole(t *testing.T) {
	src, err := os.ReadFile("../inference/chat/testdata/jinja/templates/google-gemma-2-2b-it.jinja")
	if err != nil {
		t.Fatal(err)
	}
	f, err := chat.ChooseFormat(string(src), "")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := chatTemplate{f: f, now: time.Now}
	got, err := tmpl.Render([]api.Message{{Role: api.RoleSystem, Content: "Be brief."}, {Role: api.RoleUser, Content: "Lights on?"}}, nil, false)
	if want := "<start_of_turn>user\nBe brief.\nLights on?<end_of_turn>\n<start_of_turn>model\n"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	// Roles that do not alternate are the template's error still.
	_, err = tmpl.Render([]api.Message{{Role: api.RoleSystem, Content: "Be brief."}, {Role: api.RoleAssistant, Content: "Hi."}, {Role: api.RoleAssistant, Content: "Hi."}}, nil, false)
	if !errors.Is(err, chat.ErrTemplate) || !strings.Contains(err.Error(), "System role not supported") {
		t.Errorf("a conversation the template refuses otherwise: %v", err)
	}
}

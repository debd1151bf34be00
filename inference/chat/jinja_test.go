package chat

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixedNow is the date gen_expected.py gives strftime_now.
var fixedNow = time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)

// rawExpected is testdata/expected.json with the conversations and tools
// kept as JSON text, so their keys reach the template in the file's order.
type rawExpected struct {
	Conversations map[string]json.RawMessage `json:"conversations"`
	Tools         json.RawMessage            `json:"tools"`
	Cases         []refCase                  `json:"cases"`
}

// The Jinja renderer reproduces every rendering of expected.json (Python
// Jinja2 set up as transformers sets it up) byte for byte, the BOS text the
// template writes at the start included; the hand-written families leave
// that BOS out (TestRenderMatchesReference), the Jinja renderer does not.
func TestJinjaMatchesReference(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e rawExpected
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Cases) < 40 {
		t.Fatalf("expected.json has %d cases, want the 40 or more gen_expected.py writes", len(e.Cases))
	}
	compiled := map[string]*Jinja{}
	withBOS := 0
	for _, c := range e.Cases {
		j := compiled[c.Template]
		if j == nil {
			src, err := os.ReadFile(filepath.Join("testdata", "templates", c.Template))
			if err != nil {
				t.Fatal(err)
			}
			if j, err = CompileJinja(string(src)); err != nil {
				t.Fatalf("%s: %v", c.Template, err)
			}
			compiled[c.Template] = j
		}
		in := Input{Messages: e.Conversations[c.Conversation], AddGenerationPrompt: c.AddGen,
			BOS: c.BOS, EOS: c.EOS, Now: fixedNow}
		if c.Tools {
			in.Tools = e.Tools
		}
		got, err := j.Render(context.Background(), in)
		if err != nil {
			t.Errorf("%s/%s gen=%v tools=%v: %v", c.Template, c.Conversation, c.AddGen, c.Tools, err)
			continue
		}
		if got != c.Output {
			t.Errorf("%s/%s gen=%v tools=%v:\n got %q\nwant %q", c.Template, c.Conversation, c.AddGen, c.Tools, got, c.Output)
		}
		if c.BOS != "" && strings.HasPrefix(c.Output, c.BOS) {
			withBOS++
		}
	}
	if withBOS == 0 {
		t.Error("no case starts with its BOS text; the test no longer checks that the Jinja renderer keeps it")
	}
}

// A template's raise_exception is an error carrying its message; a syntax
// error fails at compile time.
func TestJinjaErrors(t *testing.T) {
	j, err := CompileJinja(`{% if messages[0].role != 'user' %}{{ raise_exception('Conversation must start with the user') }}{% endif %}ok`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Render(context.Background(), Input{Messages: json.RawMessage(`[{"role":"system","content":"x"}]`)})
	if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "Conversation must start with the user") {
		t.Errorf("raise_exception: %v", err)
	}
	if got, err := j.Render(context.Background(), Input{Messages: json.RawMessage(`[{"role":"user","content":"x"}]`)}); err != nil || got != "ok" {
		t.Errorf("render = %q, %v", got, err)
	}
	if _, err := CompileJinja(`{% for m in messages %}unclosed`); !errors.Is(err, ErrTemplate) {
		t.Errorf("unclosed for: %v", err)
	}
	if _, err := j.Render(context.Background(), Input{Messages: json.RawMessage(`{"role":"user"}`)}); !errors.Is(err, ErrConversation) {
		t.Errorf("messages not an array: %v", err)
	}
}

// The variables are set up as transformers sets them: tojson keeps key
// order and non-ASCII text and honours indent, tools is none when there are
// none, kwargs reach the template, strftime_now reports Input.Now.
func TestJinjaVariables(t *testing.T) {
	src := `{{ messages[0]|tojson }}|{{ messages[0].tool_calls[0].function.arguments|tojson(indent=2) }}|` +
		`{{ tools is none }}|{{ documents is none }}|{{ enable_thinking }}|{{ strftime_now('%d %b %Y, %-d/%m/%y %A %j') }}|{{ bos_token }}{{ eos_token }}|{{ add_generation_prompt }}` +
		`{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}`
	j, err := CompileJinja(src)
	if err != nil {
		t.Fatal(err)
	}
	msgs := json.RawMessage(`[{"role":"assistant","content":"Zürich ☀","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{\"z\": 1, \"a\": [1.5, \"é\"]}"}}]}]`)
	in := Input{Messages: msgs, Kwargs: map[string]any{"enable_thinking": false}, Now: time.Date(2025, 3, 4, 15, 0, 0, 0, time.UTC),
		BOS: "<s>", EOS: "</s>", AddGenerationPrompt: true, DecodeArguments: true}
	got, err := j.Render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role": "assistant", "content": "Zürich ☀", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": [1.5, "é"]}}}]}|` +
		"{\n  \"z\": 1,\n  \"a\": [\n    1.5,\n    \"é\"\n  ]\n}|True|True|False|04 Mar 2025, 4/03/25 Tuesday 063|<s></s>|True02"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Without DecodeArguments the arguments stay the string they were given.
	in.DecodeArguments = false
	got, _ = j.Render(context.Background(), in)
	if !strings.Contains(got, `"arguments": "{\"z\": 1, \"a\": [1.5, \"é\"]}"`) {
		t.Errorf("arguments as given: %s", got)
	}
}

// A compiled template renders concurrently, each rendering with its own
// variables.
func TestJinjaConcurrent(t *testing.T) {
	j, err := CompileJinja(`{% for m in messages %}{{ m.content }};{% endfor %}{{ strftime_now('%Y') }}`)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			year := 2000 + i
			msgs, _ := MessagesJSON([]Message{{Role: RoleUser, Content: strings.Repeat("x", i)}})
			got, err := j.Render(context.Background(), Input{Messages: msgs, Now: time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)})
			if want := strings.Repeat("x", i) + ";" + time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006"); err != nil || got != want {
				errs <- errors.New(got + " != " + want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A rendering that outlives its context returns ErrRenderTimeout.
func TestJinjaDeadline(t *testing.T) {
	j, err := CompileJinja(`{% for i in range(3000000) %}{% if i == 2999999 %}done{% endif %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.Render(ctx, Input{Messages: json.RawMessage(`[]`)}); !errors.Is(err, ErrRenderTimeout) {
		t.Errorf("cancelled context: %v", err)
	}
	// Three million loop steps take far longer than a millisecond.
	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := j.Render(ctx, Input{Messages: json.RawMessage(`[]`)}); !errors.Is(err, ErrRenderTimeout) {
		t.Errorf("deadline: %v", err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("Render returned %v after its deadline of 1ms", d)
	}
}

// Day keeps the date and drops the time of day, so prompts rendered during
// one day print the same strftime_now text.
func TestDay(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	a, b := time.Date(2025, 3, 14, 0, 0, 1, 0, loc), time.Date(2025, 3, 14, 23, 59, 59, 0, loc)
	if Day(a) != Day(b) || Day(a).Day() != 14 || Day(a).Hour() != 0 {
		t.Errorf("Day(%v) = %v, Day(%v) = %v", a, Day(a), b, Day(b))
	}
	if Day(b.Add(time.Second)) == Day(b) {
		t.Error("the next day has the same Day")
	}
}

// TestTypedContent: a template that reads the system message only as text
// parts (the GGUF files of Gemma 3 1B) gets string contents as parts, so the
// system text reaches the prompt; a template that prints string contents
// keeps getting strings.
func TestTypedContent(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(conformanceDir, "templates", "google-gemma-3-1b-it.gguf.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := json.RawMessage(`[{"role":"system","content":"Be brief."},{"role":"user","content":"Lights on?"}]`)
	for _, c := range []struct {
		name, src, want string
	}{
		{"gemma3 1b gguf", string(src), "<bos><start_of_turn>user\nBe brief.\n\nLights on?<end_of_turn>\n<start_of_turn>model\n"},
		{"plain", "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}", "[system:Be brief.][user:Lights on?]"},
		{"drops the system message", "{% for m in messages %}{% if m.role != 'system' %}[{{ m.content }}]{% endif %}{% endfor %}", "[Lights on?]"},
	} {
		j, err := CompileJinja(c.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.Render(context.Background(), Input{Messages: msgs, AddGenerationPrompt: true, BOS: "<bos>"})
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

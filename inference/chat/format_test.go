package chat

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ChooseFormat takes Jinja text, a .jinja file or a family name, in that
// order, else the model's template; none at all is an error naming the ways.
func TestChooseFormat(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.jinja")
	if err := os.WriteFile(file, []byte("F{{ messages|length }}"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := Input{Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`), AddGenerationPrompt: true}
	for _, c := range []struct{ override, model, want, origin string }{
		{"", "M{{ messages[0].content }}", "Mhi", "the model's tokenizer.chat_template"},
		{"J{{ messages[0].role }}", "M", "Juser", "Jinja text"},
		{file, "M", "F1", "file t.jinja"},
		{"chatml", "M", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "family chatml"},
	} {
		f, err := ChooseFormat(c.override, c.model)
		if err != nil {
			t.Fatalf("%q: %v", c.override, err)
		}
		got, err := f.Render(context.Background(), in)
		if err != nil || got != c.want || f.Origin != c.origin {
			t.Errorf("%q: %q (%s), %v; want %q (%s)", c.override, got, f.Origin, err, c.want, c.origin)
		}
	}
	if _, err := ChooseFormat("", " "); !errors.Is(err, ErrUnknownTemplate) || !strings.Contains(err.Error(), "llama3.1") {
		t.Errorf("no template: %v", err)
	}
	if _, err := ChooseFormat("nonsense", "M"); !errors.Is(err, ErrUnknownTemplate) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := ChooseFormat(filepath.Join(t.TempDir(), "missing.jinja"), ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ChooseFormat("{% if %}", ""); !errors.Is(err, ErrTemplate) {
		t.Errorf("bad Jinja: %v", err)
	}
}

// A family renders typed content from the messages' JSON, text parts
// joined, and prints the Llama 3.1 date of Input.Now.
func TestFormatFamily(t *testing.T) {
	f, err := ChooseFormat("llama3.1", "")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Messages: json.RawMessage(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}]`),
		AddGenerationPrompt: true, Now: time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)}
	got, err := f.Render(context.Background(), in)
	want := "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 14 Mar 2025\n\n<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\na\nb<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if err != nil || got != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
}

// MessagesJSON writes what ParseMessages reads back; tool-call arguments
// given as a string of JSON become the object.
func TestMessagesJSON(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Content: "Zürich?"},
		{Role: RoleAssistant, Reasoning: "look it up", ToolCalls: []ToolCall{{ID: "c1", Name: "w", Arguments: json.RawMessage(`"{\"city\":\"Zürich\"}"`)}}},
		{Role: RoleTool, Content: "rain", ToolCallID: "c1", Name: "w"},
	}
	raw, err := MessagesJSON(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":"Zürich?"},{"role":"assistant","content":"","reasoning_content":"look it up","thinking":"look it up",` +
		`"tool_calls":[{"id":"c1","type":"function","function":{"name":"w","arguments":{"city": "Zürich"}}}]},` +
		`{"role":"tool","content":"rain","tool_call_id":"c1","name":"w"}]`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
	back, err := ParseMessages(raw)
	if err != nil || len(back) != 3 || back[1].ToolCalls[0].ID != "c1" || back[1].Reasoning != "look it up" ||
		back[2].ToolCallID != "c1" || string(back[1].ToolCalls[0].Arguments) != `{"city": "Zürich"}` {
		t.Errorf("parsed back %+v, %v", back, err)
	}
	if _, err := MessagesJSON([]Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "w", Arguments: json.RawMessage(`[1]`)}}}}); !errors.Is(err, ErrConversation) {
		t.Errorf("arguments not an object: %v", err)
	}
	tools, err := ToolsJSON([]Tool{{Name: "w", Parameters: json.RawMessage(`{"type":"object"}`)}})
	if err != nil || string(tools) != `[{"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}]` {
		t.Errorf("tools %s, %v", tools, err)
	}
	parsed, err := ParseTools(json.RawMessage(`[{"type":"function","function":{"name":"a"}},{"name":"b","description":"d"}]`))
	if err != nil || len(parsed) != 2 || parsed[0].Name != "a" || parsed[1].Name != "b" || parsed[1].Description != "d" {
		t.Errorf("ParseTools: %+v, %v", parsed, err)
	}
}

// strftime writes Python's (glibc's) directives.
func TestStrftime(t *testing.T) {
	tm := time.Date(2024, 7, 5, 14, 3, 9, 0, time.UTC)
	for format, want := range map[string]string{
		"%d %b %Y":          "05 Jul 2024",
		"%Y-%m-%d":          "2024-07-05",
		"%-d %B %y, %A %a":  "5 July 24, Friday Fri",
		"%H:%M:%S %I%p %j":  "14:03:09 02PM 187",
		"%e|%-m|%%|%Q|end%": " 5|7|%|%Q|end%",
	} {
		if got := strftime(tm, format); got != want {
			t.Errorf("strftime(%q) = %q, want %q", format, got, want)
		}
	}
}

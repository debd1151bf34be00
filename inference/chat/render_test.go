package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// expected is testdata/expected.json, written by testdata/gen_expected.py:
// the prompts the published templates in testdata/templates produce, under
// Jinja2 configured as transformers configures it.
type expected struct {
	Conversations map[string][]struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"conversations"`
	Tools []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Cases []refCase `json:"cases"`
}

// refCase is one rendering of expected.json.
type refCase struct {
	Template     string `json:"template"`
	Conversation string `json:"conversation"`
	AddGen       bool   `json:"add_generation_prompt"`
	Tools        bool   `json:"tools"`
	BOS          string `json:"bos"`
	EOS          string `json:"eos"`
	Date         string `json:"date"`
	Output       string `json:"output"`
}

func loadExpected(t *testing.T) *expected {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Cases) == 0 {
		t.Fatal("expected.json has no cases")
	}
	return &e
}

// conversation returns a conversation of expected.json as Messages.
func (e *expected) conversation(t *testing.T, name string) []Message {
	t.Helper()
	conv, ok := e.Conversations[name]
	if !ok {
		t.Fatalf("no conversation %q", name)
	}
	msgs := make([]Message, len(conv))
	for i, m := range conv {
		msgs[i] = Message{Role: m.Role, Content: m.Content}
		for _, c := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, ToolCall{Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return msgs
}

func (e *expected) tools() []Tool {
	var tools []Tool
	for _, tool := range e.Tools {
		tools = append(tools, Tool{Name: tool.Function.Name, Description: tool.Function.Description, Parameters: tool.Function.Parameters})
	}
	return tools
}

func readTemplate(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "templates", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// TestRenderMatchesReference renders each fixed conversation with the
// template Detect picks for each published template and compares it with
// the template's own output, less the leading BOS the tokenizer adds.
func TestRenderMatchesReference(t *testing.T) {
	e := loadExpected(t)
	families := map[Family]bool{}
	for _, c := range e.Cases {
		name := c.Template + "/" + c.Conversation
		src := readTemplate(t, c.Template)
		tmpl, err := Detect(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		families[tmpl.Family] = true
		var ok bool
		tmpl.BOS, tmpl.EOS, tmpl.Date = c.BOS, c.EOS, c.Date
		var tools []Tool
		if c.Tools {
			tools = e.tools()
		}
		got, err := tmpl.RenderTools(e.conversation(t, c.Conversation), tools, c.AddGen)
		if err != nil {
			t.Errorf("%s (generation prompt %v): %v", name, c.AddGen, err)
			continue
		}
		want := c.Output
		if strings.Contains(src, "bos_token") { // the BOS the template writes first
			if want, ok = strings.CutPrefix(want, c.BOS); !ok {
				t.Fatalf("%s: the output does not start with BOS %q", name, c.BOS)
			}
		}
		if got != want {
			t.Errorf("%s (generation prompt %v, tools %v):\n got %q\nwant %q", name, c.AddGen, c.Tools, got, want)
		}
	}
	for _, f := range []Family{ChatML, Zephyr, Llama2, Llama3, Llama31, Phi3} {
		if !families[f] {
			t.Errorf("no reference case for family %v", f)
		}
	}
}

// TestRenderBasic spells out the acceptance conversation (system, user,
// assistant, user) for each family, as the published templates render it.
func TestRenderBasic(t *testing.T) {
	msgs := []Message{
		{Role: RoleSystem, Content: "You are a helpful assistant"},
		{Role: RoleUser, Content: "Hello"},
		{Role: RoleAssistant, Content: "Hi there"},
		{Role: RoleUser, Content: "Who are you"},
	}
	want := map[string]string{
		"chatml": "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n" +
			"<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n",
		"zephyr": "<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n<|assistant|>\nHi there</s>\n" +
			"<|user|>\nWho are you</s>\n<|assistant|>\n",
		"llama2": "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s><s>[INST] Who are you [/INST]",
		"llama3": "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		"llama3.1": "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" +
			"You are a helpful assistant<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		"phi3": "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n" +
			"<|user|>\nWho are you<|end|>\n<|assistant|>\n",
	}
	for _, name := range Names() {
		tmpl, err := ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render(msgs, true)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if got != want[name] {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want[name])
		}
	}
}

// TestRenderGenericTools checks the tool convention of families without one
// of their own: the ChatML block in the system message, calls in <tool_call>
// tags, results in a user turn.
func TestRenderGenericTools(t *testing.T) {
	tools := []Tool{{Name: "now", Description: "The time.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
	msgs := []Message{
		{Role: RoleUser, Content: "Time?"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "now", Arguments: json.RawMessage(`"{\"tz\":\"UTC\"}"`)}}},
		{Role: RoleTool, Content: "12:00"},
	}
	block := "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
		`{"type": "function", "function": {"name": "now", "description": "The time.", "parameters": {"type": "object", "properties": {}}}}` +
		"\n</tools>\n\nFor each function call, return a json object with function name and arguments within " +
		"<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
	call := "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>"
	want := map[string]string{
		"zephyr": "<|system|>\n" + block + "</s>\n<|user|>\nTime?</s>\n<|assistant|>\n" + call + "</s>\n" +
			"<|user|>\n<tool_response>\n12:00\n</tool_response></s>\n<|assistant|>\n",
		"llama2": "[INST] <<SYS>>\n" + block + "\n<</SYS>>\n\nTime? [/INST] " + call + " </s><s>[INST] <tool_response>\n12:00\n</tool_response> [/INST]",
		"phi3": "<|system|>\n" + block + "<|end|>\n<|user|>\nTime?<|end|>\n<|assistant|>\n" + call + "<|end|>\n" +
			"<|user|>\n<tool_response>\n12:00\n</tool_response><|end|>\n<|assistant|>\n",
	}
	for name, w := range want {
		tmpl, err := ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.RenderTools(msgs, tools, true)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if got != w {
			t.Errorf("%s:\n got %q\nwant %q", name, got, w)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	sys := Message{Role: RoleSystem, Content: "s"}
	user := Message{Role: RoleUser, Content: "u"}
	asst := Message{Role: RoleAssistant, Content: "a"}
	call := func(args string) Message {
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(args)}}}
	}
	cases := []struct {
		family string
		msgs   []Message
		tools  []Tool
		addGen bool
		want   string // in the error text
	}{
		{"chatml", nil, nil, true, "no messages"},
		{"chatml", []Message{{Role: "bot", Content: "x"}}, nil, true, `role "bot"`},
		{"phi3", []Message{{Role: RoleUser, ToolCalls: []ToolCall{{Name: "f"}}}}, nil, true, "only assistant"},
		{"zephyr", []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{{}}}}, nil, true, "without a name"},
		{"chatml", []Message{user, call(`[1]`)}, nil, true, "not a JSON object"},
		{"chatml", []Message{user, call(`{"a":`)}, nil, true, "arguments"},
		{"chatml", []Message{user}, []Tool{{Name: "f", Parameters: json.RawMessage(`{`)}}, true, "parameters"},
		{"chatml", []Message{user}, []Tool{{Description: "no name"}}, true, "without a name"},
		{"llama2", []Message{sys}, nil, true, "system message alone"},
		{"llama2", []Message{user, sys}, nil, true, "only be the first"},
		{"llama2", []Message{asst, user}, nil, true, "alternate"},
		{"llama2", []Message{user, user}, nil, true, "alternate"},
		{"llama2", []Message{user, asst}, nil, true, "only follow a user"},
		{"llama3.1", []Message{sys, asst}, []Tool{{Name: "f"}}, true, "first user message"},
		{"llama3.1", []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "f"}, {Name: "g"}}}}, nil, true, "2 tool calls"},
	}
	for _, c := range cases {
		tmpl, err := ByName(c.family)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.RenderTools(c.msgs, c.tools, c.addGen)
		if !errors.Is(err, ErrConversation) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: got %q, %v; want an ErrConversation saying %q", c.family, c.msgs, got, err, c.want)
		}
	}
	// What the family can express renders: llama2 without a generation
	// prompt after an assistant turn, a system message on its own elsewhere.
	for _, c := range []struct {
		family string
		msgs   []Message
		addGen bool
	}{{"llama2", []Message{user, asst}, false}, {"chatml", []Message{sys}, true}, {"llama3.1", []Message{user, asst, sys}, true}} {
		tmpl, _ := ByName(c.family)
		if _, err := tmpl.Render(c.msgs, c.addGen); err != nil {
			t.Errorf("%s %v: %v", c.family, c.msgs, err)
		}
	}
	if _, err := (Template{}).Render([]Message{user}, true); !errors.Is(err, ErrUnknownTemplate) {
		t.Errorf("zero Template: got %v, want ErrUnknownTemplate", err)
	}
}

// TestRenderDefaultsAndTokens checks the adjustable fields: the default
// system prompt, the BOS/EOS texts and the date.
func TestRenderDefaultsAndTokens(t *testing.T) {
	user := []Message{{Role: RoleUser, Content: "Hi"}}
	check := func(tmpl Template, msgs []Message, addGen bool, want string) {
		t.Helper()
		got, err := tmpl.Render(msgs, addGen)
		if err != nil || got != want {
			t.Errorf("%v: got %q, %v; want %q", tmpl, got, err, want)
		}
	}
	check(Template{Family: ChatML, DefaultSystem: "Be nice."}, user, true,
		"<|im_start|>system\nBe nice.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
	check(Template{Family: Zephyr, EOS: "<|endoftext|>"}, user, false, "<|user|>\nHi<|endoftext|>\n")
	check(Template{Family: Phi3, EOS: "<|endoftext|>"}, user, false, "<|user|>\nHi<|end|>\n<|endoftext|>")
	check(Template{Family: Phi3}, append([]Message{{Role: RoleSystem}}, user...), true, "<|user|>\nHi<|end|>\n<|assistant|>\n")
	check(Template{Family: Llama2, BOS: "<BOS>", EOS: "<EOS>"},
		[]Message{{Role: RoleUser, Content: " a "}, {Role: RoleAssistant, Content: "b"}, {Role: RoleUser, Content: "c"}}, true,
		"[INST] a [/INST] b <EOS><BOS>[INST] c [/INST]")
	check(Template{Family: Llama31, Date: "02 Jan 2026"}, user, false,
		"<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 02 Jan 2026\n\n<|eot_id|>"+
			"<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>")
}

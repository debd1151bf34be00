package daemon

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/inference/chat/toolcall"
	"github.com/edgellm/edgellm/inference/tokenizer"
)

func TestTemplateSyntax(t *testing.T) {
	family := func(name string) promptTemplate {
		tm, err := chat.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		return chatTemplate{f: &chat.Format{Family: tm}}
	}
	jinja := func(src string) promptTemplate {
		j, err := chat.CompileJinja(src)
		if err != nil {
			t.Fatal(err)
		}
		return chatTemplate{f: &chat.Format{Jinja: j}}
	}
	for _, c := range []struct {
		name string
		tmpl promptTemplate
		want toolcall.Syntax
	}{
		{"chatml", family("chatml"), toolcall.Hermes},
		{"phi3", family("phi3"), toolcall.Hermes},
		{"llama3.1", family("llama3.1"), toolcall.Llama3JSON},
		{"LFM2 Jinja", jinja(`{{- "<|tool_call_start|>[" -}}`), toolcall.LFM2Pythonic},
		{"Jinja without markers", jinja(`{{ messages[0]['content'] }}`), toolcall.JSON},
		{"none", nil, toolcall.JSON},
	} {
		if got := templateSyntax(c.tmpl); got != c.want {
			t.Errorf("%s: templateSyntax = %v, want %v", c.name, got, c.want)
		}
	}
	if got := requestSyntax("llama3.1"); got != toolcall.Llama3JSON {
		t.Errorf("requestSyntax(llama3.1) = %v", got)
	}
	if got := requestSyntax(`{{ '[TOOL_CALLS]' }}`); got != toolcall.Mistral {
		t.Errorf("requestSyntax(Mistral Jinja) = %v", got)
	}
}

func TestToolCalls(t *testing.T) {
	tools := []api.Tool{{Type: "function", Function: api.ToolFunction{Name: "light"}},
		{Type: "function", Function: api.ToolFunction{Name: "fan"}}}
	for _, c := range []struct {
		syn     toolcall.Syntax
		text    string
		names   []string
		content string // the text before the calls
	}{
		{toolcall.Hermes, "Sure, the light.\n<tool_call>\n{\"name\": \"light\", \"arguments\": {\"on\":true}}\n</tool_call>", []string{"light"}, "Sure, the light."},
		{toolcall.JSON, `{"name":"light","arguments":{"on":true}}`, []string{"light"}, ""},
		{toolcall.Hermes, "<tool_call>\n{\"name\": \"light\", \"arguments\": {\"on\":true}}\n</tool_call>\n<tool_call>\n{\"name\": \"fan\", \"arguments\": {\"on\":true}}\n</tool_call>", []string{"light", "fan"}, ""},
		{toolcall.Llama3JSON, `{"name":"light","parameters":{"on":true}}`, []string{"light"}, ""},
		{toolcall.LFM2Pythonic, `<|tool_call_start|>[light(on=True), fan(on=True)]<|tool_call_end|>`, []string{"light", "fan"}, ""},
		{toolcall.JSON, `{"name":"heater","arguments":{}}`, nil, `{"name":"heater","arguments":{}}`},
		{toolcall.JSON, `{"name":"light","arguments":"on"}`, nil, `{"name":"light","arguments":"on"}`},
		{toolcall.Hermes, `The light is on.`, nil, "The light is on."},
		{toolcall.JSON, `{"name":"light","arguments":{"on":tru`, nil, `{"name":"light","arguments":{"on":tru`},
	} {
		calls, content := toolCalls(c.syn, c.text, tools)
		if content != c.content {
			t.Errorf("%v: toolCalls(%q) content %q, want %q", c.syn, c.text, content, c.content)
		}
		if len(calls) != len(c.names) {
			t.Errorf("%v: toolCalls(%q) = %+v, want %d calls", c.syn, c.text, calls, len(c.names))
			continue
		}
		ids := map[string]bool{}
		for i, call := range calls {
			if call.Name != c.names[i] || string(call.Arguments) != `{"on":true}` || !strings.HasPrefix(call.ID, "call_") || ids[call.ID] {
				t.Errorf("%v: call %d of %q: %+v", c.syn, i, c.text, call)
			}
			ids[call.ID] = true
		}
	}
}

// A job's constraint follows the syntax it is compiled for: a required
// call in Hermes begins with <tool_call>, in Llama 3.1's JSON with "{".
func TestJobConstraintSyntax(t *testing.T) {
	job := Job{Tools: []api.Tool{{Type: "function", Function: api.ToolFunction{Name: "light",
		Parameters: json.RawMessage(`{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}`)}}},
		ToolChoice: &api.ToolChoice{Mode: api.ToolChoiceRequired}, Sampling: Sampling{TopP: DefaultTopP, RepeatPenalty: DefaultRepeatPenalty}}
	if err := checkJob(&job); err != nil {
		t.Fatal(err)
	}
	if job.constraint.syntax != toolcall.Hermes || job.constraint.start != nil {
		t.Fatalf("checkJob without a template: syntax %v, start set %v", job.constraint.syntax, job.constraint.start != nil)
	}
	job.ChatTemplate = "llama3.1"
	if err := checkJob(&job); err != nil {
		t.Fatal(err)
	}
	if job.constraint.syntax != toolcall.Llama3JSON {
		t.Fatalf("checkJob with llama3.1: syntax %v", job.constraint.syntax)
	}
	job.ToolChoice = nil // auto: constrained from the trigger on
	c, err := jobConstraint(job, toolcall.LFM2Pythonic)
	if err != nil {
		t.Fatal(err)
	}
	if c.start == nil || c.start([]byte("Sure.<|tool_call_start|>")) != 24 {
		t.Fatalf("auto LFM2 constraint: start %v", c.start != nil)
	}
	bad := job
	bad.Tools = []api.Tool{{Type: "function", Function: api.ToolFunction{Name: "f",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a-b":{"type":"string"}}}`)}}}
	if _, err := jobConstraint(bad, toolcall.LFM2Pythonic); err == nil || !strings.Contains(err.Error(), "a-b") {
		t.Errorf("a property no Python call can name: error %v", err)
	}
}

// The marks that a vocabulary makes control tokens are written into the
// output; user-defined and absent ones need not be.
func TestMarkTokens(t *testing.T) {
	v := tokenizer.NewVocab(tokenizer.ModelSPM, []string{"<unk>", "a", "[TOOL_CALLS]", "<|tool_call_start|>", "<|tool_call_end|>", "<tool_call>"})
	v.Types = []tokenizer.TokenType{tokenizer.TypeUnknown, tokenizer.TypeNormal, tokenizer.TypeControl,
		tokenizer.TypeControl, tokenizer.TypeControl, tokenizer.TypeUserDefined}
	v.UNK = 0
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		syn  toolcall.Syntax
		want []int32
	}{
		{toolcall.Mistral, []int32{2}}, {toolcall.LFM2Pythonic, []int32{3, 4}}, {toolcall.Hermes, nil},
		{toolcall.JSON, nil}, {toolcall.FunctionGemma, nil},
	} {
		if got := markTokens(tok, c.syn); !slices.Equal(got, c.want) {
			t.Errorf("%v: markTokens = %v, want %v", c.syn, got, c.want)
		}
	}
}

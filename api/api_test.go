package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	n, temp, topP := 0, 6.0, 0.5
	for _, tc := range []struct {
		name  string
		req   Request
		field string // "" = valid
		msg   string
	}{
		{"prompt", Request{Prompt: "hi", TopP: &topP}, "", ""},
		{"no prompt", Request{}, "prompt", "give prompt (a string) or messages"},
		{"both", Request{Prompt: "a", Messages: []Message{{Role: RoleUser, Content: "b"}}}, "messages", "not both"},
		{"max_tokens 0", Request{Prompt: "a", MaxTokens: &n}, "max_tokens", "between 1 and 100"},
		{"hot", Request{Prompt: "a", Temperature: &temp}, "temperature", "between 0 and 5"},
		{"repeat_penalty 0", Request{Prompt: "a", RepeatPenalty: new(0.0)}, "repeat_penalty", "in (0, 10]"},
		{"empty stop", Request{Prompt: "a", Stop: []string{""}}, "stop", "stop[0] must be 1 to 256 bytes"},
		{"schema not object", Request{Prompt: "a", Schema: json.RawMessage(`[1]`)}, "schema", "must be a JSON Schema object"},
		{"last turn assistant", Request{Messages: []Message{{Role: RoleUser, Content: "a"}, {Role: RoleAssistant, Content: "b"}}}, "messages", "last message must be from user or tool"},
		{"tool name", Request{Prompt: "a", Tools: []Tool{{Type: "function", Function: ToolFunction{Name: "a b"}}}}, "tools", "use only letters"},
		{"required without tools", Request{Prompt: "a", ToolChoice: &ToolChoice{Mode: ToolChoiceRequired}}, "tool_choice", "needs tools"},
		{"blank template", Request{Prompt: "a", ChatTemplate: " "}, "chat_template", "must not be blank"},
		{"raw", Request{Prompt: "a", Raw: true}, "", ""},
		{"raw messages", Request{Messages: []Message{{Role: RoleUser, Content: "b"}}, Raw: true}, "raw", "not messages"},
		{"raw tools", Request{Prompt: "a", Raw: true, Tools: []Tool{{Type: "function", Function: ToolFunction{Name: "f"}}}}, "raw", "no template to present tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(Limits{MaxTokens: 100})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeBadRequest || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("Validate = %#v, want bad_request on %q containing %q", err, tc.field, tc.msg)
			}
			if want := fmt.Sprintf("field %q: ", tc.field); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error text %q does not start with %q", err, want)
			}
		})
	}
}

func TestValidateSchemaImpliesJSON(t *testing.T) {
	r := Request{Prompt: "a", Schema: json.RawMessage(`{"type":"object"}`)}
	if err := r.Validate(Limits{}); err != nil || !r.JSON {
		t.Fatalf("Validate = %v, JSON = %v; want nil, true", err, r.JSON)
	}
}

func TestErrorAnswer(t *testing.T) {
	wrapped := fmt.Errorf("request: %w", BadField("top_p", "must be in (0, 1], got 2"))
	a := ErrorAnswer(CodeInternal, wrapped)
	if a.Error.Code != CodeBadRequest || a.Error.Field != "top_p" || a.Error.Message != `request: field "top_p": must be in (0, 1], got 2` || a.FinishReason != FinishError {
		t.Errorf("ErrorAnswer of a wrapped *Error = %+v %+v", a, a.Error)
	}
	for code, finish := range map[string]string{CodeCancelled: FinishCancelled, CodeTimeout: FinishTimeout, CodeBusy: FinishError, CodeUnavailable: FinishError} {
		if a := ErrorAnswer(code, errors.New("x")); a.Error.Code != code || a.FinishReason != finish || a.Error.Message != "x" {
			t.Errorf("ErrorAnswer(%q) = %+v %+v", code, a, a.Error)
		}
	}
	if a := ErrorAnswer("", errors.New("boom")); a.Error.Code != CodeInternal {
		t.Errorf("ErrorAnswer without a code = %+v", a.Error)
	}
}

func TestToolChoiceJSON(t *testing.T) {
	for in, want := range map[string]ToolChoice{
		`"auto"`: {Mode: ToolChoiceAuto}, `"required"`: {Mode: ToolChoiceRequired},
		`{"type":"function","function":{"name":"f"}}`: {Mode: ToolChoiceFunction, Function: "f"},
	} {
		var tc ToolChoice
		if err := json.Unmarshal([]byte(in), &tc); err != nil || tc != want {
			t.Errorf("%s: got %+v, %v", in, tc, err)
		}
		out, err := json.Marshal(tc)
		var back ToolChoice
		if err != nil || json.Unmarshal(out, &back) != nil || back != want {
			t.Errorf("%+v marshals to %s (%v), which reads back as %+v", tc, out, err, back)
		}
	}
	var tc ToolChoice
	if err := json.Unmarshal([]byte(`"sometimes"`), &tc); err == nil {
		t.Error(`"sometimes" accepted`)
	}
}

func TestToolCallShapes(t *testing.T) {
	var a, b ToolCall
	if err := json.Unmarshal([]byte(`{"id":"c1","name":"f","arguments":{"x":1}}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}`), &b); err != nil {
		t.Fatal(err)
	}
	if a.ID != "c1" || a.Name != "f" || string(a.Arguments) != `{"x":1}` || b.ID != "c1" || b.Name != "f" || string(b.Arguments) != `"{\"x\":1}"` {
		t.Errorf("answer shape %+v, OpenAI shape %+v", a, b)
	}
	if err := json.Unmarshal([]byte(`{"name":"f","function":{"name":"f"}}`), &a); err == nil {
		t.Error("a call in both shapes accepted")
	}
}

package ollama

import (
	"encoding/json"
	"testing"

	"github.com/edgellm/edgellm/api"
)

func TestName(t *testing.T) {
	names := []string{ // the backend's name, then the API's
		"tiny-test-f32", "tiny-test-f32:latest",
		"Qwen3 1.7B Instruct", "qwen3-1.7b-instruct:latest",
		"qwen2.5:0.5b", "qwen2.5:0.5b",
		"  (weird) -- name!! ", "weird-name:latest",
		"", "edgellm:latest",
	}
	for i := 0; i < len(names); i += 2 {
		m := api.ModelInfo{Name: names[i]}
		if got := Name(m); got != names[i+1] || !isLoaded(got, m) {
			t.Errorf("Name(%q) = %q, want %q (loaded: %v)", names[i], got, names[i+1], isLoaded(got, m))
		}
	}
	m := api.ModelInfo{Name: "tiny"}
	for name, want := range map[string]bool{"tiny": true, "TINY:latest": true, "tiny:q8": false, "llama3.2:latest": false} {
		if isLoaded(name, m) != want {
			t.Errorf("isLoaded(%q) = %v", name, !want)
		}
	}
}

// Ollama's calls have no ids and its tool messages name no call: each tool
// message answers the first open call (of its tool_name, when given).
func TestChatToolIDs(t *testing.T) {
	var cr chatRequest
	if err := json.Unmarshal([]byte(`{"messages":[
		{"role":"user","content":"lights"},
		{"role":"assistant","content":"","tool_calls":[
			{"function":{"name":"on","arguments":{"room":"hall"}}},
			{"function":{"name":"off","arguments":{"room":"den"}}}]},
		{"role":"tool","tool_name":"off","content":"done off"},
		{"role":"TOOL","content":"done on"}],
		"tools":[{"function":{"name":"on"}},{"type":"function","function":{"name":"off"}}],
		"format":"json","think":"low","keep_alive":-1,"stream":false,
		"options":{"num_ctx":99999,"num_predict":-1,"repeat_penalty":1.2,"stop":"x"}}`), &cr); err != nil {
		t.Fatal(err)
	}
	req, err := cr.toRequest()
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Validate(api.Limits{MaxTokens: 100}); err != nil {
		t.Fatal(err)
	}
	calls := req.Messages[1].ToolCalls
	if len(calls) != 2 || calls[0].ID == "" || calls[0].ID == calls[1].ID || string(calls[0].Arguments) != `{"room":"hall"}` {
		t.Fatalf("calls %+v", calls)
	}
	if m := req.Messages[2]; m.ToolCallID != calls[1].ID || m.Name != "off" {
		t.Errorf("the result named off answers %+v", m)
	}
	if m := req.Messages[3]; m.Role != api.RoleTool || m.ToolCallID != calls[0].ID || m.Name != "on" {
		t.Errorf("the unnamed result answers %+v", m)
	}
	if req.Stream || req.Think == nil || !*req.Think || string(req.Schema) != `{"type":"object"}` || req.MaxTokens != nil ||
		*req.RepeatPenalty != 1.2 || len(req.Stop) != 1 || req.Tools[0].Type != "function" {
		t.Errorf("request %+v", req)
	}
}

func TestArgumentObject(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`: `{"a":1}`, `"{\"a\":1}"`: `{"a":1}`, ``: `{}`, `null`: `{}`, `"x"`: `{}`, `[1]`: `{}`,
	} {
		if got := string(argumentObject(json.RawMessage(in))); got != want {
			t.Errorf("argumentObject(%s) = %s, want %s", in, got, want)
		}
	}
}

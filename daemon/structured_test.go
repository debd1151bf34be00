package daemon

import (
	"testing"

	"github.com/edgellm/edgellm/mqtt"
)

func TestToolCallStart(t *testing.T) {
	for _, c := range []struct {
		out  string
		want int
	}{
		{"", -1}, {"Sure", -1}, {"I will <tool", -1}, {"ok <tool_call>", 14}, {"<tool_call>\n{", 11}, {"  {\"name\"", 2}, {"text {", -1},
	} {
		if got := toolCallStart([]byte(c.out)); got != c.want {
			t.Errorf("toolCallStart(%q) = %d, want %d", c.out, got, c.want)
		}
	}
}

func TestToolCallParse(t *testing.T) {
	tools := []mqtt.Tool{{Type: "function", Function: mqtt.ToolFunction{Name: "light"}}}
	for _, c := range []struct {
		text string
		ok   bool
	}{
		{`{"name":"light","arguments":{"on":true}}`, true},
		{"<tool_call>\n{\"name\": \"light\", \"arguments\": {\"on\":true}}\n</tool_call>", true},
		{`{"name":"light","parameters":{"on":true}}`, true}, // Llama 3.1
		{`{"name":"fan","arguments":{}}`, false},
		{`{"name":"light","arguments":"on"}`, false},
		{`The light is on.`, false},
		{`{"name":"light","arguments":{"on":tru`, false},
	} {
		call, ok := toolCall(c.text, tools)
		if ok != c.ok || ok && (call.Name != "light" || string(call.Arguments) != `{"on":true}`) {
			t.Errorf("toolCall(%q) = %+v, %v; want ok=%v", c.text, call, ok, c.ok)
		}
	}
}

package grammar

import (
	"encoding/json"
	"fmt"
)

// Tool is a function the model may call: its name and the JSON Schema of
// its arguments (empty for any object).
type Tool struct {
	Name       string
	Parameters json.RawMessage
}

// ToolCallSchema returns the JSON Schema of a call to one of tools:
//
//	{"anyOf": [{"type": "object",
//	            "properties": {"name": {"const": NAME}, "arguments": PARAMETERS},
//	            "required": ["name", "arguments"],
//	            "additionalProperties": false}, ...]}
//
// Compiled with [CompileSchema], it constrains decoding to
// {"name": <one of the names>, "arguments": <that tool's arguments>}.
func ToolCallSchema(tools []Tool) ([]byte, error) {
	if len(tools) == 0 {
		return nil, fmt.Errorf("grammar: no tools")
	}
	type object struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
		Addl       bool           `json:"additionalProperties"`
	}
	alts := make([]object, len(tools))
	for i, t := range tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		if !json.Valid(params) {
			return nil, fmt.Errorf("grammar: tool %q: parameters are not valid JSON", t.Name)
		}
		alts[i] = object{Type: "object",
			Properties: map[string]any{"name": map[string]string{"const": t.Name}, "arguments": params},
			Required:   []string{"name", "arguments"}}
	}
	return json.Marshal(map[string]any{"anyOf": alts})
}

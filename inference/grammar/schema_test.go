package grammar

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"string","pattern":"^a"}`, `#: unsupported keyword "pattern"`},
		{`{"type":"object","properties":{"a":{"type":"integer","minimum":0}}}`, `#/properties/a: minimum and maximum are supported together only`},
		{`{"type":"integer","minimum":0,"maximum":5000}`, `spans more than 1024 integers`},
		{`{"type":"integer","minimum":2.5,"maximum":2.7}`, `no integer lies between`},
		{`{"type":"number","minimum":0,"maximum":1}`, `keyword "maximum" does not apply to type number`},
		{`{"type":"integer","minimum":"0","maximum":1}`, `minimum must be a number`},
		{`{"oneOf":[{"type":"string"}]}`, `unsupported keyword "oneOf"`},
		{`{"$ref":"#/$defs/a"}`, `unsupported keyword "$ref"`},
		{`{"type":"array","items":{"type":"string","minLength":1}}`, `#/items: unsupported keyword "minLength"`},
		{`{"type":"object","anyOf":[{"required":["a"]}]}`, `anyOf together with "type"`},
		{`{"anyOf":[]}`, `anyOf must be a non-empty list`},
		{`{"type":"object","properties":{"a":{}},"required":["b"]}`, `required property "b" is not in properties`},
		{`{"type":"array","minItems":3,"maxItems":2}`, `maxItems 2 is below minItems 3`},
		{`{"type":"array","maxItems":-1}`, `maxItems must be a non-negative integer`},
		{`{"type":"string","maxLength":1.5}`, `maxLength must be a non-negative integer`},
		{`false`, `false allows no value`},
		{`{"properties":{"a":false}}`, `#/properties/a: false allows no value`},
		{`{"type":"text"}`, `unknown type "text"`},
		{`{"type":["string","string"]}`, `type "string" listed twice`},
		{`{"type":[]}`, `empty type list`},
		{`{"type":"string","minItems":1}`, `keyword "minItems" does not apply to type string`},
		{`{"maxLength":3,"items":{}}`, `keywords of types array and string without "type"`},
		{`{"enum":[]}`, `enum must be a non-empty list`},
		{`{"type":"integer","enum":["a",1.5]}`, `no enum or const value matches`},
		{`{"const":1,"enum":[1]}`, `enum together with const`},
		{`{"type":"array","items":[{"type":"string"}]}`, `items as a list (tuple) is not supported`},
		{`{"type":"object"} {}`, `data after the schema`},
		{`{"type":`, `grammar: schema:`},
		{`[]`, `want an object or a boolean`},
	} {
		_, err := CompileSchema([]byte(tc.schema), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.schema, err, tc.want)
		}
	}
}

func TestCompileTooManyProperties(t *testing.T) {
	props := map[string]any{}
	for i := range maxProps + 1 {
		props[string(rune('A'+i/26))+string(rune('a'+i%26))] = map[string]any{}
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	if _, err := CompileSchema(schema, Options{}); err == nil || !strings.Contains(err.Error(), "at most 64") {
		t.Errorf("error %v", err)
	}
	delete(props, "Aa")
	schema, _ = json.Marshal(map[string]any{"type": "object", "properties": props})
	if _, err := CompileSchema(schema, Options{}); err != nil {
		t.Errorf("64 properties: %v", err)
	}
}

// TestCompileAccepted checks schemas in the supported subset, annotations
// included, and the shortest value each one allows.
func TestCompileAccepted(t *testing.T) {
	for _, tc := range []struct {
		schema string
		minLen int32
	}{
		{`{}`, 1}, {`true`, 1},
		{`{"type":"object"}`, 2},
		{`{"title":"x","description":"y","$schema":"z","default":1,"examples":[],"format":"date-time","type":"string"}`, 2},
		{`{"type":"object","properties":{"ab":{"type":"string"},"c":{"type":"null"}},"required":["ab","c"]}`, len32(`{"ab":"","c":null}`)},
		{`{"type":"array","items":{"type":"integer"},"minItems":3}`, len32(`[0,0,0]`)},
		{`{"type":["integer","null"]}`, 1},
		{`{"enum":["abc",true,12]}`, 2},
		{`{"const":{"a":[1,2]}}`, len32(`{"a":[1,2]}`)},
		{`{"anyOf":[{"type":"boolean"},{"type":"array","minItems":1}]}`, 3},
		{`{"properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, len32(`{"a":0}`)},
		{`{"items":{"type":"string"},"maxItems":0}`, 2},
		{`{"type":"integer","minimum":-12.5,"maximum":-10}`, 3},
		{`{"minimum":7,"maximum":7}`, 1},
	} {
		g, err := CompileSchema([]byte(tc.schema), Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.schema, err)
			continue
		}
		if got := g.nodes[g.root].minLen; got != tc.minLen {
			t.Errorf("%s: shortest value %d bytes, want %d", tc.schema, got, tc.minLen)
		}
	}
}

func len32(s string) int32 { return int32(len(s)) }

func TestToolCallSchema(t *testing.T) {
	s, err := ToolCallSchema([]Tool{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"anyOf":[{"type":"object","properties":{"arguments":{"type":"object"},"name":{"const":"a"}},"required":["name","arguments"],"additionalProperties":false},` +
		`{"type":"object","properties":{"arguments":{"type":"object"},"name":{"const":"b"}},"required":["name","arguments"],"additionalProperties":false}]}`
	if string(s) != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
	if _, err := ToolCallSchema(nil); err == nil {
		t.Error("no tools: no error")
	}
	if _, err := ToolCallSchema([]Tool{{Name: "a", Parameters: json.RawMessage(`{`)}}); err == nil {
		t.Error("bad parameters: no error")
	}
}

package grammar

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"string","pattern":"^a"}`, `#: unsupported keyword "pattern"`},
		{`{"type":"object","properties":{"a":{"type":"integer","multipleOf":2}}}`, `#/properties/a: unsupported keyword "multipleOf"`},
		{`{"oneOf":[{"type":"string"}]}`, `unsupported keyword "oneOf"`},
		{`{"$ref":"#/$defs/a"}`, `unsupported keyword "$ref"`},
		{`{"type":"array","items":{"type":"string","pattern":"a"}}`, `#/items: unsupported keyword "pattern"`},
		{`{"type":"string","minLength":3,"maxLength":2}`, `maxLength 2 is below minLength 3`},
		{`{"type":"string","minLength":-1}`, `minLength must be a non-negative integer`},
		{`{"type":"string","minimum":1}`, `keyword "minimum" does not apply to type string`},
		{`{"type":"integer","minLength":1}`, `keyword "minLength" does not apply to type integer`},
		{`{"type":"integer","minimum":5,"maximum":4}`, `#: no integer of at most 16 digits is within the bounds (minimum 5 maximum 4)`},
		{`{"type":"integer","minimum":-0.5,"maximum":-0.1}`, `no integer of at most 16 digits is within the bounds`},
		{`{"type":"integer","exclusiveMinimum":3,"exclusiveMaximum":4}`, `no integer of at most 16 digits is within the bounds`},
		{`{"type":"integer","minimum":3,"maximum":3,"exclusiveMaximum":true}`, `no integer of at most 16 digits is within the bounds`},
		{`{"type":"integer","minimum":10000000000000000}`, `no integer of at most 16 digits is within the bounds`},
		{`{"type":"integer","maximum":-1e300}`, `no integer of at most 16 digits is within the bounds`},
		{`{"type":"integer","minimum":"1"}`, `minimum must be a number, got "1"`},
		{`{"type":"integer","maximum":null}`, `maximum must be a number, got null`},
		{`{"type":"integer","exclusiveMinimum":true}`, `exclusiveMinimum as a boolean needs minimum`},
		{`{"type":"integer","exclusiveMaximum":false}`, `exclusiveMaximum as a boolean needs maximum`},
		{`{"type":"integer","minimum":1e99999}`, `minimum 1e99999 has an exponent beyond ±1000`},
		{`{"type":"integer","minimum":0,"enum":[-1,1.5,"1"]}`, `no enum or const value matches`},
		{`{"type":"number","minimum":1,"exclusiveMaximum":1}`, `#: no number of at most 16 digits before and 16 after the point is within the bounds (minimum 1 exclusiveMaximum 1)`},
		{`{"type":"number","exclusiveMinimum":0,"maximum":1e-17}`, `no number of at most 16 digits before and 16 after the point`},
		{`{"type":"number","minimum":1e16}`, `no number of at most 16 digits before and 16 after the point`},
		{`{"minimum":"0"}`, `minimum must be a number`},
		{`{"type":"number","maximum":1,"minimum":0,"enum":[2,-0.5]}`, `no enum or const value matches`},
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
		{`{"type":"string","minLength":3}`, 5},
		{`{"minLength":2,"maxLength":2}`, 4},
		{`{"type":"integer","minimum":100}`, 3},
		{`{"type":"integer","minimum":-100,"maximum":-10}`, 3},
		{`{"type":"integer","minimum":-7,"maximum":1000}`, 1},
		{`{"type":"integer","minimum":-7,"maximum":-7}`, 2},
		{`{"type":"integer","maximum":-1}`, 2},
		{`{"minimum":-1e300,"maximum":1e300,"type":"integer"}`, 1},
		{`{"type":["integer","string"],"minimum":1000,"minLength":1}`, 3},
		{`{"type":"integer","minimum":0,"enum":[-1,123,1.0,2e1]}`, 3},
		{`{"type":"integer","enum":[12345678901234567890]}`, 20}, // more digits than the grammar writes, as a literal
		{`{"type":"integer","exclusiveMaximum":12,"maximum":13,"enum":[13,12,-1234,1100]}`, 5},
		{`{"type":"integer","minimum":12,"exclusiveMinimum":true,"enum":[12,12.0,1e3,100.5]}`, 3},
		{`{"type":"string","minLength":2,"enum":["a","abc","xy"]}`, 4},
		{`{"type":"number","minimum":0,"maximum":1}`, 1},
		{`{"minimum":0.25,"maximum":1}`, 1},
		{`{"type":"number","minimum":0.25,"maximum":0.75}`, 3},
		{`{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":0.001}`, 6},
		{`{"type":"number","minimum":-12.5,"maximum":-12.5}`, 5},
		{`{"type":"number","maximum":-100}`, 4},
		{`{"type":"number","exclusiveMinimum":-1e300}`, 1},
		{`{"type":"number","minimum":0,"maximum":1,"enum":[2,0.123,1e-3]}`, 4},
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

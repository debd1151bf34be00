package toolcall

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Tools of the reference implementation's chat tests (llama.cpp
// tests/test-chat.cpp) and of the model cards quoted below, by name; their
// schemas do not matter to parsing.
var testToolNames = []string{"special_function", "special_function_with_opt", "get_time", "get_weather", "toggle",
	"set_nullable", "set_config", "Calendar.create_event", "python", "empty_args", "todo_list", "amount",
	"get_current_temperature", "get_temperature_date", "get_current_conditions", "get_current_weather"}

func testTools() []Tool {
	tools := make([]Tool, len(testToolNames))
	for i, n := range testToolNames {
		tools[i] = Tool{Name: n}
	}
	return tools
}

// wantCall is a call a parsing test expects: name and arguments (compared
// as JSON values).
type wantCall struct{ name, args string }

type parseCase struct {
	src     string // where the text comes from
	text    string
	content string
	calls   []wantCall
}

// parseCases are real outputs of each family's models, from their model
// cards and documentation and from the reference implementation's tests
// (llama.cpp tests/test-chat.cpp), with whitespace variants and several
// calls in one answer.
var parseCases = map[Syntax][]parseCase{
	Hermes: {
		{"test-chat.cpp, Hermes 2 Pro", "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>",
			"", []wantCall{{"special_function", `{"arg1":1}`}}},
		{"test-chat.cpp, Hermes 2 Pro with content", "Hello, world!\nWhat's up?<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>",
			"Hello, world!\nWhat's up?", []wantCall{{"special_function", `{"arg1":1}`}}},
		{"test-chat.cpp, Hermes 3 / Qwen 2.5 / Granite 4", "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>",
			"", []wantCall{{"special_function", `{"arg1":1}`}}},
		{"Qwen function-calling guide, parallel calls",
			"<tool_call>\n{\"name\": \"get_current_temperature\", \"arguments\": {\"location\": \"San Francisco, CA, USA\"}}\n</tool_call>\n" +
				"<tool_call>\n{\"name\": \"get_temperature_date\", \"arguments\": {\"location\": \"San Francisco, CA, USA\", \"date\": \"2024-10-01\"}}\n</tool_call>",
			"", []wantCall{{"get_current_temperature", `{"location":"San Francisco, CA, USA"}`},
				{"get_temperature_date", `{"location":"San Francisco, CA, USA","date":"2024-10-01"}`}}},
		{"whitespace variant, end mark cut", "  <tool_call>{ \"arguments\" : {\"city\":\"Paris\"} , \"name\":\"get_time\" }",
			"", []wantCall{{"get_time", `{"city":"Paris"}`}}},
		{"arguments as a JSON string", `<tool_call>{"name": "get_time", "arguments": "{\"city\": \"Oslo\"}"}</tool_call>`,
			"", []wantCall{{"get_time", `{"city":"Oslo"}`}}},
	},
	Llama3JSON: {
		{"Llama 3.1 model card (JSON tool calling)", `{"name": "get_current_conditions", "parameters": {"location": "San Francisco, CA", "unit": "Fahrenheit"}}`,
			"", []wantCall{{"get_current_conditions", `{"location":"San Francisco, CA","unit":"Fahrenheit"}`}}},
		{"whitespace variant, two calls", "\n{\"name\": \"get_time\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"toggle\", \"parameters\": {\"enabled\": true}}",
			"", []wantCall{{"get_time", `{"city":"Paris"}`}, {"toggle", `{"enabled":true}`}}},
		{"type function wrapper", `{"type": "function", "name": "get_time", "parameters": {}}`, "", []wantCall{{"get_time", `{}`}}},
	},
	JSON: {
		{"generic", `{"name": "get_time", "arguments": {"city": "Paris"}}`, "", []wantCall{{"get_time", `{"city":"Paris"}`}}},
		{"generic, one a line", "{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"empty_args\", \"arguments\": {}}",
			"", []wantCall{{"get_time", `{"city":"Paris"}`}, {"empty_args", `{}`}}},
		{"OpenAI-style list", `[{"function": {"name": "get_time", "arguments": "{\"city\":\"Rome\"}"}}]`, "", []wantCall{{"get_time", `{"city":"Rome"}`}}},
	},
	Mistral: {
		{"test-chat.cpp, Mistral Nemo", `[TOOL_CALLS][{"name": "special_function", "arguments": {"arg1": 1}, "id": "123456789"}]`,
			"", []wantCall{{"special_function", `{"arg1":1}`}}},
		{"two calls with content", "Checking.[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcdefghi\"},\n {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcdefghi\"}]",
			"Checking.", []wantCall{{"get_time", `{"city":"Paris"}`}, {"get_weather", `{"city":"Paris"}`}}},
	},
	MistralArgs: {
		{"test-chat.cpp, Magistral", `[TOOL_CALLS]special_function[ARGS]{"arg1":1}`, "", []wantCall{{"special_function", `{"arg1":1}`}}},
		{"test-chat.cpp, parallel", `[TOOL_CALLS]special_function[ARGS]{"arg1": 1}[TOOL_CALLS]special_function_with_opt[ARGS]{"arg1": 1, "arg2": 2}`,
			"", []wantCall{{"special_function", `{"arg1":1}`}, {"special_function_with_opt", `{"arg1":1,"arg2":2}`}}},
		{"test-chat.cpp, Mistral Small 3.2 with call ids", "[TOOL_CALLS]special_function[CALL_ID]000000001[ARGS]{\"arg1\": 1}[TOOL_CALLS]special_function_with_opt[CALL_ID]000000002[ARGS]{\"arg1\": 1, \"arg2\": 2}",
			"", []wantCall{{"special_function", `{"arg1":1}`}, {"special_function_with_opt", `{"arg1":1,"arg2":2}`}}},
		{"test-chat.cpp, Devstral with content", "Hello, world!\nWhat's up?[TOOL_CALLS]special_function[ARGS]{\"arg1\": 1}",
			"Hello, world!\nWhat's up?", []wantCall{{"special_function", `{"arg1":1}`}}},
	},
	Granite: {
		{"Granite 3.3 template's instructions: a JSON list after <|tool_call|>", `<|tool_call|>[{"arguments": {"location": "Boston, MA"}, "name": "get_current_weather"}]`,
			"", []wantCall{{"get_current_weather", `{"location":"Boston, MA"}`}}},
		{"two calls, whitespace", "<|tool_call|> [\n  {\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}},\n  {\"name\": \"get_time\", \"arguments\": {\"city\": \"Lima\"}}\n]",
			"", []wantCall{{"get_time", `{"city":"Paris"}`}, {"get_time", `{"city":"Lima"}`}}},
	},
	Phi4Mini: {
		{"test-chat.cpp, FireFunction v2", ` functools[{"name": "special_function", "arguments": {"arg1": 1}}]`, "", []wantCall{{"special_function", `{"arg1":1}`}}},
		{"two calls", `Sure. functools[{"name": "get_time", "arguments": {"city": "Paris"}}, {"name": "toggle", "arguments": {"enabled": false}}]`,
			"Sure.", []wantCall{{"get_time", `{"city":"Paris"}`}, {"toggle", `{"enabled":false}`}}},
	},
	LFM2Pythonic: {
		{"test-chat.cpp, LFM2", "<|tool_call_start|>[special_function(arg1=1)]<|tool_call_end|>", "", []wantCall{{"special_function", `{"arg1":1}`}}},
		{"test-chat.cpp, LFM2 string", "<|tool_call_start|>[get_time(city=\"XYZCITY\")]<|tool_call_end|>", "", []wantCall{{"get_time", `{"city":"XYZCITY"}`}}},
		{"test-chat.cpp, LFM2 True", "<|tool_call_start|>[toggle(enabled=True)]<|tool_call_end|>", "", []wantCall{{"toggle", `{"enabled":true}`}}},
		{"test-chat.cpp, LFM2 None", "<|tool_call_start|>[set_nullable(value=None)]<|tool_call_end|>", "", []wantCall{{"set_nullable", `{"value":null}`}}},
		{"test-chat.cpp, LFM2 nested", "<|tool_call_start|>[set_config(config={\"enabled\": True, \"count\": 3})]<|tool_call_end|>",
			"", []wantCall{{"set_config", `{"config":{"enabled":true,"count":3}}`}}},
		{"test-chat.cpp, LFM2 JSON literals", "<|tool_call_start|>[set_config(config={\"enabled\": true, \"note\": null})]<|tool_call_end|>",
			"", []wantCall{{"set_config", `{"config":{"enabled":true,"note":null}}`}}},
		{"test-chat.cpp, LFM2 dotted name", "<|tool_call_start|>[Calendar.create_event(title=\"demo\", participants=[\"Alice\", \"Bob\"], metadata={\"priority\": \"high\", \"reminder\": true})]<|tool_call_end|>",
			"", []wantCall{{"Calendar.create_event", `{"title":"demo","participants":["Alice","Bob"],"metadata":{"priority":"high","reminder":true}}`}}},
		{"test-chat.cpp, LFM2 code", "<|tool_call_start|>[python(code=\"def hello():\\n    print('hey')\")]<|tool_call_end|>",
			"", []wantCall{{"python", `{"code":"def hello():\n    print('hey')"}`}}},
		{"test-chat.cpp, LFM2 escapes", "<|tool_call_start|>[python(code=\"First line\\nSecond line\\tindented\")]<|tool_call_end|>",
			"", []wantCall{{"python", `{"code":"First line\nSecond line\tindented"}`}}},
		{"test-chat.cpp, LFM2 escaped quotes", "<|tool_call_start|>[python(code=\"print(\\\"hi\\\")\")]<|tool_call_end|>",
			"", []wantCall{{"python", `{"code":"print(\"hi\")"}`}}},
		{"test-chat.cpp, LFM2 content first", "Let me check the time.<|tool_call_start|>[get_time(city=\"Paris\")]<|tool_call_end|>",
			"Let me check the time.", []wantCall{{"get_time", `{"city":"Paris"}`}}},
		{"test-chat.cpp, LFM2 parallel", "<|tool_call_start|>[special_function(arg1=1), special_function_with_opt(arg1=1, arg2=2)]<|tool_call_end|>",
			"", []wantCall{{"special_function", `{"arg1":1}`}, {"special_function_with_opt", `{"arg1":1,"arg2":2}`}}},
		{"test-chat.cpp, LFM2 empty arguments", "<|tool_call_start|>[empty_args()]<|tool_call_end|>", "", []wantCall{{"empty_args", `{}`}}},
		{"test-chat.cpp, LFM2 markdown links stay content", "Use this format: [link text](url). Example: [Wikipedia](https://www.wikipedia.org).",
			"Use this format: [link text](url). Example: [Wikipedia](https://www.wikipedia.org).", nil},
		{"single quotes, two blocks, end mark cut", "<|tool_call_start|>[get_time(city='Oslo')]<|tool_call_end|>\n<|tool_call_start|>[toggle(enabled=False)]",
			"", []wantCall{{"get_time", `{"city":"Oslo"}`}, {"toggle", `{"enabled":false}`}}},
		{"unicode escapes", `<|tool_call_start|>[get_time(city="Z\u00fcrich \ud83d\ude00", )]<|tool_call_end|>`,
			"", []wantCall{{"get_time", `{"city":"Zürich 😀"}`}}},
	},
	FunctionGemma: {
		{"FunctionGemma model card", "<start_function_call>call:get_current_temperature{location:<escape>London<escape>}<end_function_call>",
			"", []wantCall{{"get_current_temperature", `{"location":"London"}`}}},
		// The next ones follow the reference's Gemma 4 cases (test-chat.cpp),
		// which use the same call:name{…} form with other string marks.
		{"numbers", "<start_function_call>call:special_function{arg1:42}<end_function_call>", "", []wantCall{{"special_function", `{"arg1":42}`}}},
		{"negative and float", "<start_function_call>call:amount{orig:-3.14}<end_function_call>", "", []wantCall{{"amount", `{"orig":-3.14}`}}},
		{"exponent", "<start_function_call>call:amount{orig:1.5e10}<end_function_call>", "", []wantCall{{"amount", `{"orig":1.5e10}`}}},
		{"booleans and null", "<start_function_call>call:toggle{enabled:false}<end_function_call><start_function_call>call:set_nullable{value:null}<end_function_call>",
			"", []wantCall{{"toggle", `{"enabled":false}`}, {"set_nullable", `{"value":null}`}}},
		{"list and object", "<start_function_call>call:todo_list{todos:[<escape>buy milk<escape>,<escape>walk dog<escape>]}<end_function_call>" +
			"<start_function_call>call:set_config{config:{theme:<escape>dark<escape>,count:3}}<end_function_call>",
			"", []wantCall{{"todo_list", `{"todos":["buy milk","walk dog"]}`}, {"set_config", `{"config":{"theme":"dark","count":3}}`}}},
		{"empty", "Sure.<start_function_call>call:empty_args{}<end_function_call>", "Sure.", []wantCall{{"empty_args", `{}`}}},
		{"string with quotes and braces", "<start_function_call>call:python{code:<escape>print(\"}{,:\")<escape>}", "", []wantCall{{"python", `{"code":"print(\"}{,:\")"}`}}},
	},
}

func TestParseRealOutputs(t *testing.T) {
	tools := testTools()
	for syn, cases := range parseCases {
		for _, c := range cases {
			got := syn.Parse(c.text, tools)
			if got.Content != c.content {
				t.Errorf("%v, %s: content %q, want %q", syn, c.src, got.Content, c.content)
			}
			if len(got.Calls) != len(c.calls) {
				t.Errorf("%v, %s: %d calls %+v, want %d", syn, c.src, len(got.Calls), got.Calls, len(c.calls))
				continue
			}
			for i, w := range c.calls {
				g := got.Calls[i]
				if g.Name != w.name || !sameJSON(t, g.Arguments, w.args) {
					t.Errorf("%v, %s: call %d is %s(%s), want %s(%s)", syn, c.src, i, g.Name, g.Arguments, w.name, w.args)
				}
			}
			checkIDs(t, syn, got.Calls)
		}
	}
}

// sameJSON reports whether got and want are the same JSON value, and
// checks that got is compact.
func sameJSON(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("arguments %s: %v", got, err)
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, got); err != nil || compact.String() != string(got) {
		t.Errorf("arguments %s are not compact JSON", got)
	}
	return reflect.DeepEqual(g, w)
}

// checkIDs checks that the ids of calls are unique and of the syntax's form.
func checkIDs(t *testing.T, syn Syntax, calls []Call) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range calls {
		if seen[c.ID] {
			t.Errorf("%v: id %q twice", syn, c.ID)
		}
		seen[c.ID] = true
		body := strings.TrimPrefix(c.ID, "call_")
		wantLen := 24
		if syn == Mistral || syn == MistralArgs {
			body, wantLen = c.ID, 9
		}
		if len(body) != wantLen || strings.Trim(body, idChars) != "" {
			t.Errorf("%v: id %q is not of the syntax's form", syn, c.ID)
		}
	}
}

func TestMistralKeepsModelIDs(t *testing.T) {
	got := Mistral.Parse(`[TOOL_CALLS][{"name": "get_time", "arguments": {}, "id": "123456789"}, {"name": "get_time", "arguments": {}, "id": "123456789"}, {"name": "get_time", "arguments": {}, "id": "short"}]`, testTools())
	if len(got.Calls) != 3 || got.Calls[0].ID != "123456789" {
		t.Fatalf("calls %+v, want 3 with the first id kept", got.Calls)
	}
	checkIDs(t, Mistral, got.Calls) // the repeated and the short ids are replaced
}

func TestParseMalformed(t *testing.T) {
	tools := testTools()
	cases := map[Syntax][]string{
		Hermes:        {"<tool_call>", "<tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>", "<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}", "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"a\": tru}}", "no call here"},
		Llama3JSON:    {"text {\"name\": \"get_time\", \"parameters\": {}}", "{\"name\": \"get_time\"", "{\"name\": 5, \"parameters\": {}}"},
		JSON:          {"{}", "[1, 2]", "{\"name\": \"get_time\", \"arguments\": null}"},
		Mistral:       {"[TOOL_CALLS]", "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}", "[TOOL_CALLS]get_time[ARGS]"},
		MistralArgs:   {"[TOOL_CALLS][ARGS]{}", "[TOOL_CALLS]nope[ARGS]{}", "[TOOL_CALLS]get_time{}"},
		Granite:       {"<|tool_call|>{\"name\": \"get_time\", \"arguments\": {}}", "<|tool_call|>[{\"name\": \"get_time\"}]"},
		Phi4Mini:      {"functools{}", "functools[", "functools[{\"name\": \"get_time\", \"arguments\": \"x\"}]"},
		LFM2Pythonic:  {"<|tool_call_start|>get_time(city=\"x\")", "<|tool_call_start|>[get_time(city=\"x)]", "<|tool_call_start|>[get_time(city=x)]", "<|tool_call_start|>[get_time(=1)]", "<|tool_call_start|>[1abc()]", "<|tool_call_start|>[get_time(city=\"\\q\")]"},
		FunctionGemma: {"<start_function_call>call:get_time{city:<escape>x}", "<start_function_call>get_time{}", "<start_function_call>call:get_time{city:x}", "<start_function_call>call:get_time{:1}"},
	}
	for syn, texts := range cases {
		for _, text := range texts {
			if got := syn.Parse(text, tools); len(got.Calls) != 0 || got.Content != strings.TrimSpace(text) {
				t.Errorf("%v: Parse(%q) = %+v, want no call and the text as content", syn, text, got)
			}
		}
	}
}

// TestParseTruncated parses every prefix of every real output: no panic,
// and a prefix never has more calls than the whole text.
func TestParseTruncated(t *testing.T) {
	tools := testTools()
	for syn, cases := range parseCases {
		for _, c := range cases {
			for i := range len(c.text) {
				if got := syn.Parse(c.text[:i], tools); len(got.Calls) > len(c.calls) {
					t.Errorf("%v: prefix %q has %d calls", syn, c.text[:i], len(got.Calls))
				}
			}
		}
	}
}

func TestParseDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", 10000)
	for _, text := range []string{
		"<|tool_call_start|>[python(code=" + deep + ")]",
		"<start_function_call>call:python{code:" + deep + "}",
	} {
		for _, syn := range []Syntax{LFM2Pythonic, FunctionGemma} {
			if got := syn.Parse(text, testTools()); len(got.Calls) != 0 {
				t.Errorf("%v: %d calls from deep nesting", syn, len(got.Calls))
			}
		}
	}
}

func TestDetect(t *testing.T) {
	// Marker excerpts of the published chat templates (as in llama.cpp's
	// models/templates and the models' tokenizer_config.json).
	for _, c := range []struct {
		model, src string
		want       Syntax
	}{
		{"Qwen2.5-7B-Instruct", `arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>`, Hermes},
		{"Hermes-3-Llama-3.1-8B", `{{- "<tool_call>\n" }}`, Hermes},
		{"Llama-3.1-8B-Instruct", `{{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}`, Llama3JSON},
		{"Mistral-Nemo-Instruct-2407", `{{- "[TOOL_CALLS] [" }}`, Mistral},
		{"Mistral-Small-3.2-24B-Instruct-2506", `{{- '[TOOL_CALLS]' + tool_call.function.name + '[ARGS]' + arguments }}`, MistralArgs},
		{"granite-3.3-2B-Instruct", `<|tool_call|> followed by a JSON list of tools used.`, Granite},
		{"firefunction-v2", `all function calls should be generated in a single JSON list formatted as functools[{"name": [function name], "arguments": [function arguments as JSON]}, ...]`, Phi4Mini},
		{"Phi-4-mini-instruct", `{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}`, Phi4Mini},
		{"LFM2-8B-A1B", `{%- set content = "<|tool_call_start|>[" + calls + "]<|tool_call_end|>" -%}`, LFM2Pythonic},
		{"functiongemma-270m-it", `{{- '<start_function_call>call:' + function['name'] + '{' -}}`, FunctionGemma},
		{"gemma-2-2b-it", `{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}`, JSON},
	} {
		if got := Detect(c.src); got != c.want {
			t.Errorf("%s: Detect = %v, want %v", c.model, got, c.want)
		}
	}
}

func TestParseSyntax(t *testing.T) {
	for _, s := range Syntaxes() {
		got, err := ParseSyntax(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSyntax(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseSyntax("xml"); err == nil || !strings.Contains(err.Error(), "lfm2-pythonic") {
		t.Errorf("ParseSyntax(xml) error %v, want one listing the names", err)
	}
}

func TestStart(t *testing.T) {
	for _, c := range []struct {
		syn  Syntax
		out  string
		want int
	}{
		{Hermes, "ok <tool_call>", 14}, {Hermes, "I will <tool", -1}, {Hermes, "", -1},
		{JSON, "  {\"name\"", 2}, {JSON, "text {", -1}, {Llama3JSON, "{", 0},
		{Mistral, "x[TOOL_CALLS][", 13}, {LFM2Pythonic, "<|tool_call_start|>", 19},
		{FunctionGemma, "a<start_function_call>call:", 22}, {Phi4Mini, " functools[", 10}, {Granite, "<|tool_call|>", 13},
	} {
		if got := c.syn.Start([]byte(c.out)); got != c.want {
			t.Errorf("%v.Start(%q) = %d, want %d", c.syn, c.out, got, c.want)
		}
	}
}

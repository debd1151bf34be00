package toolcall

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/grammar"
)

// schemaTools are tools with schemas, for the grammar tests.
func schemaTools() []Tool {
	return []Tool{
		{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "toggle", Parameters: json.RawMessage(`{"type":"object","properties":{"enabled":{"type":"boolean"}},"required":["enabled"],"additionalProperties":false}`)},
		{Name: "empty_args"},
		{Name: "dim", Parameters: json.RawMessage(`{"type":"object","properties":{"level":{"type":"integer","minimum":0,"maximum":100},` +
			`"fade":{"type":"number","minimum":0,"exclusiveMaximum":10},"label":{"type":"string","minLength":1}},"required":["level"],"additionalProperties":false}`)},
	}
}

// grammarCase is an answer in a syntax: the calls after the trigger,
// whether the syntax's grammar allows them, and the calls they hold.
type grammarCase struct {
	after string // the text after the trigger
	ok    bool
	calls []wantCall
}

var grammarCases = map[Syntax][]grammarCase{
	Hermes: {
		{"\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"toggle\", \"arguments\": {\"enabled\": true}}\n</tool_call>", true,
			[]wantCall{{"get_time", `{"city":"Paris"}`}, {"toggle", `{"enabled":true}`}}},
		{`{"arguments": {}, "name": "empty_args"}</tool_call>`, true, []wantCall{{"empty_args", `{}`}}},
		{`{"name": "get_time", "arguments": {}}</tool_call>`, false, nil}, // city is required
		{`{"name": "nope", "arguments": {}}</tool_call>`, false, nil},
		{`{"name": "dim", "arguments": {"level": 100, "fade": 9.5, "label": "x"}}</tool_call>`, true, []wantCall{{"dim", `{"level":100,"fade":9.5,"label":"x"}`}}},
		{`{"name": "dim", "arguments": {"level": 101}}</tool_call>`, false, nil},            // maximum
		{`{"name": "dim", "arguments": {"level": 1, "fade": 10}}</tool_call>`, false, nil},  // exclusiveMaximum
		{`{"name": "dim", "arguments": {"level": 1, "label": ""}}</tool_call>`, false, nil}, // minLength
	},
	Llama3JSON: {
		{"{\"name\": \"get_time\", \"parameters\": {\"city\": \"Paris\"}}\n{\"name\": \"empty_args\", \"parameters\": {}}", true,
			[]wantCall{{"get_time", `{"city":"Paris"}`}, {"empty_args", `{}`}}},
		{`{"name": "get_time", "arguments": {"city": "Paris"}}`, false, nil},
	},
	JSON: {
		{`{"name": "toggle", "arguments": {"enabled": false}}`, true, []wantCall{{"toggle", `{"enabled":false}`}}},
		{`{"name": "toggle", "arguments": {"enabled": false, "x": 1}}`, false, nil},
		{`{"name": "dim", "arguments": {"level": 0, "fade": 0.25}}`, true, []wantCall{{"dim", `{"level":0,"fade":0.25}`}}},
		{`{"name": "dim", "arguments": {"level": 0, "fade": 1e0}}`, false, nil}, // no exponent under bounds
	},
	Mistral: {
		{`[{"name": "get_time", "arguments": {"city": "Oslo"}, "id": "a1b2c3d4e"}, {"name": "empty_args", "arguments": {}}]`, true,
			[]wantCall{{"get_time", `{"city":"Oslo"}`}, {"empty_args", `{}`}}},
		{`[{"name": "get_time", "arguments": {"city": "Oslo"}, "id": "a1b2c3d4e5"}]`, false, nil}, // id of 10 characters
	},
	MistralArgs: {
		{`get_time[ARGS]{"city": "Oslo"}[TOOL_CALLS]toggle[ARGS]{"enabled": true}`, true,
			[]wantCall{{"get_time", `{"city":"Oslo"}`}, {"toggle", `{"enabled":true}`}}},
		{`get_time[ARGS]{"enabled": true}`, false, nil},
		{`dim[ARGS]{"level": -1}`, false, nil},
	},
	Granite: {
		{`[{"name": "toggle", "arguments": {"enabled": true}}]`, true, []wantCall{{"toggle", `{"enabled":true}`}}},
		{`{"name": "toggle", "arguments": {"enabled": true}}`, false, nil},
	},
	Phi4Mini: {
		{`[{"name": "get_time", "arguments": {"city": "Rome"}},{"name": "get_time", "arguments": {"city": "Bern"}}]`, true,
			[]wantCall{{"get_time", `{"city":"Rome"}`}, {"get_time", `{"city":"Bern"}`}}},
		{`[]`, false, nil},
	},
	LFM2Pythonic: {
		{`[get_time(city="Paris"), toggle(enabled=True), empty_args()]<|tool_call_end|>`, true,
			[]wantCall{{"get_time", `{"city":"Paris"}`}, {"toggle", `{"enabled":true}`}, {"empty_args", `{}`}}},
		{`[toggle(enabled=true)]<|tool_call_end|>`, false, nil},
		{`[get_time()]<|tool_call_end|>`, false, nil},
		{`[dim(level=7, fade=0.5, label="a")]<|tool_call_end|>`, true, []wantCall{{"dim", `{"level":7,"fade":0.5,"label":"a"}`}}},
		{`[dim(level=-0.5)]<|tool_call_end|>`, false, nil},
	},
	FunctionGemma: {
		{`call:get_time{city:<escape>New York<escape>}<end_function_call><start_function_call>call:toggle{enabled:false}<end_function_call>`, true,
			[]wantCall{{"get_time", `{"city":"New York"}`}, {"toggle", `{"enabled":false}`}}},
		{`call:get_time{city:"Paris"}<end_function_call>`, false, nil},
		{`call:dim{level:55,label:<escape>a<escape>}<end_function_call>`, true, []wantCall{{"dim", `{"level":55,"label":"a"}`}}},
		{`call:dim{level:55,label:<escape><escape>}<end_function_call>`, false, nil},
		{`call:dim{level:1000}<end_function_call>`, false, nil},
	},
}

func TestGrammarAgreesWithParser(t *testing.T) {
	tok, closeFile, err := inference.LoadTokenizer("../../../testdata/vocab/ggml-vocab-gpt-2.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFile()
	v := grammar.NewVocab(tok)
	tools := schemaTools()
	for _, syn := range Syntaxes() {
		cases := grammarCases[syn]
		if len(cases) == 0 {
			t.Errorf("%v: no grammar cases", syn)
		}
		for _, whole := range []bool{false, true} {
			g, err := syn.Grammar(tools, whole, grammar.Options{})
			if err != nil {
				t.Fatalf("%v: %v", syn, err)
			}
			m, err := g.NewMatcher(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				text := c.after
				if whole {
					text = syn.Trigger() + text
				}
				m.Reset()
				allowed := m.AcceptBytes([]byte(text)) == nil && m.Complete()
				if allowed != c.ok {
					t.Errorf("%v (whole %v): %q allowed = %v, want %v", syn, whole, text, allowed, c.ok)
				}
				if !c.ok {
					continue
				}
				got := syn.Parse(syn.Trigger()+c.after, tools)
				if len(got.Calls) != len(c.calls) || got.Rest != "" {
					t.Errorf("%v: %q parses to %+v, want %d calls and no rest", syn, c.after, got, len(c.calls))
					continue
				}
				for i, w := range c.calls {
					if got.Calls[i].Name != w.name || !sameJSON(t, got.Calls[i].Arguments, w.args) {
						t.Errorf("%v: call %d is %s(%s), want %s(%s)", syn, i, got.Calls[i].Name, got.Calls[i].Arguments, w.name, w.args)
					}
				}
			}
		}
	}
}

func TestGrammarMaxCalls(t *testing.T) {
	tools := schemaTools()
	g, err := Hermes.Grammar(tools, true, grammar.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok, closeFile, err := inference.LoadTokenizer("../../../testdata/vocab/ggml-vocab-gpt-2.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFile()
	m, err := g.NewMatcher(grammar.NewVocab(tok))
	if err != nil {
		t.Fatal(err)
	}
	call := `<tool_call>{"name": "empty_args", "arguments": {}}</tool_call>`
	if err := m.AcceptBytes([]byte(strings.Repeat(call, MaxCalls))); err != nil || !m.Complete() {
		t.Fatalf("%d calls: %v", MaxCalls, err)
	}
	if err := m.AcceptBytes([]byte(call)); err == nil {
		t.Errorf("%d calls allowed", MaxCalls+1)
	}
}

func TestGrammarErrors(t *testing.T) {
	if _, err := Hermes.Grammar(nil, false, grammar.Options{}); err == nil {
		t.Error("no tools: no error")
	}
	bad := []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":`)}}
	if _, err := Hermes.Grammar(bad, false, grammar.Options{}); err == nil {
		t.Error("invalid parameters: no error")
	}
	dashed := []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"a-b":{"type":"string"}}}`)}}
	if _, err := LFM2Pythonic.Grammar(dashed, false, grammar.Options{}); err == nil || !strings.Contains(err.Error(), "a-b") {
		t.Errorf("a property that is no Python name: error %v", err)
	}
	if _, err := Hermes.Grammar(dashed, false, grammar.Options{}); err != nil {
		t.Errorf("the same tool in JSON: %v", err)
	}
}

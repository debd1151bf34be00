package grammar

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edgellm/edgellm/inference/tokenizer"
)

// composeCase is a text that a composed grammar allows or not.
type composeCase struct {
	text     string
	complete bool // the text is allowed and complete
	prefix   bool // the text is allowed (complete or not)
}

// checkComposed feeds each case to a fresh matcher of g and checks what the
// matcher says of it.
func checkComposed(t *testing.T, g *Grammar, cases []composeCase) {
	t.Helper()
	_, v := loadVocab(t, gpt2Vocab)
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		m.Reset()
		err := m.AcceptBytes([]byte(tc.text))
		if (err == nil) != tc.prefix {
			t.Errorf("%q: AcceptBytes error %v, want allowed = %v", tc.text, err, tc.prefix)
			continue
		}
		if err == nil && m.Complete() != tc.complete {
			t.Errorf("%q: Complete() = %v, want %v", tc.text, m.Complete(), tc.complete)
		}
	}
}

func TestComposeHermesLike(t *testing.T) {
	b := NewBuilder(DialectJSON, Options{})
	call := b.Value([]byte(`{"type":"object","properties":{"name":{"const":"f"},"arguments":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false}`))
	sep := b.Seq(b.Space(), b.Text("<tool_call>"))
	item := b.Seq(b.Space(), call, b.Space(), b.Text("</tool_call>"))
	g, err := b.Build(b.Repeat(item, &sep, 1, 3))
	if err != nil {
		t.Fatal(err)
	}
	one := `{"name": "f", "arguments": {"x": 1}}`
	checkComposed(t, g, []composeCase{
		{"\n" + one + "\n</tool_call>", true, true},
		{one + "</tool_call>", true, true},
		{one, false, true},
		{one + "</tool_call>\n<tool_call>\n" + one + "\n</tool_call>", true, true},
		{one + "</tool_call>\n<tool_call>", false, true},
		{strings.Repeat(one+"</tool_call><tool_call>", 3) + one + "</tool_call>", false, false}, // four calls
		{`{"name": "g", "arguments": {"x": 1}}`, false, false},
		{one + "</tool_cal>", false, false},
		{one + "</tool_call>x", false, false},
	})
}

func TestComposePython(t *testing.T) {
	b := NewBuilder(DialectPython, Options{})
	args := b.Arguments([]byte(`{"type":"object","properties":{"city":{"type":"string","maxLength":5},"on":{"type":"boolean"},"n":{"type":"null"},"cfg":{"type":"object"}},"required":["city"]}`), '(', ')', '=')
	callSep := b.Seq(b.Text(","), b.Space())
	calls := b.Repeat(b.Seq(b.Text("set"), args), &callSep, 1, -1)
	g, err := b.Build(b.Seq(b.Text("["), calls, b.Text("]")))
	if err != nil {
		t.Fatal(err)
	}
	checkComposed(t, g, []composeCase{
		{`[set(city="Paris")]`, true, true},
		{`[set(city="Paris", on=True, n=None)]`, true, true},
		{`[set(on=False,city="")]`, true, true},
		{`[set(city="a"), set(city="b", cfg={"k": [1, True, None]})]`, true, true},
		{`[set(city="Paris"`, false, true},
		{`[set(on=True)]`, false, false},               // city is required
		{`[set(city="Paris", on=true)]`, false, false}, // JSON's true is no Python literal
		{`[set(city="Parisx")]`, false, false},         // maxLength
		{`[set(city="a", city="b")]`, false, false},
		{`[set(other=1, city="a")]`, false, false}, // only declared names
		{`[set()]`, false, false},
		{`[]`, false, false},
	})
}

func TestComposeGemma(t *testing.T) {
	b := NewBuilder(DialectGemma, Options{})
	args := b.Arguments([]byte(`{"type":"object","properties":{"city":{"type":"string"},"todos":{"type":"array","items":{"type":"string","maxLength":3}},"cfg":{"type":"object","properties":{"theme":{"enum":["dark","light"]},"count":{"type":"integer"}}},"on":{"type":"boolean"}},"required":["city"]}`), '{', '}', ':')
	g, err := b.Build(b.Seq(b.Text("call:get"), args, b.Text("<end_function_call>")))
	if err != nil {
		t.Fatal(err)
	}
	checkComposed(t, g, []composeCase{
		{`call:get{city:<escape>London<escape>}<end_function_call>`, true, true},
		{`call:get{city:<escape><escape>}<end_function_call>`, true, true},
		{`call:get{city:<escape>a "quoted" <tag> and <esc<escape>}<end_function_call>`, true, true},
		{"call:get{city:<escape>two\nlines<escape>,on:true}<end_function_call>", true, true},
		{`call:get{city:<escape>x<escape>,todos:[<escape>buy<escape>,<escape>dog<escape>],cfg:{theme:<escape>dark<escape>,count:3}}<end_function_call>`, true, true},
		{`call:get{todos:[],city:<escape>x<escape>}<end_function_call>`, true, true},
		{`call:get{city:<escape>x<escape>}`, false, true},
		{`call:get{city:"x"}`, false, false},
		{`call:get{todos:[<escape>long<escape>],city:<escape>x<escape>}`, false, false}, // maxLength 3
		{`call:get{cfg:{theme:<escape>blue<escape>},city:<escape>x<escape>}`, false, false},
		{`call:get{on:true}`, false, false}, // city is required
	})
}

func TestComposeErrors(t *testing.T) {
	for name, build := range map[string]func(b *Builder) Node{
		"empty text":      func(b *Builder) Node { return b.Text("") },
		"empty sequence":  func(b *Builder) Node { return b.Seq(b.Space()) },
		"empty item":      func(b *Builder) Node { return b.Repeat(b.Space(), nil, 1, 2) },
		"zero repeats":    func(b *Builder) Node { return b.Repeat(b.Text("x"), nil, 0, 2) },
		"bad schema":      func(b *Builder) Node { return b.Value([]byte(`{"type":"thing"}`)) },
		"not an object":   func(b *Builder) Node { return b.Arguments([]byte(`{"type":"string"}`), '(', ')', '=') },
		"bare name":       func(b *Builder) Node { return b.Arguments([]byte(`{"properties":{"a-b":{}}}`), '(', ')', '=') },
		"empty root":      func(b *Builder) Node { return b.Space() },
		"anyOf of none":   func(b *Builder) Node { return b.AnyOf() },
		"unsupported key": func(b *Builder) Node { return b.Arguments([]byte(`{"type":"object","anyOf":[]}`), '(', ')', '=') },
	} {
		b := NewBuilder(DialectPython, Options{})
		if _, err := b.Build(build(b)); err == nil {
			t.Errorf("%s: Build succeeded", name)
		}
	}
}

// TestMaskExactComposed checks Mask against feeding every token on its own
// (see checkMaskExact) in states of composed grammars: inside fixed texts,
// optional whitespace, separators, bare keys, Python words and FunctionGemma
// strings.
func TestMaskExactComposed(t *testing.T) {
	params := []byte(`{"type":"object","properties":{"city":{"type":"string","maxLength":6},"on":{"type":"boolean"}},"required":["city"]}`)
	hermes := func(b *Builder) Node {
		sp := b.Space()
		call := b.Value([]byte(`{"type":"object","properties":{"name":{"const":"f"},"arguments":` + string(params) + `},"required":["name","arguments"]}`))
		sep := b.Seq(sp, b.Text("<tool_call>"))
		return b.Repeat(b.Seq(sp, call, sp, b.Text("</tool_call>")), &sep, 1, 2)
	}
	python := func(b *Builder) Node {
		comma := b.Seq(b.Text(","), b.Space())
		return b.Seq(b.Text("["), b.Repeat(b.Seq(b.Text("f"), b.Arguments(params, '(', ')', '=')), &comma, 1, 3), b.Text("]"))
	}
	gemma := func(b *Builder) Node {
		return b.Seq(b.Text("call:f"), b.Arguments(params, '{', '}', ':'), b.Text("<end>"))
	}
	// The shortest completions of some states: CloseCost is their length.
	shortest := map[string]string{
		"hermes:":   `{"name":"f","arguments":{"city":""}}</tool_call>`,
		"hermes:\n": `{"name":"f","arguments":{"city":""}}</tool_call>`,
		`hermes:{"name":"f","arguments":{"city":"ab"}}</tool`: `_call>`,
		"python:[f(":                       `city="")]`,
		`python:[f(city="x", `:             `on=True)]`,
		"gemma:call:f{":                    "city:<escape><escape>}<end>",
		"gemma:call:f{city:<escape>ab<e":   "scape>}<end>",
		"gemma:call:f{city:<escape>abcdef": "<escape>}<end>",
	}
	checked := map[string]bool{}
	for _, c := range []struct {
		name    string
		dialect Dialect
		build   func(b *Builder) Node
		texts   []string
	}{
		{"hermes", DialectJSON, hermes, []string{"", "\n", `{"name":"f","arguments":{"city":"ab"}}`, `{"name":"f","arguments":{"city":"ab"}}</tool`,
			`{"name":"f","arguments":{"city":"ab"}}</tool_call>`, `{"name":"f","arguments":{"city":"ab"}}</tool_call> <tool_call>`}},
		{"python", DialectPython, python, []string{"[f", "[f(", "[f(ci", "[f(city=", `[f(city="x", `, `[f(city="x", on=T`, `[f(city="x")`, `[f(city="x"), `}},
		{"gemma", DialectGemma, gemma, []string{"call:f{", "call:f{city:<esc", "call:f{city:<escape>ab<e", "call:f{city:<escape>abcdef", `call:f{city:<escape>x<escape>,on:`, "call:f{city:<escape>x<escape>}<e"}},
	} {
		b := NewBuilder(c.dialect, Options{})
		g, err := b.Build(c.build(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{gpt2Vocab, llamaVocab} {
			tok, v := loadVocab(t, path)
			m, err := g.NewMatcher(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range c.texts {
				m.Reset()
				if err := m.AcceptBytes([]byte(text)); err != nil {
					t.Fatalf("%s %q: %v", c.name, text, err)
				}
				checkMaskExact(t, tok, v, m, fmt.Sprintf("%s %s %q", path, c.name, text))
				if rest, ok := shortest[c.name+":"+text]; ok {
					checked[c.name+":"+text] = true
					if got := m.CloseCost(); got != len(rest) {
						t.Errorf("%s %q: CloseCost %d, want %d (%q)", c.name, text, got, len(rest), rest)
					}
					if err := m.AcceptBytes([]byte(rest)); err != nil || !m.Complete() {
						t.Errorf("%s %q + %q: %v, complete %v", c.name, text, rest, err, m.Complete())
					}
				}
			}
		}
	}
	if len(checked) != len(shortest) {
		t.Errorf("%d of %d shortest completions checked", len(checked), len(shortest))
	}
}

// TestUserDefinedTokens checks that user-defined tokens (DeepSeek's added
// single characters such as "ø") are text that a string may hold, and that
// control tokens are not.
func TestUserDefinedTokens(t *testing.T) {
	tok, v := loadVocab(t, "../../testdata/vocab/ggml-vocab-deepseek-llm.gguf")
	m := mustMatcher(t, "", Options{}, v)
	if err := m.AcceptBytes([]byte(`"`)); err != nil {
		t.Fatal(err)
	}
	allowed := allowedSet(t, m, 100)
	user, control := 0, 0
	for id := int32(0); id < int32(tok.NumTokens()); id++ {
		switch tok.Type(id) {
		case tokenizer.TypeUserDefined:
			if p := tok.Piece(id); !tok.IsEOG(id) && len(p) > 0 && !strings.ContainsAny(string(p), "\"\\") && utf8.Valid(p) {
				user++
				if !allowed[id] {
					t.Errorf("user-defined token %d %q not allowed in a string", id, p)
				}
			}
		case tokenizer.TypeControl:
			control++
			if allowed[id] && !tok.IsEOG(id) {
				t.Errorf("control token %d %q allowed in a string", id, tok.Piece(id))
			}
		}
	}
	if user == 0 || control == 0 {
		t.Fatalf("%d user-defined and %d control tokens: the vocabulary does not test this", user, control)
	}
}

// TestComposedZeroAllocs checks that masking and accepting tokens of
// composed grammars does not allocate after warm-up.
func TestComposedZeroAllocs(t *testing.T) {
	tok, v := loadVocab(t, gpt2Vocab)
	params := []byte(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"on":{"type":"boolean"}},"required":["city"]}`)
	for _, c := range []struct {
		dialect Dialect
		build   func(b *Builder) Node
		text    string
	}{
		{DialectJSON, func(b *Builder) Node {
			sp := b.Space()
			sep := b.Seq(sp, b.Text("<tool_call>"))
			call := b.Value([]byte(`{"type":"object","properties":{"name":{"const":"f"},"arguments":` + string(params) + `},"required":["name","arguments"]}`))
			return b.Repeat(b.Seq(sp, call, sp, b.Text("</tool_call>")), &sep, 1, 4)
		}, "\n{\"name\": \"f\", \"arguments\": {\"city\": \"Zürich\", \"days\": 12}}\n</tool_call>\n<tool_call>{\"name\": \"f\", \"arguments\": {\"city\": \"x\"}}</tool_call>"},
		{DialectPython, func(b *Builder) Node {
			comma := b.Seq(b.Text(","), b.Space())
			return b.Seq(b.Text("["), b.Repeat(b.Seq(b.Text("f"), b.Arguments(params, '(', ')', '=')), &comma, 1, 4), b.Text("]"))
		}, `[f(city="Zürich", days=12, on=True), f(city="x")]`},
		{DialectGemma, func(b *Builder) Node {
			return b.Seq(b.Text("call:f"), b.Arguments(params, '{', '}', ':'), b.Text("<end>"))
		}, "call:f{city:<escape>Zürich \"old\" <town><escape>,days:12,on:false}<end>"},
	} {
		b := NewBuilder(c.dialect, Options{})
		g, err := b.Build(c.build(b))
		if err != nil {
			t.Fatal(err)
		}
		m, err := g.NewMatcher(v)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode(c.text, false)
		if err != nil {
			t.Fatal(err)
		}
		logits := make([]float32, v.n)
		run := func() {
			m.Reset()
			for i, id := range ids {
				if err := m.Mask(logits, 300-i); err != nil {
					t.Fatalf("%q, token %d: %v", c.text, i, err)
				}
				if err := m.Accept(id); err != nil {
					t.Fatalf("%q, token %d: %v", c.text, i, err)
				}
				m.Done()
				m.CloseCost()
			}
			if !m.Complete() {
				t.Fatalf("%q: not complete", c.text)
			}
		}
		run()
		if n := testing.AllocsPerRun(5, run); n != 0 {
			t.Errorf("%q: %v allocations per generation", c.text, n)
		}
	}
}

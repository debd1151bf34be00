package grammar

import (
	"strings"
	"testing"
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

package grammar_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/edgellm/edgellm/inference/chat/toolcall"
	"github.com/edgellm/edgellm/inference/grammar"
)

// Generations of TestToolCallGenerations per syntax, and how they spread
// over the models (see testModels.plan): one on every model, more on the
// fast ones.
const (
	toolGenerations = 1000
	toolQwen        = 20
	toolTiny        = 100
	toolBudget      = 128 // largest token budget
)

// toolCallTools are the tools of the tool-call property test: required and
// optional arguments of every type, enums, bounded strings and lists, and a
// tool without parameters.
func toolCallTools() []toolcall.Tool {
	return []toolcall.Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":20},
			"unit":{"enum":["C","F"]},"days":{"type":"integer"}},"required":["city","unit"],"additionalProperties":false}`)},
		{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","maxLength":30},"limit":{"type":"integer"}},"required":["query"]}`)},
		{Name: "set_light", Parameters: json.RawMessage(`{"type":"object","properties":{"on":{"type":"boolean"},"level":{"type":"number"},
			"tags":{"type":"array","items":{"type":"string","maxLength":6},"maxItems":3},"note":{"type":["string","null"],"maxLength":8}},
			"required":["on"],"additionalProperties":false}`)},
		{Name: "stop"},
	}
}

// TestToolCallGenerations runs, for each tool-call syntax, 1000 generations
// constrained by its grammar (half of a whole answer of calls, half of the
// calls after the trigger), spread over the models of testdata with random
// sampling settings and budgets (8 to 128 tokens), and checks that each output parses in the
// syntax to one or more calls, with nothing left over, of the tools, with
// arguments that validate against the tool's schema.
func TestToolCallGenerations(t *testing.T) {
	models := loadTestModels(t)
	tools := toolCallTools()
	schemas := map[string]any{}
	for _, tool := range tools {
		var s any = map[string]any{"type": "object"}
		if len(tool.Parameters) > 0 {
			if err := json.Unmarshal(tool.Parameters, &s); err != nil {
				t.Fatal(err)
			}
		}
		schemas[tool.Name] = s
	}
	type variant struct {
		syn   toolcall.Syntax
		whole bool
	}
	var variants []variant
	var grammars []*grammar.Grammar
	for _, syn := range toolcall.Syntaxes() {
		for _, whole := range []bool{false, true} {
			g, err := syn.Grammar(tools, whole, grammar.Options{})
			if err != nil {
				t.Fatalf("%v: %v", syn, err)
			}
			variants = append(variants, variant{syn, whole})
			grammars = append(grammars, g)
		}
	}
	var jobs []genJob
	for si := range toolcall.Syntaxes() {
		for i, m := range models.plan(toolGenerations, 1, toolQwen, toolTiny) {
			jobs = append(jobs, genJob{model: m, grammar: 2*si + i%2, seed: uint64(len(jobs)), budget: toolBudget})
		}
	}
	runJobs(t, jobs, grammars, func(j genJob, out []byte) error {
		v := variants[j.grammar]
		text := string(out)
		if !v.whole {
			text = v.syn.Trigger() + text
		}
		p := v.syn.Parse(text, tools)
		switch {
		case len(p.Calls) == 0:
			return fmt.Errorf("%v: no call", v.syn)
		case p.Content != "" || p.Rest != "":
			return fmt.Errorf("%v: text around the calls: before %q, after %q", v.syn, p.Content, p.Rest)
		}
		for _, c := range p.Calls {
			s, ok := schemas[c.Name]
			if !ok {
				return fmt.Errorf("%v: call of %q, no tool", v.syn, c.Name)
			}
			if err := checkUniqueNames(c.Arguments); err != nil {
				return fmt.Errorf("%v: %s: %w", v.syn, c.Name, err)
			}
			args, err := decodeNumbers(c.Arguments)
			if err != nil {
				return fmt.Errorf("%v: %s: %w", v.syn, c.Name, err)
			}
			if err := validate("#", s, args); err != nil {
				return fmt.Errorf("%v: %s(%s): %w", v.syn, c.Name, c.Arguments, err)
			}
			if c.ID == "" {
				return errors.New("a call without an id")
			}
		}
		return nil
	})
}

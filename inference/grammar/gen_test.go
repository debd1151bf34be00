package grammar_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgellm/edgellm/inference/grammar"
	"github.com/edgellm/edgellm/inference/sampler"
	"github.com/edgellm/edgellm/inference/tokenizer"
)

// testSchemas are the assorted schemas of the property tests.
func testSchemas(t testing.TB) []string {
	tools, err := grammar.ToolCallSchema([]grammar.Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":20},"unit":{"enum":["C","F"]},"days":{"type":"integer"}},"required":["city","unit"],"additionalProperties":false}`)},
		{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}`)},
		{Name: "stop"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		string(tools),
		`{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer"},"email":{"type":["string","null"]},
		  "tags":{"type":"array","items":{"type":"string","maxLength":6},"maxItems":3}},"required":["name","age"],"additionalProperties":false}`,
		`{"type":"object","properties":{"items":{"type":"array","maxItems":3,"items":{"type":"object","properties":{
		  "id":{"type":"integer"},"price":{"type":"number"},"ok":{"type":"boolean"},"note":{"type":["string","null"],"maxLength":8}},
		  "required":["id","ok"],"additionalProperties":false}},"total":{"type":"number"}},"required":["items"]}`,
		`{"type":"object","properties":{"kind":{"const":"point"},"color":{"enum":["red","green","blue"]},
		  "xy":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2}},"required":["kind","color","xy"],"additionalProperties":false}`,
		`{"anyOf":[{"type":"string","maxLength":5},{"type":"array","items":{"type":"null"},"maxItems":2},{"type":"object","additionalProperties":{"type":"boolean"}}]}`,
		`{"type":"array","items":{"type":"string","maxLength":4},"minItems":1,"maxItems":4}`,
		`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"}},"additionalProperties":{"type":"integer"}}`,
		`{"type":"object","properties":{"answer":{"type":"string"},"confidence":{"type":"number"},"sources":{"type":"array","items":{"type":"object"}}},"required":["answer","confidence","sources"]}`,
		`{"type":"integer"}`,
		`{"type":"object","properties":{"room":{"type":"string","minLength":2,"maxLength":12},"on":{"type":"boolean"},
		  "brightness":{"type":"integer","minimum":0,"maximum":100},"colors":{"type":"array","items":{"type":"string","enum":["red","white"]}}},
		  "required":["room","on","brightness","colors"],"additionalProperties":false}`,
		`{"type":"array","items":{"anyOf":[{"type":"integer","minimum":-1000,"maximum":-10},{"type":"integer","exclusiveMinimum":7,"exclusiveMaximum":7000},
		  {"type":"integer","minimum":123456789012,"maximum":123456789099},{"type":"integer","minimum":0.5,"maximum":3,"exclusiveMaximum":true},
		  {"type":"integer","maximum":-3},{"type":"integer","minimum":9999999999999990}]},"minItems":1,"maxItems":6}`,
		`{"type":"object","additionalProperties":{"type":"string","minLength":3,"maxLength":5}}`,
		`{"type":"object","properties":{"confidence":{"type":"number","minimum":0,"maximum":1},"t":{"type":"number","exclusiveMinimum":-12.5,"exclusiveMaximum":-12.25},
		  "x":{"type":["number","null"],"minimum":99.99,"exclusiveMaximum":100.01},"y":{"type":"number","maximum":-0.001}},"required":["confidence","t","x","y"]}`,
		`{"enum":["yes","no",1,2.5,null,[true]]}`,
		`{}`,
	}
}

// randomParams returns sampling settings with a temperature in [0.2, 1.5].
func randomParams(r *rand.Rand, seed uint64) sampler.Params {
	p := sampler.DefaultParams()
	p.Temperature = 0.2 + 1.3*r.Float32()
	p.TopK = []int{0, 10, 40}[r.IntN(3)]
	p.TopP = []float32{1, 0.95, 0.8}[r.IntN(3)]
	p.MinP = []float32{0, 0.05}[r.IntN(2)]
	p.Seed = seed
	return p
}

// randomBudget returns a token budget between 8 and 256, log-uniform, and at
// least min.
func randomBudget(r *rand.Rand, min int) int {
	return max(int(8*math.Pow(32, r.Float64())), min)
}

// genResult reports on one constrained generation.
type genResult struct {
	out    []byte
	tokens int
	end    string // "done", "eog" or "budget"
	tight  bool   // at some step, the budget left only room to complete the value
}

// constrained runs one generation of at most budget tokens from the logits
// first, calling forward for the logits after each token.
func constrained(m *grammar.Matcher, tok *tokenizer.Tokenizer, smp *sampler.Sampler, budget int,
	first []float32, forward func(id int32) ([]float32, error)) (genResult, error) {
	m.Reset()
	var res genResult
	logits := first
	for res.end == "" {
		res.tight = res.tight || m.CloseCost() >= budget-res.tokens
		if err := m.Mask(logits, budget-res.tokens); err != nil {
			return res, fmt.Errorf("after %q (%d tokens): %w", res.out, res.tokens, err)
		}
		id := smp.Sample(logits)
		res.tokens++
		if err := m.Accept(id); err != nil {
			return res, fmt.Errorf("after %q: token %d: %w", res.out, id, err)
		}
		smp.Accept(id)
		if tok.IsEOG(id) {
			res.end = "eog"
			break
		}
		res.out = append(res.out, tok.Piece(id)...)
		switch {
		case m.Done():
			res.end = "done"
		case res.tokens == budget:
			res.end = "budget"
		}
		if res.end == "" {
			var err error
			if logits, err = forward(id); err != nil {
				return res, err
			}
		}
	}
	if !m.Complete() {
		return res, errors.New("incomplete value")
	}
	return res, nil
}

// TestRandomLogits runs constrained generations over whole vocabularies with
// random logits in place of a model, and checks every output.
func TestRandomLogits(t *testing.T) {
	schemas := append(testSchemas(t), "")
	for _, path := range []string{"../../testdata/vocab/ggml-vocab-llama-spm.gguf", "../../testdata/vocab/ggml-vocab-gpt-2.gguf"} {
		tok := loadTokenizer(t, path)
		v := grammar.NewVocab(tok)
		r := rand.New(rand.NewPCG(1, 2))
		logits := make([]float32, tok.NumTokens())
		random := func(int32) ([]float32, error) {
			for i := range logits {
				logits[i] = 10 * r.Float32()
			}
			return logits, nil
		}
		for i := range 4 * len(schemas) {
			schema := schemas[i%len(schemas)]
			m := compileMatcher(t, schema, v)
			smp, err := sampler.New(randomParams(r, uint64(i)), tok.NumTokens())
			if err != nil {
				t.Fatal(err)
			}
			first, _ := random(0)
			res, err := constrained(m, tok, smp, randomBudget(r, m.CloseCost()), first, random)
			if err == nil {
				err = checkOutput(schema, res.out)
			}
			if err != nil {
				t.Fatalf("%s: schema %.40s: %q: %v", path, schema, res.out, err)
			}
		}
	}
}

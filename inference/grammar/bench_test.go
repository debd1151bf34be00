package grammar_test

import (
	"path/filepath"
	"testing"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/grammar"
	"github.com/edgellm/edgellm/inference/synth"
	"github.com/edgellm/edgellm/inference/tokenizer"
)

// BenchmarkMaskState measures one Mask call in typical states.
func BenchmarkMaskState(b *testing.B) {
	schemas := testSchemas(b)
	states := []struct{ name, schema, text string }{
		{"json/start", "", ""},
		{"json/key", "", `{"`},
		{"json/string", "", `{"a":"x`},
		{"json/after-value", "", `{"a":1`},
		{"json/number", "", `[12`},
		{"schema/key", schemas[1], `{"`},
		{"schema/string", schemas[1], `{"name":"x`},
		{"tool/name", schemas[0], `{"name":"`},
		{"tool/free-key", schemas[0], `{"name":"search","arguments":{"query":"x","`},
	}
	for _, vocab := range []struct{ name, path string }{
		{"spm32k", "../../testdata/vocab/ggml-vocab-llama-spm.gguf"},
		{"bpe50k", "../../testdata/vocab/ggml-vocab-gpt-2.gguf"},
	} {
		tok := loadTokenizer(b, vocab.path)
		v := grammar.NewVocab(tok)
		logits := make([]float32, tok.NumTokens())
		for _, st := range states {
			m := compileMatcher(b, st.schema, v)
			if err := m.AcceptBytes([]byte(st.text)); err != nil {
				b.Fatal(err)
			}
			b.Run(vocab.name+"/"+st.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := m.Mask(logits, 1000); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// maskText is the text whose tokens the mask benchmarks mask and accept.
const maskText = `{"name": "get_weather", "arguments": {"city": "San Francisco \"SF\"", "unit": "C", "days": 14}}`

// BenchmarkMaskVsForward compares, for the test models, one forward pass
// (one token with its logits, on one thread) with masking and accepting one
// token of a tool call (averaged over its tokens), constrained to any JSON
// and to the tool call schema, in µs/token.
func BenchmarkMaskVsForward(b *testing.B) {
	for _, name := range []string{"tiny-q8_0", "stories260K", "qwen2-tiny-q8_0"} {
		model := loadModel(b, "../../testdata/models/"+name+".gguf")
		st, err := model.NewState(256, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(st.Close)
		b.Run(name+"/forward", func(b *testing.B) { benchForward(b, st) })
		benchMask(b, name, model.Tokenizer)
	}
}

// BenchmarkTinyLlama compares a forward pass of the tinyllama-1.1b shape
// (Q4_K_M, on every CPU) with masking the 32000-token vocabulary of Llama 2
// and TinyLlama (the synthetic model's placeholder vocabulary has the right
// size but none of the structure). The model is synthesized into a temporary
// directory first, which takes a minute or two.
func BenchmarkTinyLlama(b *testing.B) {
	shape, err := synth.LookupShape("tinyllama-1.1b")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "tinyllama.gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: shape, Type: synth.MostlyQ4_KM, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	model := loadModel(b, path)
	st, err := model.NewState(512, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	b.Run("forward", func(b *testing.B) { benchForward(b, st) })
	benchMask(b, "llama-spm-32000", loadTokenizer(b, "../../testdata/vocab/ggml-vocab-llama-spm.gguf"))
}

// benchForward measures State.Forward.
func benchForward(b *testing.B, st *inference.State) {
	for b.Loop() {
		if st.Pos() >= st.Ctx() {
			st.Reset()
		}
		if _, err := st.Forward(1, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/token")
}

// benchMask runs the sub-benchmarks name/mask-json and name/mask-schema:
// Mask and Accept over the tokens of maskText.
func benchMask(b *testing.B, name string, tok *tokenizer.Tokenizer) {
	v := grammar.NewVocab(tok)
	ids := greedyTokens(tok, maskText)
	logits := make([]float32, tok.NumTokens())
	for _, g := range []struct{ name, schema string }{{"json", ""}, {"schema", testSchemas(b)[0]}} {
		m := compileMatcher(b, g.schema, v)
		b.Run(name+"/mask-"+g.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Reset()
				for i, id := range ids {
					if err := m.Mask(logits, 1000-i); err != nil {
						b.Fatal(err)
					}
					if err := m.Accept(id); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids))/1e3, "µs/token")
		})
	}
}

// BenchmarkMaskVocab measures masking over the 50257-token GPT-2 vocabulary
// (BenchmarkMaskVsForward covers the others).
func BenchmarkMaskVocab(b *testing.B) {
	benchMask(b, "gpt2-50257", loadTokenizer(b, "../../testdata/vocab/ggml-vocab-gpt-2.gguf"))
}

// BenchmarkNewVocab measures indexing the GPT-2 vocabulary, done once per
// model.
func BenchmarkNewVocab(b *testing.B) {
	tok := loadTokenizer(b, "../../testdata/vocab/ggml-vocab-gpt-2.gguf")
	for b.Loop() {
		grammar.NewVocab(tok)
	}
}

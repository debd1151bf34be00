package tokenizer

import (
	"strings"
	"testing"
)

// benchText is a paragraph of ordinary English text with some punctuation,
// digits and non-ASCII characters.
const benchText = `The quick brown fox jumps over the lazy dog. In 1969, Apollo 11 landed on the Moon; ` +
	`Neil Armstrong said: "That's one small step for man, one giant leap for mankind." ` +
	`Since then, space agencies have launched probes to every planet in the solar system, ` +
	`and the James Webb telescope (launched on 25 December 2021) looks back 13.5 billion years. ` +
	`Café owners in Zürich don't mind — they've seen it all before! Prices rose by 3.7% last year, ` +
	`while the average rent reached CHF 2,150 per month for a two-room apartment.`

func benchEncode(b *testing.B, name string) {
	tok := loadVocab(b, name)
	text := strings.Repeat(benchText+"\n", 4)
	dst, err := tok.AppendEncode(nil, text, false)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		dst, _ = tok.AppendEncode(dst[:0], text, false)
	}
}

// BenchmarkEncodeBPE encodes a paragraph with the GPT-2 byte-level BPE vocabulary.
func BenchmarkEncodeBPE(b *testing.B) { benchEncode(b, "gpt-2") }

// BenchmarkEncodeSPM encodes a paragraph with the Llama SentencePiece vocabulary.
func BenchmarkEncodeSPM(b *testing.B) { benchEncode(b, "llama-spm") }

// BenchmarkNew builds the GPT-2 tokenizer from its vocabulary description.
func BenchmarkNew(b *testing.B) {
	v := loadVocabDesc(b, "gpt-2")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(v); err != nil {
			b.Fatal(err)
		}
	}
}

package tokenizer

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// addSeeds adds the conformance strings of a vocabulary to the seed corpus.
func addSeeds(f *testing.F, name string) {
	for _, c := range loadCases(f, name) {
		f.Add(c.text)
	}
	f.Add("<s>Hello</s><|endoftext|><|user|>\n</s>  x")
	f.Add("\xF0\x9F\xA6 \xE2\x96\x81\xFF\xC0 'S'll\r\n\t\u3000\u00a0")
}

// checkEncode encodes s with and without special tokens, checks that every
// id is in range, that Decode inverts Encode without special tokens when
// lossless says so, and that the streaming decoder yields the same bytes as
// the pieces.
func checkEncode(t *testing.T, tok *Tokenizer, name, s string, lossless bool) {
	for _, special := range []bool{false, true} {
		ids, err := tok.Encode(s, special)
		if err != nil {
			t.Fatalf("%s: Encode(%q, %v): %v", name, s, special, err)
		}
		if lossless && len(s) > 0 && len(ids) == 0 {
			t.Fatalf("%s: Encode(%q, %v) is empty", name, s, special)
		}
		for _, id := range ids {
			if id < 0 || int(id) >= tok.NumTokens() {
				t.Fatalf("%s: Encode(%q, %v): id %d out of range", name, s, special, id)
			}
		}
		if lossless && !special {
			if got := tok.Decode(ids, false); got != s {
				t.Fatalf("%s: Decode(Encode(%q, %v)) = %q (ids %v)", name, s, special, got, ids)
			}
		}
		d := tok.NewDecoder(true)
		var got, want []byte
		for _, id := range ids {
			got = append(got, d.Add(id)...)
			want = append(want, tok.Piece(id)...)
		}
		got = append(got, d.Flush()...)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: streamed %q, pieces %q", name, got, want)
		}
	}
}

// FuzzEncodeSPM checks the SentencePiece-style vocabularies on random text.
// They are lossless on valid UTF-8, except that a literal "▁" decodes as a
// space, and that Phi-3 strips the spaces after its user-defined "</s>".
func FuzzEncodeSPM(f *testing.F) {
	addSeeds(f, "llama-spm")
	spm := loadVocab(f, "llama-spm")
	phi := loadVocab(f, "phi-3")
	f.Fuzz(func(t *testing.T, s string) {
		ok := utf8.ValidString(s) && !strings.Contains(s, spaceMark)
		checkEncode(t, spm, "llama-spm", s, ok)
		checkEncode(t, phi, "phi-3", s, ok && !strings.Contains(s, "</s>"))
	})
}

// FuzzEncodeBPE checks the byte-level BPE vocabularies on random text. A
// vocabulary is lossless on every text whose bytes all have a byte-level
// token: any input for GPT-2, valid UTF-8 for DeepSeek and StarCoder (which
// lack tokens for bytes that never occur in UTF-8, and for 0xF1, which starts
// only unassigned characters), and text without some ASCII control
// characters for Falcon.
func FuzzEncodeBPE(f *testing.F) {
	addSeeds(f, "gpt-2")
	names := []string{"gpt-2", "deepseek-llm", "starcoder", "falcon"}
	toks := make([]*Tokenizer, len(names))
	for i, n := range names {
		toks[i] = loadVocab(f, n)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tok := range toks {
			checkEncode(t, tok, names[i], s, byteTokensCover(tok, s))
		}
	})
}

// byteTokensCover reports whether every byte of s has a normal byte-level
// token in tok.
func byteTokensCover(tok *Tokenizer, s string) bool {
	for i := 0; i < len(s); i++ {
		id, ok := tok.ID(string(byteRune[s[i]]))
		if !ok || tok.Type(id) != TypeNormal {
			return false
		}
	}
	return true
}

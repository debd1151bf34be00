package synth

import "fmt"

// The placeholder vocabulary is a SentencePiece ("llama") vocabulary of the
// model's size: <unk>, <s>, </s>, the 256 byte tokens <0x00> … <0xFF>, then
// distinct pieces "▁", "▁a", "▁b", … "▁z", "▁aa", "▁ab", … with decreasing
// scores. Any text tokenizes (through the byte tokens at worst); the ids are
// the real model's only in number.
const vocabReserved = 3 + 256

// Token types of the GGUF vocabulary (tokenizer.ggml.token_type).
const (
	tokenNormal  int32 = 1
	tokenUnknown int32 = 2
	tokenControl int32 = 3
	tokenByte    int32 = 6
)

// placeholderVocab returns the tokens, scores and token types of a vocabulary
// of n tokens (n > vocabReserved).
func placeholderVocab(n int) (tokens []string, scores []float32, types []int32) {
	tokens = make([]string, 0, n)
	scores = make([]float32, n)
	types = make([]int32, 0, n)
	tokens = append(tokens, "<unk>", "<s>", "</s>")
	types = append(types, tokenUnknown, tokenControl, tokenControl)
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokenByte)
	}
	var buf []byte
	for k := -1; len(tokens) < n; k++ {
		buf = append(buf[:0], "▁"...)
		if k >= 0 {
			buf = appendLetters(buf, k)
		}
		tokens = append(tokens, string(buf))
		types = append(types, tokenNormal)
		scores[len(tokens)-1] = -float32(k + 1)
	}
	return tokens, scores, types
}

// appendLetters appends k in bijective base 26 written with a…z: 0 → "a",
// 25 → "z", 26 → "aa", … so that every k gives a different string.
func appendLetters(b []byte, k int) []byte {
	var tmp [16]byte
	i := len(tmp)
	for k++; k > 0; k = (k - 1) / 26 {
		i--
		tmp[i] = byte('a' + (k-1)%26)
	}
	return append(b, tmp[i:]...)
}

// vocabKVs returns the metadata of the placeholder vocabulary of n tokens;
// noSpacePrefix adds tokenizer.ggml.add_space_prefix = false, as Gemma's
// converter does.
func vocabKVs(n int, noSpacePrefix bool) []kv {
	tokens, scores, types := placeholderVocab(n)
	kvs := []kv{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.pre", "default"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}
	if noSpacePrefix {
		kvs = append(kvs, kv{"tokenizer.ggml.add_space_prefix", false})
	}
	return kvs
}

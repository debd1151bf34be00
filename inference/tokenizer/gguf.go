package tokenizer

import (
	"errors"
	"fmt"

	"github.com/edgellm/edgellm/gguf"
)

// GGUF metadata keys of the tokenizer.
const (
	keyModel          = "tokenizer.ggml.model"
	keyPre            = "tokenizer.ggml.pre"
	keyTokens         = "tokenizer.ggml.tokens"
	keyScores         = "tokenizer.ggml.scores"
	keyTokenType      = "tokenizer.ggml.token_type"
	keyMerges         = "tokenizer.ggml.merges"
	keyAddBOS         = "tokenizer.ggml.add_bos_token"
	keyAddEOS         = "tokenizer.ggml.add_eos_token"
	keyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
	keyName           = "general.name"
)

// VocabFromGGUF reads the vocabulary description from GGUF metadata, applying
// the defaults of the reference implementation for keys that are absent:
//
//   - "llama": BOS 1, EOS 2, UNK 0, AddBOS and AddSpacePrefix on;
//   - "gpt2": BOS and EOS 11 (when the vocabulary is that large), AddBOS on
//     only for the Llama-3 style pre-tokenizers.
//
// Special token ids in the metadata that are out of range are ignored.
func VocabFromGGUF(f *gguf.File) (Vocab, error) {
	v := NewVocab("", nil)
	var err error
	if v.Model, err = f.String(keyModel); err != nil {
		return v, fmt.Errorf("tokenizer: %w", err)
	}
	if v.Pre, err = optString(f, keyPre); err != nil {
		return v, err
	}
	if v.Name, err = optString(f, keyName); err != nil {
		return v, err
	}
	if v.Tokens, err = f.Strings(keyTokens); err != nil {
		return v, fmt.Errorf("tokenizer: %w", err)
	}
	n := len(v.Tokens)
	if v.Scores, err = f.Float32s(keyScores); err != nil {
		if !errors.Is(err, gguf.ErrNotFound) {
			return v, fmt.Errorf("tokenizer: %w", err)
		}
		v.Scores = nil
	}
	if v.Scores != nil && len(v.Scores) != n {
		return v, fmt.Errorf("tokenizer: %s has %d entries for %d tokens", keyScores, len(v.Scores), n)
	}
	types, err := f.Int32s(keyTokenType)
	if err != nil && !errors.Is(err, gguf.ErrNotFound) {
		return v, fmt.Errorf("tokenizer: %w", err)
	}
	if err == nil {
		if len(types) != n {
			return v, fmt.Errorf("tokenizer: %s has %d entries for %d tokens", keyTokenType, len(types), n)
		}
		v.Types = make([]TokenType, n)
		for i, ty := range types {
			v.Types[i] = TokenType(ty)
		}
	}

	switch v.Model {
	case ModelSPM:
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS = true
		v.AddSpacePrefix = true
	case ModelBPE:
		if v.Merges, err = f.Strings(keyMerges); err != nil {
			return v, fmt.Errorf("tokenizer: %w", err)
		}
		v.BOS, v.EOS = 11, 11
		switch v.Pre {
		case "llama3", "llama-v3", "llama-bpe", "falcon3", "tekken", "chameleon":
			v.AddBOS = true
		case "chatglm-bpe":
			v.BOS = NoToken
		}
	default:
		return v, fmt.Errorf("tokenizer: unsupported tokenizer model %q", v.Model)
	}
	for _, id := range []*int32{&v.BOS, &v.EOS, &v.UNK} {
		if *id >= int32(n) {
			*id = NoToken
		}
	}

	for _, k := range []struct {
		key string
		id  *int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS},
		{"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.eot_token_id", &v.EOT},
		{"tokenizer.ggml.eom_token_id", &v.EOM},
		{"tokenizer.ggml.unknown_token_id", &v.UNK},
		{"tokenizer.ggml.seperator_token_id", &v.SEP}, // sic
		{"tokenizer.ggml.padding_token_id", &v.PAD},
		{"tokenizer.ggml.fim_pre_token_id", &v.FIMPre},
		{"tokenizer.ggml.fim_suf_token_id", &v.FIMSuf},
		{"tokenizer.ggml.fim_mid_token_id", &v.FIMMid},
		{"tokenizer.ggml.fim_pad_token_id", &v.FIMPad},
		{"tokenizer.ggml.fim_rep_token_id", &v.FIMRep},
		{"tokenizer.ggml.fim_sep_token_id", &v.FIMSep},
		// deprecated names of the FIM ids
		{"tokenizer.ggml.prefix_token_id", &v.FIMPre},
		{"tokenizer.ggml.suffix_token_id", &v.FIMSuf},
		{"tokenizer.ggml.middle_token_id", &v.FIMMid},
	} {
		u, err := f.Uint(k.key)
		if errors.Is(err, gguf.ErrNotFound) {
			continue
		}
		if err != nil {
			return v, fmt.Errorf("tokenizer: %w", err)
		}
		if u < uint64(n) {
			*k.id = int32(u)
		}
	}
	for _, k := range []struct {
		key string
		b   *bool
	}{{keyAddBOS, &v.AddBOS}, {keyAddEOS, &v.AddEOS}, {keyAddSpacePrefix, &v.AddSpacePrefix}} {
		b, err := f.Bool(k.key)
		if errors.Is(err, gguf.ErrNotFound) {
			continue
		}
		if err != nil {
			return v, fmt.Errorf("tokenizer: %w", err)
		}
		*k.b = b
	}
	return v, nil
}

// FromGGUF builds the tokenizer described by the metadata of a GGUF file.
// The tokenizer refers to the token, score and merge arrays of f's metadata
// (see [New]), which are ordinary heap memory rather than part of the file
// mapping, so f may be closed; its metadata must not be modified.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := VocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// optString returns the string value of key, or "" when it is absent.
func optString(f *gguf.File, key string) (string, error) {
	s, err := f.String(key)
	if errors.Is(err, gguf.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("tokenizer: %w", err)
	}
	return s, nil
}

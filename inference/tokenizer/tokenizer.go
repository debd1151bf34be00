// Package tokenizer turns text into token ids and token ids back into text for
// the vocabularies stored in GGUF files.
//
// Two tokenizer models are supported, selected by tokenizer.ggml.model:
//
//   - "llama": SentencePiece-style BPE. Spaces become "▁", a "▁" is put in
//     front of the text when the vocabulary asks for a space prefix, adjacent
//     symbols are merged by token score (highest first, leftmost on ties) and
//     characters without a token fall back to <0xNN> byte tokens.
//   - "gpt2": byte-level BPE. The text is first split by the pre-tokenizer
//     named by tokenizer.ggml.pre (hand-written equivalents of the regular
//     expressions the original tokenizers use), every byte is mapped to a
//     printable character, and adjacent symbols are merged by merge rank.
//
// Control, unknown and user-defined tokens ("special" tokens) are split out of
// the text before either model runs; see [Tokenizer.Encode].
//
// A Tokenizer is immutable after construction and safe for concurrent use.
// A [Decoder] is not: use one per generation stream.
package tokenizer

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// TokenType is the kind of a token, with the values used by
// tokenizer.ggml.token_type in GGUF files.
type TokenType int32

// Token types.
const (
	TypeUndefined   TokenType = 0 // no type given
	TypeNormal      TokenType = 1 // ordinary text token
	TypeUnknown     TokenType = 2 // the unknown token (and unused padding in some vocabularies)
	TypeControl     TokenType = 3 // control token such as BOS/EOS, never produced from text unless special parsing is on
	TypeUserDefined TokenType = 4 // added token, always matched literally in the text
	TypeUnused      TokenType = 5 // placeholder that is never produced
	TypeByte        TokenType = 6 // SentencePiece byte-fallback token <0xNN>
)

// NoToken marks an absent special token id in a [Vocab].
const NoToken int32 = -1

// Model names accepted in [Vocab.Model].
const (
	ModelSPM = "llama" // SentencePiece-style BPE with byte fallback
	ModelBPE = "gpt2"  // byte-level BPE with a pre-tokenizer
)

// Vocab is the raw description of a vocabulary, as stored in GGUF metadata.
// [FromGGUF] fills it from a file; [New] builds a Tokenizer from it.
//
// The Tokenizer keeps referring to Tokens, Scores and Merges: once New has
// been called they must not be modified.
//
// Special token ids use [NoToken] (-1) for "none". When EOT, EOM or one of the
// FIM ids is NoToken, New looks for a token with a well-known text (for
// example "<|eot_id|>", "<|im_end|>" or "<|fim_prefix|>"), as the reference
// implementation does, and makes such tokens control tokens. [NewVocab]
// returns a Vocab with every special id set to NoToken.
type Vocab struct {
	Model string // ModelSPM ("llama") or ModelBPE ("gpt2")
	Pre   string // pre-tokenizer name (tokenizer.ggml.pre); used by "gpt2" only, "" means "default"
	Name  string // model name (general.name); enables model-specific quirks (Phi-3 strips spaces after special tokens)

	Tokens []string    // token texts; the id of a token is its index
	Scores []float32   // merge scores ("llama"); nil means all zero
	Types  []TokenType // token types; nil means all TypeNormal
	Merges []string    // merge rules "left right", ranked by index ("gpt2")

	BOS, EOS, EOT, EOM, UNK, PAD, SEP int32 // special token ids, NoToken when absent

	// FIM (fill-in-the-middle) token ids, NoToken when absent. The pad,
	// repo and file-separator tokens end generation.
	FIMPre, FIMSuf, FIMMid, FIMPad, FIMRep, FIMSep int32

	AddBOS         bool // Encode with special=true starts the output with BOS
	AddEOS         bool // Encode with special=true ends the output with EOS
	AddSpacePrefix bool // "llama": a space is put before the text (and after every special token)
}

// NewVocab returns a Vocab of the given model and tokens with every special
// token id set to NoToken and every flag off.
func NewVocab(model string, tokens []string) Vocab {
	return Vocab{Model: model, Tokens: tokens,
		BOS: NoToken, EOS: NoToken, EOT: NoToken, EOM: NoToken, UNK: NoToken, PAD: NoToken, SEP: NoToken,
		FIMPre: NoToken, FIMSuf: NoToken, FIMMid: NoToken, FIMPad: NoToken, FIMRep: NoToken, FIMSep: NoToken}
}

// token attribute bits, as used internally.
type attr uint8

const (
	attrLStrip attr = 1 << iota // strip whitespace left of the token when it is split out of text
	attrRStrip                  // strip whitespace right of the token when it is split out of text
)

// Tokenizer encodes text to token ids and decodes ids back to bytes.
//
// It refers to the Tokens, Scores and Merges slices of the [Vocab] it was
// built from instead of copying them, and indexes them compactly; see [New].
type Tokenizer struct {
	v Vocab // effective vocabulary (special ids resolved); Types is nil, see types

	// types holds the type of every token that fits in a byte below
	// typeWide; the others are typeWide here and kept in wideTypes.
	types     []uint8
	wideTypes map[int32]TokenType

	index         tokenIndex       // token text → id
	emptyText     map[int32]string // texts of the tokens stored as "" (see emptyTokenText)
	maxTokenBytes int              // the longest token text (see MaxTokenBytes)
	isBPE         bool
	byteID        [256]int32 // "llama": byte → byte-fallback token id, or -1

	// "gpt2"
	mergeRank    []int32          // token id → lowest rank of the merge rules making it, or -1 (see buildMerges)
	mergeExtra   map[string]int32 // merge rules mergeRank does not cover, "left right" → rank
	pre          *preTokenizer
	ignoreMerges bool // a whole pre-token that is itself a token is not merged (Llama 3)

	special     []int32        // control, user-defined and unknown token ids, longest text first
	specialAttr []attr         // strip flags of special[i]
	eog         map[int32]bool // end-of-generation ids

	pieceBuf  []byte  // all decoded pieces, back to back
	pieceOffs []int32 // piece i is pieceBuf[pieceOffs[i]:pieceOffs[i+1]]

	pool sync.Pool // *scratch
}

// typeWide marks, in Tokenizer.types, a token type that does not fit below it.
const typeWide = 0xFF

// eotTexts, eogTexts and the fim lists are the token texts the reference
// implementation recognises when the metadata does not name the ids.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "<｜end▁of▁sentence｜>"}
	eomTexts = []string{"<|eom_id|>"}
	fimPre   = []string{"<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>", "<PRE>"}
	fimSuf   = []string{"<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>", "<SUF>"}
	fimMid   = []string{"<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>", "<MID>"}
	fimPad   = []string{"<|fim_pad|>", "<fim-pad>", "<PAD>"}
	fimRep   = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"}
	fimSep   = []string{"<|file_sep|>"}
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>"}
)

// New builds a Tokenizer from a vocabulary description.
//
// The Tokenizer keeps references to v.Tokens, v.Scores and v.Merges instead
// of copying them (they are most of a vocabulary's size, and a GGUF file
// already holds them): the caller must not modify those slices, or the
// strings they hold, afterwards. v.Types is copied in a compact form, and
// the struct v itself may be reused.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: empty vocabulary")
	}
	if n > 1<<31-1 {
		return nil, fmt.Errorf("tokenizer: vocabulary of %d tokens is too large", n)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	t := &Tokenizer{v: v}
	t.v.Types = nil
	if v.Model != ModelBPE {
		t.v.Merges = nil // unused
	}
	if err := t.buildIndex(); err != nil {
		return nil, err
	}
	t.types = make([]uint8, n)
	for i := range t.types {
		ty := TypeNormal
		if v.Types != nil {
			ty = v.Types[i]
		}
		t.setType(int32(i), ty)
	}

	for _, id := range []struct {
		name string
		id   int32
	}{{"BOS", v.BOS}, {"EOS", v.EOS}, {"EOT", v.EOT}, {"EOM", v.EOM}, {"UNK", v.UNK}, {"PAD", v.PAD}, {"SEP", v.SEP},
		{"FIM prefix", v.FIMPre}, {"FIM suffix", v.FIMSuf}, {"FIM middle", v.FIMMid}, {"FIM pad", v.FIMPad}, {"FIM repo", v.FIMRep}, {"FIM separator", v.FIMSep}} {
		if id.id < NoToken || id.id >= int32(n) {
			return nil, fmt.Errorf("tokenizer: %s token id %d out of range [0, %d)", id.name, id.id, n)
		}
	}
	if v.AddBOS && v.BOS == NoToken {
		return nil, fmt.Errorf("tokenizer: the vocabulary adds BOS but has no BOS token")
	}
	if v.AddEOS && v.EOS == NoToken {
		return nil, fmt.Errorf("tokenizer: the vocabulary adds EOS but has no EOS token")
	}

	switch v.Model {
	case ModelSPM:
		for b := range t.byteID {
			t.byteID[b] = NoToken
			if id, ok := t.lookupString(fmt.Sprintf("<0x%02X>", b)); ok {
				t.byteID[b] = id
			} else if id, ok := t.lookupString(string([]byte{byte(b)})); ok {
				t.byteID[b] = id
			}
		}
	case ModelBPE:
		t.isBPE = true
		pre, err := newPreTokenizer(v.Pre)
		if err != nil {
			return nil, err
		}
		t.pre = pre
		t.ignoreMerges = pre.ignoreMerges
		t.buildMerges()
	default:
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer model %q (want %q or %q)", v.Model, ModelSPM, ModelBPE)
	}

	t.resolveSpecial()
	t.buildSpecialCache()
	t.buildPieces()
	return t, nil
}

// typ returns the type of token id, which must be in range.
func (t *Tokenizer) typ(id int32) TokenType {
	if b := t.types[id]; b != typeWide {
		return TokenType(b)
	}
	return t.wideTypes[id]
}

// setType sets the type of token id.
func (t *Tokenizer) setType(id int32, ty TokenType) {
	if ty >= 0 && ty < typeWide {
		t.types[id] = uint8(ty)
		delete(t.wideTypes, id)
		return
	}
	if t.wideTypes == nil {
		t.wideTypes = make(map[int32]TokenType)
	}
	t.types[id] = typeWide
	t.wideTypes[id] = ty
}

// findByText returns the id of the first text of names present in the
// vocabulary, or NoToken.
func (t *Tokenizer) findByText(names []string) int32 {
	for _, s := range names {
		if id, ok := t.lookupString(s); ok {
			return id
		}
	}
	return NoToken
}

// resolveSpecial fills EOT/EOM/FIM ids from well-known token texts when the
// metadata does not give them, computes the end-of-generation set, and marks
// the tokens involved as control tokens, as the reference does.
func (t *Tokenizer) resolveSpecial() {
	v := &t.v
	for _, s := range []struct {
		id    *int32
		texts []string
	}{{&v.EOT, eotTexts}, {&v.EOM, eomTexts}, {&v.FIMPre, fimPre}, {&v.FIMSuf, fimSuf}, {&v.FIMMid, fimMid},
		{&v.FIMPad, fimPad}, {&v.FIMRep, fimRep}, {&v.FIMSep, fimSep}} {
		if *s.id == NoToken {
			if id := t.findByText(s.texts); id != NoToken {
				*s.id = id
				t.setType(id, TypeControl)
			}
		}
	}
	t.eog = make(map[int32]bool)
	for _, id := range []int32{v.FIMPad, v.FIMRep, v.FIMSep, v.EOS, v.EOT, v.EOM} {
		if id != NoToken {
			t.eog[id] = true
		}
	}
	for _, s := range eogTexts {
		if id, ok := t.lookupString(s); ok {
			t.eog[id] = true
			t.setType(id, TypeControl)
		}
	}
}

// isSpecialType reports whether tokens of type ty are split out of the text
// before tokenization.
func isSpecialType(ty TokenType) bool {
	return ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown
}

// buildSpecialCache lists the special tokens longest text first (ties by id)
// and applies the per-model strip quirks of the reference implementation.
func (t *Tokenizer) buildSpecialCache() {
	for id := range t.types {
		if isSpecialType(t.typ(int32(id))) {
			t.special = append(t.special, int32(id))
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(t.text(t.special[a])) > len(t.text(t.special[b]))
	})

	// Only the flags of special tokens matter: no other token is split out.
	attrs := map[int32]attr{}
	name := strings.ToLower(t.v.Name)
	switch {
	case strings.Contains(t.v.Pre, "jina-v2-de") || strings.Contains(t.v.Pre, "jina-v2-es") || strings.Contains(t.v.Pre, "jina-v2-code"):
		if id, ok := t.lookupString("<mask>"); ok {
			attrs[id] |= attrLStrip
		}
	case strings.Contains(name, "phi-3") || strings.Contains(name, "phi3"):
		for _, id := range t.special {
			attrs[id] |= attrRStrip
		}
		if id, ok := t.lookupString("</s>"); ok {
			attrs[id] |= attrRStrip
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := t.lookupString(s); ok {
				attrs[id] &^= attrRStrip
			}
		}
	}
	t.specialAttr = make([]attr, len(t.special))
	for i, id := range t.special {
		t.specialAttr[i] = attrs[id]
	}
}

// NumTokens returns the number of tokens in the vocabulary.
func (t *Tokenizer) NumTokens() int { return len(t.types) }

// Model returns the tokenizer model, ModelSPM ("llama") or ModelBPE ("gpt2").
func (t *Tokenizer) Model() string { return t.v.Model }

// Pre returns the pre-tokenizer name of a "gpt2" vocabulary.
func (t *Tokenizer) Pre() string { return t.v.Pre }

// BOS returns the beginning-of-sequence token id, or NoToken.
func (t *Tokenizer) BOS() int32 { return t.v.BOS }

// EOS returns the end-of-sequence token id, or NoToken.
func (t *Tokenizer) EOS() int32 { return t.v.EOS }

// EOT returns the end-of-turn token id, or NoToken.
func (t *Tokenizer) EOT() int32 { return t.v.EOT }

// UNK returns the unknown token id, or NoToken.
func (t *Tokenizer) UNK() int32 { return t.v.UNK }

// PAD returns the padding token id, or NoToken.
func (t *Tokenizer) PAD() int32 { return t.v.PAD }

// AddBOS reports whether Encode with special=true starts with BOS.
func (t *Tokenizer) AddBOS() bool { return t.v.AddBOS }

// AddEOS reports whether Encode with special=true ends with EOS.
func (t *Tokenizer) AddEOS() bool { return t.v.AddEOS }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and the tokens the
// reference treats alike, such as "<|im_end|>" or "<|endoftext|>").
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// EOG returns the end-of-generation token ids in increasing order.
func (t *Tokenizer) EOG() []int32 {
	ids := make([]int32, 0, len(t.eog))
	for id := range t.eog {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	return ids
}

// Type returns the type of token id (TypeUndefined when id is out of range).
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TypeUndefined
	}
	return t.typ(id)
}

// IsControl reports whether id is a control token (BOS, EOS, chat markers...).
func (t *Tokenizer) IsControl(id int32) bool { return t.Type(id) == TypeControl }

// Text returns the raw text of token id as stored in the vocabulary ("▁the",
// "Ġthe", "<0x0A>"...), or "" when id is out of range.
func (t *Tokenizer) Text(id int32) string {
	if id < 0 || int(id) >= len(t.v.Tokens) {
		return ""
	}
	return t.text(id)
}

// ID returns the id of the token whose raw text is s.
func (t *Tokenizer) ID(s string) (int32, bool) {
	return t.lookupString(s)
}

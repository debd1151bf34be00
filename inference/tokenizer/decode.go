package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// buildPieces computes the bytes every token decodes to.
func (t *Tokenizer) buildPieces() {
	n := len(t.types)
	t.pieceOffs = make([]int32, n+1)
	// A piece is never longer than its token's text, so this is enough
	// unless the vocabulary is malformed.
	size := 0
	for id := 0; id < n; id++ {
		size += len(t.text(int32(id)))
	}
	buf := make([]byte, 0, size)
	for id := 0; id < n; id++ {
		t.pieceOffs[id] = int32(len(buf))
		buf = t.appendPiece(buf, int32(id))
	}
	t.pieceOffs[n] = int32(len(buf))
	if cap(buf)-len(buf) > len(buf)/16 {
		buf = append([]byte(nil), buf...) // do not keep the slack
	}
	t.pieceBuf = buf
}

// appendPiece appends the decoded bytes of token id to b.
func (t *Tokenizer) appendPiece(b []byte, id int32) []byte {
	text := t.text(id)
	switch ty := t.typ(id); {
	case isSpecialType(ty):
		return append(b, text...)
	case ty == TypeNormal && !t.isBPE:
		return append(b, strings.ReplaceAll(text, spaceMark, " ")...)
	case ty == TypeNormal && t.isBPE:
		for _, r := range text {
			if c, ok := byteOfRune(r); ok {
				b = append(b, c)
			} else {
				// not a byte-level character (malformed vocabulary): keep it
				b = utf8.AppendRune(b, r)
			}
		}
		return b
	case ty == TypeByte && !t.isBPE:
		// "<0xNN>"
		if len(text) == 6 && strings.HasPrefix(text, "<0x") && text[5] == '>' {
			if v, err := strconv.ParseUint(text[3:5], 16, 8); err == nil {
				return append(b, byte(v))
			}
		}
		return append(b, text...)
	}
	// unused, undefined (and byte tokens of a BPE vocabulary) decode to nothing
	return b
}

// Piece returns the bytes token id decodes to: the text of a normal token
// ("▁" turned back into a space, byte-level characters turned back into
// bytes), the single byte of a <0xNN> byte token, and the literal text of
// control, user-defined and unknown tokens ("</s>"). Unused tokens and ids out
// of range give nil. A piece need not be valid UTF-8 on its own. The returned
// slice is shared: do not modify it.
func (t *Tokenizer) Piece(id int32) []byte {
	if id < 0 || int(id) >= len(t.types) {
		return nil
	}
	return t.pieceBuf[t.pieceOffs[id]:t.pieceOffs[id+1]:t.pieceOffs[id+1]]
}

// hidden reports whether id is left out of decoded text when special tokens
// are not rendered.
func (t *Tokenizer) hidden(id int32) bool {
	ty := t.typ(id)
	return ty == TypeControl || ty == TypeUnknown
}

// Decode returns the text of a whole token sequence, the inverse of Encode.
// With special unset, control and unknown tokens (BOS, EOS, chat markers) are
// left out; with special set they appear as their text. Ids out of range are
// skipped.
//
// For SentencePiece vocabularies with AddSpacePrefix, the space that Encode
// put in front of the text is removed: one leading space of the first token
// that is not a control or unknown token, when only such tokens precede it.
//
// Decode(Encode(s, false), false) == s for valid UTF-8 s whose every byte the
// vocabulary can represent (byte-fallback or byte-level tokens), except that
// a literal "▁" in SentencePiece input comes back as a space, and that
// whitespace a vocabulary strips around special tokens (Phi-3) is lost.
func (t *Tokenizer) Decode(ids []int32, special bool) string {
	var b []byte
	strip := t.v.AddSpacePrefix
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.types) {
			continue
		}
		if t.hidden(id) {
			if special {
				b = append(b, t.Piece(id)...)
			}
			continue
		}
		p := t.Piece(id)
		if strip && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		strip = false
		b = append(b, p...)
	}
	return string(b)
}

// Decoder turns a stream of token ids into text, one token at a time, and
// returns only complete UTF-8 characters: the bytes of a character split over
// several tokens (byte-fallback tokens, byte-level BPE pieces) are held back
// until the character is complete. Bytes that can never start or continue a
// valid character are passed through as they are, so the concatenation of
// everything a Decoder returns, up to and including Flush, equals the
// concatenation of the pieces.
//
// A Decoder does not strip the space prefix (see Decode): it is meant for
// generated tokens, which continue a prompt. After the first few calls it
// does not allocate. It is not safe for concurrent use.
type Decoder struct {
	t       *Tokenizer
	special bool
	out     []byte
	pend    [utf8.UTFMax]byte
	npend   int
}

// NewDecoder returns a streaming decoder. With special set, control and
// unknown tokens produce their text; otherwise they produce nothing.
func (t *Tokenizer) NewDecoder(special bool) *Decoder {
	return &Decoder{t: t, special: special, out: make([]byte, 0, 64)}
}

// Add decodes one more token and returns the text that is now complete. The
// returned slice is valid until the next call on d.
func (d *Decoder) Add(id int32) []byte { return d.add(id, d.special) }

// AddSpecial is Add writing the text of a control or unknown token even
// when d leaves them out: for the few control tokens a caller reads in the
// text (reasoning markers and tool-call marks that some vocabularies make
// control tokens, such as Mistral's [TOOL_CALLS]).
func (d *Decoder) AddSpecial(id int32) []byte { return d.add(id, true) }

func (d *Decoder) add(id int32, special bool) []byte {
	var p []byte
	if id >= 0 && int(id) < len(d.t.types) && (special || !d.t.hidden(id)) {
		p = d.t.Piece(id)
	}
	out := append(d.out[:0], d.pend[:d.npend]...)
	out = append(out, p...)
	d.out = out
	// Hold back an unfinished character at the end: find the last byte that
	// is not a continuation byte among the last UTFMax-1 bytes.
	cut := len(out)
	for i := len(out) - 1; i >= 0 && i >= len(out)-(utf8.UTFMax-1); i-- {
		if out[i]&0xC0 != 0x80 {
			if !utf8.FullRune(out[i:]) {
				cut = i
			}
			break
		}
	}
	d.npend = copy(d.pend[:], out[cut:])
	return out[:cut]
}

// Flush returns the bytes held back (an unfinished character at the end of
// the stream, passed through as is) and resets the decoder.
func (d *Decoder) Flush() []byte {
	out := append(d.out[:0], d.pend[:d.npend]...)
	d.out = out
	d.npend = 0
	return out
}

// Pending reports how many bytes are held back waiting for the rest of a
// character.
func (d *Decoder) Pending() int { return d.npend }

// Reset drops any held-back bytes.
func (d *Decoder) Reset() { d.npend = 0 }

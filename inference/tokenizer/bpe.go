package tokenizer

import "unicode/utf8"

// Byte-level BPE stores text with every byte replaced by a printable
// character: the printable ASCII and Latin-1 bytes stand for themselves and
// the others (controls, space, DEL, NBSP, soft hyphen...) are moved, in byte
// order, to U+0100 and up. So a space is "Ġ" (U+0120) and a newline "Ċ".
var (
	byteRune [256]rune    // byte → its character
	byteUTF8 [256][2]byte // UTF-8 of byteRune (always 1 or 2 bytes)
	byteULen [256]uint8   // length of byteUTF8
	runeByte [512]int16   // character → byte, or -1 (every character is below U+0200)
)

func init() {
	for r := range runeByte {
		runeByte[r] = -1
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= 0x21 && b <= 0x7E || b >= 0xA1 && b <= 0xAC || b >= 0xAE) {
			r = 256 + n
			n++
		}
		byteRune[b] = r
		byteULen[b] = uint8(utf8.EncodeRune(byteUTF8[b][:], r))
		runeByte[r] = int16(b)
	}
}

// byteOfRune returns the byte that byte-level character r stands for.
func byteOfRune(r rune) (byte, bool) {
	if r < 0 || int(r) >= len(runeByte) || runeByte[r] < 0 {
		return 0, false
	}
	return byte(runeByte[r]), true
}

// bpePrio is the merge priority of two byte-level symbols: minus the rank of
// the merge rule "left right".
func (t *Tokenizer) bpePrio(sc *scratch, l, r *symbol) (float64, bool) {
	rank, ok := t.mergeRankOf(sc, l, r)
	return -float64(rank), ok
}

// encodeBPE appends the tokens of one text fragment (no special tokens in it).
func (t *Tokenizer) encodeBPE(dst []int32, text string, sc *scratch) []int32 {
	ends := t.pre.split(text, sc)
	start := 0
	for _, end := range ends {
		dst = t.encodeWord(dst, text[start:end], sc)
		start = end
	}
	return dst
}

// encodeWord appends the tokens of one pre-tokenized word.
func (t *Tokenizer) encodeWord(dst []int32, word string, sc *scratch) []int32 {
	w := sc.word[:0]
	for i := 0; i < len(word); i++ {
		b := word[i]
		w = append(w, byteUTF8[b][:byteULen[b]]...)
	}
	sc.word = w
	if t.ignoreMerges {
		if id, ok := t.lookup(w); ok {
			return append(dst, id)
		}
	}
	initSymbols(sc)
	mergeSymbols(sc, t.bpePrio)
	for i := 0; i >= 0 && len(sc.syms) > 0; i = sc.syms[i].next {
		s := sc.syms[i]
		piece := w[s.start : s.start+s.n]
		if id, ok := t.lookup(piece); ok {
			dst = append(dst, id)
			continue
		}
		// Not a token: emit its characters one by one; a character with no
		// token is dropped, as the reference does.
		for j := 0; j < len(piece); {
			_, n := utf8.DecodeRune(piece[j:])
			if id, ok := t.lookup(piece[j : j+n]); ok {
				dst = append(dst, id)
			}
			j += n
		}
	}
	return dst
}

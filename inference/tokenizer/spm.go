package tokenizer

import "fmt"

// spaceMark is the SentencePiece escape for a space, U+2581 "▁".
const spaceMark = "\u2581"

// spmPrio is the merge priority of two SentencePiece symbols: the score of the
// token their concatenation forms.
func (t *Tokenizer) spmPrio(sc *scratch, l, r *symbol) (float64, bool) {
	id, ok := t.lookup(sc.word[l.start : l.start+l.n+r.n])
	if !ok {
		return 0, false
	}
	var score float32
	if t.v.Scores != nil {
		score = t.v.Scores[id]
	}
	return float64(score), true
}

// encodeSPM appends the tokens of one text fragment (no special tokens in it).
// prefix puts a space in front of the text.
func (t *Tokenizer) encodeSPM(dst []int32, text string, prefix bool, sc *scratch) ([]int32, error) {
	w := sc.word[:0]
	if prefix {
		w = append(w, spaceMark...)
	}
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' {
			w = append(w, spaceMark...)
		} else {
			w = append(w, text[i])
		}
	}
	sc.word = w
	initSymbols(sc)
	mergeSymbols(sc, t.spmPrio)

	for i := 0; i >= 0 && len(sc.syms) > 0; i = sc.syms[i].next {
		s := sc.syms[i]
		piece := w[s.start : s.start+s.n]
		if id, ok := t.lookup(piece); ok {
			dst = append(dst, id)
			continue
		}
		// no token for this character: byte fallback, else one unknown token
		if t.hasByteTokens(piece) {
			for _, b := range piece {
				dst = append(dst, t.byteID[b])
			}
			continue
		}
		if t.v.UNK == NoToken {
			return dst, fmt.Errorf("tokenizer: no token for %q and no unknown token", piece)
		}
		dst = append(dst, t.v.UNK)
	}
	return dst, nil
}

// hasByteTokens reports whether every byte of b has a byte-fallback token.
func (t *Tokenizer) hasByteTokens(b []byte) bool {
	for _, c := range b {
		if t.byteID[c] == NoToken {
			return false
		}
	}
	return true
}

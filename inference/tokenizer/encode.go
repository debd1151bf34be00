package tokenizer

import "strings"

// fragment is a part of the text being encoded: either raw text
// text[start:end] (tok < 0) or a special token split out of it.
type fragment struct {
	tok        int32
	start, end int
}

// isASCIISpace is C's isspace in the "C" locale, which the reference uses to
// strip text around special tokens.
func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// partition splits text into raw-text fragments and special tokens. Special
// tokens are taken longest first: every occurrence of the longest one is
// split out, then the next one is searched in the remaining text, and so on.
// User-defined tokens are always split out; control and unknown tokens only
// when parseSpecial is set.
func (t *Tokenizer) partition(text string, parseSpecial bool, sc *scratch) []fragment {
	frags := sc.frags[:0]
	if text != "" {
		frags = append(frags, fragment{tok: -1, start: 0, end: len(text)})
	}
	// bytes present in the text: a token whose first byte is absent cannot occur
	var present [256]bool
	for i := 0; i < len(text); i++ {
		present[text[i]] = true
	}
	next := sc.frags2[:0]
	for si, id := range t.special {
		ty := t.typ(id)
		if !parseSpecial && ty != TypeUserDefined {
			continue
		}
		tok := t.text(id)
		if !present[tok[0]] {
			continue
		}
		// cheap test first: most special tokens do not occur at all
		found := false
		for _, f := range frags {
			if f.tok < 0 && f.end-f.start >= len(tok) && strings.Contains(text[f.start:f.end], tok) {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.tok >= 0 {
				next = append(next, f)
				continue
			}
			pos, end := f.start, f.end
			for pos < end {
				i := strings.Index(text[pos:end], tok)
				if i < 0 {
					break
				}
				m := pos + i
				left := m
				if t.specialAttr[si]&attrLStrip != 0 {
					for left > pos && isASCIISpace(text[left-1]) {
						left--
					}
				}
				if left > pos {
					next = append(next, fragment{tok: -1, start: pos, end: left})
				}
				next = append(next, fragment{tok: id})
				pos = m + len(tok)
				if t.specialAttr[si]&attrRStrip != 0 {
					for pos < end && isASCIISpace(text[pos]) {
						pos++
					}
				}
			}
			if pos < end {
				next = append(next, fragment{tok: -1, start: pos, end: end})
			}
		}
		frags, next = next, frags // swap the two buffers; they never share an array
	}
	sc.frags, sc.frags2 = frags, next
	return frags
}

// Encode returns the token ids of text.
//
// With special set, the output starts with BOS and ends with EOS when the
// vocabulary asks for them (AddBOS, AddEOS), and control tokens written in the
// text (such as "<|im_start|>" or "<s>") become their ids. With special unset
// neither happens: control-token text is tokenized as ordinary text.
// User-defined (added) tokens are matched in the text either way, as in the
// original tokenizers.
//
// For SentencePiece vocabularies with AddSpacePrefix, a space is put in front
// of the text and after every special token, so "Hello" encodes as "▁Hello".
func (t *Tokenizer) Encode(text string, special bool) ([]int32, error) {
	return t.AppendEncode(nil, text, special)
}

// AppendEncode is like Encode but appends the ids to dst and returns the
// extended slice.
func (t *Tokenizer) AppendEncode(dst []int32, text string, special bool) ([]int32, error) {
	sc := t.getScratch()
	defer t.putScratch(sc)
	frags := t.partition(text, special, sc)
	if special && t.v.AddBOS {
		dst = append(dst, t.v.BOS)
	}
	prevSpecial := true // the text start counts as "after a special token"
	for _, f := range frags {
		if f.tok >= 0 {
			dst = append(dst, f.tok)
			prevSpecial = true
			continue
		}
		if t.isBPE {
			dst = t.encodeBPE(dst, text[f.start:f.end], sc)
		} else {
			var err error
			dst, err = t.encodeSPM(dst, text[f.start:f.end], t.v.AddSpacePrefix && prevSpecial, sc)
			if err != nil {
				return dst, err
			}
		}
		prevSpecial = false
	}
	if special && t.v.AddEOS {
		dst = append(dst, t.v.EOS)
	}
	return dst, nil
}

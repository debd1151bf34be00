package tokenizer

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The tokenizer keeps no copy of the token texts or merge rules: they stay in
// the caller's slices (for FromGGUF, the metadata arrays of the GGUF file),
// and the lookup structures below index them with a few bytes per token.

// tokenIndex maps token texts to ids. It is an open-addressing hash table
// with linear probing over the token texts: a slot holds id+1 in its low
// idBits bits (0 means empty) and, in the bits above, a tag taken from the top
// of the text's hash, so that most probes that cannot match are rejected
// without reading the text. The table has 5/4 as many slots as there are
// tokens (5 bytes per token), against roughly 40 bytes per token for a
// map[string]int32 plus a copy of every text. Its size need not be a power
// of two: a hash is mapped to its home slot by a multiply-shift.
type tokenIndex struct {
	seed    maphash.Seed // per-Tokenizer hash seed
	slots   []uint32     // n + n/4 + 1 slots: tag<<idBits | (id+1), or 0 when empty
	idBits  uint         // bits of a slot holding id+1
	tagBits uint         // bits of a slot holding the tag (32 - idBits)
}

// emptyTokenText is the text given to a token stored as "", as the reference
// does, so that every token has a distinct, non-empty text.
func emptyTokenText(id int) string { return "[EMPTY_" + strconv.Itoa(id) + "]" }

// text returns the text of token id, with "" replaced as emptyTokenText says.
func (t *Tokenizer) text(id int32) string {
	if s := t.v.Tokens[id]; s != "" {
		return s
	}
	return t.emptyText[id]
}

// buildIndex fills t.index and t.emptyText from t.v.Tokens. It fails when two
// tokens have the same text.
func (t *Tokenizer) buildIndex() error {
	n := len(t.v.Tokens)
	x := &t.index
	x.seed = maphash.MakeSeed()
	x.slots = make([]uint32, n+n/4+1)      // load factor at most 0.8, and a free slot
	x.idBits = uint(bits.Len32(uint32(n))) // id+1 <= n fits
	x.tagBits = 32 - x.idBits
	for i, s := range t.v.Tokens {
		if s == "" {
			if t.emptyText == nil {
				t.emptyText = make(map[int32]string)
			}
			s = emptyTokenText(i)
			t.emptyText[int32(i)] = s
		}
		h := maphash.String(x.seed, s)
		if j, dup := probe(t, h, s); dup {
			return fmt.Errorf("tokenizer: tokens %d and %d have the same text %q", j, i, s)
		}
		t.insert(h, int32(i))
		t.maxTokenBytes = max(t.maxTokenBytes, len(s))
	}
	return nil
}

// MaxTokenBytes bounds the bytes of text one token stands for: the longest
// token text (at least 4, a UTF-8 character an unknown token replaces). A
// text of n bytes therefore encodes to at least n/MaxTokenBytes tokens, which
// lets a caller refuse a text too long for its context without encoding it.
func (t *Tokenizer) MaxTokenBytes() int { return max(t.maxTokenBytes, utf8.UTFMax) }

// tag returns the slot tag of hash h, shifted into place.
func (x *tokenIndex) tag(h uint64) uint32 {
	return uint32(h>>(64-x.tagBits)) << x.idBits
}

// home returns the first slot of the probe sequence of hash h.
func (x *tokenIndex) home(h uint64) int {
	return int(uint64(uint32(h)) * uint64(len(x.slots)) >> 32)
}

// insert puts id, whose text hashes to h, into the first free slot of its
// probe sequence. The text must not be in the table yet.
func (t *Tokenizer) insert(h uint64, id int32) {
	x := &t.index
	for i := x.home(h); ; i++ {
		if i == len(x.slots) {
			i = 0
		}
		if x.slots[i] == 0 {
			x.slots[i] = x.tag(h) | uint32(id+1)
			return
		}
	}
}

// probe returns the id of the token whose text is key, which hashes to h.
func probe[K string | []byte](t *Tokenizer, h uint64, key K) (int32, bool) {
	x := &t.index
	tag := x.tag(h)
	idMask := uint32(1)<<x.idBits - 1
	for i := x.home(h); ; i++ {
		if i == len(x.slots) {
			i = 0
		}
		s := x.slots[i]
		if s == 0 {
			return NoToken, false
		}
		if s&^idMask == tag {
			id := int32(s&idMask) - 1
			if t.text(id) == string(key) {
				return id, true
			}
		}
	}
}

// lookup returns the id of the token whose text is b, without allocating.
func (t *Tokenizer) lookup(b []byte) (int32, bool) {
	return probe(t, maphash.Bytes(t.index.seed, b), b)
}

// lookupString returns the id of the token whose text is s.
func (t *Tokenizer) lookupString(s string) (int32, bool) {
	return probe(t, maphash.String(t.index.seed, s), s)
}

// Merge rules. A rule "L R" applies to two adjacent symbols with texts L and
// R. Symbols never contain a space (byte-level characters stand for the space
// byte), so only rules with exactly one space, neither first nor last, can
// ever apply; the others are dropped. When a rule appears several times, its
// first (lowest) rank counts.
//
// A rule that applies makes the symbol L+R. In real vocabularies L+R is
// always a token, and no two rules make the same token; so the rules are kept
// per resulting token: mergeRank[id] is the lowest rank of the rules making
// token id (-1 for none), and the symbols L, R are merged by that rule exactly
// when it splits the text of id at len(L), which the position of its space
// tells. The rules this does not cover (those making a text that is not a
// token, and those making a token that a lower-ranked rule with a different
// split also makes) go to mergeExtra, keyed by the rule text.

// buildMerges fills t.mergeRank and t.mergeExtra from t.v.Merges.
func (t *Tokenizer) buildMerges() {
	t.mergeRank = make([]int32, len(t.v.Tokens))
	for i := range t.mergeRank {
		t.mergeRank[i] = -1
	}
	var buf []byte
	for i, m := range t.v.Merges {
		k := strings.IndexByte(m, ' ')
		if k <= 0 || k == len(m)-1 || strings.IndexByte(m[k+1:], ' ') >= 0 {
			continue // never matches two symbols
		}
		buf = append(append(buf[:0], m[:k]...), m[k+1:]...)
		if id, ok := t.lookup(buf); ok {
			r := t.mergeRank[id]
			if r < 0 {
				t.mergeRank[id] = int32(i)
				continue
			}
			if t.v.Merges[r] == m {
				continue // repeated rule: the first rank counts
			}
		}
		if t.mergeExtra == nil {
			t.mergeExtra = make(map[string]int32)
		}
		if _, seen := t.mergeExtra[m]; !seen {
			t.mergeExtra[m] = int32(i)
		}
	}
}

// mergeRankOf returns the rank of the rule merging the adjacent symbols
// sc.word[l.start:l.start+l.n] and the r.n bytes after them.
func (t *Tokenizer) mergeRankOf(sc *scratch, l, r *symbol) (int32, bool) {
	if id, ok := t.lookup(sc.word[l.start : l.start+l.n+r.n]); ok {
		// the rule's text is the token's with a space inserted at its split
		if rank := t.mergeRank[id]; rank >= 0 && t.v.Merges[rank][l.n] == ' ' {
			return rank, true
		}
	}
	if t.mergeExtra == nil {
		return 0, false
	}
	k := append(sc.key[:0], sc.word[l.start:l.start+l.n]...)
	k = append(k, ' ')
	k = append(k, sc.word[r.start:r.start+r.n]...)
	sc.key = k
	rank, ok := t.mergeExtra[string(k)]
	return rank, ok
}

package grammar

import (
	"bytes"
	"sort"

	"github.com/edgellm/edgellm/inference/tokenizer"
)

// Vocab is what masking needs to know about a vocabulary, computed once per
// model by [NewVocab]: the bytes every token produces, arranged in a trie,
// and the tokens that are plain string content. It is immutable and safe for
// concurrent use.
//
// Only normal, user-defined and SentencePiece byte tokens with a non-empty
// piece take part in the text; control, unknown and unused tokens are
// always masked, and the end-of-generation tokens are allowed once the
// value is complete (and never as text). User-defined tokens are text: the
// decoder writes their text and the tokenizer matches it literally, so a
// model may write a mark such as Qwen's "</tool_call>" as the one token it
// was trained on.
type Vocab struct {
	tok *tokenizer.Tokenizer
	n   int // number of tokens

	// The trie over the pieces of text tokens, in preorder: node i is
	// reached from its parent (the closest earlier node of depth-1) by byte
	// nodes[i].b, and the tokens whose piece ends there are
	// ids[tok0[i]:tok0[i+1]].
	nodes []trieNode
	tok0  []int32
	ids   []int32

	text []bool // text[id]: the token takes part in the text (is in the trie)

	// String-safe tokens (see stringSafe), by number of characters:
	// safe[:safeN[k]] are those of at most k characters.
	safe     []int32
	safeN    []int32
	safeBits []uint64 // all string-safe tokens, as a bit set

	eog    []int32   // end-of-generation tokens
	single [256]bool // the byte is the piece of some text token
	maxLen int       // longest piece
}

// trieNode is a node of the vocabulary trie.
type trieNode struct {
	next  int32  // index of the first node after this node's subtree
	depth uint16 // length of the prefix this node stands for (1 for the first byte)
	b     byte   // last byte of that prefix
	flags uint8
}

// flagUnsafe marks a trie node whose subtree (itself included) holds a token
// that is not string-safe.
const flagUnsafe uint8 = 1

// NewVocab indexes the vocabulary of tok.
func NewVocab(tok *tokenizer.Tokenizer) *Vocab {
	n := tok.NumTokens()
	v := &Vocab{tok: tok, n: n, text: make([]bool, n), eog: tok.EOG()}
	var ids []int32
	for id := int32(0); id < int32(n); id++ {
		ty := tok.Type(id)
		if (ty == tokenizer.TypeNormal || ty == tokenizer.TypeByte || ty == tokenizer.TypeUserDefined) && len(tok.Piece(id)) > 0 && !tok.IsEOG(id) {
			ids = append(ids, id)
			v.text[id] = true
		}
	}
	sort.Slice(ids, func(a, b int) bool {
		if c := bytes.Compare(tok.Piece(ids[a]), tok.Piece(ids[b])); c != 0 {
			return c < 0
		}
		return ids[a] < ids[b]
	})
	v.ids = ids
	v.buildTrie()
	v.buildSafe()
	return v
}

// buildTrie builds the trie from v.ids, sorted by piece: sorted order is the
// trie's preorder.
func (v *Vocab) buildTrie() {
	var path []int32 // node of each depth on the current path
	var prev []byte
	for i, id := range v.ids {
		p := v.tok.Piece(id)
		v.maxLen = max(v.maxLen, len(p))
		if len(p) == 1 {
			v.single[p[0]] = true
		}
		common := 0
		for common < len(p) && common < len(prev) && p[common] == prev[common] {
			common++
		}
		v.closePath(&path, common)
		for d := common; d < len(p); d++ {
			path = append(path, int32(len(v.nodes)))
			v.nodes = append(v.nodes, trieNode{depth: uint16(d + 1), b: p[d]})
			v.tok0 = append(v.tok0, int32(i))
		}
		if _, ok := stringSafe(p); !ok {
			v.nodes[path[len(path)-1]].flags |= flagUnsafe
		}
		prev = p
	}
	v.closePath(&path, 0)
	v.tok0 = append(v.tok0, int32(len(v.ids)))
}

// closePath ends the subtrees of the path nodes deeper than depth keep,
// propagating their flags up.
func (v *Vocab) closePath(path *[]int32, keep int) {
	p := *path
	for len(p) > keep {
		last := p[len(p)-1]
		v.nodes[last].next = int32(len(v.nodes))
		p = p[:len(p)-1]
		if len(p) > 0 {
			v.nodes[p[len(p)-1]].flags |= v.nodes[last].flags
		}
	}
	*path = p
}

// buildSafe lists the string-safe tokens by number of characters.
func (v *Vocab) buildSafe() {
	chars := make(map[int32]int)
	maxChars := 0
	for _, id := range v.ids {
		if c, ok := stringSafe(v.tok.Piece(id)); ok {
			v.safe = append(v.safe, id)
			chars[id] = c
			maxChars = max(maxChars, c)
		}
	}
	sort.SliceStable(v.safe, func(a, b int) bool { return chars[v.safe[a]] < chars[v.safe[b]] })
	v.safeBits = make([]uint64, (v.n+63)/64)
	for _, id := range v.safe {
		v.safeBits[id>>6] |= 1 << (id & 63)
	}
	v.safeN = make([]int32, maxChars+1)
	for _, id := range v.safe {
		v.safeN[chars[id]]++
	}
	for k := 1; k <= maxChars; k++ {
		v.safeN[k] += v.safeN[k-1]
	}
}

// NumTokens is the size of the vocabulary: the length of the logits Mask
// takes.
func (v *Vocab) NumTokens() int { return v.n }

// stringSafe reports whether piece p may follow a character boundary inside a
// JSON string, whatever the string: it holds no quote, backslash or control
// character and is valid UTF-8, except that its last character may be
// unfinished. It also returns the number of characters p starts.
func stringSafe(p []byte) (chars int, ok bool) {
	need := 0
	lo, hi := byte(0x80), byte(0xBF)
	for _, c := range p {
		if need > 0 {
			if c < lo || c > hi {
				return 0, false
			}
			need--
			lo, hi = 0x80, 0xBF
			continue
		}
		if c < 0x20 || c == '"' || c == '\\' {
			return 0, false
		}
		chars++
		if c >= 0x80 {
			if need, lo, hi = utf8Lead(c); need == 0 {
				return 0, false
			}
		}
	}
	return chars, true
}

// utf8Lead returns how many continuation bytes follow the leading byte c of
// a UTF-8 character and the range of the first one; need is 0 when c cannot
// start a multi-byte character.
func utf8Lead(c byte) (need int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 1, 0x80, 0xBF
	case c == 0xE0:
		return 2, 0xA0, 0xBF
	case c == 0xED:
		return 2, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		return 2, 0x80, 0xBF
	case c == 0xF0:
		return 3, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 3, 0x80, 0xBF
	case c == 0xF4:
		return 3, 0x80, 0x8F
	}
	return 0, 0, 0
}

package grammar

import (
	"math"
	"sort"
)

// Defaults of [Options].
const (
	DefaultMaxWhitespace = 20 // longest whitespace run between two tokens of the JSON text
	DefaultMaxDepth      = 32 // deepest nesting of arrays and objects where any value is allowed
)

// Limits of number literals: every number the grammar allows fits a float64.
const (
	maxIntDigits  = 16 // digits before the decimal point
	maxFracDigits = 16 // digits after it
	maxExpDigits  = 2  // exponent digits
)

// maxProps is the largest number of declared properties of one object.
const maxProps = 64

// Options tunes the text a Grammar allows. The zero value gives the defaults.
type Options struct {
	// MaxWhitespace is the longest run of whitespace bytes allowed between
	// two tokens of the JSON text (and before the value). 0 means
	// DefaultMaxWhitespace; a negative value allows no whitespace at all.
	// Values above 255 are taken as 255.
	MaxWhitespace int
	// MaxDepth bounds the nesting of arrays and objects where the schema
	// allows any value (all of them for [JSON]). 0 means DefaultMaxDepth.
	// Values above 200 are taken as 200.
	MaxDepth int
}

// kind is the kind of a grammar node.
type kind uint8

const (
	kAny     kind = iota // any JSON value
	kObject              // object with declared and/or additional properties
	kArray               // array of items
	kString              // string, maybe with a maximum length
	kInteger             // integer number
	kNumber              // any number
	kLiteral             // one of a set of literal texts (enum, const, true/false/null)
	kAnyOf               // any of several nodes
	kSeq                 // several nodes one after the other
	kRep                 // one node repeated, maybe with a separator node between
	kSpace               // optional whitespace
	kRaw                 // free text up to and including a terminator
)

// Reserved nodes that every grammar has, used for values of any type.
const (
	nodeAny       int32 = iota // kAny
	nodeAnyObject              // object of any properties
	nodeAnyArray               // array of any values
	nodeAnyString              // any string
	nodeAnyNumber              // any number
	nodeAnyWord                // false, null or true
	numReserved
)

// node is one element of a compiled grammar: what a JSON value at some place
// may be.
type node struct {
	kind   kind
	minLen int32 // bytes of the shortest value of this node

	// kObject
	props   []prop // declared properties
	keys    int32  // literal set of the declared keys (`name"`), -1 if none
	addl    int32  // node of additional property values, -1 if not allowed
	nReq    int32  // number of required properties
	reqCost int32  // sum of the member costs of the required properties
	allSeen uint64 // bit mask of all declared properties

	// kArray
	items              int32
	minItems, maxItems int32 // maxItems < 0: no maximum

	// kString
	maxLength int32 // < 0: no maximum
	minLength int32

	// kInteger: the range of the integers the grammar writes, within
	// ±maxIntMagnitude; kInteger and kNumber: the bounds of the schema
	// (nil: none), which enum and const values are checked against
	ilo, ihi int64
	bounds   *numBounds
	// kNumber with bounds: the magnitudes allowed, of positive numbers
	// and of negative ones (nil: any number)
	mags *[2]magRange

	// kLiteral
	lits int32 // literal set

	// kAnyOf, kSeq (the elements)
	alts []int32

	// kObject: the punctuation (zero: JSON's '{', '}', ':') and whether
	// keys are written bare, without quotes (see objectStyle)
	open, close, colon byte
	bare               bool

	// kSeq: the sequence is a string of the dialect (accepts treats it as
	// one), with minLength and maxLength
	str bool

	// kRep: items (the repeated node), minItems, maxItems, and sep, the
	// separator node (-1: none)
	sep int32

	// kRaw: lits is the one-literal set of the terminator, minLength and
	// maxLength bound the characters before it
}

// prop is a declared object property.
type prop struct {
	name     string
	node     int32
	required bool
	cost     int32  // bytes of the shortest member: `"name":` and the shortest value
	hash     uint64 // hashKey of the name
}

// litSet is a set of literal texts, sorted, without duplicates.
type litSet struct {
	lits  []string
	props []int32 // for the key sets of objects: the property of each literal
}

// Grammar is a compiled set of allowed JSON texts. It is immutable and safe
// for concurrent use; see the package documentation.
type Grammar struct {
	nodes    []node
	sets     []litSet
	root     int32
	maxWS    uint8
	maxDepth uint8
	need     [256]bool // bytes a completion may need as a token of their own
	dialect  Dialect
	strOpen  byte      // first byte of a string of any content
	word     [256]bool // first bytes of true, false and null in the dialect
}

// JSON returns the grammar of any JSON value (RFC 8259), within the limits of
// opts.
func JSON(opts Options) *Grammar {
	g := newGrammar(opts)
	g.root = nodeAny
	g.finish()
	return g
}

// newGrammar returns a grammar with the reserved nodes, of JSON texts.
func newGrammar(opts Options) *Grammar { return newDialectGrammar(opts, DialectJSON) }

// newDialectGrammar returns a grammar with the reserved nodes, whose values
// are written in dialect d.
func newDialectGrammar(opts Options, d Dialect) *Grammar {
	g := &Grammar{dialect: d, strOpen: '"'}
	switch ws := opts.MaxWhitespace; {
	case ws == 0:
		g.maxWS = DefaultMaxWhitespace
	case ws > 0:
		g.maxWS = uint8(min(ws, 255))
	}
	g.maxDepth = DefaultMaxDepth
	if opts.MaxDepth > 0 {
		g.maxDepth = uint8(min(opts.MaxDepth, 200))
	}
	g.nodes = make([]node, numReserved)
	g.nodes[nodeAny] = node{kind: kAny, minLen: 1}
	g.nodes[nodeAnyObject] = node{kind: kObject, minLen: 2, keys: -1, addl: nodeAny}
	g.nodes[nodeAnyArray] = node{kind: kArray, minLen: 2, items: nodeAny, maxItems: -1}
	g.nodes[nodeAnyString] = node{kind: kString, minLen: 2, maxLength: -1}
	g.nodes[nodeAnyNumber] = node{kind: kNumber, minLen: 1}
	words := d.words()
	g.nodes[nodeAnyWord] = node{kind: kLiteral, minLen: 4, lits: g.addSet(words[:], nil)}
	for _, w := range words {
		g.word[w[0]] = true
	}
	if d == DialectGemma {
		// Objects with bare keys and no others than the declared ones (so
		// any object is "{}"), strings between <escape> marks.
		g.nodes[nodeAnyObject] = node{kind: kObject, minLen: 2, keys: -1, addl: -1, bare: true}
		g.nodes[nodeAnyString] = g.dialectString(0, -1)
		g.strOpen = gemmaEscape[0]
	}
	return g
}

// addNode appends n and returns its index.
func (g *Grammar) addNode(n node) int32 {
	g.nodes = append(g.nodes, n)
	return int32(len(g.nodes) - 1)
}

// addSet adds a literal set, sorting the literals (and props alongside) and
// dropping duplicates, and returns its index.
func (g *Grammar) addSet(lits []string, props []int32) int32 {
	idx := make([]int, len(lits))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return lits[idx[a]] < lits[idx[b]] })
	var s litSet
	for _, i := range idx {
		if n := len(s.lits); n > 0 && s.lits[n-1] == lits[i] {
			continue
		}
		s.lits = append(s.lits, lits[i])
		if props != nil {
			s.props = append(s.props, props[i])
		}
	}
	g.sets = append(g.sets, s)
	return int32(len(g.sets) - 1)
}

// finish computes the bytes a completion may need.
func (g *Grammar) finish() {
	for c := 0x20; c < 0x7F; c++ {
		g.need[c] = true // structure, digits, keywords, escapes
	}
	for c := 0x80; c < 0xC0; c++ {
		g.need[c] = true // the rest of a character a token began
	}
	for _, s := range g.sets {
		for _, l := range s.lits {
			for i := 0; i < len(l); i++ {
				g.need[l[i]] = true
			}
		}
	}
}

// memberCost is the length of the shortest object member of a property
// whose key literal is key (`name"`) and whose value node has minimum
// length valueLen: `"`, key, `:`, value.
func memberCost(key string, valueLen int32) int32 {
	return 1 + int32(len(key)) + 1 + valueLen
}

// closeAfter is the cost of finishing an object after a member (or after
// "{" when first is set) with nReq required properties of total member cost
// reqCost still missing.
func closeAfter(nReq, reqCost int32, first bool) int32 {
	switch {
	case nReq == 0:
		return 1
	case first:
		return reqCost + nReq // nReq-1 commas and "}"
	}
	return reqCost + nReq + 1 // nReq commas and "}"
}

// addCost adds costs, saturating.
func addCost(a, b int32) int32 {
	if s := int64(a) + int64(b); s < math.MaxInt32 {
		return int32(s)
	}
	return math.MaxInt32
}

// mulCost multiplies costs, saturating.
func mulCost(a, b int32) int32 {
	if p := int64(a) * int64(b); p < math.MaxInt32 {
		return int32(p)
	}
	return math.MaxInt32
}

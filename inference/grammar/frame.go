package grammar

// The matcher is a byte-level pushdown automaton. Its stack is a linked list
// of frames in an arena, each frame pointing at the one below it (parent),
// and frames are never modified once written: consuming a byte writes new
// frames on top of the old ones. So a stack is just the index of its top
// frame, copying a state costs nothing, and several stacks share their
// bottoms. Where the grammar leaves a choice that the next bytes settle
// (anyOf, a key that may be declared or additional), the matcher follows
// several stacks at once, its threads.
//
// A frame of a value that has children is replaced, when a child starts, by
// a copy in the state it will be in once the child is complete; the child's
// frame goes on top of it. Completing the child is then popping it.
//
// Each frame also holds below: the fewest bytes that complete everything
// under it once it is complete itself. The fewest bytes that complete a
// thread are then the cost of its top frame (see own) plus its below.

// fkind is the kind of a frame.
type fkind uint8

const (
	fRoot   fkind = iota // bottom of every stack: before or after the value
	fObject              // inside an object
	fArray               // inside an array
	fString              // inside a string value, after the opening quote
	fKey                 // inside an additional property name, after the opening quote
	fKeyLit              // inside a declared property name (a literal of the object's key set)
	fLit                 // inside a literal (enum, const, true, false, null)
	fNumber              // inside a number
	fKeyRec              // not on a stack: an additional property name used in an object
	fSeq                 // inside a sequence
	fRep                 // inside a repetition
	fSpace               // inside optional whitespace
	fRaw                 // inside free text, before its terminator
)

// Frame states, by kind.
const (
	rootValue uint8 = iota // before the value
	rootDone               // after it
)

const (
	oFirst uint8 = iota // after "{"
	oComma              // after ","
	oKey                // reading a declared key (an fKeyLit frame is on top)
	oColon              // after a key, before ":"
	oValue              // after ":", before the value
	oAfter              // after a member
)

const (
	aFirst uint8 = iota // after "["
	aComma              // after ","
	aAfter              // after an item
)

const (
	sChar   uint8 = iota // between characters (or inside a UTF-8 one, see u8n)
	sEsc                 // after "\"
	sHex                 // inside the 4 hex digits of "\u"
	sLowBS               // after a high surrogate escape, before "\" of the low one
	sLowU                // before the "u" of the low surrogate
	sLowHex              // inside the hex digits of the low surrogate
)

const (
	rItem  uint8 = iota // before an item (the first, or after a separator)
	rAfter              // after an item
)

const (
	nMinus uint8 = iota // after "-"
	nZero               // after a leading "0"
	nInt                // inside the integer digits
	nDot                // after "."
	nFrac               // inside the fraction digits
	nE                  // after "e"
	nESign              // after the exponent sign
	nExp                // inside the exponent digits
)

// frame is one element of a stack.
//
// Fields by kind:
//   - fObject: a = required properties still missing, b = their total member
//     cost, p = the property whose key was read (-1: additional), h = bit
//     mask of the declared properties written, keys = last fKeyRec.
//   - fArray: a = items written.
//   - fString, fKey: a = characters written, b = value of the \u escape being
//     read, p = the high surrogate before a low one, h = hash of the key so
//     far (fKey), u8n/u8lo/u8hi = continuation bytes still due in the
//     current character and the range of the next one, hexn = hex digits read.
//   - fKeyLit, fLit: literals [a, b) of the node's set match the bytes so far,
//     p = how many bytes that is.
//   - fNumber: a = integer digits, b = fraction or exponent digits; for
//     integers (kInteger) b = 1 after a minus sign and h = the magnitude of
//     the digits so far; for numbers with bounds p = flags (numNeg,
//     numAtLo, numAtHi) and h = the integer digits' value or, after the
//     point, the fraction digits' value.
//   - fKeyRec: h = hash of the name, parent = previous record.
//   - fSeq: a = index of the next element.
//   - fRep: a = items written.
//   - fSpace: ws = whitespace bytes written.
//   - fRaw: a = characters written, p = bytes of the terminator matched so
//     far, u8n/u8lo/u8hi as in strings.
type frame struct {
	parent int32 // frame below; -1 at the bottom
	below  int32 // fewest bytes completing the frames below once this one is complete
	node   int32 // grammar node
	keys   int32
	a, b   int32
	p      int32
	h      uint64
	kind   fkind
	st     uint8
	ws     uint8 // whitespace bytes in the current run
	depth  uint8 // nesting of arrays and objects
	u8n    uint8
	u8lo   uint8
	u8hi   uint8
	hexn   uint8
}

// isWS reports whether c is JSON whitespace.
func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// hexVal returns the value of hex digit c.
func hexVal(c byte) (int32, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int32(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int32(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return int32(c-'A') + 10, true
	}
	return 0, false
}

// unescape returns the byte a one-character escape "\c" stands for.
func unescape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

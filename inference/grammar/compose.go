package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// Dialect is how the values of a grammar are written.
type Dialect uint8

const (
	// DialectJSON writes values as JSON (RFC 8259).
	DialectJSON Dialect = iota
	// DialectPython writes values as Python literals: JSON, but with True,
	// False and None for true, false and null. Strings are double-quoted
	// with JSON's escapes.
	DialectPython
	// DialectGemma writes values as FunctionGemma does: strings between two
	// <escape> marks with no escapes inside, objects with bare keys
	// ({key:value,...}, declared properties only), arrays, numbers, true,
	// false and null as in JSON.
	DialectGemma
)

// gemmaEscape delimits the strings of DialectGemma.
const gemmaEscape = "<escape>"

// words returns true, false and null in the dialect.
func (d Dialect) words() [3]string {
	if d == DialectPython {
		return [3]string{"True", "False", "None"}
	}
	return [3]string{"true", "false", "null"}
}

// dialectString returns the node of a string of at least minLen and at most
// maxLen characters (-1: any), adding the nodes it is made of.
func (g *Grammar) dialectString(minLen, maxLen int32) node {
	if g.dialect != DialectGemma {
		return node{kind: kString, minLen: addCost(2, minLen), minLength: minLen, maxLength: maxLen}
	}
	open := g.addNode(node{kind: kLiteral, minLen: int32(len(gemmaEscape)), lits: g.addSet([]string{gemmaEscape}, nil)})
	body := g.addNode(node{kind: kRaw, minLen: addCost(int32(len(gemmaEscape)), minLen), minLength: minLen, maxLength: maxLen,
		lits: g.addSet([]string{gemmaEscape}, nil)})
	return node{kind: kSeq, alts: []int32{open, body}, str: true, minLength: minLen, maxLength: maxLen,
		minLen: addCost(2*int32(len(gemmaEscape)), minLen)}
}

// openByte, closeByte and colonByte are an object node's punctuation.
func (n *node) openByte() byte  { return orByte(n.open, '{') }
func (n *node) closeByte() byte { return orByte(n.close, '}') }
func (n *node) colonByte() byte { return orByte(n.colon, ':') }

func orByte(b, def byte) byte {
	if b == 0 {
		return def
	}
	return b
}

// encodeLit writes a decoded JSON value (numbers as json.Number) in the
// dialect, compactly: the text an enum or const value must be written as.
func (d Dialect) encodeLit(v any) (string, error) {
	if d == DialectJSON {
		return encodeValue(v)
	}
	var b strings.Builder
	if err := d.writeLit(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (d Dialect) writeLit(b *strings.Builder, v any) error {
	words := d.words()
	switch v := v.(type) {
	case nil:
		b.WriteString(words[2])
	case bool:
		if v {
			b.WriteString(words[0])
		} else {
			b.WriteString(words[1])
		}
	case string:
		if d == DialectGemma {
			if strings.Contains(v, gemmaEscape) {
				return fmt.Errorf("string %q holds %s", v, gemmaEscape)
			}
			b.WriteString(gemmaEscape + v + gemmaEscape)
			return nil
		}
		s, err := encodeValue(v)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case json.Number:
		b.WriteString(v.String())
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := d.writeLit(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if d == DialectGemma {
				if !isIdent(k) {
					return fmt.Errorf("key %q cannot be written bare", k)
				}
				b.WriteString(k)
			} else {
				s, err := encodeValue(k)
				if err != nil {
					return err
				}
				b.WriteString(s)
			}
			b.WriteByte(':')
			if err := d.writeLit(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unsupported value %T", v)
	}
	return nil
}

// isIdent reports whether s is a name that may be written bare: letters,
// digits and underscores, not starting with a digit.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && isDigit(c)) {
			return false
		}
	}
	return true
}

// seq consumes c in a sequence: it starts the next element with it, or, for
// elements that may be empty, one after them. It reports whether every
// remaining element may be empty, so that c may belong to the frame below.
func (m *Matcher) seq(f frame, c byte, out *[]int32) bool {
	elems := m.g.nodes[f.node].alts
	for i := f.a; i < int32(len(elems)); i++ {
		next := f
		next.a = i + 1
		m.value(m.add(next), elems[i], c, out)
		if m.g.nodes[elems[i]].minLen > 0 {
			return false
		}
	}
	return true
}

// rep consumes c in a repetition: it starts an item, or after an item the
// separator (or, without one, the next item). It reports whether enough
// items were written for c to belong to the frame below.
func (m *Matcher) rep(f frame, c byte, out *[]int32) bool {
	n := &m.g.nodes[f.node]
	if f.st == rItem {
		next := f
		next.st, next.a = rAfter, f.a+1
		m.value(m.add(next), n.items, c, out)
		return false
	}
	if n.maxItems < 0 || f.a < n.maxItems {
		next := f
		if n.sep >= 0 {
			next.st = rItem
			m.value(m.add(next), n.sep, c, out)
		} else {
			next.a++
			m.value(m.add(next), n.items, c, out)
		}
	}
	return f.a >= n.minItems
}

// spaceRun consumes c in optional whitespace. It reports whether c is not
// whitespace, so that it belongs to the frame below.
func (m *Matcher) spaceRun(f frame, c byte, out *[]int32) bool {
	if !isWS(c) {
		return true
	}
	m.space(f, out)
	return false
}

// raw consumes c in free text: a byte of the terminator (which ends the
// text once complete) or of a character of valid UTF-8 other than a control
// character but for tab, line feed and carriage return. The terminator is
// ASCII and its first byte occurs in it only there, so a mismatch restarts
// the match at that byte.
func (m *Matcher) raw(f frame, c byte, out *[]int32) {
	n := &m.g.nodes[f.node]
	term := m.g.sets[n.lits].lits[0]
	if f.u8n > 0 {
		if f.utf8Cont(c) {
			push(out, m.add(f))
		}
		return
	}
	if c == term[f.p] {
		f.p++
		if f.a < n.minLength {
			// Too short to end: the terminator bytes so far must become
			// content, within the maximum.
			if int(f.p) == len(term) || n.maxLength >= 0 && f.a+f.p > n.maxLength {
				return
			}
		} else if int(f.p) == len(term) {
			push(out, f.parent)
			return
		}
		push(out, m.add(f))
		return
	}
	// The terminator bytes matched so far are content after all.
	f.a += f.p
	f.p = 0
	if c == term[0] {
		f.p = 1
	} else {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7F || c >= 0x80 && !f.utf8Start(c) {
			return
		}
		f.a++
	}
	if n.maxLength >= 0 && f.a > n.maxLength {
		return
	}
	push(out, m.add(f))
}

// rawCost is the fewest bytes that complete free text: the rest of the
// character being written and of the terminator, or, when the text is
// shorter than its minimum, the characters missing and a whole terminator.
// The terminator bytes matched so far then count as characters: the next
// byte is the first of the terminator, which turns them into content.
func (m *Matcher) rawCost(f *frame) int32 {
	n := &m.g.nodes[f.node]
	term := m.g.sets[n.lits].lits[0]
	if f.a < n.minLength {
		return int32(f.u8n) + int32(len(term)) + max(n.minLength-f.a-f.p, 0)
	}
	return int32(f.u8n) + int32(len(term)) - f.p
}

// seqCost is the fewest bytes of the elements of a sequence still to come.
func (m *Matcher) seqCost(f *frame) int32 {
	c := int32(0)
	for _, e := range m.g.nodes[f.node].alts[f.a:] {
		c = addCost(c, m.g.nodes[e].minLen)
	}
	return c
}

// repCost is the fewest bytes that complete a repetition.
func (m *Matcher) repCost(f *frame) int32 {
	n := &m.g.nodes[f.node]
	item := m.g.nodes[n.items].minLen
	sep := int32(0)
	if n.sep >= 0 {
		sep = m.g.nodes[n.sep].minLen
	}
	if f.st == rItem { // the item must come, then the missing ones
		return addCost(item, mulCost(max(n.minItems-f.a-1, 0), addCost(sep, item)))
	}
	return mulCost(max(n.minItems-f.a, 0), addCost(sep, item))
}

// Node is a part of a grammar being composed with a [Builder].
type Node struct{ i int32 }

// Builder composes a grammar from pieces: values of JSON Schemas written in
// a dialect, fixed texts, optional whitespace, sequences, repetitions and
// alternatives. It serves to describe texts around JSON values, such as the
// tool calls of the various chat formats. The first error of any method is
// kept and returned by Build.
type Builder struct {
	g   *Grammar
	err error
}

// NewBuilder returns a builder of a grammar whose values are written in
// dialect d, within the limits of opts.
func NewBuilder(d Dialect, opts Options) *Builder {
	return &Builder{g: newDialectGrammar(opts, d)}
}

// fail keeps the first error.
func (b *Builder) fail(err error) Node {
	if b.err == nil {
		b.err = err
	}
	return Node{nodeAny}
}

// Value returns the node of a value of the JSON Schema schema (see
// [CompileSchema] for the keywords), written in the builder's dialect.
func (b *Builder) Value(schema []byte) Node {
	v, err := decodeSchema(schema)
	if err != nil {
		return b.fail(err)
	}
	c := compiler{g: b.g}
	ni, err := c.compile("#", v)
	if err != nil {
		return b.fail(err)
	}
	return Node{ni}
}

// Arguments returns the node of an object of the JSON Schema schema
// (empty: any object) written with bare keys: open, then key, assign and
// value for each property, separated by commas, then close. Python's
// keyword arguments are Arguments(s, '(', ')', '='). Only the declared
// properties may be written, and their names must be identifiers.
func (b *Builder) Arguments(schema []byte, open, close, assign byte) Node {
	if len(schema) == 0 {
		schema = []byte(`{"type":"object"}`)
	}
	v, err := decodeSchema(schema)
	if err != nil {
		return b.fail(err)
	}
	s, ok := v.(map[string]any)
	if !ok {
		return b.fail(fmt.Errorf("grammar: arguments schema is not an object"))
	}
	if t, ok := s["type"]; ok && t != "object" {
		return b.fail(fmt.Errorf("grammar: arguments schema has type %v, want object", t))
	}
	for k := range s {
		if k != "type" && k != "properties" && k != "required" && k != "additionalProperties" && !annotations[k] {
			return b.fail(fmt.Errorf("grammar: arguments schema: unsupported keyword %q", k))
		}
	}
	c := compiler{g: b.g}
	ni, err := c.objectStyled("#", s, objectStyle{open: open, close: close, colon: assign, bare: true})
	if err != nil {
		return b.fail(err)
	}
	return Node{ni}
}

// Text returns the node of the fixed text s (not empty).
func (b *Builder) Text(s string) Node {
	if s == "" {
		return b.fail(fmt.Errorf("grammar: empty text"))
	}
	return Node{b.g.addNode(node{kind: kLiteral, minLen: int32(len(s)), lits: b.g.addSet([]string{s}, nil)})}
}

// Space returns the node of optional whitespace: at most
// Options.MaxWhitespace bytes of spaces, tabs and line breaks.
func (b *Builder) Space() Node {
	return Node{b.g.addNode(node{kind: kSpace})}
}

// Seq returns the node of nodes one after the other. It may not be empty.
func (b *Builder) Seq(nodes ...Node) Node {
	if len(nodes) == 0 {
		return b.fail(fmt.Errorf("grammar: empty sequence"))
	}
	n := node{kind: kSeq}
	for _, e := range nodes {
		n.alts = append(n.alts, e.i)
		n.minLen = addCost(n.minLen, b.g.nodes[e.i].minLen)
	}
	if n.minLen == 0 {
		return b.fail(fmt.Errorf("grammar: a sequence may be empty"))
	}
	return Node{b.g.addNode(n)}
}

// Repeat returns the node of item written lo to hi times (hi < 0: no
// limit), with sep between two items when sep is not nil. Neither may be
// empty, and lo is at least 1.
func (b *Builder) Repeat(item Node, sep *Node, lo, hi int) Node {
	n := node{kind: kRep, items: item.i, sep: -1, minItems: int32(lo), maxItems: int32(hi)}
	if lo < 1 || hi >= 0 && hi < lo {
		return b.fail(fmt.Errorf("grammar: repeat %d to %d times", lo, hi))
	}
	if b.g.nodes[item.i].minLen == 0 {
		return b.fail(fmt.Errorf("grammar: a repeated item may be empty"))
	}
	sepLen := int32(0)
	if sep != nil {
		if b.g.nodes[sep.i].minLen == 0 {
			return b.fail(fmt.Errorf("grammar: a separator may be empty"))
		}
		n.sep, sepLen = sep.i, b.g.nodes[sep.i].minLen
	}
	item0 := b.g.nodes[item.i].minLen
	n.minLen = addCost(item0, mulCost(int32(lo-1), addCost(sepLen, item0)))
	return Node{b.g.addNode(n)}
}

// AnyOf returns the node of any of nodes (at least one).
func (b *Builder) AnyOf(nodes ...Node) Node {
	if len(nodes) == 0 {
		return b.fail(fmt.Errorf("grammar: anyOf of nothing"))
	}
	if len(nodes) == 1 {
		return nodes[0]
	}
	n := node{kind: kAnyOf, minLen: math.MaxInt32}
	for _, e := range nodes {
		n.alts = append(n.alts, e.i)
		n.minLen = min(n.minLen, b.g.nodes[e.i].minLen)
	}
	return Node{b.g.addNode(n)}
}

// Build returns the grammar of the texts of root, or the first error of
// the builder. The builder may not be used afterwards.
func (b *Builder) Build(root Node) (*Grammar, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.g.nodes[root.i].minLen == 0 {
		return nil, fmt.Errorf("grammar: the root may be empty")
	}
	g := b.g
	b.g = nil
	g.root = root.i
	g.finish()
	return g, nil
}

// decodeSchema decodes a JSON Schema, numbers as json.Number.
func decodeSchema(schema []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("grammar: schema: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("grammar: schema: data after the schema")
	}
	return v, nil
}

// validString reports whether s may be a string value in the dialect.
func (d Dialect) validString(s string) bool {
	return utf8.ValidString(s) && (d != DialectGemma || !strings.Contains(s, gemmaEscape))
}

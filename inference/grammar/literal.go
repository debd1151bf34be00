package grammar

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// encodeValue writes a decoded JSON value as compact JSON, as encoding/json
// does but without HTML escaping.
func encodeValue(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// accepts reports whether node ni allows the decoded value v (numbers as
// json.Number).
func (g *Grammar) accepts(ni int32, v any) bool {
	n := &g.nodes[ni]
	switch n.kind {
	case kAny:
		return true
	case kAnyOf:
		for _, a := range n.alts {
			if g.accepts(a, v) {
				return true
			}
		}
		return false
	case kObject:
		return g.acceptsObject(n, v)
	case kArray:
		list, ok := v.([]any)
		if !ok || len(list) < int(n.minItems) || (n.maxItems >= 0 && len(list) > int(n.maxItems)) {
			return false
		}
		for _, e := range list {
			if !g.accepts(n.items, e) {
				return false
			}
		}
		return true
	case kString:
		s, ok := v.(string)
		return ok && n.lengthOK(s)
	case kInteger:
		num, ok := v.(json.Number)
		return ok && n.acceptsInteger(num)
	case kNumber:
		num, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := num.Float64(); err != nil {
			return false
		}
		if n.bounds == nil {
			return true
		}
		r, ok := parseRat(string(num))
		return ok && n.bounds.contains(r)
	case kSeq:
		if !n.str {
			return false
		}
		s, ok := v.(string)
		return ok && g.dialect.validString(s) && n.lengthOK(s)
	case kLiteral:
		text, err := g.dialect.encodeLit(v)
		if err != nil {
			return false
		}
		for _, l := range g.sets[n.lits].lits {
			if l == text {
				return true
			}
		}
	}
	return false
}

// lengthOK reports whether string s has as many characters as string node
// n allows.
func (n *node) lengthOK(s string) bool {
	l := utf8.RuneCountInString(s)
	return l >= int(n.minLength) && (n.maxLength < 0 || l <= int(n.maxLength))
}

// acceptsObject reports whether object node n allows v.
func (g *Grammar) acceptsObject(n *node, v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	declared := 0
	for _, p := range n.props {
		e, ok := obj[p.name]
		switch {
		case ok:
			declared++
			if !g.accepts(p.node, e) {
				return false
			}
		case p.required:
			return false
		}
	}
	if declared == len(obj) {
		return true
	}
	if n.addl < 0 {
		return false
	}
	for k, e := range obj {
		if n.propIndex(k) < 0 && !g.accepts(n.addl, e) {
			return false
		}
	}
	return true
}

// propIndex returns the index of the declared property name, or -1.
func (n *node) propIndex(name string) int {
	for i := range n.props {
		if n.props[i].name == name {
			return i
		}
	}
	return -1
}

// FNV-1a, hashing object keys to tell them apart.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

// hashByte adds byte c to hash h.
func hashByte(h uint64, c byte) uint64 { return (h ^ uint64(c)) * fnvPrime }

// hashKey returns the hash of the decoded key s.
func hashKey(s string) uint64 {
	h := fnvOffset
	for i := 0; i < len(s); i++ {
		h = hashByte(h, s[i])
	}
	return h
}

// hashRune adds the UTF-8 encoding of r to hash h.
func hashRune(h uint64, r rune) uint64 {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	for _, c := range buf[:n] {
		h = hashByte(h, c)
	}
	return h
}

// narrow returns the part of lits[lo:hi] — literals that share their first
// pos bytes, sorted — whose byte at pos is c.
func narrow(lits []string, lo, hi, pos int32, c byte) (int32, int32) {
	at := func(i int32) int {
		if l := lits[i]; int(pos) < len(l) {
			return int(l[pos])
		}
		return -1
	}
	first := func(v int) int32 { // first index in [lo, hi) with at(i) >= v
		a, b := lo, hi
		for a < b {
			mid := int32(uint32(a+b) >> 1)
			if at(mid) < v {
				a = mid + 1
			} else {
				b = mid
			}
		}
		return a
	}
	return first(int(c)), first(int(c) + 1)
}

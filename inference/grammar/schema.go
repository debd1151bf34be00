package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// annotations are keywords that describe a schema without constraining it;
// they are accepted and ignored. "format" is one: JSON Schema 2019-09 and
// later make it an annotation unless a validator opts in.
var annotations = map[string]bool{
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"format": true,
}

// keywordType maps each supported type-specific keyword to the type it
// applies to.
var keywordType = map[string]string{
	"properties": "object", "required": "object", "additionalProperties": "object",
	"items": "array", "minItems": "array", "maxItems": "array",
	"maxLength": "string",
	"minimum":   "integer", "maximum": "integer",
}

// typeNames are the values of "type".
var typeNames = map[string]bool{
	"object": true, "array": true, "string": true, "integer": true, "number": true, "boolean": true, "null": true,
}

// CompileSchema compiles a JSON Schema into the grammar of the JSON texts it
// accepts, within the limits of opts.
//
// Supported keywords: type (a name or a list of names), properties,
// required, additionalProperties (false, true or a schema; absent means
// true), enum, const, items (a schema), minItems, maxItems, anyOf,
// maxLength, minimum with maximum for integers (a range of at most
// MaxIntRange), and boolean schemas (true for any value). Annotations (title,
// description, default, examples, format, $schema, $id, $comment,
// deprecated, readOnly, writeOnly) are ignored. Any other keyword, anyOf
// beside other constraints, enum beside const, a required property that is
// not in properties, more than 64 properties in one object, schemas nested
// more than MaxSchemaDepth deep, and a keyword that applies to none of the
// given types are errors. Without "type", the
// type is taken from the keywords (properties → object, items → array...);
// without either, any value is allowed. enum and const values that the rest
// of the schema rejects are dropped; they are written as encoding/json
// writes them (without HTML escaping).
func CompileSchema(schema []byte, opts Options) (*Grammar, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("grammar: schema: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("grammar: schema: data after the schema")
	}
	g := newGrammar(opts)
	c := compiler{g: g}
	root, err := c.compile("#", v)
	if err != nil {
		return nil, err
	}
	g.root = root
	g.finish()
	return g, nil
}

// MaxSchemaDepth bounds how deeply schemas nest in a schema (the root is
// depth 1): deeper ones are refused rather than compiled at a cost that grows
// with the square of the depth.
const MaxSchemaDepth = 64

// compiler turns decoded schemas into grammar nodes.
type compiler struct {
	g     *Grammar
	depth int // of the schema being compiled
}

// compile returns the node of the schema v found at path (a JSON pointer).
func (c *compiler) compile(path string, v any) (int32, error) {
	if c.depth >= MaxSchemaDepth {
		return -1, fmt.Errorf("grammar: schema %s: schemas nest more than %d deep", abbreviatePath(path), MaxSchemaDepth)
	}
	c.depth++
	defer func() { c.depth-- }()
	switch s := v.(type) {
	case bool:
		if s {
			return nodeAny, nil
		}
		return -1, fmt.Errorf("grammar: schema %s: false allows no value", path)
	case map[string]any:
		return c.schema(path, s)
	}
	return -1, fmt.Errorf("grammar: schema %s: want an object or a boolean, got %s", path, describe(v))
}

// abbreviatePath shortens a deep JSON pointer for an error message.
func abbreviatePath(path string) string {
	if len(path) > 80 {
		return path[:40] + "…" + path[len(path)-37:]
	}
	return path
}

// schema compiles a schema object.
func (c *compiler) schema(path string, s map[string]any) (int32, error) {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case annotations[k], k == "type", k == "enum", k == "const", k == "anyOf", keywordType[k] != "":
		default:
			return -1, fmt.Errorf("grammar: schema %s: unsupported keyword %q", path, k)
		}
	}
	if alts, ok := s["anyOf"]; ok {
		for _, k := range keys {
			if !annotations[k] && k != "anyOf" {
				return -1, fmt.Errorf("grammar: schema %s: anyOf together with %q is not supported", path, k)
			}
		}
		return c.anyOf(path, alts)
	}
	types, err := schemaTypes(path, s, keys)
	if err != nil {
		return -1, err
	}
	n := nodeAny
	var alts []int32
	for _, t := range types {
		ni, err := c.typed(path, t, s)
		if err != nil {
			return -1, err
		}
		alts = append(alts, ni)
	}
	switch {
	case len(alts) == 1:
		n = alts[0]
	case len(alts) > 1:
		n = c.g.addNode(node{kind: kAnyOf, alts: alts, minLen: c.minOf(alts)})
	}
	_, hasConst := s["const"]
	_, hasEnum := s["enum"]
	if hasConst || hasEnum {
		return c.literal(path, s, n)
	}
	return n, nil
}

// schemaTypes returns the types a schema allows, nil for any, from "type" or
// else from its type-specific keywords, and checks that each such keyword
// applies to one of them.
func schemaTypes(path string, s map[string]any, keys []string) ([]string, error) {
	var types []string
	if t, ok := s["type"]; ok {
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, e := range t {
				name, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("grammar: schema %s: type list holds %s", path, describe(e))
				}
				types = append(types, name)
			}
		default:
			return nil, fmt.Errorf("grammar: schema %s: type must be a string or a list, got %s", path, describe(t))
		}
		if len(types) == 0 {
			return nil, fmt.Errorf("grammar: schema %s: empty type list", path)
		}
		seen := map[string]bool{}
		for _, name := range types {
			if !typeNames[name] {
				return nil, fmt.Errorf("grammar: schema %s: unknown type %q", path, name)
			}
			if seen[name] {
				return nil, fmt.Errorf("grammar: schema %s: type %q listed twice", path, name)
			}
			seen[name] = true
		}
	} else {
		for _, k := range keys {
			if f := keywordType[k]; f != "" && !contains(types, f) {
				types = append(types, f)
			}
		}
		if len(types) > 1 {
			return nil, fmt.Errorf("grammar: schema %s: keywords of types %s without \"type\"", path, strings.Join(types, " and "))
		}
	}
	for _, k := range keys {
		if f := keywordType[k]; f != "" && !contains(types, f) {
			return nil, fmt.Errorf("grammar: schema %s: keyword %q does not apply to type %s", path, k, strings.Join(types, ", "))
		}
	}
	return types, nil
}

// typed compiles the part of schema s that applies to values of type t.
func (c *compiler) typed(path, t string, s map[string]any) (int32, error) {
	g := c.g
	switch t {
	case "object":
		return c.object(path, s)
	case "array":
		return c.array(path, s)
	case "string":
		maxLen, ok, err := count(path, s, "maxLength")
		if err != nil {
			return -1, err
		}
		if !ok {
			maxLen = -1
		}
		return g.addNode(g.dialectString(maxLen)), nil
	case "integer":
		lits, err := intRange(path, s)
		if err != nil {
			return -1, err
		}
		if lits == nil {
			return g.addNode(node{kind: kInteger, minLen: 1}), nil
		}
		minLen := int32(len(lits[0]))
		for _, l := range lits {
			minLen = min(minLen, int32(len(l)))
		}
		return g.addNode(node{kind: kLiteral, minLen: minLen, lits: g.addSet(lits, nil)}), nil
	case "number":
		return nodeAnyNumber, nil
	case "boolean":
		w := g.dialect.words()
		return g.addNode(node{kind: kLiteral, minLen: 4, lits: g.addSet(w[:2], nil)}), nil
	}
	return g.addNode(node{kind: kLiteral, minLen: 4, lits: g.addSet([]string{g.dialect.words()[2]}, nil)}), nil
}

// objectStyle is how an object is written: its punctuation and whether its
// keys are bare (without quotes). The zero value is JSON's.
type objectStyle struct {
	open, close, colon byte
	bare               bool
}

// object compiles the object keywords of s, written as objects of the
// dialect are.
func (c *compiler) object(path string, s map[string]any) (int32, error) {
	var style objectStyle
	if c.g.dialect == DialectGemma {
		style = objectStyle{open: '{', close: '}', colon: ':', bare: true}
	}
	return c.objectStyled(path, s, style)
}

// objectStyled compiles the object keywords of s, written in style. Objects
// with bare keys allow only their declared properties.
func (c *compiler) objectStyled(path string, s map[string]any, style objectStyle) (int32, error) {
	g := c.g
	n := node{kind: kObject, keys: -1, addl: nodeAny, open: style.open, close: style.close, colon: style.colon, bare: style.bare}
	var props map[string]any
	if v, ok := s["properties"]; ok {
		if props, ok = v.(map[string]any); !ok {
			return -1, fmt.Errorf("grammar: schema %s: properties must be an object, got %s", path, describe(v))
		}
	}
	if len(props) > maxProps {
		return -1, fmt.Errorf("grammar: schema %s: %d properties, at most %d are supported", path, len(props), maxProps)
	}
	required := map[string]bool{}
	if v, ok := s["required"]; ok {
		list, ok := v.([]any)
		if !ok {
			return -1, fmt.Errorf("grammar: schema %s: required must be a list, got %s", path, describe(v))
		}
		for _, e := range list {
			name, ok := e.(string)
			if !ok {
				return -1, fmt.Errorf("grammar: schema %s: required holds %s", path, describe(e))
			}
			if _, ok := props[name]; !ok {
				return -1, fmt.Errorf("grammar: schema %s: required property %q is not in properties", path, name)
			}
			required[name] = true
		}
	}
	if v, ok := s["additionalProperties"]; ok {
		if b, ok := v.(bool); ok && !b {
			n.addl = -1
		} else {
			ni, err := c.compile(path+"/additionalProperties", v)
			if err != nil {
				return -1, err
			}
			n.addl = ni
		}
	}
	if style.bare {
		n.addl = -1
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	var keyLits []string
	var keyProps []int32
	for i, name := range names {
		child, err := c.compile(path+"/properties/"+pointerToken(name), props[name])
		if err != nil {
			return -1, err
		}
		var key string
		var cost int32
		if style.bare {
			if !isIdent(name) {
				return -1, fmt.Errorf("grammar: schema %s: property %q cannot be written as a bare name", path, name)
			}
			key = name + string(n.colonByte()) // the key literal ends with the colon
			cost = addCost(int32(len(key)), g.nodes[child].minLen)
		} else {
			if key, err = encodeValue(name); err != nil {
				return -1, fmt.Errorf("grammar: schema %s: property %q: %w", path, name, err)
			}
			key = key[1:] // the opening quote is read before the key literal starts
			cost = memberCost(key, g.nodes[child].minLen)
		}
		p := prop{name: name, node: child, required: required[name], cost: cost, hash: hashKey(name)}
		if p.required {
			n.nReq++
			n.reqCost = addCost(n.reqCost, p.cost)
		}
		n.props = append(n.props, p)
		n.allSeen |= 1 << i
		keyLits = append(keyLits, key)
		keyProps = append(keyProps, int32(i))
	}
	if len(keyLits) > 0 {
		n.keys = g.addSet(keyLits, keyProps)
	}
	n.minLen = addCost(1, closeAfter(n.nReq, n.reqCost, true))
	return g.addNode(n), nil
}

// array compiles the array keywords of s.
func (c *compiler) array(path string, s map[string]any) (int32, error) {
	n := node{kind: kArray, items: nodeAny, maxItems: -1}
	if v, ok := s["items"]; ok {
		if _, ok := v.([]any); ok {
			return -1, fmt.Errorf("grammar: schema %s: items as a list (tuple) is not supported", path)
		}
		ni, err := c.compile(path+"/items", v)
		if err != nil {
			return -1, err
		}
		n.items = ni
	}
	var err error
	if n.minItems, _, err = count(path, s, "minItems"); err != nil {
		return -1, err
	}
	maxItems, ok, err := count(path, s, "maxItems")
	if err != nil {
		return -1, err
	}
	if ok {
		if maxItems < n.minItems {
			return -1, fmt.Errorf("grammar: schema %s: maxItems %d is below minItems %d", path, maxItems, n.minItems)
		}
		n.maxItems = maxItems
	}
	n.minLen = 2
	if n.minItems > 0 {
		n.minLen = addCost(1, mulCost(n.minItems, addCost(c.g.nodes[n.items].minLen, 1)))
	}
	return c.g.addNode(n), nil
}

// anyOf compiles the list of alternatives v.
func (c *compiler) anyOf(path string, v any) (int32, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return -1, fmt.Errorf("grammar: schema %s: anyOf must be a non-empty list", path)
	}
	alts := make([]int32, len(list))
	for i, e := range list {
		ni, err := c.compile(fmt.Sprintf("%s/anyOf/%d", path, i), e)
		if err != nil {
			return -1, err
		}
		alts[i] = ni
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return c.g.addNode(node{kind: kAnyOf, alts: alts, minLen: c.minOf(alts)}), nil
}

// literal compiles enum or const, keeping the values that node typ accepts.
func (c *compiler) literal(path string, s map[string]any, typ int32) (int32, error) {
	cv, hasConst := s["const"]
	ev, hasEnum := s["enum"]
	values := []any{cv}
	switch {
	case hasConst && hasEnum:
		return -1, fmt.Errorf("grammar: schema %s: enum together with const is not supported", path)
	case hasEnum:
		list, ok := ev.([]any)
		if !ok || len(list) == 0 {
			return -1, fmt.Errorf("grammar: schema %s: enum must be a non-empty list", path)
		}
		values = list
	}
	var lits []string
	for _, v := range values {
		if !c.g.accepts(typ, v) {
			continue
		}
		text, err := c.g.dialect.encodeLit(v)
		if err != nil {
			return -1, fmt.Errorf("grammar: schema %s: %w", path, err)
		}
		lits = append(lits, text)
	}
	if len(lits) == 0 {
		return -1, fmt.Errorf("grammar: schema %s: no enum or const value matches the rest of the schema", path)
	}
	minLen := int32(len(lits[0]))
	for _, l := range lits {
		minLen = min(minLen, int32(len(l)))
	}
	return c.g.addNode(node{kind: kLiteral, minLen: minLen, lits: c.g.addSet(lits, nil)}), nil
}

// minOf returns the smallest minimum length of nodes.
func (c *compiler) minOf(nodes []int32) int32 {
	m := c.g.nodes[nodes[0]].minLen
	for _, ni := range nodes[1:] {
		m = min(m, c.g.nodes[ni].minLen)
	}
	return m
}

// MaxIntRange bounds how many integers minimum and maximum may allow: the
// range is compiled as the list of its integers.
const MaxIntRange = 1024

// intRange returns the integers from minimum to maximum of an integer
// schema s, written in decimal; nil without the two. They are supported
// together only, spanning at most MaxIntRange integers.
func intRange(path string, s map[string]any) ([]string, error) {
	lo, hasLo := s["minimum"]
	hi, hasHi := s["maximum"]
	if !hasLo && !hasHi {
		return nil, nil
	}
	if !hasLo || !hasHi {
		return nil, fmt.Errorf("grammar: schema %s: minimum and maximum are supported together only (a range of at most %d integers)", path, MaxIntRange)
	}
	bound := func(key string, v any, round func(float64) float64) (int64, error) {
		num, ok := v.(json.Number)
		if ok {
			if f, err := num.Float64(); err == nil && math.Abs(f) < 1<<53 {
				return int64(round(f)), nil
			}
		}
		return 0, fmt.Errorf("grammar: schema %s: %s must be a number below 2^53 in magnitude, got %s", path, key, describe(v))
	}
	from, err := bound("minimum", lo, math.Ceil)
	if err != nil {
		return nil, err
	}
	to, err := bound("maximum", hi, math.Floor)
	if err != nil {
		return nil, err
	}
	switch {
	case to < from:
		return nil, fmt.Errorf("grammar: schema %s: no integer lies between minimum %s and maximum %s", path, describe(lo), describe(hi))
	case to-from >= MaxIntRange:
		return nil, fmt.Errorf("grammar: schema %s: minimum %s to maximum %s spans more than %d integers, the most supported", path, describe(lo), describe(hi), MaxIntRange)
	}
	lits := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		lits = append(lits, strconv.FormatInt(i, 10))
	}
	return lits, nil
}

// count reads the non-negative integer keyword key of s.
func count(path string, s map[string]any, key string) (int32, bool, error) {
	v, ok := s[key]
	if !ok {
		return 0, false, nil
	}
	num, isNum := v.(json.Number)
	if isNum {
		if n, err := strconv.ParseInt(string(num), 10, 32); err == nil && n >= 0 {
			return int32(n), true, nil
		}
		if f, err := num.Float64(); err == nil && f >= 0 && f < 1<<31 && f == float64(int32(f)) {
			return int32(f), true, nil
		}
	}
	return 0, false, fmt.Errorf("grammar: schema %s: %s must be a non-negative integer, got %s", path, key, describe(v))
}

// describe names a decoded JSON value for error messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return "number " + v.String()
	case string:
		return strconv.Quote(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// pointerToken escapes a property name for a JSON pointer.
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

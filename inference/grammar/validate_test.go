package grammar_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"unicode/utf8"
)

// checkOutput parses out as encoding/json does, checks that no object has
// two equal names, and validates the value against schema ("" for any JSON),
// independently of the package's own understanding of schemas.
func checkOutput(schema string, out []byte) error {
	var plain any
	if err := json.Unmarshal(out, &plain); err != nil {
		return fmt.Errorf("encoding/json: %w", err)
	}
	if err := checkUniqueNames(out); err != nil {
		return err
	}
	if schema == "" {
		return nil
	}
	var s any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return err
	}
	v, err := decodeNumbers(out)
	if err != nil {
		return err
	}
	return validate("#", s, v)
}

// decodeNumbers decodes data keeping numbers as json.Number.
func decodeNumbers(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// checkUniqueNames reports an object with a repeated name.
func checkUniqueNames(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		names  map[string]bool
		object bool
		key    bool // the next string is a name
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		top := len(stack) - 1
		isKey := top >= 0 && stack[top].object && stack[top].key
		if top >= 0 && stack[top].object {
			stack[top].key = !stack[top].key
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, level{names: map[string]bool{}, object: true, key: true})
			case '[':
				stack = append(stack, level{})
			default:
				stack = stack[:top]
				if top > 0 && stack[top-1].object {
					stack[top-1].key = true
				}
			}
			continue
		case string:
			if isKey {
				if stack[top].names[tok] {
					return fmt.Errorf("name %q repeated", tok)
				}
				stack[top].names[tok] = true
			}
		}
	}
}

// validate checks value v against schema s (the supported subset).
func validate(path string, s, v any) error {
	switch s := s.(type) {
	case bool:
		if !s {
			return fmt.Errorf("%s: schema false", path)
		}
		return nil
	case map[string]any:
		return validateObject(path, s, v)
	}
	return fmt.Errorf("%s: bad schema %v", path, s)
}

func validateObject(path string, s map[string]any, v any) error {
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if validate(path, a, v) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: no anyOf branch matches %v", path, v)
	}
	if t, ok := s["type"]; ok && !typeMatches(t, v) {
		return fmt.Errorf("%s: %v is not of type %v", path, v, t)
	}
	if c, ok := s["const"]; ok && !sameValue(c, v) {
		return fmt.Errorf("%s: %v is not %v", path, v, c)
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || sameValue(x, v)
		}
		if !found {
			return fmt.Errorf("%s: %v not in enum", path, v)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := v[r.(string)]; !ok {
				return fmt.Errorf("%s: required %q missing", path, r)
			}
		}
		for k, e := range v {
			sub, declared := props[k]
			if !declared {
				var ok bool
				if sub, ok = s["additionalProperties"]; !ok {
					sub = true
				}
			}
			if err := validate(path+"/"+k, sub, e); err != nil {
				return err
			}
		}
	case []any:
		if n, ok := number(s["minItems"]); ok && float64(len(v)) < n {
			return fmt.Errorf("%s: %d items, want at least %v", path, len(v), n)
		}
		if n, ok := number(s["maxItems"]); ok && float64(len(v)) > n {
			return fmt.Errorf("%s: %d items, want at most %v", path, len(v), n)
		}
		if items, ok := s["items"]; ok {
			for i, e := range v {
				if err := validate(fmt.Sprintf("%s/%d", path, i), items, e); err != nil {
					return err
				}
			}
		}
	case string:
		if n, ok := number(s["maxLength"]); ok && float64(utf8.RuneCountInString(v)) > n {
			return fmt.Errorf("%s: %q longer than %v", path, v, n)
		}
		if n, ok := number(s["minLength"]); ok && float64(utf8.RuneCountInString(v)) < n {
			return fmt.Errorf("%s: %q shorter than %v", path, v, n)
		}
	case json.Number:
		return validateBounds(path, s, v)
	}
	return nil
}

// validateBounds checks number v against minimum, maximum,
// exclusiveMinimum and exclusiveMaximum (numbers, or booleans as in draft 4).
func validateBounds(path string, s map[string]any, v json.Number) error {
	x, ok := new(big.Rat).SetString(v.String())
	if !ok {
		return fmt.Errorf("%s: bad number %s", path, v)
	}
	exMin, _ := s["exclusiveMinimum"].(bool)
	exMax, _ := s["exclusiveMaximum"].(bool)
	for _, c := range []struct {
		key string
		bad func(cmp int) bool // of x against the bound
	}{
		{"minimum", func(c int) bool { return c < 0 || exMin && c == 0 }},
		{"maximum", func(c int) bool { return c > 0 || exMax && c == 0 }},
		{"exclusiveMinimum", func(c int) bool { return c <= 0 }},
		{"exclusiveMaximum", func(c int) bool { return c >= 0 }},
	} {
		b, ok := number(s[c.key])
		if !ok {
			continue
		}
		if c.bad(x.Cmp(new(big.Rat).SetFloat64(b))) {
			return fmt.Errorf("%s: %s out of bound %s %v", path, v, c.key, b)
		}
	}
	return nil
}

func asList(v any) []any { l, _ := v.([]any); return l }

func number(v any) (float64, bool) { f, ok := v.(float64); return f, ok }

// typeMatches reports whether v is of type t (a name or a list of names).
func typeMatches(t, v any) bool {
	if list, ok := t.([]any); ok {
		for _, e := range list {
			if typeMatches(e, v) {
				return true
			}
		}
		return false
	}
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	case json.Number:
		if t == "number" {
			return true
		}
		f, err := v.Float64()
		return t == "integer" && err == nil && f == math.Trunc(f)
	}
	return false
}

// sameValue compares a schema value (decoded with float64 numbers) with a
// generated one (json.Number numbers).
func sameValue(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var x, y any
	json.Unmarshal(ja, &x)
	json.Unmarshal(jb, &y)
	fx, _ := json.Marshal(x)
	fy, _ := json.Marshal(y)
	return bytes.Equal(fx, fy)
}

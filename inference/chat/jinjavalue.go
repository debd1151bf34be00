package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// decodeJSON decodes a JSON value into the Jinja engine's values, objects
// as ordered dicts with their keys in the order written, integers as ints
// and other numbers as floats (as Python's json.loads). Empty or
// all-white-space raw gives empty.
func decodeJSON(raw json.RawMessage, empty jinja.Value) (jinja.Value, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return empty, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("data after the JSON value")
	}
	return v, nil
}

// decodeValue decodes the next JSON value of dec.
func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewList(items), nil
		}
		d := jinja.NewDict()
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return jinja.Undefined(), err
			}
			v, err := decodeValue(dec)
			if err != nil {
				return jinja.Undefined(), err
			}
			d.AsDict().Set(key.(string), v) // the decoder only returns string keys here
		}
		if _, err := dec.Token(); err != nil {
			return jinja.Undefined(), err
		}
		return d, nil
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		return numberValue(string(t))
	case bool:
		return jinja.NewBool(t), nil
	default: // nil
		return jinja.None(), nil
	}
}

// numberValue is a JSON number as Python's json.loads reads it: an int when
// written without fraction or exponent, a float otherwise.
func numberValue(s string) (jinja.Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return jinja.NewInt(n), nil
		}
		// Python keeps big integers exact; the engine has int64 only.
		return jinja.Undefined(), fmt.Errorf("integer %s does not fit 64 bits", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("number %s: %w", s, err)
	}
	return jinja.NewFloat(f), nil
}

// goValue converts a Go value of Input.Kwargs to an engine value: maps in
// sorted key order, json.RawMessage as decodeJSON does.
func goValue(v any) (jinja.Value, error) {
	switch x := v.(type) {
	case nil:
		return jinja.None(), nil
	case json.RawMessage:
		return decodeJSON(x, jinja.None())
	case bool:
		return jinja.NewBool(x), nil
	case string:
		return jinja.NewString(x), nil
	case int:
		return jinja.NewInt(int64(x)), nil
	case int64:
		return jinja.NewInt(x), nil
	case float64:
		return jinja.NewFloat(x), nil
	case []any:
		items := make([]jinja.Value, len(x))
		for i, e := range x {
			var err error
			if items[i], err = goValue(e); err != nil {
				return jinja.Undefined(), err
			}
		}
		return jinja.NewList(items), nil
	case map[string]any:
		d := jinja.NewDict()
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e, err := goValue(x[k])
			if err != nil {
				return jinja.Undefined(), err
			}
			d.AsDict().Set(k, e)
		}
		return d, nil
	}
	return jinja.Undefined(), fmt.Errorf("unsupported type %T", v)
}

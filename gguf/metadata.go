package gguf

import (
	"fmt"
	"math"
)

// Get returns the raw value of a metadata key (see KV for the Go types).
func (f *File) Get(key string) (any, bool) {
	i, ok := f.kv[key]
	if !ok {
		return nil, false
	}
	return f.KVs[i].Value, true
}

// Has reports whether the metadata key is present.
func (f *File) Has(key string) bool { _, ok := f.kv[key]; return ok }

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

func (f *File) lookup(key string) (any, error) {
	v, ok := f.Get(key)
	if !ok {
		return nil, fmt.Errorf("gguf: metadata %q: %w", key, ErrNotFound)
	}
	return v, nil
}

func wrongType(key string, v any, want string) error {
	return fmt.Errorf("gguf: metadata %q is %T, want %s", key, v, want)
}

// String returns a string value.
func (f *File) String(key string) (string, error) {
	v, err := f.lookup(key)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", wrongType(key, v, "string")
	}
	return s, nil
}

// Uint returns a non-negative integer value of any integer type.
func (f *File) Uint(key string) (uint64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	u, ok := asUint(v)
	if !ok {
		return 0, wrongType(key, v, "non-negative integer")
	}
	return u, nil
}

// Float returns a number of any numeric type as float64.
func (f *File) Float(key string) (float64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	if i, ok := asInt(v); ok {
		return float64(i), nil
	}
	if u, ok := asUint(v); ok {
		return float64(u), nil
	}
	return 0, wrongType(key, v, "number")
}

// Bool returns a boolean value.
func (f *File) Bool(key string) (bool, error) {
	v, err := f.lookup(key)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, wrongType(key, v, "bool")
	}
	return b, nil
}

// Strings returns an array of strings.
func (f *File) Strings(key string) ([]string, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	s, ok := v.([]string)
	if !ok {
		return nil, wrongType(key, v, "array of strings")
	}
	return s, nil
}

// Float32s returns an array of float32 (float64 arrays are converted).
func (f *File) Float32s(key string) ([]float32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case []float32:
		return x, nil
	case []float64:
		out := make([]float32, len(x))
		for i, e := range x {
			out[i] = float32(e)
		}
		return out, nil
	}
	return nil, wrongType(key, v, "array of float32")
}

// Int32s returns an array of integers as int32. Arrays of other integer types
// are converted when every element fits.
func (f *File) Int32s(key string) ([]int32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	if x, ok := v.([]int32); ok {
		return x, nil
	}
	var out []int32
	conv := func(n int, at func(int) (int64, bool)) bool {
		out = make([]int32, n)
		for i := range out {
			e, ok := at(i)
			if !ok || e < math.MinInt32 || e > math.MaxInt32 {
				return false
			}
			out[i] = int32(e)
		}
		return true
	}
	ok := false
	switch x := v.(type) {
	case []int8:
		ok = conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []uint8:
		ok = conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []int16:
		ok = conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []uint16:
		ok = conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []uint32:
		ok = conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []int64:
		ok = conv(len(x), func(i int) (int64, bool) { return x[i], true })
	case []uint64:
		ok = conv(len(x), func(i int) (int64, bool) { return int64(x[i]), x[i] <= math.MaxInt32 })
	}
	if !ok {
		return nil, wrongType(key, v, "array of int32")
	}
	return out, nil
}

func asUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	}
	if i, ok := asInt(v); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

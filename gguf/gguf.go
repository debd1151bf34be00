// Package gguf reads and writes GGUF model files (versions 2 and 3).
//
// A file is mapped read-only and never copied: tensor data are slices of the
// mapping, so the weights of a model stay in the page cache and the process heap
// holds only the metadata. Every count, length and offset is checked against the
// file before it is used, so a truncated, corrupted or hostile file yields an
// error naming the field and its offset, never a panic or a huge allocation.
//
// A Builder writes version 3 files, laid out byte for byte as the reference
// implementation lays them out; WriteFile replaces a file atomically.
package gguf

import (
	"errors"
	"fmt"

	"github.com/edgellm/edgellm/kernels"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the alignment of the tensor data section and of every
// tensor's data when the file has no general.alignment key.
const DefaultAlignment = 32

// MaxDims is the largest number of dimensions a tensor may have.
const MaxDims = 4

// ErrNotFound is wrapped by the accessors of File when a metadata key is missing.
var ErrNotFound = errors.New("key not found")

// ValueType is the type tag of a metadata value in a GGUF file.
type ValueType uint32

// The metadata value types, numbered as in the file format.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// String returns the name of the value type.
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(t))
}

// size returns the encoded size of a scalar of type t, or 0 for strings, arrays
// and unknown types.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// KV is one metadata key and its value. Value holds a Go value of the matching
// type: uint8, int8, uint16, int16, uint32, int32, uint64, int64, float32,
// float64, bool or string; an array is a slice of one of those ([]string,
// []float32, …) or, for an array of arrays, []any.
type KV struct {
	Key   string
	Value any
}

// Tensor describes one tensor of the file.
type Tensor struct {
	Name   string
	Dims   []uint64     // Dims[0] is the innermost (row) dimension
	Type   kernels.Type // element type
	Offset uint64       // offset of the data from the start of the data section
	Data   []byte       // the tensor's bytes: a slice of the file mapping
}

// Elements returns the number of values in the tensor.
func (t *Tensor) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Rows returns the number of rows (all dimensions but the first).
func (t *Tensor) Rows() uint64 { return t.Elements() / t.Dims[0] }

// String formats the tensor as name, type and shape.
func (t *Tensor) String() string { return fmt.Sprintf("%s %v %v", t.Name, t.Type, t.Dims) }

package inference

import (
	"fmt"
	"strings"
)

// KVType is how attention layers store their keys and values.
type KVType int

// The KV cache types.
const (
	// KVF16 stores keys and values in FP16 (the default; the reference's
	// -ctk f16 -ctv f16).
	KVF16 KVType = iota
	// KVQ8_0 stores them in Q8_0 blocks, 34 bytes per 32 values, 34/64 of
	// FP16's memory (the reference's -ctk q8_0 -ctv q8_0). Attention then
	// quantizes each query to Q8_0 for its scores, as the reference does.
	KVQ8_0
)

// kvTypeNames are the KV types' names, as the configuration and the flags
// spell them.
var kvTypeNames = [...]string{KVF16: "f16", KVQ8_0: "q8_0"}

// KVTypeNames lists the names ParseKVType accepts, the default first.
func KVTypeNames() []string { return kvTypeNames[:] }

// String is the type's name ("f16", "q8_0").
func (t KVType) String() string {
	if t < 0 || int(t) >= len(kvTypeNames) {
		return fmt.Sprintf("KVType(%d)", int(t))
	}
	return kvTypeNames[t]
}

// ParseKVType parses a KV cache type's name; "" is the default, f16.
func ParseKVType(name string) (KVType, error) {
	if name == "" {
		return KVF16, nil
	}
	for i, n := range kvTypeNames {
		if strings.EqualFold(name, n) {
			return KVType(i), nil
		}
	}
	return 0, fmt.Errorf("KV cache type %q: want one of %s", name, strings.Join(kvTypeNames[:], ", "))
}

// rowBytes is the size of a row of width keys (or values).
func (t KVType) rowBytes(width int) int {
	if t == KVQ8_0 {
		return width / kvBlock * kvBlockBytes
	}
	return 2 * width
}

// Q8_0 blocks: 32 values in an FP16 scale and 32 int8 quants.
const (
	kvBlock      = 32
	kvBlockBytes = 2 + kvBlock
)

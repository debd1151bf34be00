//go:build !linux

package chat

import "runtime/debug"

// limitMemory asks the Go runtime to keep its heap under n bytes; only
// Linux enforces a hard limit (probe_linux.go).
func limitMemory(n uint64) error {
	debug.SetMemoryLimit(int64(n))
	return nil
}

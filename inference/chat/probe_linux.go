package chat

import (
	"fmt"
	"syscall"
)

// limitMemory caps this process's data segment, its private writable
// memory with the Go heap (Linux 4.7 and later), at n bytes, so allocating
// past it fails (and the Go runtime exits) instead of taking the machine's
// memory. The address space (RLIMIT_AS) would not do: the Go runtime
// reserves over a gigabyte of it that it never uses.
func limitMemory(n uint64) error {
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		return fmt.Errorf("limiting the data segment to %d bytes: %w", n, err)
	}
	return nil
}

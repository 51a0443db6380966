// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Buffer is page-aligned memory from an anonymous private mapping, outside
// the Go heap, to register as an MR. The Go runtime neither moves nor frees
// it; Free unmaps it.
type Buffer struct {
	mu  sync.Mutex
	mem []byte // the whole mapping, a multiple of the page size
	n   int
}

// Alloc maps n octets (rounded up to whole pages) of zeroed, page-aligned
// memory.
func Alloc(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("iwarp: alloc %d octets: %w", n, syscall.EINVAL)
	}
	page := os.Getpagesize()
	size := (n + page - 1) &^ (page - 1)
	if size < n {
		return nil, fmt.Errorf("iwarp: alloc %d octets: %w", n, syscall.EINVAL)
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANONYMOUS|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("iwarp: alloc %d octets: %w", n, err)
	}
	return &Buffer{mem: mem, n: n}, nil
}

// Bytes returns the n octets asked of Alloc (its capacity reaches the end of
// the last page), or nil after Free. The slice must not be used after Free.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return nil
	}
	return b.mem[:b.n:len(b.mem)]
}

// Free unmaps the memory. Pages still registered stay pinned by the kernel
// until their MR is closed. Free is idempotent.
func (b *Buffer) Free() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return nil
	}
	err := unix.Munmap(b.mem)
	b.mem = nil
	if err != nil {
		return fmt.Errorf("iwarp: free: %w", err)
	}
	return nil
}

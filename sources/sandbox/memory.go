package sandbox

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// pageBytes is a WebAssembly page.
const pageBytes = 64 << 10

// ceiling is one instance's memory allocator: wazero asks it for the
// linear memory and for every growth, and it refuses (memory.grow answers
// -1, a Go guest dies of "out of memory") past limit bytes. A runtime's
// own memory limit is fixed for all its modules at compile time; this is
// per instance, so one runtime serves every ceiling.
type ceiling struct {
	limit   uint64
	refused atomic.Bool
	// hint is the size the module's last instance grew to: the first
	// allocation reserves it, so a guest that grows as the last one did
	// copies nothing. peak is this instance's size.
	hint uint64
	peak atomic.Uint64
}

// Allocate implements experimental.MemoryAllocator.
func (c *ceiling) Allocate(_, _ uint64) experimental.LinearMemory {
	return &linear{c: c}
}

// linear is a linear memory that never passes its ceiling.
type linear struct {
	c   *ceiling
	buf []byte
}

// Reallocate implements experimental.LinearMemory: the memory of size
// bytes, its contents kept, or nil past the ceiling.
func (l *linear) Reallocate(size uint64) []byte {
	if size > l.c.limit {
		l.c.refused.Store(true)
		return nil
	}
	if size > l.c.peak.Load() {
		l.c.peak.Store(size)
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
		return l.buf
	}
	// Grow like append (or to the hint at first), but never reserve past
	// the ceiling.
	newCap := min(max(size, 2*uint64(cap(l.buf)), l.c.hint), l.c.limit)
	nb := make([]byte, size, newCap)
	copy(nb, l.buf)
	l.buf = nb
	return l.buf
}

// Free implements experimental.LinearMemory.
func (l *linear) Free() { l.buf = nil }

// Package disk watches the free space of the palace's filesystem against a
// reserve: below it, writes are refused with loci::store::disk_full before
// space runs out, and resume by themselves once it is freed. The free
// space is read with statfs at most once per Refresh (a write costs a
// clock read and two atomic loads).
package disk

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/fault"
)

// Refresh is how long a free-space reading is used before statfs is asked
// again.
const Refresh = 250 * time.Millisecond

// Guard is the free space of one filesystem against a reserve. The zero
// value is not usable; build one with New.
type Guard struct {
	path    string
	reserve int64
	// statfs reads the free bytes of path (replaced in tests).
	statfs func(path string) (int64, error)

	mu   sync.Mutex   // one statfs at a time
	free atomic.Int64 // last reading; -1 when it could not be read
	at   atomic.Int64 // when, Unix nanoseconds
}

// New watches the filesystem holding path with reserve bytes kept free.
func New(path string, reserve int64) *Guard {
	g := &Guard{path: path, reserve: reserve, statfs: freeBytes}
	g.refresh()
	return g
}

// Path is the directory the guard watches.
func (g *Guard) Path() string { return g.path }

// Reserve is the free space kept.
func (g *Guard) Reserve() int64 { return g.reserve }

// Free is the free space, refreshed when the last reading is older than
// Refresh; -1 when the filesystem cannot say.
func (g *Guard) Free() int64 {
	if time.Now().UnixNano()-g.at.Load() > int64(Refresh) {
		g.refresh()
	}
	return g.free.Load()
}

// Full reports that less than the reserve is free. A filesystem that
// cannot say is never full.
func (g *Guard) Full() bool {
	f := g.Free()
	return f >= 0 && f < g.reserve
}

// Check is nil while at least the reserve is free, else
// loci::store::disk_full saying how much is free and where.
func (g *Guard) Check() error {
	if !g.Full() {
		return nil
	}
	return g.Err()
}

// Err is the disk_full error at the last reading.
func (g *Guard) Err() error {
	return fault.New(fault.StoreDiskFull, "the palace's disk is full: writes are refused until space is freed",
		fmt.Sprintf("%s free at %s, under the reserve of %s (store.min_free_bytes); free space there: writes resume by themselves, reads and search go on",
			Bytes(max(g.free.Load(), 0)), g.path, Bytes(g.reserve)))
}

// Wait returns once the reserve is free again, or with ctx's error.
func (g *Guard) Wait(ctx context.Context) error {
	t := time.NewTicker(Refresh)
	defer t.Stop()
	for g.Full() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func (g *Guard) refresh() {
	if !g.mu.TryLock() {
		return // another caller is reading it; its reading will do
	}
	defer g.mu.Unlock()
	f, err := g.statfs(g.path)
	if err != nil {
		f = -1
	}
	g.free.Store(f)
	g.at.Store(time.Now().UnixNano())
}

// Bytes writes a size for people: 1.5 GiB, 300 MiB, 12 KiB, 5 B.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// FreeBytes is the free space of the filesystem holding path, as an
// unprivileged writer may use it; -1 when it cannot be read.
func FreeBytes(path string) int64 {
	f, err := freeBytes(path)
	if err != nil {
		return -1
	}
	return f
}

package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// memoryLimit is the Go runtime's soft memory limit when GOMEMLIMIT is not
// set, the least the limit is: holdHeap raises it with the live heap. It
// bounds the heap, not memory-mapped files (Badger's tables, the lexical
// index), which the kernel may drop and read again: at a million drawers
// those are about 1.7 GB more. A daemon that lives beside an editor keeps
// its heap within a quarter again of what is live from a small palace on (issue
// 38: at 1.25 GiB, mining 20,000 small files let a live heap of 136 MB
// occupy 300 MB).
const memoryLimit = 128 << 20

// heapHeadroom is the least room the limit leaves above the live heap, as
// a fraction of it: a palace whose live heap nears the limit gets a higher
// one rather than a collector that runs without pause. A quarter (it was
// half until issue 38, point 10): the heap of a busy daemon stays within
// 1.25 times what is live, for a collection about every quarter of the
// live heap allocated.
const heapHeadroom = 0.25

// quietBytes and quietTicks decide when the daemon is at rest: a tick
// (two seconds) in which the heap grew by less than quietBytes of
// allocations is quiet, and after quietTicks quiet ticks in a row the
// heap's free pages are given back to the system at once. Otherwise the
// collector keeps a heap near its limit for as long as the daemon idles
// (issue 38: 190 MB resident for a live heap of 129 MB, at rest).
const (
	quietBytes = 4 << 20
	quietTicks = 5
)

// heapTick is how often holdHeap looks at the heap (a variable for tests).
var heapTick = 2 * time.Second

// dropTicks is how often (in two-second ticks) the pages of mapped files
// are dropped from the resident set while the daemon works: every 30 s.
// Reads map the store's tables page by page and keep every page read
// until the table is deleted by a compaction (a busy daemon at 8,500
// drawers held 87 MiB of file pages, issue 38); dropped, a page read again
// comes back from the page cache (a minor fault), so a working set costs
// about a millisecond of faults for every 4 MB of it, twice a minute.
const dropTicks = 15

// rest follows the heap's allocations tick by tick and says when the
// daemon has come to rest: once per quiet spell, after quietTicks quiet
// ticks. What is given back then costs one collection.
type rest struct {
	allocs uint64 // cumulative allocations at the last tick
	quiet  int    // quiet ticks in a row
	given  bool   // given back in this quiet spell
}

// tick takes the heap's cumulative allocations and reports whether the
// daemon has just come to rest.
func (r *rest) tick(allocs uint64) bool {
	grew := allocs - r.allocs
	r.allocs = allocs
	if grew >= quietBytes {
		r.quiet, r.given = 0, false
		return false
	}
	r.quiet++
	if r.given || r.quiet < quietTicks {
		return false
	}
	r.given = true
	return true
}

// limitFor is the soft memory limit for a live heap of live bytes: base,
// or live plus heapHeadroom of it when that is more.
func limitFor(base int64, live uint64) int64 {
	return max(base, int64(float64(live)*(1+heapHeadroom)))
}

// holdHeap sets the soft memory limit to base and, until ctx ends, raises
// it (never under base) as the live heap grows, calls dropMapped every
// dropTicks ticks and once the daemon is at rest (rest), and then gives the
// heap's free pages back too, so that the collector works
// harder near the limit instead of letting the heap reach twice what is
// live (a million-drawer palace reached 4.9 GB resident without a limit),
// yet never spends the process's time collecting a heap that needs more.
func holdHeap(ctx context.Context, base int64, dropMapped func()) {
	debug.SetMemoryLimit(base)
	sample := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	go func() {
		t := time.NewTicker(heapTick)
		defer t.Stop()
		cur := base
		var r rest
		ticks := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(sample)
			for _, s := range sample {
				if s.Value.Kind() != metrics.KindUint64 {
					return
				}
			}
			if l := limitFor(base, sample[0].Value.Uint64()); l != cur {
				debug.SetMemoryLimit(l)
				cur = l
			}
			if ticks++; ticks%dropTicks == 0 {
				// Busy or not, pages of mapped files read since the
				// last drop leave the resident set (see dropTicks).
				dropMapped()
			}
			if r.tick(sample[1].Value.Uint64()) {
				// At rest: drop what else is resident and can be read
				// again (mapped files), collect, and give every free
				// page back.
				dropMapped()
				debug.FreeOSMemory()
			}
		}
	}()
}

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
// its heap within half again of what is live from a small palace on (issue
// 38: at 1.25 GiB, mining 20,000 small files let a live heap of 136 MB
// occupy 300 MB).
const memoryLimit = 128 << 20

// heapHeadroom is the least room the limit leaves above the live heap, as
// a fraction of it: a palace whose live heap nears the limit gets a higher
// one rather than a collector that runs without pause.
const heapHeadroom = 0.5

// limitFor is the soft memory limit for a live heap of live bytes: base,
// or live plus heapHeadroom of it when that is more.
func limitFor(base int64, live uint64) int64 {
	return max(base, int64(float64(live)*(1+heapHeadroom)))
}

// holdHeap sets the soft memory limit to base and, until ctx ends, raises
// it (never under base) as the live heap grows, so that the collector works
// harder near the limit instead of letting the heap reach twice what is
// live (a million-drawer palace reached 4.9 GB resident without a limit),
// yet never spends the process's time collecting a heap that needs more.
func holdHeap(ctx context.Context, base int64) {
	debug.SetMemoryLimit(base)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		cur := base
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return
			}
			if l := limitFor(base, sample[0].Value.Uint64()); l != cur {
				debug.SetMemoryLimit(l)
				cur = l
			}
		}
	}()
}

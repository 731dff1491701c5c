package main

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// The soft memory limit is the base until the live heap needs more room,
// then the live heap and a quarter of it again.
func TestLimitFor(t *testing.T) {
	t.Parallel()
	const base = memoryLimit
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, base},
		{80 << 20, base},     // 100 MiB with its headroom, under the 128 MiB base
		{base / 5 * 4, base}, // exactly the headroom
		{600 << 20, 750 << 20},
		{1000 << 20, 1250 << 20},
		{4 << 30, 5 << 30},
	} {
		if got := limitFor(base, c.live); got != c.want {
			t.Errorf("limitFor(base, %d MiB) = %d MiB, want %d MiB", c.live>>20, got>>20, c.want>>20)
		}
	}
}

// The daemon comes to rest once per quiet spell: after quietTicks ticks
// that allocated little, and not again until it has been busy and is
// quiet once more.
func TestRestOncePerQuietSpell(t *testing.T) {
	t.Parallel()
	var r rest
	var allocs uint64
	step := func(grew uint64) bool {
		allocs += grew
		return r.tick(allocs)
	}
	if step(500 << 20) {
		t.Fatal("at rest on a busy tick")
	}
	for i := 1; i < quietTicks; i++ {
		if step(1 << 20) {
			t.Fatalf("at rest after %d quiet ticks, want %d", i, quietTicks)
		}
	}
	if !step(1 << 20) {
		t.Fatalf("not at rest after %d quiet ticks", quietTicks)
	}
	for i := 0; i < 3*quietTicks; i++ {
		if step(0) {
			t.Fatal("came to rest twice in one quiet spell")
		}
	}
	step(quietBytes) // busy again
	for i := 1; i < quietTicks; i++ {
		if step(0) {
			t.Fatalf("at rest after %d quiet ticks of the second spell", i)
		}
	}
	if !step(0) {
		t.Fatal("not at rest in the second quiet spell")
	}
}

// holdHeap drops the mapped files' pages every dropTicks ticks while the
// daemon works, not only at rest: a busy daemon never rests.
func TestHoldHeapDropsMappedPagesWhileBusy(t *testing.T) {
	// Not parallel: it sets the package variable heapTick.
	old := heapTick
	heapTick = 5 * time.Millisecond
	defer func() { heapTick = old }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var drops atomic.Int32
	var sink [][]byte
	holdHeap(ctx, debug.SetMemoryLimit(-1), func() { drops.Add(1) })
	// Busy: allocate more than quietBytes a tick, for 3 × dropTicks ticks.
	for end := time.Now().Add(3 * dropTicks * heapTick); time.Now().Before(end); {
		sink = append(sink, make([]byte, quietBytes))
		if len(sink) > 8 {
			sink = sink[:0]
		}
		time.Sleep(heapTick / 4)
	}
	cancel()
	if n := drops.Load(); n < 2 {
		t.Errorf("dropped the mapped pages %d times in %d busy ticks, want every %d ticks", n, 3*dropTicks, dropTicks)
	}
}

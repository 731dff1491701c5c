package main

import "testing"

// The soft memory limit is the base until the live heap needs more room,
// then the live heap and a quarter of it again.
func TestLimitFor(t *testing.T) {
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

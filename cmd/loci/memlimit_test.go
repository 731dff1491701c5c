package main

import "testing"

// The soft memory limit is the base until the live heap needs more room,
// then the live heap and half of it again.
func TestLimitFor(t *testing.T) {
	const base = memoryLimit
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, base},
		{80 << 20, base},     // 120 MiB with its headroom, under the 128 MiB base
		{base / 3 * 2, base}, // exactly the headroom
		{600 << 20, 900 << 20},
		{1000 << 20, 1500 << 20},
		{4 << 30, 6 << 30},
	} {
		if got := limitFor(base, c.live); got != c.want {
			t.Errorf("limitFor(base, %d MiB) = %d MiB, want %d MiB", c.live>>20, got>>20, c.want>>20)
		}
	}
}

package main

import (
	"syscall"
	"testing"
)

// fileLimit raises a soft open-file limit below the hard one to the hard
// one, and leaves one already there (or one under it by the Go runtime's
// own raise) as it is.
func TestFileLimitRaisesTheSoftLimit(t *testing.T) {
	// Not parallel: it changes the process's RLIMIT_NOFILE.
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Max < 64 {
		t.Skipf("hard open-file limit %d: too low to lower the soft one", orig.Max)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })
	low := orig
	low.Cur = orig.Max / 2
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	soft, hard, raised, err := fileLimit()
	if err != nil || !raised || soft != orig.Max || hard != orig.Max {
		t.Fatalf("from %d of %d: %d, %d, raised %v, %v", low.Cur, orig.Max, soft, hard, raised, err)
	}
	var now syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now); err != nil || now.Cur != orig.Max {
		t.Fatalf("the limit in effect: %d (%v)", now.Cur, err)
	}
	near := orig
	near.Cur = orig.Max - 1
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &near); err != nil {
		t.Fatal(err)
	}
	if soft, _, raised, _ := fileLimit(); raised || soft != orig.Max-1 {
		t.Fatalf("the runtime's own raise (one under the hard limit) was changed: %d, raised %v", soft, raised)
	}
}

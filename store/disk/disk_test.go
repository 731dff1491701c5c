package disk

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loci-dev/loci/fault"
)

func fake(free *atomic.Int64, calls *atomic.Int64) func(string) (int64, error) {
	return func(string) (int64, error) { calls.Add(1); return free.Load(), nil }
}

// The guard refuses below the reserve with disk_full naming the free space
// and the path, reads statfs at most once per Refresh however often it is
// asked, and Wait returns once space is back.
//
// It runs on synctest's fake clock: its sleeps let Refresh pass exactly
// (the rule is about time passing), and Wait's ticker follows the same
// clock, so no real time is guessed at.
func TestGuard(t *testing.T) {
	synctest.Test(t, testGuard)
}

func testGuard(t *testing.T) {
	var free, calls atomic.Int64
	free.Store(10 << 20)
	g := &Guard{path: "/palace/here", reserve: 8 << 20, statfs: fake(&free, &calls)}
	g.refresh()
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	for range 100_000 {
		_ = g.Check()
	}
	if n := calls.Load(); n > 3 {
		t.Fatalf("%d statfs calls for 100,000 checks", n)
	}
	free.Store(3 << 20)
	time.Sleep(Refresh + 10*time.Millisecond)
	err := g.Check()
	fe := fault.As(err)
	if err == nil || fe.Code != fault.StoreDiskFull || fe.HTTPStatus() != 507 ||
		!strings.Contains(fe.Help, "3.0 MiB free at /palace/here") || !strings.Contains(fe.Help, "8.0 MiB") {
		t.Fatalf("below the reserve: %+v", fe)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); err == nil {
		t.Fatal("Wait returned on a full disk")
	}
	go func() { time.Sleep(100 * time.Millisecond); free.Store(9 << 20) }()
	if err := g.Wait(context.Background()); err != nil || g.Full() {
		t.Fatalf("Wait: %v, full %v", err, g.Full())
	}
}

// A filesystem that cannot say its free space is never full.
func TestGuardUnknown(t *testing.T) {
	g := &Guard{path: "/x", reserve: 1, statfs: func(string) (int64, error) { return 0, context.Canceled }}
	g.refresh()
	if g.Full() || g.Check() != nil || g.Free() != -1 {
		t.Fatal("an unreadable filesystem counted as full")
	}
	if FreeBytes(t.TempDir()) <= 0 {
		t.Fatal("statfs of a real directory")
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{5: "5 B", 1536: "1.5 KiB", 300 << 20: "300.0 MiB", 3 << 30: "3.0 GiB"} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if got := Bytes(n); got != want {
				t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
			}
		})
	}
}

package actors

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The vector follower asks for an embed job once after its start, then
// once per burst of new drawers, at the first tick (each second) that
// finds the change log caught up; never while nothing new arrives.
func TestNewDrawersAskForEmbeddingOncePerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &changeLog{}
		var asked atomic.Int32
		v := NewVectors(l, nil, nil, "", slog.New(slog.DiscardHandler), VectorOptions{})
		v.Start(func() { asked.Add(1) })
		defer v.Stop(context.Background())
		synctest.Wait()
		if n := asked.Load(); n != 0 {
			t.Fatalf("asked %d times before the first tick", n)
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if n := asked.Load(); n != 1 {
			t.Fatalf("asked %d times after the start's first tick, want 1", n)
		}
		// A burst: new drawers every 100 ms for half a second.
		for range 5 {
			l.created(3)
			v.Kick()
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := asked.Load(); n != 2 {
			t.Fatalf("asked %d times after one burst, want 2", n)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := asked.Load(); n != 2 {
			t.Fatalf("asked %d times after ten quiet seconds, want still 2", n)
		}
	})
}

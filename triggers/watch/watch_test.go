package watch

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loci-dev/loci/triggers"
)

// A burst of changes is one call, once quiet for the debounce.
func TestDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		changes := make(chan struct{})
		var fired atomic.Int32
		go Debounce(ctx, changes, 2*time.Second, func() { fired.Add(1) })
		for range 500 {
			changes <- struct{}{}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(1900 * time.Millisecond)
		synctest.Wait()
		if fired.Load() != 0 {
			t.Fatal("fired before the debounce")
		}
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if fired.Load() != 1 {
			t.Fatalf("fired %d times for one burst", fired.Load())
		}
		changes <- struct{}{}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if fired.Load() != 2 {
			t.Fatalf("fired %d times for two bursts", fired.Load())
		}
	})
}

// A real directory: a new file fires, a file in a new subdirectory fires,
// churn in .git does not.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	s, _ := triggers.Check(triggers.Watch, map[string]string{"path": dir, "debounce": "100ms"})
	fired := make(chan struct{}, 10)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- Dir(ctx, s, func() { fired <- struct{}{} }, func() { close(ready) }) }()
	<-ready
	wait := func(want bool, what string) {
		t.Helper()
		select {
		case <-fired:
			if !want {
				t.Fatalf("%s fired", what)
			}
		case <-time.After(time.Second):
			if want {
				t.Fatalf("%s did not fire", what)
			}
		}
	}
	os.WriteFile(filepath.Join(dir, ".git", "index"), []byte("x"), 0o644)
	wait(false, ".git churn")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644)
	wait(true, "a new file")
	os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755)
	wait(true, "a new directory")
	os.WriteFile(filepath.Join(dir, "sub", "deeper", "b.txt"), []byte("x"), 0o644)
	wait(true, "a file in a new directory")
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := Dir(t.Context(), triggers.Settings{Path: filepath.Join(dir, "missing"), Debounce: time.Second}, func() {}, nil); err == nil {
		t.Fatal("watching a missing directory did not fail")
	}
}

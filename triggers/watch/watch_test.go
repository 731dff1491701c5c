package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loci-dev/loci/triggers"
)

// A burst of changes is one call, once quiet for the debounce.
//
// The sleeps in this test and in TestDebounceMaxWait run on synctest's
// fake clock: each advances the bubble's time only once every goroutine in
// it is blocked, and synctest.Wait returns once Debounce is blocked again,
// so "not fired yet" is proved exactly, without real waiting.
func TestDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		changes := make(chan struct{})
		var fired atomic.Int32
		go Debounce(ctx, changes, 2*time.Second, time.Hour, func() { fired.Add(1) })
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

// skipDotted stands for the caller's rule (the daemon passes
// sources.SkippedDir): dot directories and node_modules are skipped.
func skipDotted(name string) bool { return name == "node_modules" || strings.HasPrefix(name, ".") }

// A real directory: a new file fires, a file in a new subdirectory fires,
// churn in a directory the caller skips (.git, there from the start, or
// node_modules, made while watching) does not.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	s, _ := triggers.Check(triggers.Watch, map[string]string{"path": dir, "debounce": "100ms"})
	fired := make(chan struct{}, 10)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- Dir(ctx, s, skipDotted, func() { fired <- struct{}{} }, func() { close(ready) }) }()
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
	// Absence can only be shown by waiting: a change fires within the
	// debounce (100ms) of its event, so a second of quiet is ten debounces.
	os.WriteFile(filepath.Join(dir, ".git", "index"), []byte("x"), 0o644)
	wait(false, ".git churn")
	os.MkdirAll(filepath.Join(dir, "node_modules", "x"), 0o755)
	wait(false, "a new skipped directory")
	os.WriteFile(filepath.Join(dir, "node_modules", "x", "index.js"), []byte("x"), 0o644)
	wait(false, "a file in a new skipped directory")
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
	if err := Dir(t.Context(), triggers.Settings{Path: filepath.Join(dir, "missing"), Debounce: time.Second}, skipDotted, func() {}, nil); err == nil {
		t.Fatal("watching a missing directory did not fail")
	}
}

// What is skipped is the caller's word alone: with no skip rule, churn in
// .git fires like any other change.
func TestDirSkipsNothingUnasked(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	s, _ := triggers.Check(triggers.Watch, map[string]string{"path": dir, "debounce": "100ms"})
	fired := make(chan struct{}, 10)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- Dir(ctx, s, nil, func() { fired <- struct{}{} }, func() { close(ready) }) }()
	<-ready
	os.WriteFile(filepath.Join(dir, ".git", "index"), []byte("x"), 0o644)
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal(".git churn did not fire with no skip rule")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// Changes that never stop for the debounce still fire once max_wait has
// passed since the first change of a burst, and keep coalescing: a signal
// every 10 ms for 10 s with a 2 s debounce and a 3 s max_wait fires at 3,
// 6 and 9 s, then once 2 s after the last change, then never again.
func TestDebounceMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		changes := make(chan struct{})
		var fired atomic.Int32
		go Debounce(ctx, changes, 2*time.Second, 3*time.Second, func() { fired.Add(1) })
		start := time.Now()
		at := func(d time.Duration, want int32) {
			t.Helper()
			synctest.Wait()
			if n := fired.Load(); n != want {
				t.Fatalf("%s after the first change: fired %d times, want %d", d, n, want)
			}
		}
		checks := []struct {
			at   time.Duration
			want int32
		}{{2950 * time.Millisecond, 0}, {3050 * time.Millisecond, 1}, {5950 * time.Millisecond, 1}, {6050 * time.Millisecond, 2}, {9050 * time.Millisecond, 3}}
		for time.Since(start) < 10*time.Second {
			changes <- struct{}{}
			time.Sleep(10 * time.Millisecond)
			for len(checks) > 0 && time.Since(start) >= checks[0].at {
				at(checks[0].at, checks[0].want)
				checks = checks[1:]
			}
		}
		// The last change was at 9.99 s: quiet for 2 s fires at 11.99 s,
		// before the burst's max_wait (9.01 + 3 s).
		time.Sleep(1900 * time.Millisecond)
		at(11900*time.Millisecond, 3)
		time.Sleep(200 * time.Millisecond)
		at(12100*time.Millisecond, 4)
		time.Sleep(time.Minute)
		at(72*time.Second, 4)
	})
}

// A real file touched every 50 ms, more often than the debounce: the
// watch fires within max_wait (it used to wait for quiet that never came),
// and keeps coalescing (a few runs, not one per touch).
func TestDirBusyFile(t *testing.T) {
	dir := t.TempDir()
	s, err := triggers.Check(triggers.Watch, map[string]string{"path": dir, "debounce": "500ms", "max_wait": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	var fired atomic.Int32
	first := make(chan time.Time, 1)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- Dir(ctx, s, skipDotted, func() {
			if fired.Add(1) == 1 {
				first <- time.Now()
			}
		}, func() { close(ready) })
	}()
	<-ready
	log := filepath.Join(dir, "app.log")
	start := time.Now()
	for time.Since(start) < 3500*time.Millisecond {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("a line\n")
		f.Close()
		time.Sleep(50 * time.Millisecond) // the pace of the touches: the load, not a wait
	}
	select {
	case at := <-first:
		if d := at.Sub(start); d > 1500*time.Millisecond {
			t.Fatalf("first fired %s after the first change, want within max_wait (1s)", d)
		}
	default:
		t.Fatal("a file touched every 50 ms never fired (max_wait 1s)")
	}
	if n := fired.Load(); n < 2 || n > 4 {
		t.Fatalf("3.5 s of touches every 50 ms fired %d times, want 2 to 4", n)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// The watched directory removed (or moved away): Dir returns an error, so
// that its caller sets the watch up again once the directory is back
// (fsnotify drops the watch of a removed directory and says nothing more).
func TestDirRootRemoved(t *testing.T) {
	for _, how := range []string{"removed", "renamed"} {
		t.Run(how, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "w")
			os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
			s, _ := triggers.Check(triggers.Watch, map[string]string{"path": dir, "debounce": "100ms"})
			ready := make(chan struct{})
			errc := make(chan error, 1)
			go func() { errc <- Dir(t.Context(), s, skipDotted, func() {}, func() { close(ready) }) }()
			<-ready
			if how == "removed" {
				os.RemoveAll(dir)
			} else {
				os.Rename(dir, dir+".old")
			}
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("Dir returned nil while its context lives")
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("the watched directory %s and Dir still runs", how)
			}
		})
	}
}

package services

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loci-dev/loci/triggers"
)

// A schedule never fires on enable: its first slot is one interval away.
// After downtime (a remembered slot long past) it fires once, then keeps
// its grid; with at, it fires at that time of day.
func TestScheduleLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, _ := triggers.Check(triggers.Schedule, map[string]string{"every": "10m"})
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		var fired []time.Time
		var saved []time.Time
		start := time.Now()
		go runSchedule(ctx, set, nil, func() { mu.Lock(); fired = append(fired, time.Now()); mu.Unlock() },
			func(_ *time.Time, t time.Time) (time.Time, bool) {
				mu.Lock()
				saved = append(saved, t)
				mu.Unlock()
				return t, true
			})
		time.Sleep(9*time.Minute + 59*time.Second)
		synctest.Wait()
		mu.Lock()
		if len(fired) != 0 || len(saved) != 1 || !saved[0].Equal(start.Add(10*time.Minute)) {
			t.Fatalf("before the first slot: fired %v, saved %v", fired, saved)
		}
		mu.Unlock()
		time.Sleep(25 * time.Minute)
		synctest.Wait()
		mu.Lock()
		if len(fired) != 3 {
			t.Fatalf("after 35 minutes fired %d times, want 3", len(fired))
		}
		mu.Unlock()
		cancel()

		// A slot remembered from before a 5-hour stop: once, at once.
		fired, saved = nil, nil
		ctx, cancel = context.WithCancel(t.Context())
		past := time.Now().Add(-5 * time.Hour)
		go runSchedule(ctx, set, &past, func() { mu.Lock(); fired = append(fired, time.Now()); mu.Unlock() },
			func(_ *time.Time, t time.Time) (time.Time, bool) {
				mu.Lock()
				saved = append(saved, t)
				mu.Unlock()
				return t, true
			})
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		if len(fired) != 1 || len(saved) != 1 || !saved[0].After(time.Now()) || saved[0].Sub(time.Now()) > 10*time.Minute {
			t.Fatalf("after downtime fired %d times (want 1), next %v", len(fired), saved)
		}
		mu.Unlock()
		cancel()

		// Every day at 06:00 UTC.
		daily, _ := triggers.Check(triggers.Schedule, map[string]string{"every": "1d", "at": "06:00"})
		fired = nil
		ctx, cancel = context.WithCancel(t.Context())
		defer cancel()
		go runSchedule(ctx, daily, nil, func() { mu.Lock(); fired = append(fired, time.Now().UTC()); mu.Unlock() },
			func(_ *time.Time, t time.Time) (time.Time, bool) { return t, true })
		time.Sleep(72 * time.Hour)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(fired) != 3 {
			t.Fatalf("3 days fired %d times", len(fired))
		}
		for _, f := range fired {
			if f.Hour() != 6 || f.Minute() != 0 {
				t.Fatalf("fired at %v, not 06:00 UTC", f)
			}
		}
	})
}

// A failing poll backs off (doubling, up to max_backoff) and returns to
// its interval on the first success.
func TestPollBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, _ := triggers.Check(triggers.Poll, map[string]string{"every": "1m", "max_backoff": "5m"})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		var at []time.Duration
		fail := true
		start := time.Now()
		go runPoll(ctx, set, func() error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			if fail {
				return errors.New("down")
			}
			return nil
		}, func(time.Time) {})
		// Fails at 1m, then waits 2m, 4m, 5m, 5m: 1, 3, 7, 12, 17.
		time.Sleep(17*time.Minute + time.Second)
		synctest.Wait()
		mu.Lock()
		want := []time.Duration{1, 3, 7, 12, 17}
		if len(at) != len(want) {
			t.Fatalf("polls at %v", at)
		}
		for i, w := range want {
			if at[i] != w*time.Minute {
				t.Fatalf("poll %d at %v, want %v", i, at[i], w*time.Minute)
			}
		}
		fail = false
		mu.Unlock()
		// Succeeds at 22m, then every minute again.
		time.Sleep(8 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(at) < 8 || at[5] != 22*time.Minute || at[6] != 23*time.Minute || at[7] != 24*time.Minute {
			t.Fatalf("after recovery polls at %v", at)
		}
	})
}

// A watch asks for a run at once when it arms again after losing its
// directory (removed and made again, with files, in one step, so that no
// later change would fire), and when it first arms with rescan (the
// supervisor's word that it was waiting for its directory); a plain first
// arm asks nothing.
func TestWatchRescanOnRearm(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "w")
	// remake puts dir back, holding a file, by one rename.
	remake := func(name string) {
		t.Helper()
		tmp, err := os.MkdirTemp(base, "next")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), []byte("made before the watch"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			t.Fatal(err)
		}
	}
	set, _ := triggers.Check(triggers.Watch, map[string]string{"path": dir, "debounce": "100ms"})
	start := func(rescan bool) (asked *atomic.Int32, armed chan struct{}, failed chan error, stop func()) {
		asked, armed, failed = &atomic.Int32{}, make(chan struct{}, 10), make(chan error, 10)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			runWatch(ctx, set, rescan, func() { asked.Add(1) }, func(err error) {
				if err != nil {
					failed <- err
				} else {
					armed <- struct{}{}
				}
			})
		}()
		return asked, armed, failed, func() { cancel(); <-done }
	}
	within := func(c any, what string) {
		t.Helper()
		var ok bool
		switch c := c.(type) {
		case chan struct{}:
			select {
			case <-c:
				ok = true
			case <-time.After(5 * time.Second):
			}
		case chan error:
			select {
			case <-c:
				ok = true
			case <-time.After(5 * time.Second):
			}
		}
		if !ok {
			t.Fatalf("%s: not within 5s", what)
		}
	}
	askedWithin := func(asked *atomic.Int32, want int32, what string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for asked.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: asked %d times, want %d", what, asked.Load(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// The directory missing at the start, then made with a file in it.
	asked, armed, failed, stop := start(false)
	within(failed, "a missing directory reported")
	remake("a.txt")
	within(armed, "armed once the directory is back")
	askedWithin(asked, 1, "the re-arm's rescan")

	// Removed and made again at once: the watch notices, arms again and
	// asks.
	os.RemoveAll(dir)
	remake("b.txt")
	within(failed, "the removal reported")
	within(armed, "armed again")
	askedWithin(asked, 2, "the second re-arm's rescan")
	// Absence has no signal: a re-arm's rescan is asked by the same
	// callback, right after it reported armed (runWatch), so 300 ms is
	// ample for a third asking to have come.
	time.Sleep(300 * time.Millisecond)
	if n := asked.Load(); n != 2 {
		t.Fatalf("asked %d times for two re-arms and no change", n)
	}
	stop()

	// A plain first arm asks nothing; a first arm with rescan asks once.
	asked, armed, _, stop = start(false)
	within(armed, "armed")
	// Absence, as above: the rescan would follow "armed" in the same
	// callback.
	time.Sleep(300 * time.Millisecond)
	if n := asked.Load(); n != 0 {
		t.Fatalf("a first arm asked %d times", n)
	}
	stop()
	asked, armed, _, stop = start(true)
	within(armed, "armed with rescan")
	askedWithin(asked, 1, "the rescan of a first arm after waiting for the directory")
	stop()
}

// The watch skips what the directory source skips (runWatch hands
// watch.Dir sources.SkippedDir): churn in .git or node_modules asks for
// no run, a file the source would read asks for one.
func TestWatchSkipsWhatTheDirectorySourceSkips(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{".git", "node_modules"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	set, _ := triggers.Check(triggers.Watch, map[string]string{"path": dir, "debounce": "100ms"})
	var asked atomic.Int32
	armed := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runWatch(ctx, set, false, func() { asked.Add(1) }, func(err error) {
			if err == nil {
				armed <- struct{}{}
			}
		})
	}()
	defer func() { cancel(); <-done }()
	<-armed
	os.WriteFile(filepath.Join(dir, ".git", "index"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "node_modules", "x.js"), []byte("x"), 0o644)
	// Absence has no signal: a second is ten debounces, in which a change
	// that was not skipped would have asked.
	time.Sleep(time.Second)
	if n := asked.Load(); n != 0 {
		t.Fatalf("churn in skipped directories asked %d times", n)
	}
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("x"), 0o644)
	deadline := time.Now().Add(5 * time.Second)
	for asked.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a new file did not ask within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// watchDaemon starts a daemon whose watch trigger "files" watches root
// (also its miner's locator) with settings, and waits for it to run.
func watchDaemon(t *testing.T, root, settings string) *daemon {
	t.Helper()
	d, _ := withConfig(t, fmt.Sprintf(`
[miners.docs]
locator = %q
enabled = true

[triggers.files]
miner = "docs"
type = "watch"
enabled = true
settings = { path = %q, %s }
`, root, root, settings))
	eventually(t, 10*time.Second, "the watch running", func() bool {
		return get[bool](d.do("GET", "/api/triggers/files", nil).body, "running")
	})
	watchArmed(t, d, "files")
	return d
}

// watchArmed waits until the watch trigger name has set its watches:
// running says only that its loop started, but a watch asks for a rescan
// once its watches are set, and its counters record that request.
func watchArmed(t *testing.T, d *daemon, name string) {
	t.Helper()
	eventually(t, 10*time.Second, "the watch armed (its first rescan asked)", func() bool {
		b := d.do("GET", "/api/triggers/"+name, nil).body
		return get[float64](b, "counters", "fired")+get[float64](b, "counters", "coalesced")+get[float64](b, "counters", "failed") > 0
	})
}

// searchable waits until a search for query finds text.
func searchable(t *testing.T, d *daemon, within time.Duration, what, query, text string) {
	t.Helper()
	eventually(t, within, what, func() bool {
		r := d.do("POST", "/api/search", map[string]any{"query": query})
		return strings.Contains(r.raw, text)
	})
}

// A log appended every 0.5 s, more often than the debounce, used to stop
// all mining of the folder: the debounce waited for quiet that never came.
// With max_wait the run happens anyway: a new file beside the log is
// searchable within max_wait plus a few seconds, and the runs stay
// coalesced (about one per max_wait, not one per append).
func TestWatchBusyFileMaxWait(t *testing.T) {
	// Not parallel: a file must be searchable within max_wait and 5 s; runs are counted over a timed load.
	root := mineTree(t)
	d := watchDaemon(t, root, `debounce = "1s", max_wait = "3s"`)
	if got := get[string](d.do("GET", "/api/triggers/files", nil).body, "settings", "max_wait"); got != "3s" {
		t.Fatalf("the trigger reads max_wait %q", got)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		log := filepath.Join(root, "app.log")
		for i := 0; ; i++ {
			f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				fmt.Fprintf(f, "request %d served\n", i)
				f.Close()
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(2 * time.Second) // the log is busy before the new file comes: the load, not a wait
	before := len(mineJobs(t, d))
	written := time.Now()
	if err := os.WriteFile(filepath.Join(root, "docs", "zeppelin.md"), []byte("The zeppelin hangar opens at dawn.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	searchable(t, d, 3*time.Second+5*time.Second, "a new file beside a busy log searchable", "zeppelin hangar", "zeppelin hangar opens")
	t.Logf("searchable %s after it was written", time.Since(written).Round(10*time.Millisecond))
	// Keep appending for 9 s more: about three runs, never one per append.
	// The duration is the load the count is about, not a wait.
	time.Sleep(9 * time.Second)
	if runs := len(mineJobs(t, d)) - before; runs > 7 {
		t.Fatalf("about 20 s of appends every 0.5 s made %d runs with max_wait 3s", runs)
	}
}

// A watched folder deleted and made again: files in it made before the
// watch armed again are mined at once (the re-arm rescans), whether the
// daemon saw the folder missing (the trigger stopped, then started again)
// or the folder came back at once (the watch noticed the removal and armed
// again); and the re-armed watch fires on later changes.
func TestWatchRearmRescan(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	d := watchDaemon(t, root, `debounce = "100ms"`)
	// remake puts root back, holding rel, by one rename: no change follows.
	remake := func(rel, content string) {
		t.Helper()
		tmp, err := os.MkdirTemp(filepath.Dir(root), "next")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, root); err != nil {
			t.Fatal(err)
		}
	}
	settled := func() {
		t.Helper()
		eventually(t, 15*time.Second, "the mine jobs finished", func() bool {
			for _, j := range mineJobs(t, d) {
				if !finished(j) {
					return false
				}
			}
			return true
		})
	}

	// Deleted, seen missing (the trigger stops), then made again.
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the trigger stopped for want of its folder", func() bool {
		return !get[bool](d.do("GET", "/api/triggers/files", nil).body, "running")
	})
	settled()
	remake("notes/airship.md", "The airship mast stands by the river.\n")
	searchable(t, d, 15*time.Second, "a file made before the re-arm searchable", "airship mast", "airship mast stands")
	if err := os.WriteFile(filepath.Join(root, "notes", "lantern.md"), []byte("The lantern festival lights the harbour.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	searchable(t, d, 15*time.Second, "a later change after the re-arm searchable", "lantern festival", "lantern festival lights")
	settled()

	// Deleted and made again at once.
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	remake("notes/glacier.md", "The glacier walk starts at the blue hut.\n")
	searchable(t, d, 15*time.Second, "a file in a folder swapped at once searchable", "glacier walk", "glacier walk starts")
	settled()
	time.Sleep(2 * time.Second) // the watch armed again
	if err := os.WriteFile(filepath.Join(root, "notes", "quarry.md"), []byte("The old quarry floods each spring.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	searchable(t, d, 15*time.Second, "a later change in the swapped folder searchable", "quarry floods", "quarry floods each spring")
}

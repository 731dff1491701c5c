// Package watch is the file watch of watch triggers: fsnotify on a
// directory tree (new subdirectories followed, the directories its caller
// skips ignored) with a debounce, so that a burst of changes
// asks for one run, and a maximum wait, so that changes that never stop
// still ask for one now and then.
package watch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/loci-dev/loci/triggers"
)

// Dir watches s.Path (and, when s.Recursive, every directory under it
// that skip does not name) and calls fire once a change has been followed
// by s.Debounce of quiet, or s.MaxWait after the first change of a burst
// that never quiets. skip, asked of each name on a path under s.Path (the
// caller passes the directory source's rule, sources.SkippedDir, so that
// directories such as .git are neither watched nor able to fire), may be
// nil: nothing is skipped. It returns when ctx ends (nil) or
// when watching fails or s.Path is removed or moved (the caller retries
// with a growing wait). ready, if not nil, is called once the watches are
// set.
func Dir(ctx context.Context, s triggers.Settings, skip func(name string) bool, fire func(), ready func()) error {
	if skip == nil {
		skip = func(string) bool { return false }
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	info, err := os.Stat(s.Path)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return errors.New(s.Path + " is not a directory")
	}
	root := filepath.Clean(s.Path)
	if err := add(w, s.Path, s.Recursive, skip); err != nil {
		return err
	}
	if ready != nil {
		ready()
	}
	changes := make(chan struct{}, 1)
	signal := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	defer func() { <-done }()
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		defer close(done)
		Debounce(dctx, changes, s.Debounce, s.MaxWait, fire)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("the watcher closed")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				signal() // events were lost: something changed
				continue
			}
			return err
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("the watcher closed")
			}
			if ev.Name == root && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				// fsnotify drops the watch of a removed directory and
				// follows a moved one elsewhere: nothing more would come.
				// The caller sets the watch up again once it is back.
				return errors.New(s.Path + " was removed or moved")
			}
			if skipped(s.Path, ev.Name, skip) {
				continue
			}
			if ev.Has(fsnotify.Create) && s.Recursive {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					// A new directory: watch it and what it already holds
					// (files made before the watch was set would be missed).
					_ = add(w, ev.Name, true, skip)
				}
			}
			if ev.Op == fsnotify.Chmod {
				continue // a mode change alone is not a change of content
			}
			signal()
		}
	}
}

// Debounce calls fire once changes has been quiet for d after a signal,
// or once maxWait has passed since the first signal of a burst if the
// signals never leave d of quiet (maxWait 0: no maximum), until ctx ends:
// a burst of changes is one call, and a file written more often than d
// still asks for a run every maxWait.
func Debounce(ctx context.Context, changes <-chan struct{}, d, maxWait time.Duration, fire func()) {
	timer := time.NewTimer(d)
	timer.Stop()
	defer timer.Stop()
	var deadline time.Time // the burst's latest run; zero between bursts
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			wait := d
			if maxWait > 0 {
				now := time.Now()
				if deadline.IsZero() {
					deadline = now.Add(maxWait)
				}
				wait = max(0, min(d, deadline.Sub(now)))
			}
			timer.Reset(wait)
		case <-timer.C:
			deadline = time.Time{}
			fire()
		}
	}
}

// add watches dir and, when recursive, its subdirectories that are not
// skipped.
func add(w *fsnotify.Watcher, dir string, recursive bool, skip func(string) bool) error {
	if !recursive {
		return w.Add(dir)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // vanished or unreadable below the root: not watched
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && skip(d.Name()) {
			return filepath.SkipDir
		}
		return w.Add(p)
	})
}

// skipped reports a path under root inside a skipped directory (or a
// skipped directory itself).
func skipped(root, p string, skip func(string) bool) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." {
		return false
	}
	dir := rel
	for dir != "." && dir != "/" && dir != "" {
		if skip(filepath.Base(dir)) {
			return true
		}
		dir = filepath.Dir(dir)
	}
	return false
}

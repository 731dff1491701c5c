package actors

import (
	"context"
	"log/slog"
	"sync"

	"github.com/loci-dev/loci/store"
)

// WatchOthers follows the commits of the other daemons on a shared store
// (db implements store.Watcher; otherwise it does nothing): at each wake
// (another daemon's notification, or the watcher's poll, every second) it
// kicks every change-log follower (the lexical and vector indexes, the
// event bus), which read what is new, and, when the change log has moved
// since the last wake, the job dispatcher, so that a job queued on another
// daemon is claimed here too without waiting for the dispatcher's tick. A
// follower whose catch-up failed (the database out of reach) is thus
// retried at the next wake. The returned stop ends it and waits.
func WatchOthers(db store.DB, log *slog.Logger, followers []func(), dispatcher func()) (stop func()) {
	w, ok := db.(store.Watcher)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.Watch(ctx, func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
	}()
	go func() {
		defer wg.Done()
		var seen uint64
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			for _, kick := range followers {
				kick()
			}
			var last uint64
			err := db.View(ctx, func(r store.Reader) error {
				var err error
				last, err = r.LastSeq()
				return err
			})
			if err != nil {
				if ctx.Err() == nil {
					log.Debug("reading the shared change log's end failed; the next wake tries again", "err", err)
				}
				continue
			}
			if last != seen {
				seen = last
				if dispatcher != nil {
					dispatcher()
				}
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

package postgres

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// BenchmarkClaims: claims as the runtime makes them (one Update: walk the
// queue, take its head, lease it, log it) by four claimers on two
// handles, with the queue read FOR UPDATE SKIP LOCKED and without. Under
// the writer lock both are serial; the row locks cost what locking rows
// costs. Also a submit that walks the whole queue (the join check) in a
// write transaction, which locks every queued row it reads.
func BenchmarkClaims(b *testing.B) {
	ctx := context.Background()
	url := pgtest.Database(b)
	var dbs []*DB
	for range 2 {
		db, err := Open(ctx, store.OpenOptions{Location: url, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Migrator(nil).Run(ctx); err != nil {
			b.Fatal(err)
		}
		dbs = append(dbs, db)
	}
	fill := func(n int) {
		for done := 0; done < n; {
			if err := dbs[0].Update(ctx, func(tx store.Tx) error {
				for range min(500, n-done) {
					j, err := store.Apply(store.Job{ID: store.NewID(), Kind: "demo", Priority: store.PriorityNormal, RequestedBy: store.ByCLI},
						store.JobEvent{Kind: store.EvSubmit, At: tx.Now()})
					if err != nil {
						return err
					}
					if err := tx.PutJob(&j, nil); err != nil {
						return err
					}
					done++
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	claim := func(db *DB) (bool, error) {
		var got bool
		err := db.Update(ctx, func(tx store.Tx) error {
			var pick *store.Job
			if err := tx.QueuedJobs(func(j *store.Job) bool { pick = j; return false }); err != nil || pick == nil {
				return err
			}
			next, err := store.Apply(*pick, store.JobEvent{Kind: store.EvClaim, At: tx.Now(), Owner: "me", TTL: time.Minute})
			if err != nil {
				return err
			}
			if err := tx.PutJob(&next, pick); err != nil {
				return err
			}
			got = true
			return tx.Log(store.ChangeJob, "claimed", next.ID)
		})
		return got, err
	}
	for _, lock := range []bool{true, false} {
		name := "SkipLocked"
		if !lock {
			name = "NoRowLocks"
		}
		b.Run(name+"/claim", func(b *testing.B) {
			lockQueue = lock
			defer func() { lockQueue = true }()
			fill(b.N)
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range 4 {
				db := dbs[i%2]
				wg.Go(func() {
					for {
						ok, err := claim(db)
						if err != nil && !errors.Is(err, store.ErrConflict) {
							b.Error(err)
							return
						}
						if !ok && err == nil {
							return
						}
					}
				})
			}
			wg.Wait()
		})
		b.Run(name+"/walk-1000-queued", func(b *testing.B) {
			lockQueue = lock
			defer func() { lockQueue = true }()
			fill(1000)
			b.ResetTimer()
			for range b.N {
				if err := dbs[0].Update(ctx, func(tx store.Tx) error {
					return tx.QueuedJobs(func(*store.Job) bool { return true })
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for { // empty the queue for the next case
				if ok, err := claim(dbs[0]); err != nil || !ok {
					break
				}
			}
		})
	}
}

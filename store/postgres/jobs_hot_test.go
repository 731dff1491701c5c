package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// A running job's saves (progress, heartbeats) change no indexed column
// of jobs: PostgreSQL updates its row in place (a HOT update, no index
// written), which the table's fillfactor leaves room for. A claim changes
// the status, which the queue and active indexes follow.
func TestJobSavesAreHeapOnlyUpdates(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, store.OpenOptions{Location: pgtest.Database(t), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrator(nil).Run(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	queued := &store.Job{ID: store.NewID(), Kind: "demo", Status: store.JobQueued, Priority: store.PriorityNormal, CreatedAt: now, UpdatedAt: now}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.PutJob(queued, nil) }); err != nil {
		t.Fatal(err)
	}
	// Saves in one transaction, so that the counts are this transaction's
	// own: no old version can be pruned before it ends, so a page holds a
	// few of them (heartbeats, each a transaction, let pruning free it).
	const saves = 8
	err = db.Update(ctx, func(stx store.Tx) error {
		t := stx.(*tx)
		claimed := *queued
		claimed.Status, claimed.LeaseOwner = store.JobRunning, "me"
		if err := t.PutJob(&claimed, queued); err != nil {
			return err
		}
		prev := &claimed
		for i := range saves {
			next := *prev
			until := now.Add(time.Duration(i+1) * time.Second)
			next.LeaseExpiresAt, next.Progress.Current, next.UpdatedAt = &until, int64(i), until
			if err := t.PutJob(&next, prev); err != nil {
				return err
			}
			prev = &next
		}
		var updated, hot int64
		if _, err := t.row("SELECT pg_stat_get_xact_tuples_updated('jobs'::regclass), pg_stat_get_xact_tuples_hot_updated('jobs'::regclass)",
			nil, &updated, &hot); err != nil {
			return err
		}
		if updated != saves+1 || hot != saves {
			return fmt.Errorf("%d updates of which %d HOT; want %d updates, the %d saves after the claim HOT", updated, hot, saves+1, saves)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package badgerdb

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/store"
)

// activeIDs lists ActiveJobs in its order.
func activeIDs(t *testing.T, db *DB) []string {
	t.Helper()
	var ids []string
	err := db.View(context.Background(), func(r store.Reader) error {
		return r.ActiveJobs(func(j *store.Job) bool { ids = append(ids, j.ID); return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// ActiveJobs follows every change of status: queued, running and paused
// jobs oldest first, finished ones never; and SyncSchema derives the index
// for a store written before it existed.
func TestActiveJobsFollowStatus(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC()
	jobs := make([]*store.Job, 4)
	for i := range jobs {
		jobs[i] = &store.Job{ID: []string{"c", "a", "d", "b"}[i] + "0000000-0000-4000-8000-000000000000", Kind: "audit",
			Status: store.JobQueued, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
	}
	put := func(j, prev *store.Job) {
		t.Helper()
		if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.PutJob(j, prev) }); err != nil {
			t.Fatal(err)
		}
	}
	step := func(i int, status string) {
		t.Helper()
		prev := *jobs[i]
		next := prev
		next.Status = status
		put(&next, &prev)
		jobs[i] = &next
	}
	for _, j := range jobs {
		put(j, nil)
	}
	ids := func(is ...int) []string {
		var out []string
		for _, i := range is {
			out = append(out, jobs[i].ID)
		}
		return out
	}
	if got := activeIDs(t, db); !slices.Equal(got, ids(0, 1, 2, 3)) {
		t.Fatalf("queued: %v", got)
	}
	step(0, store.JobRunning)
	step(1, store.JobRunning)
	step(1, store.JobPaused)
	step(2, store.JobRunning)
	step(2, store.JobCompleted)
	step(3, store.JobCancelled)
	if got := activeIDs(t, db); !slices.Equal(got, ids(0, 1)) {
		t.Fatalf("after running, paused, completed, cancelled: %v", got)
	}
	step(0, store.JobFailed)
	step(0, store.JobQueued) // a retry
	if got := activeIDs(t, db); !slices.Equal(got, ids(0, 1)) {
		t.Fatalf("after a failure and a retry: %v", got)
	}

	// A store from before the index: no ja/ keys, then SyncSchema.
	err = db.bdb.Update(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pJobActive)})
		var keys [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := activeIDs(t, db); len(got) != 0 {
		t.Fatalf("keys left: %v", got)
	}
	if err := db.SyncSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := activeIDs(t, db); !slices.Equal(got, ids(0, 1)) {
		t.Fatalf("derived by SyncSchema: %v", got)
	}
	db.Close()
}

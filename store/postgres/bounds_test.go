package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// A daemon stopped while it holds the writer lock (here: a write
// transaction whose function sleeps) does not stop the others for long:
// the server ends its session once it idles past
// idle_in_transaction_session_timeout, which releases the lock; the other
// handle's write then commits, and the stalled one fails, committing
// nothing.
func TestAStalledWriterReleasesTheLock(t *testing.T) {
	url := pgtest.Database(t) + "&idle_in_transaction_session_timeout=300"
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	inside := make(chan struct{})
	stalled := make(chan error, 1)
	go func() {
		stalled <- a.Update(ctx, func(tx store.Tx) error {
			if err := tx.Log("wing", "created", "stalled"); err != nil {
				return err
			}
			close(inside)
			time.Sleep(2 * time.Second) // idle inside the transaction, holding the lock
			return nil
		})
	}()
	<-inside
	start := time.Now()
	if err := b.Update(ctx, func(tx store.Tx) error { return tx.Log("wing", "created", "other") }); err != nil {
		t.Fatalf("the other handle's write: %v", err)
	}
	if waited := time.Since(start); waited > 1500*time.Millisecond {
		t.Fatalf("the other handle waited %v for the lock of a stalled writer", waited)
	}
	if err := <-stalled; err == nil {
		t.Fatal("the stalled writer's transaction committed after its session was ended")
	}
	var ids []string
	if err := b.View(ctx, func(r store.Reader) error {
		return r.Changes(0, func(c store.Change) bool { ids = append(ids, c.ID); return true })
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != "other" {
		t.Fatalf("the log holds %v, want only the other handle's entry", ids)
	}
}

// Statements are bounded by default (a database that hangs cannot hang
// the daemon's writer forever), and the URL's options may set the bound.
func TestStatementsAreBounded(t *testing.T) {
	url := pgtest.Database(t)
	db := open(t, url)
	defer db.Close()
	var v string
	if err := db.Pool().QueryRow(context.Background(), "SHOW statement_timeout").Scan(&v); err != nil || v != "1min" {
		t.Fatalf("statement_timeout = %q (%v), want 1min", v, err)
	}
	db2 := open(t, url+"&statement_timeout=200")
	defer db2.Close()
	err := db2.Update(context.Background(), func(tx store.Tx) error {
		_, err := db2.Pool().Exec(context.Background(), "SELECT pg_sleep(5)")
		return err
	})
	if err == nil {
		t.Fatal("a five-second statement ran under a 200 ms bound")
	}
}

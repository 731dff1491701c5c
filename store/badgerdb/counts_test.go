package badgerdb

import (
	"context"
	"log/slog"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/store"
)

// A palace whose counts record is missing (filed before counts were kept)
// or behind its change log (written by a build that did not keep them) is
// counted once when opened; an up-to-date record is read, not recounted.
func TestCountsRecountedWhenMissingOrStale(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	db, err := Open(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []store.NewDrawer{
		{Wing: "w1", Room: "r1", Content: "the first drawer of the palace"},
		{Wing: "w1", Room: "r2", Content: "a second drawer in another room"},
		{Wing: "w2", Room: "r1", Content: "a third drawer in another wing"},
	} {
		in.Source, in.Provenance = store.Source{Kind: store.KindManual}, store.Provenance{RequestedBy: store.ByCLI}
		if err := db.Update(context.Background(), func(tx store.Tx) error {
			_, err := store.CreateDrawer(tx, in, store.Dedup{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := store.Counts{Wings: 2, Rooms: 3, Drawers: 3, DrawersStored: 3}
	counts := func(db *DB, step string) {
		t.Helper()
		var c store.Counts
		if err := db.View(context.Background(), func(r store.Reader) (err error) { c, err = r.Counts(); return err }); err != nil {
			t.Fatal(err)
		}
		if c != want {
			t.Fatalf("%s: counts %+v, want %+v", step, c, want)
		}
	}
	counts(db, "kept")
	reopen := func(step string, edit func(txn *badger.Txn) error) {
		t.Helper()
		if err := db.bdb.Update(edit); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if db, err = Open(dir, log); err != nil {
			t.Fatal(err)
		}
		counts(db, step)
	}
	reopen("missing", func(txn *badger.Txn) error { return txn.Delete([]byte(countsKey)) })
	reopen("behind the change log", func(txn *badger.Txn) error {
		return txn.Set([]byte(countsKey), encodeCounts(db.seq-1, store.Counts{Wings: 9}))
	})
	reopen("not a record", func(txn *badger.Txn) error { return txn.Set([]byte(countsKey), []byte("x")) })
	// An up-to-date record is what Counts answers: it is not recounted.
	want = store.Counts{Wings: 7, Rooms: 7, Drawers: 7, DrawersStored: 7, Links: 7}
	reopen("up to date", func(txn *badger.Txn) error { return txn.Set([]byte(countsKey), encodeCounts(db.seq, want)) })
	db.Close()
}

// A store that could not rewrite its stale counts record at open (a full
// disk) counts on each read, and its next write keeps the counts again.
func TestStaleCountsRecountedUntilAWrite(t *testing.T) {
	db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	file := func(content string) {
		t.Helper()
		if err := db.Update(context.Background(), func(tx store.Tx) error {
			_, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: content,
				Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, store.Dedup{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	counts := func(step string, want store.Counts) {
		t.Helper()
		var c store.Counts
		if err := db.View(context.Background(), func(r store.Reader) (err error) { c, err = r.Counts(); return err }); err != nil {
			t.Fatal(err)
		}
		if c != want {
			t.Fatalf("%s: counts %+v, want %+v", step, c, want)
		}
	}
	file("the first drawer")
	// As left by a build that did not keep the counts, and not rewritten.
	if err := db.bdb.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte(countsKey), encodeCounts(db.seq, store.Counts{Wings: 5}))
	}); err != nil {
		t.Fatal(err)
	}
	db.countsStale.Store(true)
	counts("stale", store.Counts{Wings: 1, Rooms: 1, Drawers: 1, DrawersStored: 1})
	file("the second drawer")
	if db.countsStale.Load() {
		t.Fatal("a write left the counts stale")
	}
	counts("kept again", store.Counts{Wings: 1, Rooms: 1, Drawers: 2, DrawersStored: 2})
}

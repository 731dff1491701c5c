package sqlview_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/storetest"
)

// openDB is a real Badger store in a temporary directory.
func openDB(t testing.TB) store.DB {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// filled is a store with a record of every family and n more drawers.
func filled(t testing.TB, n int) store.DB {
	t.Helper()
	db := openDB(t)
	storetest.FillEveryFamily(t, db, n)
	return db
}

func defaults() sqlview.Limits {
	return sqlview.Limits{ScanRows: 2_000_000, ResultRows: 10_000, Timeout: 30 * time.Second}
}

// one runs a query of one statement that must succeed.
func one(t testing.TB, e *sqlview.Engine, sql string, vars map[string]any) sqlview.Result {
	t.Helper()
	res, err := e.Query(context.Background(), sql, vars)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(res) != 1 {
		t.Fatalf("%s: %d results", sql, len(res))
	}
	if res[0].Err != nil {
		t.Fatalf("%s: %v (%s; %s)", sql, res[0].Err.Msg, res[0].Err.Code, res[0].Err.Help)
	}
	return res[0]
}

// failed runs a query of one statement that must fail, and its fault.
func failed(t testing.TB, e *sqlview.Engine, sql string) sqlview.Result {
	t.Helper()
	res, err := e.Query(context.Background(), sql, nil)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(res) != 1 || res[0].Err == nil {
		t.Fatalf("%s: want one failed statement, got %+v", sql, res)
	}
	return res[0]
}

// fillPalace files n drawers over rooms rooms of wing "bench" through the
// store's own writers (CreateDrawer, deduplication off, batches of 500 per
// transaction), and links every mentionEvery-th drawer to one of entities
// entities (LinkMention): a palace of a known shape, cheaply.
func fillPalace(t testing.TB, db store.DB, n, rooms, mentionEvery, entities int) {
	t.Helper()
	ctx := context.Background()
	const batch = 500
	for start := 0; start < n; start += batch {
		err := db.Update(ctx, func(tx store.Tx) error {
			for i := start; i < min(n, start+batch); i++ {
				res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "bench", Room: fmt.Sprintf("room%02d", i%rooms),
					Content:    fmt.Sprintf("Drawer %d: the build on runner %d took %d minutes; note %d.", i, i%7, i%53, i*31),
					Source:     store.Source{Kind: store.KindNote},
					Provenance: store.Provenance{RequestedBy: store.ByCLI}}, store.Dedup{})
				if err != nil {
					return err
				}
				if mentionEvery > 0 && i%mentionEvery == 0 {
					if _, _, _, err := store.LinkMention(tx, res.Drawer.ID, fmt.Sprintf("Person %03d", (i/mentionEvery)%entities), "person", false, "manual", "cli", 1); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

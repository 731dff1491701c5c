package badgerdb

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// The entity key filter never hides a present key: entities written
// before a restart (the filter is rebuilt from the store), in a discarded
// transaction (only false positives remain), and past the filter's
// capacity (it is rebuilt larger) all resolve by name, by key and by a
// typo, and a name never written stays new.
func TestEntityKeyFilterNeverHidesAKey(t *testing.T) {
	defer func(n int) { entityFilterMin = n }(entityFilterMin)
	entityFilterMin = 16
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// Names two edits apart at least: digits spelled in disjoint pairs.
	syl := []string{"ab", "cd", "ef", "gh", "ij", "kl", "mn", "op", "qr", "st"}
	name := func(i int) string {
		n := ""
		for _, d := range fmt.Sprintf("%03d", i) {
			n += syl[d-'0']
		}
		return "Pro" + n
	}
	resolve := func(db *DB, n string) store.Resolved {
		t.Helper()
		var r store.Resolved
		err := db.Update(context.Background(), func(tx store.Tx) error {
			var err error
			r, err = store.ResolveEntity(tx, n, "project", true, "")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i := range 10 {
		if r := resolve(db, name(i)); !r.New {
			t.Fatalf("%s: want a new entity, got %+v", name(i), r)
		}
	}
	db.Close()
	if db, err = Open(dir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Past the capacity of 16 keys several times over, across transactions.
	for i := 10; i < 60; i++ {
		if r := resolve(db, name(i)); !r.New {
			t.Fatalf("%s: want a new entity, got %+v", name(i), r)
		}
	}
	// A discarded transaction's keys leave only false positives.
	err = db.Update(context.Background(), func(tx store.Tx) error {
		if _, err := store.ResolveEntity(tx, "Discardedname", "project", true, ""); err != nil {
			return err
		}
		return fmt.Errorf("discard")
	})
	if err == nil {
		t.Fatal("want the discarding error")
	}
	if r := resolve(db, "Discardedname"); !r.New {
		t.Fatalf("a discarded entity was found: %+v", r)
	}
	for i := range 60 {
		if r := resolve(db, name(i)); r.New || r.Rule != graph.RuleExact {
			t.Fatalf("%s by name: %+v", name(i), r)
		}
		if r := resolve(db, " "+name(i)+"!"); r.New || r.Rule != graph.RuleNormalized {
			t.Fatalf("%s by key: %+v", name(i), r)
		}
	}
	// A typo of an entity written before the restart: one insertion.
	if r := resolve(db, "X"+name(3)); r.New || r.Rule != graph.RuleTypo || r.Entity.Name != name(3) {
		t.Fatalf("typo: %+v", r)
	}
}

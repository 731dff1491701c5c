package store_test

import (
	"context"
	"testing"

	"github.com/loci-dev/loci/store"
)

// An identical fact asserted again (same subject, predicate and object as
// an open one) is one fact with more evidence, by a checkpoint's add and by
// extraction alike; replaying an assertion adds nothing; a closed fact is
// not joined (a new one is recorded).
func TestIdenticalFactsAreOneWithMoreEvidence(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	var drawers []string
	for _, c := range []string{"Caroline works at Acme.", "Caroline is at Acme again.", "Acme employs Caroline.", "Caroline left Acme."} {
		drawers = append(drawers, must(t, db, drawer(c)).Drawer.ID)
	}
	p := "works_at"
	add := func(i int, job string) {
		t.Helper()
		f := &store.FactOp{Op: "add", Subject: "Caroline", SubjectKind: "person", Predicate: &p, Object: "Acme", ObjectKind: "organization"}
		if err := db.Update(ctx, func(tx store.Tx) error { return store.ApplyFact(tx, f, drawers[i], job, 0, true) }); err != nil {
			t.Fatal(err)
		}
	}
	add(0, "job-1")
	add(1, "job-2")
	add(1, "job-2") // a replay
	if err := db.Update(ctx, func(tx store.Tx) error {
		_, err := store.AddExtractedFact(tx, store.ExtractedFact{Subject: "Caroline", SubjectKind: "person", Predicate: p, Object: "Acme",
			ObjectKind: "organization", Confidence: 0.7}, drawers[2], 0, "job-3", "heuristic", true)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	facts := func() []store.Relationship {
		var out []store.Relationship
		db.View(ctx, func(r store.Reader) error {
			ids, _ := r.EntityIDs(store.EntityByKey, "caroline")
			return r.EntityRelationships(ids[0], func(rel *store.Relationship) bool { out = append(out, *rel); return true })
		})
		return out
	}
	got := facts()
	if len(got) != 1 {
		t.Fatalf("%d facts, want one: %+v", len(got), got)
	}
	f := got[0]
	if f.Drawer != drawers[0] || len(f.Evidence) != 2 || f.Evidence[0].Drawer != drawers[1] || f.Evidence[1].Drawer != drawers[2] ||
		f.Evidence[1].Extractor != "heuristic" || f.Evidence[0].Extractor != "checkpoint" || f.Confidence != 1 {
		t.Fatalf("the fact's evidence: %+v", f)
	}
	// Once closed, the same statement is a new fact.
	inv := &store.FactOp{Op: "invalidate", RelationshipID: f.ID}
	if err := db.Update(ctx, func(tx store.Tx) error { return store.ApplyFact(tx, inv, drawers[3], "job-4", 0, true) }); err != nil {
		t.Fatal(err)
	}
	add(3, "job-5")
	if got := facts(); len(got) != 2 {
		t.Fatalf("after the invalidation, %d facts, want two", len(got))
	}
}

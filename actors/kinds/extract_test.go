package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loci-dev/loci/extract"
	"github.com/loci-dev/loci/store"
)

// The extract job reads the drawers filed since the last pass (mined
// files here), links their entities and records their facts with the
// drawer as evidence; a second pass reads nothing again.
func TestExtractReadsNewDrawersOnce(t *testing.T) {
	j := runtimeWith(t, extract.Heuristic{}, 0, 200, 1<<20)
	root := t.TempDir()
	write(t, root, "notes/team.md", "Caroline works at Acme Inc. Melanie lives in Lisbon.\n", 1)
	write(t, root, "notes/trip.md", "Daniel visited Japan in March.\n", 2)
	mineOnce(t, j, fmt.Sprintf(`{"path": %q, "wing": "proj"}`, root))
	run := func() map[string]int {
		t.Helper()
		job, err := submit(t, j, "extract", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		done := waitDone(t, j, job.ID)
		if done.Status != store.JobCompleted {
			t.Fatalf("extract: %s %s", done.Status, done.Error)
		}
		var res map[string]int
		json.Unmarshal(done.Result, &res)
		return res
	}
	first := run()
	if first["drawers"] != 2 || first["mentions"] < 5 || first["facts"] != 3 {
		t.Fatalf("first pass: %v", first)
	}
	var caroline *store.Entity
	j.DB.View(context.Background(), func(r store.Reader) error {
		ids, _ := r.EntityIDs(store.EntityByKey, "caroline")
		if len(ids) == 1 {
			caroline, _ = r.Entity(ids[0])
		}
		return nil
	})
	if caroline == nil || caroline.Kind != "person" {
		t.Fatalf("Caroline: %+v", caroline)
	}
	var facts []store.Relationship
	j.DB.View(context.Background(), func(r store.Reader) error {
		return r.EntityRelationships(caroline.ID, func(rel *store.Relationship) bool { facts = append(facts, *rel); return true })
	})
	if len(facts) != 1 || facts[0].Predicate != "works_at" || facts[0].Extractor != "heuristic" || facts[0].Drawer == "" {
		t.Fatalf("Caroline's facts: %+v", facts)
	}
	if again := run(); again["drawers"] != 0 || again["facts"] != 0 {
		t.Fatalf("second pass read again: %v", again)
	}
	// A new file: only it is read.
	write(t, root, "notes/more.md", "Priya moved to Berlin.\n", 3)
	mineOnce(t, j, fmt.Sprintf(`{"path": %q, "wing": "proj"}`, root))
	if third := run(); third["drawers"] != 1 || third["facts"] != 1 {
		t.Fatalf("third pass: %v", third)
	}
}

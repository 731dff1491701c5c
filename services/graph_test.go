package services

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// Without an entity the graph starts from the entities with the most open
// facts (a closed fact does not count, an entity without facts is left
// out); with one, a name resolves as the entity list's name search would,
// the exact name first.
func TestNeighbourhoodStartsFromTheBusiestEntities(t *testing.T) {
	sys, db := newSystem(t)
	g := &Graph{DB: db, Sys: sys}
	ctx := context.Background()
	now := time.Now().UTC().Add(-time.Minute)
	ids := map[string]string{}
	err := db.Update(ctx, func(tx store.Tx) error {
		for _, n := range []string{"2006-01-02", "A-Za-z0-9", "Caroline", "Carla", "Melanie", "Acme", "Lisbon", "Initech"} {
			ids[n] = "0190c4c8-0000-7000-8000-00000000000" + string(rune('a'+len(ids)))
			if err := tx.PutEntity(&store.Entity{ID: ids[n], Name: n, Kind: graph.KindOther, Key: graph.Key(n), CreatedAt: now}, nil); err != nil {
				return err
			}
		}
		closed := now.Add(30 * time.Second)
		for i, f := range [][3]string{{"Caroline", "works_at", "Acme"}, {"Caroline", "lives_in", "Lisbon"}, {"Melanie", "knows", "Caroline"},
			{"Melanie", "lives_in", "Lisbon"}, {"Carla", "works_at", "Initech"}, {"Initech", "located_in", "Lisbon"}} {
			rel := &store.Relationship{ID: "0190c4c8-1111-7000-8000-00000000000" + string(rune('a'+i)), Subject: ids[f[0]], Predicate: f[1], Object: ids[f[2]],
				Confidence: 1, ValidFrom: now, RecordedAt: now}
			if f[0] == "Carla" || f[0] == "Initech" {
				rel.ValidTo = &closed // closed: no longer counts
			}
			if err := tx.PutRelationship(rel, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := g.Neighbourhood(ctx, "", 1, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range n.Nodes {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "Caroline,Lisbon,Melanie" || len(n.Edges) != 3 || !n.Truncated || n.Start != nil {
		t.Fatalf("overview: %v, %d edges, truncated %v", names, len(n.Edges), n.Truncated)
	}
	for ref, want := range map[string]string{"Caroline": "Caroline", "CAROLINE": "Caroline", "mela": "Melanie", ids["Acme"]: "Acme", "a-za-z0-9": "A-Za-z0-9"} {
		n, err := g.Neighbourhood(ctx, ref, 1, 50, nil)
		if err != nil || n.Start == nil || n.Start.Name != want {
			t.Errorf("from %q: %+v %v, want %s", ref, n.Start, err, want)
		}
	}
	for ref, code := range map[string]fault.Code{"car": fault.InputInvalid, "Nobody": fault.GraphEntityNotFound, " ": fault.InputInvalid} {
		if _, err := g.Neighbourhood(ctx, ref, 1, 50, nil); fault.As(err).Code != code {
			t.Errorf("from %q: %v, want %s", ref, err, code)
		}
	}
}

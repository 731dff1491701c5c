package export_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/store"
)

// same compares two store records as JSON with every time in UTC (an
// export writes UTC; the store's instants are the same ones).
func same(t *testing.T, what string, got, want any) {
	t.Helper()
	norm := func(v any) any {
		b, _ := json.Marshal(v)
		var out any
		_ = json.Unmarshal(b, &out)
		return utcAll(out)
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: read back %v, stored %v", what, g, w)
	}
}

func utcAll(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = utcAll(e)
		}
	case []any:
		for i, e := range x {
			x[i] = utcAll(e)
		}
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.UTC().Format(time.RFC3339Nano)
		}
	}
	return v
}

// TestStoreRecords: what an importer gets from each record (Store) is
// the record the exporting palace holds.
func TestStoreRecords(t *testing.T) {
	f := newFixture(t)
	file, _ := writeExport(t, f.db, export.Options{Vectors: true, Profiles: []string{"default"}})
	recs := readAll(t, file, export.ReaderOptions{})
	seen := map[string]int{}
	err := f.db.View(t.Context(), func(r store.Reader) error {
		for _, rec := range recs {
			seen[rec.Type]++
			switch rec.Type {
			case export.TypeWing:
				w, _ := r.Wing(rec.Wing.ID)
				same(t, "wing", rec.Wing.Store(), w)
			case export.TypeRoom:
				rm, _ := r.Room(rec.Room.ID)
				same(t, "room", rec.Room.Store(), rm)
			case export.TypeDrawer:
				d, _ := r.Drawer(rec.Drawer.ID)
				if d.Tags == nil {
					d.Tags = []string{}
				}
				same(t, "drawer", rec.Drawer.Store(), d)
			case export.TypeMention:
				m, _ := r.Mention(rec.Mention.DrawerID, rec.Mention.EntityID)
				same(t, "mention", rec.Mention.Store(), m)
			case export.TypeVector:
				e, _ := r.Embedding(rec.Vector.DrawerID, rec.Vector.Profile)
				same(t, "vector", rec.Vector.Store(), e)
			case export.TypeEntity:
				e, _ := r.Entity(rec.Entity.ID)
				if e.Aliases == nil {
					e.Aliases = []string{}
				}
				same(t, "entity", rec.Entity.Store(), e)
			case export.TypeEntityLink:
				ls, _ := r.EntityLinks(rec.EntityLink.From)
				for _, l := range ls {
					if l.ID == rec.EntityLink.ID {
						same(t, "entity link", rec.EntityLink.Store(), &l)
					}
				}
			case export.TypeSource:
				s, _ := r.Source(rec.Source.Key)
				s.Cursor = nil
				s.Identity.Locator = rec.Source.Locator // its password is dropped (TestRoundTrip)
				same(t, "source", rec.Source.Store(), s)
			case export.TypeDocument:
				d, _ := r.SourceDocument(rec.Document.Source, rec.Document.ID)
				same(t, "document", rec.Document.Store(), d)
			case export.TypeFact:
				fct, _ := r.Relationship(rec.Fact.ID)
				same(t, "fact", rec.Fact.Store(), fct)
			case export.TypeDecision:
				ls, _ := r.RelationshipLinks(rec.Decision.From)
				for _, l := range ls {
					if l.ID == rec.Decision.ID {
						same(t, "decision", rec.Decision.Store(), &l)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(export.Types) {
		t.Fatalf("types compared: %v", seen)
	}
}

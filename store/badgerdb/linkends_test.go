package badgerdb

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// A drawer's link index ranks its links without reading them, and an index
// key written before it held a value (an older palace) is answered from
// the link itself.
func TestLinkEndsFromTheIndexAndFromOlderKeys(t *testing.T) {
	db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Date(2026, 11, 26, 1, 2, 3, 4, time.UTC)
	links := []store.Link{
		{ID: "l1", Older: "a", Newer: "b", Kind: dedup.Near, Signals: dedup.Signals{Similarity: 0.93}, CreatedAt: at},
		{ID: "l2", Older: "a", Newer: "c", Kind: dedup.Normalized, Signals: dedup.Signals{Similarity: 1}, CreatedAt: at.Add(time.Second)},
	}
	err = db.Update(context.Background(), func(stx store.Tx) error {
		for i := range links {
			if err := stx.PutLink(&links[i]); err != nil {
				return err
			}
		}
		// l2's key on c's side as an older palace wrote it: no value.
		return stx.(*tx).set(k(pDrawerLink, "c", "/", "l2"), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.LinkEnd{
		"l1": {ID: "l1", Kind: dedup.Near, Similarity: 0.93, CreatedAt: at},
		"l2": {ID: "l2", Kind: dedup.Normalized, Similarity: 1, CreatedAt: at.Add(time.Second)},
	}
	for drawer, ids := range map[string][]string{"a": {"l1", "l2"}, "b": {"l1"}, "c": {"l2"}} {
		var got []store.LinkEnd
		db.View(context.Background(), func(r store.Reader) error {
			got, err = r.LinkEnds(drawer)
			return err
		})
		if err != nil || len(got) != len(ids) {
			t.Fatalf("%s: %+v %v, want %v", drawer, got, err, ids)
		}
		for i, e := range got {
			if w := want[ids[i]]; e.ID != w.ID || e.Kind != w.Kind || e.Similarity != w.Similarity || !e.CreatedAt.Equal(w.CreatedAt) {
				t.Fatalf("%s: %+v, want %+v", drawer, e, w)
			}
		}
	}
}

package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loci-dev/loci/store"
)

// A document filed where a current drawer of the room holds its name with
// other content: from the same file (an earlier version its state lost,
// as palaces mined into two wings before states were per wing kept), that
// drawer is superseded and the wing holds one current version; from
// another file, the document's first drawer is filed without the name.
func TestFileDocumentSupersedesAnUntrackedVersionOfItself(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	src := store.Source{Kind: store.KindFile, URI: "/r/a.md"}
	old := must(t, db, store.NewDrawer{Wing: "w", Room: "files", Name: "a.md", Content: "the old lamp", Source: src,
		Provenance: store.Provenance{RequestedBy: store.ByHTTP}, Policy: store.ExactStoredLinked}).Drawer
	file := func(root, text string) store.MinedResult {
		t.Helper()
		var res store.MinedResult
		err := db.Update(ctx, func(tx store.Tx) error {
			var err error
			res, err = store.FileDocument(tx, store.MinedDocument{SourceKey: store.SourceIdentity{Adapter: "directory", Locator: root}.Key(),
				ID: "a.md", Name: "a.md", Source: store.Source{Kind: store.KindFile, URI: root + "/a.md"}, Revision: store.ContentHash(text),
				Chunks: []string{text}, Wing: "w", Room: "files", JobID: store.NewID(), Requested: store.ByHTTP}, dd)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := file("/r", "the new lamp"); res.Superseded != 1 || res.Created != 0 {
		t.Fatalf("filing a.md over its untracked version: %+v", res)
	}
	var current []store.Drawer
	err := db.View(ctx, func(r store.Reader) error {
		w, _ := r.WingByName("w")
		rm, _ := r.RoomByName(w.ID, "files")
		return r.Drawers(rm.ID, true, func(d *store.Drawer) bool { current = append(current, *d); return true })
	})
	if err != nil || len(current) != 1 || current[0].Name != "a.md" || current[0].Content != "the new lamp" || current[0].Supersedes != old.ID {
		t.Fatalf("current drawers: %+v %v", current, err)
	}
	// Another root's a.md: filed, without the name.
	if res := file("/other", "another lamp"); res.Created != 1 || res.Superseded != 0 {
		t.Fatalf("another file's a.md: %+v", res)
	}
}

// What mining kept for a wing is forgotten a batch at a time, the state
// itself last; another wing's state is left alone.
func TestForgetSomeMinedInBatches(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	src := store.SourceIdentity{Adapter: "directory", Locator: "/r"}.Key()
	a, b := store.TargetKey(src, "wa"), store.TargetKey(src, "wb")
	err := db.Update(ctx, func(tx store.Tx) error {
		for key, wing := range map[string]string{a: "wa", b: "wb"} {
			if err := tx.PutSource(&store.SourceState{Key: key, WingID: wing}); err != nil {
				return err
			}
			for _, doc := range []string{"1", "2", "3"} {
				if err := tx.PutSourceDocument(&store.DocumentState{Source: key, ID: doc, WingID: wing}); err != nil {
					return err
				}
			}
			if err := tx.PutStaleDocument(key, "2"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	for more := true; more; {
		err := db.Update(ctx, func(tx store.Tx) error {
			n, m, err := store.ForgetSomeMined(tx, "wa", 2)
			steps, more = append(steps, n), m
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(steps) != "[2 2 0]" {
		t.Fatalf("removed per transaction: %v, want [2 2 0]", steps)
	}
	err = db.View(ctx, func(r store.Reader) error {
		if st, _ := r.Source(a); st != nil {
			t.Error("wa's state is left")
		}
		if n, _ := r.CountSourceDocuments(a); n != 0 {
			t.Errorf("%d of wa's documents left", n)
		}
		if st, _ := r.Source(b); st == nil {
			t.Error("wb's state was forgotten")
		}
		var stale []string
		_ = r.StaleDocuments(b, func(doc string) bool { stale = append(stale, doc); return true })
		if n, _ := r.CountSourceDocuments(b); n != 3 || len(stale) != 1 {
			t.Errorf("wb: %d documents, %v to file again", n, stale)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A mined document whose source kind is outside the spec's list (an
// installed source's "chat", or none) is stored as other, as the spec
// says, instead of failing the batch it is filed in; a listed kind is kept.
func TestFileDocumentStoresAnUnknownSourceKindAsOther(t *testing.T) {
	for _, tc := range []struct{ kind, stored string }{
		{"chat", store.KindOther},
		{"", store.KindOther},
		{"FILE", store.KindOther},
		{store.KindTranscript, store.KindTranscript},
		{store.KindFile, store.KindFile},
	} {
		t.Run("kind "+tc.kind, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			var res store.MinedResult
			err := db.Update(ctx, func(tx store.Tx) error {
				var err error
				res, err = store.FileDocument(tx, store.MinedDocument{SourceKey: store.SourceIdentity{Adapter: "installed", Locator: "x"}.Key(),
					ID: "doc", Name: "doc", Source: store.Source{Kind: tc.kind, URI: "x/doc"}, Revision: store.ContentHash("a chat line"),
					Chunks: []string{"a chat line"}, Wing: "w", Room: "chats", JobID: store.NewID(), Requested: store.ByHTTP}, dd)
				return err
			})
			if err != nil || res.Created != 1 {
				t.Fatalf("filing a document of kind %q: %+v %v", tc.kind, res, err)
			}
			var got []store.Drawer
			err = db.View(ctx, func(r store.Reader) error {
				w, _ := r.WingByName("w")
				rm, _ := r.RoomByName(w.ID, "chats")
				return r.Drawers(rm.ID, true, func(d *store.Drawer) bool { got = append(got, *d); return true })
			})
			if err != nil || len(got) != 1 || got[0].Source.Kind != tc.stored {
				t.Fatalf("stored: %+v %v (want kind %q)", got, err, tc.stored)
			}
		})
	}
}

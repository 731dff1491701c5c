package badgerdb

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/loci-dev/loci/store"
)

func TestScanMergesPendingWrites(t *testing.T) {
	db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	// Committed: p/a p/c p/e, and q/x outside the prefix.
	err = db.Update(ctx, func(s store.Tx) error {
		tx := s.(*tx)
		for _, k := range []string{"p/a", "p/c", "p/e", "q/x", "o/z"} {
			if err := tx.set([]byte(k), []byte("old")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(s store.Tx) error {
		tx := s.(*tx)
		tx.set([]byte("p/b"), []byte("new"))
		tx.set([]byte("p/c"), []byte("new"))
		tx.del([]byte("p/e"))
		tx.set([]byte("p/f"), []byte("new"))
		tx.set([]byte("p/\xff"), []byte("new"))
		for _, reverse := range []bool{false, true} {
			var got []string
			tx.keys([]byte("p/"), reverse, func(k []byte, v valueFn) bool {
				b, _ := v()
				got = append(got, string(k)+"="+string(b))
				return true
			})
			want := []string{"p/a=old", "p/b=new", "p/c=new", "p/f=new", "p/\xff=new"}
			if reverse {
				slices.Reverse(want)
			}
			if !slices.Equal(got, want) {
				t.Errorf("reverse=%v: got %q, want %q", reverse, got, want)
			}
		}
		// Stopping early works.
		n := 0
		tx.keys([]byte("p/"), false, func([]byte, valueFn) bool { n++; return n < 2 })
		if n != 2 {
			t.Errorf("early stop visited %d", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDedupSeesSameBatch(t *testing.T) {
	db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dd := store.Dedup{Enabled: true, Threshold: 0.9}
	in := store.NewDrawer{Wing: "w", Room: "r", Content: "A memory written twice in one batch.", Source: store.Source{Kind: store.KindManual}}
	err = db.Update(context.Background(), func(tx store.Tx) error {
		a, err := store.CreateDrawer(tx, in, dd)
		if err != nil {
			return err
		}
		in.Content = "a memory written twice in one batch"
		b, err := store.CreateDrawer(tx, in, dd)
		if err != nil {
			return err
		}
		if len(b.Similar) != 1 || b.Similar[0].Older != a.Drawer.ID {
			t.Errorf("second write in the batch not linked: %+v", b.Similar)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package badgerdb

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/loci-dev/loci/store"
)

// BenchmarkSuspectLookups is what a mine job pays for the directory
// source's suspects (files under a directory changed since the cursor):
// one look-up of a document's state each, here 1,000 and 100,000 (every
// file of a flat folder of 100,000 whose root changed) against a state of
// 100,000 documents.
func BenchmarkSuspectLookups(b *testing.B) {
	db, err := Open(b.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	target := store.TargetKey("0123456789abcdef0123456789abcdef", "wing")
	id := func(i int) string { return fmt.Sprintf("d%03d/f%04d.md", i/1000, i%1000) }
	for part := 0; part < 100000; part += 1000 {
		err := db.Update(ctx, func(tx store.Tx) error {
			for i := part; i < part+1000; i++ {
				d := &store.DocumentState{Source: target, ID: id(i), WingID: "wing", Revision: store.ContentHash(id(i)), Meta: "mode=0644",
					Chunks: []store.ChunkState{{Drawer: "0193f4a2-7c1e-7b3a-9f1e-3c2d1b0a9e8f", Hash: store.ContentHash(id(i))}}}
				if err := tx.PutSourceDocument(d); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				err := db.View(ctx, func(r store.Reader) error {
					for i := range n {
						if d, err := r.SourceDocument(target, id(i)); err != nil || d == nil {
							return fmt.Errorf("%s: %v %v", id(i), d, err)
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package store_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/storetest"
)

var text = markov.NewText()

func randomSentence(r *rand.Rand) string { return text.Sentence(r) }

// BenchmarkCreateDrawerBigRoom measures one drawer write, dedup included,
// into a room that already holds 100,000 drawers (one write per
// transaction, so it includes a synced commit).
func BenchmarkCreateDrawerBigRoom(b *testing.B) {
	db := openB(b)
	r := rand.New(rand.NewPCG(1, 2))
	fill, batch := 100000, 200
	if v, err := strconv.Atoi(os.Getenv("LOCI_BENCH_FILL")); err == nil {
		fill = v
	}
	for i := 0; i < fill; i += batch {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for range batch {
				if _, err := store.CreateDrawer(tx, bdrawer(randomSentence(r)), dd); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			_, err := store.CreateDrawer(tx, bdrawer(randomSentence(r)), dd)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func bdrawer(content string) store.NewDrawer {
	return store.NewDrawer{Wing: "w", Room: "r", Content: content,
		Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}
}

// BenchmarkResolveEntity100k resolves names among 100,000 entities: a
// quarter exact names, a quarter other spellings of a key, a quarter
// typos (the deletion index), a quarter unknown names (resolved to new
// entities and created), 500 to a transaction (as a write batch holds
// them), commits included.
func BenchmarkResolveEntity100k(b *testing.B) {
	storetest.BenchResolveEntity(b, openB(b), 100000, nil)
}

package store_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
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
	db := openB(b)
	r := rand.New(rand.NewPCG(5, 6))
	syl := []string{"ka", "ro", "mi", "te", "lu", "sa", "no", "vi", "da", "re", "po", "li", "ne", "ta", "go", "be"}
	name := func() string {
		n := ""
		for range 3 + r.IntN(3) {
			n += syl[r.IntN(len(syl))]
		}
		return strings.ToUpper(n[:1]) + n[1:]
	}
	const fill = 100000
	var names []string
	for i := 0; i < fill; i += 1000 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for range 1000 {
				n := name()
				if _, err := store.ResolveEntity(tx, n, "person", false, ""); err != nil {
					return err
				}
				names = append(names, n)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for start := 0; start < b.N; start += 500 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for i := start; i < min(start+500, b.N); i++ {
				n := names[r.IntN(len(names))]
				switch i % 4 {
				case 1:
					n = strings.ToLower(n) + "!"
				case 2:
					n = n[:len(n)-1] + "x"
				case 3:
					n = name() + " " + name()
				}
				if _, err := store.ResolveEntity(tx, n, "person", true, ""); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resolutions/s")
}

package postgres_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// countingTx counts the graph reads a resolution makes (each one
// statement, so one round trip to the database).
type countingTx struct {
	store.Tx
	ids, entities *int
}

func (c countingTx) EntityIDs(i store.EntityIndex, v string) ([]string, error) {
	*c.ids++
	return c.Tx.EntityIDs(i, v)
}

func (c countingTx) Entity(id string) (*store.Entity, error) {
	*c.entities++
	return c.Tx.Entity(id)
}

// BenchmarkResolveEntity10k resolves names among 10,000 entities on
// PostgreSQL, as store's BenchmarkResolveEntity100k does on the embedded
// store: a quarter exact names, a quarter other spellings of a key, a
// quarter typos (the deletion rows), a quarter unknown names (resolved to
// new entities and created), 500 to a transaction (as a write batch holds
// them), commits included. It reports the index lookups and entity reads
// (statements) a resolution makes.
func BenchmarkResolveEntity10k(b *testing.B) {
	url := pgtest.Database(b)
	db, err := postgres.Open(context.Background(), store.OpenOptions{Location: url, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrator(nil).Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	syl := []string{"ka", "ro", "mi", "te", "lu", "sa", "no", "vi", "da", "re", "po", "li", "ne", "ta", "go", "be"}
	name := func() string {
		n := ""
		for range 3 + r.IntN(3) {
			n += syl[r.IntN(len(syl))]
		}
		return strings.ToUpper(n[:1]) + n[1:]
	}
	const fill = 10000
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
	var ids, entities int
	b.ResetTimer()
	for start := 0; start < b.N; start += 500 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			ctx := countingTx{Tx: tx, ids: &ids, entities: &entities}
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
				if _, err := store.ResolveEntity(ctx, n, "person", true, ""); err != nil {
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
	b.ReportMetric(float64(ids)/float64(b.N), "lookups/op")
	b.ReportMetric(float64(entities)/float64(b.N), "entity-reads/op")
}

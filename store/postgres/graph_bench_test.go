package postgres_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres"
	"github.com/loci-dev/loci/store/postgres/pgtest"
	"github.com/loci-dev/loci/store/storetest"
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
// store (storetest.BenchResolveEntity: the same workload). It reports the
// index lookups and entity reads (statements) a resolution makes.
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
	var ids, entities int
	storetest.BenchResolveEntity(b, db, 10000, func(tx store.Tx) store.Tx {
		return countingTx{Tx: tx, ids: &ids, entities: &entities}
	})
	b.ReportMetric(float64(ids)/float64(b.N), "lookups/op")
	b.ReportMetric(float64(entities)/float64(b.N), "entity-reads/op")
}

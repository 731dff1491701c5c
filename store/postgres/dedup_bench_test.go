package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/dedup"
	"github.com/loci-dev/loci/store/postgres"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// benchScope is the sketches of a scope of n drawers of 2,000 characters
// of realistic text, near copies of the text asked about among them (one
// in a thousand, edited), and that text's record.
func benchScope(n int) (recs []*store.DedupRecord, query *store.DedupRecord) {
	text := markov.NewText()
	r := rand.New(rand.NewPCG(7, 8))
	para := func() string {
		var b strings.Builder
		for b.Len() < 2000 {
			b.WriteString(text.Sentence(r))
			b.WriteByte(' ')
		}
		return b.String()[:2000]
	}
	asked := para()
	for i := range n {
		body := para()
		if i%1000 == 0 {
			// A near copy: the text asked about with a few words changed.
			w := strings.Fields(asked)
			for j := 0; j < 3; j++ {
				w[r.IntN(len(w))] = fmt.Sprintf("edit%d", i+j)
			}
			body = strings.Join(w, " ")
		}
		recs = append(recs, dedupRecord(uuid.NewString(), "room", body))
	}
	return recs, dedupRecord(uuid.NewString(), "room", asked)
}

// BenchmarkDedupNear: the near candidates of a 2,000-character text in a
// scope of 20,000 drawers' sketches, answered by PostgreSQL (one query on
// the band table, in a read and under the writer lock) and by Badger's
// in-memory index (loaded by a write first). It reports the candidates
// visited.
func BenchmarkDedupNear(b *testing.B) {
	const n = 20000
	recs, q := benchScope(n)
	lo, hi := dedup.LengthWindow(q.NormLen, dedup.DefaultThreshold)
	ctx := context.Background()
	fill := func(db store.DB) {
		for i := 0; i < len(recs); i += 500 {
			if err := db.Update(ctx, func(tx store.Tx) error {
				for _, r := range recs[i:min(i+500, len(recs))] {
					if err := tx.PutDedup(r); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	ask := func(b *testing.B, db store.DB, write bool) {
		b.Helper()
		found := 0
		visit := func(r store.Reader) error {
			found = 0
			return r.DedupNear(q.Scope, q.Bands, lo, hi, func(store.NearCandidate) { found++ })
		}
		for b.Loop() {
			var err error
			if write {
				err = db.Update(ctx, func(tx store.Tx) error { return visit(tx) })
			} else {
				err = db.View(ctx, visit)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if found == 0 {
			b.Fatal("no candidates: the near copies were not found")
		}
		b.ReportMetric(float64(found), "candidates")
	}

	b.Run("postgres", func(b *testing.B) {
		db, err := postgres.Open(ctx, store.OpenOptions{Location: pgtest.Database(b), Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Migrator(nil).Run(ctx); err != nil {
			b.Fatal(err)
		}
		fill(db)
		// As autovacuum leaves a table that took inserts: its visibility
		// map set, so the band index answers alone.
		for _, sql := range []string{"VACUUM ANALYZE dedup", "VACUUM ANALYZE dedup_bands", "VACUUM ANALYZE dedup_near"} {
			if _, err := db.Pool().Exec(ctx, sql); err != nil {
				b.Fatal(err)
			}
		}
		var size string
		if err := db.Pool().QueryRow(ctx, `SELECT pg_size_pretty(pg_total_relation_size('dedup_bands') + pg_total_relation_size('dedup_near'))`).Scan(&size); err != nil {
			b.Fatal(err)
		}
		b.Logf("%d drawers: the band and near tables with their indexes take %s", n, size)
		b.Run("view", func(b *testing.B) { ask(b, db, false) })
		b.Run("update", func(b *testing.B) { ask(b, db, true) })
	})
	b.Run("badger", func(b *testing.B) {
		db, err := badgerdb.Open(b.TempDir(), slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		fill(db)
		b.Run("view", func(b *testing.B) { ask(b, db, false) })
		b.Run("update", func(b *testing.B) { ask(b, db, true) })
	})
}

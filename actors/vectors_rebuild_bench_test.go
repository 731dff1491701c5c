package actors

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// BenchmarkVectorRebuild times the rebuild of a vector index from the
// store (a restored palace, its index folder removed):
// LOCI_BENCH_VECTORS vectors (default 5,000) of 100 dimensions.
func BenchmarkVectorRebuild(b *testing.B) {
	n := 5000
	if v, err := strconv.Atoi(os.Getenv("LOCI_BENCH_VECTORS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	db, err := badgerdb.Open(b.TempDir(), log)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const dim = 100
	p := &embed.Profile{Name: "p", Settings: embed.Settings{Provider: "hash", Model: "m", Dimension: dim, Pipeline: "x"}}
	id := p.Identity()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i += 500 {
		err := db.Update(ctx, func(tx store.Tx) error {
			for j := i; j < min(i+500, n); j++ {
				res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: fmt.Sprint("drawer ", j),
					Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}, store.Dedup{})
				if err != nil {
					return err
				}
				v := make([]float32, dim)
				for k := range v {
					v[k] = r.Float32()*2 - 1
				}
				if err := tx.PutEmbedding(&store.Embedding{DrawerID: res.Drawer.ID, Profile: "p", Provider: id.Provider, Model: id.Model,
					Dimension: dim, Pipeline: id.Pipeline, CreatedAt: time.Now(), Vector: v}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		v := NewVectors(db, nil, map[string]*embed.Profile{"p": p}, "p", log, VectorOptions{})
		if _, err := v.open(ctx); err != nil {
			b.Fatal(err)
		}
		if v.Index("p").Len() != n {
			b.Fatalf("%d vectors", v.Index("p").Len())
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "vectors/s")
}

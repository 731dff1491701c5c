package actors

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// A vector index rebuilt from the store (a restored palace, whose index
// folder restore removed) is the graph the follower built as the vectors
// came: HNSW's graph depends on the order of insertion, so the rebuild
// inserts in the change log's order, not the store's key order, and both
// answer every search with the same ids in the same order.
func TestRebuiltVectorIndexAnswersAsTheFollowedOne(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	db, err := badgerdb.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const dim = 16
	p := &embed.Profile{Name: "p", Settings: embed.Settings{Provider: "hash", Model: "m", Dimension: dim, Pipeline: "x"}}
	profiles := map[string]*embed.Profile{"p": p}
	followed := NewVectors(db, nil, profiles, "p", log, VectorOptions{})
	followed.Start(nil)
	defer followed.Stop(ctx)

	r := rand.New(rand.NewPCG(3, 7))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = r.Float32()*2 - 1
		}
		return v
	}
	// Drawers filed, then their vectors stored in batches in an order
	// unlike their keys' (reversed), as an embed job may store them.
	var ids []string
	for b := range 8 {
		err := db.Update(ctx, func(tx store.Tx) error {
			for i := range 100 {
				res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: fmt.Sprintf("drawer %d of batch %d", i, b),
					Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}, store.Dedup{})
				if err != nil {
					return err
				}
				ids = append(ids, res.Drawer.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	id := p.Identity()
	for i := len(ids); i > 0; i -= 50 {
		batch := ids[max(i-50, 0):i]
		err := db.Update(ctx, func(tx store.Tx) error {
			for j := len(batch) - 1; j >= 0; j-- {
				e := &store.Embedding{DrawerID: batch[j], Profile: "p", Provider: id.Provider, Model: id.Model, Dimension: dim,
					Pipeline: id.Pipeline, CreatedAt: time.Now(), Vector: vec()}
				if err := tx.PutEmbedding(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		followed.Kick()
	}
	var last uint64
	_ = db.View(ctx, func(r store.Reader) (err error) { last, err = r.LastSeq(); return err })
	if !followed.Sync(ctx, last, 10*time.Second) {
		t.Fatal("the follower did not catch up")
	}
	rebuilt := NewVectors(db, nil, profiles, "p", log, VectorOptions{})
	if _, err := rebuilt.open(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := followed.Index("p"), rebuilt.Index("p")
	if a.Len() != len(ids) || b.Len() != len(ids) {
		t.Fatalf("followed %d vectors, rebuilt %d, want %d", a.Len(), b.Len(), len(ids))
	}
	differ := 0
	for range 300 {
		q := vec()
		ha, err := a.Search(q, 10, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		hb, _ := b.Search(q, 10, 10, nil)
		if !slices.Equal(ha, hb) {
			differ++
		}
	}
	if differ > 0 {
		t.Fatalf("%d of 300 searches answer otherwise from the rebuilt index", differ)
	}
}

package actors

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/storetest"
)

// BenchmarkSequentialWrite is one durable drawer write at a time through
// the writer actor (no HTTP): the floor of a client's write latency.
func BenchmarkSequentialWrite(b *testing.B) {
	sys, db := newSystem(b)
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	text := storetest.NewText()
	r := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		_, err := p.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r",
			Content: text.Sentence(r),
			Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

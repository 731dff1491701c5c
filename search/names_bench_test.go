package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
)

// BenchmarkNameHits is what naming a page's wings and rooms adds to a
// search: a page of ten hits over the rooms of five wings, named from the
// store (the first search that meets them) and from the cache, beside the
// lexical search that found the page and an empty read view.
func BenchmarkNameHits(b *testing.B) {
	st := newSearchStack(b)
	p := &Palace{DB: st.db, Sys: st.sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	text := markov.NewText()
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 1000 {
		if _, err := p.CreateDrawer(context.Background(), store.NewDrawer{Wing: fmt.Sprintf("wing%d", i%5), Room: fmt.Sprintf("room%d", i%10),
			Content: "harbour " + text.Sentence(r), Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}); err != nil {
			b.Fatal(err)
		}
	}
	s := &Search{DB: st.db, Indexer: st.ix, Log: st.log}
	q := SearchQuery{Text: "harbour", Ranking: RankLexical, Limit: 10}
	res, err := s.Search(context.Background(), q, false)
	if err != nil {
		b.Fatal(err)
	}
	rooms := map[string]bool{}
	for _, h := range res.Hits {
		rooms[h.RoomID] = true
	}
	b.Logf("%d hits in %d rooms", len(res.Hits), len(rooms))
	b.Run("search", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Search(context.Background(), q, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("empty view", func(b *testing.B) {
		for b.Loop() {
			if err := st.db.View(context.Background(), func(store.Reader) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("names cached=%v", cached), func(b *testing.B) {
			for b.Loop() {
				by := s
				if !cached {
					by = &Search{}
				}
				if err := st.db.View(context.Background(), func(r store.Reader) error { return by.nameHits(r, res.Hits) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

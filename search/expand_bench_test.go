package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// BenchmarkExpand100k measures what expand adds to a lexical search of
// 100,000 drawers that mention 5,000 entities (two each) linked by 20,000
// open facts: p50 and p99 of the same queries with and without expand.
func BenchmarkExpand100k(b *testing.B) {
	st := newSearchStack(b)
	db, ix, log := st.db, st.ix, st.log
	r := rand.New(rand.NewPCG(8, 9))
	text := markov.NewText()
	const drawers, entities, facts = 100000, 5000, 20000
	now := time.Now().UTC()
	ents := make([]string, entities)
	for start := 0; start < entities; start += 250 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for i := start; i < start+250; i++ {
				ents[i] = uuid.NewString()
				name := fmt.Sprintf("Person %05d", i)
				if err := tx.PutEntity(&store.Entity{ID: ents[i], Name: name, Kind: graph.KindPerson, Key: graph.Key(name), CreatedAt: now}, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var queries []string
	for i := 0; i < drawers; i += 1000 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for range 1000 {
				s := text.Sentence(r)
				if len(queries) < 200 && r.IntN(50) == 0 {
					queries = append(queries, s[:min(len(s), 40)])
				}
				res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: s,
					Source: store.Source{Kind: store.KindNote}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, store.Dedup{})
				if err != nil {
					return err
				}
				for range 2 {
					if err := tx.PutMention(&store.Mention{Drawer: res.Drawer.ID, Entity: ents[r.IntN(entities)], Name: "x", Rule: "exact", Confidence: 1, CreatedAt: now}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for range 4 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for range facts / 4 {
				rel := &store.Relationship{ID: uuid.NewString(), Subject: ents[r.IntN(entities)], Predicate: "knows", Object: ents[r.IntN(entities)],
					Confidence: 1, ValidFrom: now.Add(-time.Hour), RecordedAt: now.Add(-time.Hour)}
				if err := tx.PutRelationship(rel, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var last uint64
	db.View(context.Background(), func(rd store.Reader) error { last, _ = rd.LastSeq(); return nil })
	ix.Sync(context.Background(), last, 10*time.Minute)
	s := &Search{DB: db, Indexer: ix, Log: log}
	for _, expand := range []bool{false, true} {
		b.Run(fmt.Sprintf("expand=%v", expand), func(b *testing.B) {
			var lat []time.Duration
			i := 0
			for b.Loop() {
				t0 := time.Now()
				if _, err := s.Search(context.Background(), SearchQuery{Text: queries[i%len(queries)], Ranking: RankLexical, Limit: 10, Expand: expand}, false); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

package services

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// BenchmarkGraphDepth3 reads GET /api/graph's neighbourhood, depth 3,
// from random entities of a graph of 100,000 entities and 500,000 open
// facts (limit 50, the default, and 200, the most); it reports p50 and
// p99 per read.
func BenchmarkGraphDepth3(b *testing.B) {
	sys, db := newSystem(b)
	r := rand.New(rand.NewPCG(3, 4))
	const entities, facts = 100000, 500000
	ids := make([]string, entities)
	now := time.Now().UTC()
	for i := 0; i < entities; i += 250 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for k := i; k < i+250; k++ {
				ids[k] = uuid.NewString()
				name := fmt.Sprintf("Entity %06d", k)
				if err := tx.PutEntity(&store.Entity{ID: ids[k], Name: name, Kind: graph.KindPerson, Key: graph.Key(name), CreatedAt: now}, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < facts; i += 2000 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for range 2000 {
				s, o := ids[r.IntN(entities)], ids[r.IntN(entities)]
				rel := &store.Relationship{ID: uuid.NewString(), Subject: s, Predicate: "knows", Object: o, Confidence: 1,
					ValidFrom: now.Add(-time.Hour), RecordedAt: now.Add(-time.Hour)}
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
	g := &Graph{DB: db, Sys: sys}
	for _, limit := range []int{50, 200} {
		b.Run(fmt.Sprintf("limit%d", limit), func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				n, err := g.Neighbourhood(context.Background(), ids[r.IntN(entities)], 3, limit, nil)
				if err != nil || len(n.Nodes) == 0 {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

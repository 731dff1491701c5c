package services

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
)

// BenchmarkStatusAfterWrite is the status report (counts, migrations) of
// a palace of 30,000 drawers (LOCI_BENCH_FILL) in 10 wings of 10 rooms,
// read right after a write, as a dashboard polling a palace in use reads
// it: the counts cached for the last change do not serve it. The write is
// outside the timing; it reports p50 and p99.
func BenchmarkStatusAfterWrite(b *testing.B) {
	sys, db := newSystem(b)
	p := &Palace{DB: db, Sys: sys}
	fill := 30000
	if v, err := strconv.Atoi(os.Getenv("LOCI_BENCH_FILL")); err == nil {
		fill = v
	}
	text := markov.NewText()
	r := rand.New(rand.NewPCG(3, 4))
	drawer := func(i int) store.NewDrawer {
		return store.NewDrawer{Wing: fmt.Sprintf("w%d", i%10), Room: fmt.Sprintf("r%d", (i/10)%10),
			Content: text.Sentence(r), Source: store.Source{Kind: store.KindManual},
			Provenance: store.Provenance{RequestedBy: store.ByHTTP}}
	}
	const batch = 500
	for i := 0; i < fill; i += batch {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for j := range min(batch, fill-i) {
				if _, err := store.CreateDrawer(tx, drawer(i+j), store.Dedup{}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	rp := &Reporter{Palace: p, Migrator: &store.Runner{DB: db, Steps: store.Steps()}, Started: time.Now()}
	var lat []time.Duration
	n := fill
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := db.Update(context.Background(), func(tx store.Tx) error {
			_, err := store.CreateDrawer(tx, drawer(n), store.Dedup{})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		n++
		b.StartTimer()
		t0 := time.Now()
		st := rp.Status(context.Background(), "")
		lat = append(lat, time.Since(t0))
		if !st.Datastore.Healthy || st.Counts.Drawers != n {
			b.Fatalf("status: healthy %v, %d drawers, want %d", st.Datastore.Healthy, st.Counts.Drawers, n)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50-status")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99-status")
}

package vector

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkHNSW100k builds an index of 100,000 text-like 768-dimensional
// vectors once (LOCI_BENCH_FILL changes the count) and reports, for search
// widths 256, 384 and 512: latency p50/p99 (k 10) and recall@10 against
// the exact scan; and the build rate and the exact scan's p50.
func BenchmarkHNSW100k(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("LOCI_BENCH_FILL")); err == nil {
		n = v
	}
	r := rand.New(rand.NewPCG(9, 9))
	vecs := textVectors(r, n, 768)
	t0 := time.Now()
	x := build(b, vecs)
	rate := float64(n) / time.Since(t0).Seconds()
	queries := textVectors(r, 200, 768)
	exact := make([][]Hit, 100)
	var ex []time.Duration
	for i := range exact {
		t := time.Now()
		exact[i], _ = x.Exact(queries[i], 10, nil)
		ex = append(ex, time.Since(t))
	}
	slices.Sort(ex)
	for _, ef := range []int{256, 384, 512} {
		b.Run(fmt.Sprintf("ef%d", ef), func(b *testing.B) {
			total := 0.0
			for i, want := range exact {
				got, _ := x.Search(queries[i], 10, ef, nil)
				set := map[string]bool{}
				for _, h := range want {
					set[h.ID] = true
				}
				for _, h := range got {
					if set[h.ID] {
						total++
					}
				}
			}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				t := time.Now()
				if _, err := x.Search(queries[i%len(queries)], 10, ef, nil); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
			b.ReportMetric(total/float64(10*len(exact)), "recall@10")
			b.ReportMetric(rate, "inserts/s")
			b.ReportMetric(float64(ex[len(ex)/2].Microseconds())/1000, "ms-p50-exact")
		})
	}
}

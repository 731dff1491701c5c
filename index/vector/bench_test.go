package vector

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkHNSW100k builds an index of 100,000 text-like 768-dimensional
// vectors (LOCI_BENCH_FILL changes the count) and reports the build rate,
// search latency p50/p99 (k 10, default width) and recall@10 against the
// exact scan.
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
	recall := recallAt(b, x, queries[:100], 10)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		t := time.Now()
		if _, err := x.Search(queries[i%len(queries)], 10, 0, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
	var ex []time.Duration
	for _, q := range queries[:20] {
		t := time.Now()
		x.Exact(q, 10, nil)
		ex = append(ex, time.Since(t))
	}
	slices.Sort(ex)
	b.ReportMetric(float64(ex[len(ex)/2].Microseconds())/1000, "ms-p50-exact")
	b.ReportMetric(rate, "inserts/s")
	b.ReportMetric(recall, "recall@10")
}

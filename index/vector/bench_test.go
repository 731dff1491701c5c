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

// BenchmarkSearchWhileInserting times searches (k 10, default width) of
// an index of 20,000 text-like 101-dimensional vectors (the built-in
// static profile's size) while another goroutine inserts more, one Add at
// a time as the vector follower does after a burst (issue 38, point 8).
// keep reads each window of candidates as a search reads their drawers
// from the store (slow: 200 µs a window, a loaded machine's read). An
// index must not make searches wait behind insertions, nor insertions
// behind a search's reads. Each iteration is 200 searches during the
// stream; it reports search p50/p99 and the insert rate meanwhile.
func BenchmarkSearchWhileInserting(b *testing.B) {
	const base, pool, dim = 20000, 20000, 101
	r := rand.New(rand.NewPCG(8, 38))
	vecs := textVectors(r, base+pool, dim)
	queries := textVectors(r, 200, dim)
	slow := func(ids []string) []bool {
		time.Sleep(200 * time.Microsecond)
		ok := make([]bool, len(ids))
		for i := range ok {
			ok[i] = true
		}
		return ok
	}
	for _, keep := range []struct {
		name string
		keep func([]string) []bool
	}{{"keep=nil", nil}, {"keep=slow", slow}} {
		b.Run(keep.name, func(b *testing.B) {
			x := build(b, vecs[:base])
			next := 0 // the stream's next vector: ids never repeat
			var lat []time.Duration
			var inserted int
			var took time.Duration
			for b.Loop() {
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					t0 := time.Now()
					defer func() { took += time.Since(t0) }()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := x.Add(fmt.Sprintf("s%07d", next), vecs[base+next%pool]); err != nil {
							panic(err)
						}
						next++
						inserted++
					}
				}()
				for i := range 200 {
					t := time.Now()
					if _, err := x.Search(queries[i], 10, 0, keep.keep); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t))
				}
				close(stop)
				<-done
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
			b.ReportMetric(float64(inserted)/took.Seconds(), "inserts/s")
		})
	}
}

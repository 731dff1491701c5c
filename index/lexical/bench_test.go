package lexical

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/loci-dev/loci/store/markov"

	loci "github.com/loci-dev/loci/index"
)

// BenchmarkSearch100k: lexical query latency over 100,000 drawers of
// realistic text in 100 rooms, without and with a room filter; reports
// p50 and p99 (LOCI_BENCH_FILL changes the size).
func BenchmarkSearch100k(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("LOCI_BENCH_FILL")); err == nil {
		n = v
	}
	x, err := Open(filepath.Join(b.TempDir(), "lex"))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	text := markov.NewText()
	r := rand.New(rand.NewPCG(7, 7))
	var batch []Doc
	for i := range n {
		batch = append(batch, Doc{ID: fmt.Sprintf("%08d", i), Content: text.Sentence(r), WingID: "w", RoomID: strconv.Itoa(i % 100)})
		if len(batch) == 5000 {
			if err := x.Apply(batch, nil, uint64(i)); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := x.Apply(batch, nil, uint64(n)); err != nil {
		b.Fatal(err)
	}
	queries := make([]string, 200)
	for i := range queries {
		// Three or four words from a fresh sentence, like a question.
		s := text.Sentence(r)
		words := []rune(s)
		queries[i] = string(words[:min(len(words), 30)])
	}
	// Validity is checked by the caller in rank order (the search service
	// reads the drawer); a map lookup stands for it here.
	valid := map[string]bool{}
	for i := range n {
		valid[fmt.Sprintf("%08d", i)] = i%50 != 0 // one drawer in 50 superseded
	}
	keep := loci.Each(func(id string) bool { return valid[id] })
	for _, c := range []struct {
		name string
		f    Filter
	}{{"current", Filter{}}, {"current+room", Filter{RoomID: "42"}}} {
		b.Run(c.name, func(b *testing.B) {
			var lat []time.Duration
			i := 0
			for b.Loop() {
				t0 := time.Now()
				if _, err := x.Search(context.Background(), queries[i%len(queries)], c.f, 10, keep); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
		})
	}
}

// BenchmarkIndexing reports documents indexed per second in batches of
// 2,000 (the indexer's batch), realistic text.
func BenchmarkIndexing(b *testing.B) {
	x, err := Open(filepath.Join(b.TempDir(), "lex"))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	text := markov.NewText()
	r := rand.New(rand.NewPCG(8, 8))
	const batch = 2000
	docs := make([]Doc, batch)
	n := 0
	t0 := time.Now()
	for b.Loop() {
		for i := range docs {
			docs[i] = Doc{ID: fmt.Sprintf("%08d", n), Content: text.Sentence(r), WingID: "w", RoomID: "r"}
			n++
		}
		if err := x.Apply(docs, nil, uint64(n)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/time.Since(t0).Seconds(), "docs/s")
}

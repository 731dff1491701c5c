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

	"github.com/loci-dev/loci/internal/markov"

	ranking "github.com/loci-dev/loci/search/rank"
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
	keep := ranking.Each(func(id string) bool { return valid[id] })
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

// BenchmarkSearchDuringIndexing: lexical query latency over 20,000
// drawers while batches of 2,000 more (the indexer's batch) are applied
// back to back, as after a burst of writes; reports p50 and p99 (issue
// 38, point 8: a search waited for the batch in progress).
func BenchmarkSearchDuringIndexing(b *testing.B) {
	x, err := Open(filepath.Join(b.TempDir(), "lex"))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	text := markov.NewText()
	r := rand.New(rand.NewPCG(9, 9))
	n := 0
	next := func(k int) []Doc {
		docs := make([]Doc, k)
		for i := range docs {
			docs[i] = Doc{ID: fmt.Sprintf("%08d", n), Content: text.Sentence(r), WingID: "w", RoomID: "r"}
			n++
		}
		return docs
	}
	for range 10 {
		if err := x.Apply(next(2000), nil, uint64(n)); err != nil {
			b.Fatal(err)
		}
	}
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = string([]rune(text.Sentence(r))[:20])
	}
	batches := make([][]Doc, 200)
	for i := range batches {
		batches[i] = next(2000)
	}
	seq := uint64(n)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for _, docs := range batches {
			select {
			case <-stop:
				return
			default:
			}
			seq += uint64(len(docs))
			if err := x.Apply(docs, nil, seq); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := x.Search(context.Background(), queries[i%len(queries)], Filter{}, 10, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		i++
	}
	close(stop)
	<-done
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
}

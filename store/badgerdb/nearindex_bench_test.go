package badgerdb

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// BenchmarkNearIndexMemory reports the heap a scope of 100,000 drawers of
// realistic text holds in the near index, per drawer.
func BenchmarkNearIndexMemory(b *testing.B) {
	recs := nearRecords(100000)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := loadInto(scopeIndexFor(len(recs)), recs)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(recs)), "bytes/drawer")
		runtime.KeepAlive(s)
	}
}

// BenchmarkNearIndexLoad: building a scope of 100,000 drawers in memory
// from their records, as the first write into the scope after a start does
// (the store scan excluded).
func BenchmarkNearIndexLoad(b *testing.B) {
	recs := nearRecords(100000)
	for b.Loop() {
		loadInto(scopeIndexFor(len(recs)), recs)
	}
}

func nearRecords(n int) []nearEntry {
	text := markov.NewText()
	r := rand.New(rand.NewPCG(5, 6))
	recs := make([]nearEntry, 0, n)
	for range n {
		norm := dedup.Normalize(text.Sentence(r))
		sk := dedup.MakeSketch(norm)
		e, ok := entryOf(&store.DedupRecord{DrawerID: uuid.NewString(), NormLen: len(norm), Bands: sk.Bands, Mins: sk.Mins, Bag: sk.Bag})
		if ok {
			recs = append(recs, e)
		}
	}
	return recs
}

func loadInto(s *scopeIndex, recs []nearEntry) *scopeIndex {
	for _, e := range recs {
		s.add(e)
	}
	return s.seal()
}

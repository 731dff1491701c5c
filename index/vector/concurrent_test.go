package vector

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A search that is reading its candidates' drawers (keep) does not hold
// up an insertion: the index's lock covers the walk of the graph only; the
// insertion only gives way to it for YieldMax.
// Here keep waits for an Add to finish. Before, the search held the read
// lock across keep, the Add waited for the write lock, and the two waited
// for each other (a search reading slowly stalled the vector follower, and
// every search after it queued behind the follower).
func TestInsertDoesNotWaitForASearchsReads(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 1))
	vecs := textVectors(r, 2001, 101)
	x := build(t, vecs[:2000])
	added := make(chan error, 1)
	once := sync.Once{}
	var addErr error
	var took, bound time.Duration
	inTime := false
	keep := func(ids []string) []bool {
		once.Do(func() {
			bound = min(YieldMax, time.Duration(x.lastInsert.Load()))
			t0 := time.Now()
			x.yield() // what an insertion does first
			took = time.Since(t0)
			go func() { added <- x.Add("late", vecs[2000]) }()
			select {
			case addErr = <-added:
				inTime = true
			case <-time.After(10 * time.Second):
			}
		})
		ok := make([]bool, len(ids))
		for i := range ok {
			ok[i] = true
		}
		return ok
	}
	if _, err := x.Search(vecs[0], 10, 0, keep); err != nil {
		t.Fatal(err)
	}
	if !inTime {
		<-added
		t.Fatal("the Add waited for a search that was reading its candidates")
	}
	if addErr != nil {
		t.Fatal(addErr)
	}
	// An insertion gives way to a search in flight: as long as the last
	// insertion took (YieldMax at most).
	if bound <= 0 || took < bound {
		t.Fatalf("an insertion gave way to the search in flight for %v, want %v", took, bound)
	}
	if hits := mustSearch(t, x, vecs[2000], 1); hits[0].ID != "late" {
		t.Fatalf("the vector added during the search is not its own nearest: %v", hits)
	}
}

// Searches go on while the graph is rebuilt (Compact): the rebuild is made
// aside and swapped in. Before, a compaction held the write lock for the
// whole rebuild (seconds at tens of thousands of vectors) and every search
// waited for it. Measured against the compaction itself, not the clock:
// the longest gap between two searches' answers while it ran must be far
// shorter than the compaction (before: nearly all of it).
func TestSearchesGoOnDuringACompaction(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 2))
	vecs := textVectors(r, 6000, 101)
	x := build(t, vecs)
	for i := 0; i < len(vecs); i += 3 {
		x.Delete(fmt.Sprintf("v%06d", i))
	}
	var running atomic.Bool
	running.Store(true)
	done := make(chan time.Duration)
	t0 := time.Now()
	go func() {
		x.Compact()
		running.Store(false)
		done <- time.Since(t0)
	}()
	n, last, gap := 0, time.Now(), time.Duration(0)
	for i := 0; running.Load(); i++ {
		mustSearch(t, x, vecs[i%len(vecs)], 10)
		now := time.Now()
		gap = max(gap, now.Sub(last))
		last = now
		n++
	}
	took := <-done
	t.Logf("%d searches during a compaction of %v; the longest gap between two %v", n, took.Round(time.Millisecond), gap.Round(time.Millisecond))
	if gap > took/2 {
		t.Fatalf("searches stopped for %v of the compaction's %v", gap.Round(time.Millisecond), took.Round(time.Millisecond))
	}
	if x.Len() != 4000 || x.Tombstones() != 0 {
		t.Fatalf("after compact: len %d tombstones %.3f", x.Len(), x.Tombstones())
	}
	if rec := recallAt(t, x, textVectors(r, 50, 101), 10); rec < 0.9 {
		t.Fatalf("recall@10 after the compaction %.3f", rec)
	}
}

// Searches, insertions (some replacing a vector), deletions, saves and a
// compaction run at once (go test -race checks the locking): every search
// answers live, distinct ids; at the end the index holds exactly what was
// written, each id once, each vector its own nearest.
func TestConcurrentWritersAndSearches(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 3))
	vecs := textVectors(r, 3000, 101)
	x := build(t, vecs[:1000])
	dir := t.TempDir()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	fail := make(chan string, 16)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				hits, err := x.Search(vecs[(i*7+g)%len(vecs)], 20, 0, nil)
				if err != nil {
					fail <- err.Error()
					return
				}
				seen := map[string]bool{}
				for _, h := range hits {
					if seen[h.ID] {
						fail <- "a search returned " + h.ID + " twice"
						return
					}
					seen[h.ID] = true
				}
			}
		}()
	}
	want := map[string]int{} // id -> index into vecs
	for i := range 1000 {
		want[fmt.Sprintf("v%06d", i)] = i
	}
	for i := 1000; i < 3000; i++ {
		switch {
		case i%10 == 0: // replace an earlier id's vector
			id := fmt.Sprintf("v%06d", i-1000)
			if err := x.Add(id, vecs[i]); err != nil {
				t.Fatal(err)
			}
			want[id] = i
		case i%10 == 1:
			id := fmt.Sprintf("v%06d", i-999)
			x.Delete(id)
			delete(want, id)
		default:
			id := fmt.Sprintf("n%06d", i)
			if err := x.Add(id, vecs[i]); err != nil {
				t.Fatal(err)
			}
			want[id] = i
		}
		if i == 2000 {
			if err := x.Save(filepath.Join(dir, "v.vec"), 1, "test"); err != nil {
				t.Fatal(err)
			}
		}
		if i == 2500 {
			x.Compact()
		}
	}
	close(stop)
	wg.Wait()
	close(fail)
	for f := range fail {
		t.Fatal(f)
	}
	if x.Len() != len(want) {
		t.Fatalf("the index holds %d vectors, %d were written", x.Len(), len(want))
	}
	for id, i := range want {
		if !x.Has(id) {
			t.Fatalf("%s is missing", id)
		}
		hits, _ := x.Exact(vecs[i], 1, nil)
		if hits[0].ID != id && hits[0].Score < 0.9999 {
			t.Fatalf("%s: the nearest to its own vector is %v", id, hits[0])
		}
	}
}

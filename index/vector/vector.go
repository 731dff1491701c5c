// Package vector is loci's vector index for one embedding profile: an
// exact scan (the reference, and the answer for small scopes) and an HNSW
// graph written here (coder/hnsw v0.6.1, the only version served, returns
// wrong neighbours; see ../shared/LIBRARY-NOTES.md). Vectors are
// normalised on entry, so similarity is a dot product (cosine).
package vector

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/search/rank"
	"github.com/viterin/vek/vek32"
)

// Hit is a vector found: the drawer id and its cosine similarity.
type Hit struct {
	ID    string
	Score float32
}

// ErrDimension reports a vector of the wrong length.
var ErrDimension = errors.New("vector dimension mismatch")

// Index holds the vectors of one profile. It is safe for concurrent use.
// Searches take the read lock for their walk of the graph only. Writers
// (Add, Delete, Compact, Save) take turns on wmu; holding it, a writer
// reads the index without mu (no one else changes it) and takes the write
// lock only to publish a change, never for the work of an insertion or a
// rebuild: a search waits microseconds behind a stream of insertions, not
// for the stream (issue 38, point 8).
type Index struct {
	dim int

	wmu sync.Mutex
	// searching counts the searches in flight; an insertion gives way to
	// them (yield) for at most as long as the last insertion took
	// (lastInsert, in nanoseconds).
	searching  atomic.Int32
	lastInsert atomic.Int64
	mu         sync.RWMutex
	ids        []string
	slot       map[string]int32
	vecs       [][]float32 // blocks of vecBlock slots, dim values each, normalised
	dead       []bool
	nDead      int
	// pending is 1 while an insertion's slot is stored but not yet live
	// (counted in nDead, not a tombstone).
	pending int
	graph   *hnsw
	// healed is how many slots Load relinked (heal): the graph differs
	// from its file, which should be saved again.
	healed int
}

// vecBlock is how many vectors one block of Index.vecs holds. Vectors live
// in blocks so that adding one never copies the others: in one flat slice,
// the first vector added after loading 100,000 (3 KB each at 768
// dimensions) reallocated and copied all of them, a second copy of the
// index at once.
const vecBlock = 4096

// New makes an empty index of dim-sized vectors.
func New(dim int) *Index {
	x := &Index{dim: dim, slot: map[string]int32{}}
	x.graph = newHNSW(x, 16, 128)
	return x
}

// Healed is how many vectors no link led to in the loaded graph (saved by
// an earlier release) and that Load relinked: when not 0, the index
// differs from its file and should be saved.
func (x *Index) Healed() int { return x.healed }

// Dim is the vectors' length.
func (x *Index) Dim() int { return x.dim }

// Len is the number of live vectors.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids) - x.nDead
}

func normalise(v []float32) ([]float32, bool) {
	n := vek32.Norm(v)
	if n == 0 || math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return nil, false
	}
	return vek32.DivNumber(v, n), true
}

func (x *Index) vec(s int32) []float32 { return blockVec(x.vecs, x.dim, int(s)) }

func blockVec(blocks [][]float32, dim, s int) []float32 {
	o := (s % vecBlock) * dim
	return blocks[s/vecBlock][o : o+dim]
}

// appendVec stores the next slot's vector: in the last block while it has
// room (growing as a slice does, at most one block's size), else in a new
// block.
func (x *Index) appendVec(v []float32) {
	if n := len(x.vecs); n == 0 || len(x.vecs[n-1]) == vecBlock*x.dim {
		x.vecs = append(x.vecs, nil)
	}
	last := &x.vecs[len(x.vecs)-1]
	*last = append(*last, v...)
}

// Add stores id's vector, replacing an earlier one. The vector is stored
// first as a dead slot (no search finds it), the graph links are planned
// without blocking searches, then the slot goes live, the earlier one
// dead, and the links are published in one step under the write lock.
func (x *Index) Add(id string, v []float32) error {
	if len(v) != x.dim {
		return fmt.Errorf("%w: %d values, the profile has %d", ErrDimension, len(v), x.dim)
	}
	nv, ok := normalise(v)
	if !ok {
		return errors.New("a vector must have a finite, non-zero length")
	}
	x.yield()
	x.wmu.Lock()
	defer x.wmu.Unlock()
	t0 := time.Now()
	defer func() { x.lastInsert.Store(int64(time.Since(t0))) }()
	x.mu.Lock()
	s := int32(len(x.ids))
	x.ids = append(x.ids, id)
	x.appendVec(nv)
	x.dead = append(x.dead, true)
	x.nDead++
	x.pending = 1
	x.mu.Unlock()
	p := x.graph.plan(s)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.graph.apply(p)
	x.dead[s] = false
	x.nDead--
	x.pending = 0
	if old, ok := x.slot[id]; ok {
		x.dead[old] = true
		x.nDead++
	}
	x.slot[id] = s
	return nil
}

// YieldMax bounds how long an insertion gives way to searches in flight.
// On two cores an insertion that no longer blocks searches still takes
// their CPU: a stream of them (the vector follower after a burst) made a
// search that reads its drawers slowly wait for a core (p50 3 -> 6-12 ms
// in BenchmarkSearchWhileInserting/keep=slow). An insertion gives way for
// at most as long as the last one took, so that under a steady stream of
// searches insertions keep at least half their pace.
const YieldMax = 5 * time.Millisecond

// yield waits until no search is in flight, at most min(YieldMax, the
// last insertion's time).
func (x *Index) yield() {
	if x.searching.Load() == 0 {
		return
	}
	deadline := time.Now().Add(min(YieldMax, time.Duration(x.lastInsert.Load())))
	for x.searching.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
}

// Has reports whether id has a live vector.
func (x *Index) Has(id string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.slot[id]
	return ok
}

// Delete forgets id's vector (a tombstone in the graph until Compact).
func (x *Index) Delete(id string) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.slot[id]; ok {
		x.dead[s] = true
		x.nDead++
		delete(x.slot, id)
	}
}

// Tombstones is the share of the graph that is deleted vectors.
func (x *Index) Tombstones() float64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.ids) == x.pending {
		return 0
	}
	return float64(x.nDead-x.pending) / float64(len(x.ids)-x.pending)
}

// Compact rebuilds the graph without deleted vectors: aside, while
// searches go on with the old one, then swapped in under the write lock.
func (x *Index) Compact() {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	fresh := &Index{dim: x.dim, slot: map[string]int32{}}
	fresh.graph = newHNSW(fresh, x.graph.m, x.graph.efConstruction)
	for i, id := range x.ids {
		if x.dead[i] {
			continue // deleted, or replaced by a later slot
		}
		s := int32(len(fresh.ids))
		fresh.ids = append(fresh.ids, id)
		fresh.appendVec(blockVec(x.vecs, x.dim, i))
		fresh.dead = append(fresh.dead, false)
		fresh.slot[id] = s
		fresh.graph.insert(s)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ids, x.vecs, x.dead, x.nDead, x.slot = fresh.ids, fresh.vecs, fresh.dead, 0, fresh.slot
	x.graph = fresh.graph
	x.graph.x = x
}

// Exact returns the k most similar live vectors that keep accepts (nil:
// all), best first, ties by id: the reference answer.
func (x *Index) Exact(q []float32, k int, keep rank.Keep) ([]Hit, error) {
	nq, err := x.query(q)
	if err != nil {
		return nil, err
	}
	x.mu.RLock()
	var hits []Hit
	for s := range x.ids {
		if !x.dead[s] {
			hits = append(hits, Hit{x.ids[s], vek32.Dot(nq, x.vec(int32(s)))})
		}
	}
	x.mu.RUnlock()
	return Kept(top(hits, len(hits)), k, keep), nil
}

// Kept is the first k of hits (best first) that keep accepts (nil: all),
// asked in order, a window at a time (rank.KeepInOrder).
func Kept(hits []Hit, k int, keep rank.Keep) []Hit {
	pos := rank.KeepInOrder(len(hits), k, func(i int) string { return hits[i].ID }, keep)
	out := make([]Hit, len(pos))
	for r, i := range pos {
		out[r] = hits[i]
	}
	return out
}

// ExactAmong is Exact over the given ids only (a small scope).
func (x *Index) ExactAmong(q []float32, k int, ids []string) ([]Hit, error) {
	nq, err := x.query(q)
	if err != nil {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	hits := make([]Hit, 0, len(ids))
	for _, id := range ids {
		if s, ok := x.slot[id]; ok {
			hits = append(hits, Hit{id, vek32.Dot(nq, x.vec(s))})
		}
	}
	return top(hits, k), nil
}

func (x *Index) query(q []float32) ([]float32, error) {
	if len(q) != x.dim {
		return nil, fmt.Errorf("%w: the query has %d values, the profile %d", ErrDimension, len(q), x.dim)
	}
	nq, ok := normalise(q)
	if !ok {
		return nil, errors.New("the query vector must have a finite, non-zero length")
	}
	return nq, nil
}

func top(hits []Hit, k int) []Hit {
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return hits[:min(k, len(hits))]
}

// Search returns the k most similar live vectors that keep accepts, from
// the HNSW graph. ef is the search width (0: 384, which reached recall@10
// 0.964 against the exact scan on 100,000 text-like 768-dimensional vectors
// at a p50 of 2.9 ms); when keep refuses many, the width doubles until k
// are found or the graph is exhausted, and then the live vectors the walk
// never reached are scanned exactly (rest): a scope with vectors is never
// answered empty. The read lock is held for the walk
// of the graph only, not while keep reads the candidates' drawers: a
// writer waiting to publish an insertion would hold every later search
// behind those reads.
func (x *Index) Search(q []float32, k, ef int, keep rank.Keep) ([]Hit, error) {
	nq, err := x.query(q)
	if err != nil {
		return nil, err
	}
	if ef <= 0 {
		ef = max(384, 2*k)
	}
	x.searching.Add(1)
	defer x.searching.Add(-1)
	for {
		x.mu.RLock()
		cands := x.graph.search(nq, ef)
		all := make([]Hit, 0, len(cands))
		for _, c := range cands {
			if !x.dead[c.slot] {
				all = append(all, Hit{x.ids[c.slot], 1 - c.dist})
			}
		}
		slots, live := len(x.ids), len(x.ids)-x.nDead
		x.mu.RUnlock()
		// keep is asked in rank order, only until k pass (it reads the
		// candidates' drawers).
		hits := Kept(top(all, len(all)), k, keep)
		if len(hits) >= k || len(all) >= live {
			return top(hits, k), nil
		}
		if ef >= slots {
			// The walk reached all it can and found fewer than k that keep
			// accepts, while live vectors remain that it never reached (a
			// part of the graph no link leads to): they are scanned
			// exactly, so that a scope with vectors never answers short
			// of them, let alone empty.
			return x.rest(nq, k, keep, all, hits), nil
		}
		ef *= 2
	}
}

// rest completes a search whose walk reached only the candidates seen
// (keep has been asked about all of them; hits are those it accepted):
// the live vectors the walk did not reach, scored exactly, are offered to
// keep in rank order until k are found.
func (x *Index) rest(nq []float32, k int, keep rank.Keep, seen, hits []Hit) []Hit {
	reached := make(map[string]bool, len(seen))
	for _, h := range seen {
		reached[h.ID] = true
	}
	x.mu.RLock()
	var more []Hit
	for s := range x.ids {
		if !x.dead[s] && !reached[x.ids[s]] {
			more = append(more, Hit{x.ids[s], vek32.Dot(nq, x.vec(int32(s)))})
		}
	}
	x.mu.RUnlock()
	hits = append(hits, Kept(top(more, len(more)), k-len(hits), keep)...)
	return top(hits, k)
}

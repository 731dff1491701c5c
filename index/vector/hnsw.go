package vector

import (
	"container/heap"
	"math"
	"math/rand/v2"

	"github.com/viterin/vek/vek32"
)

// hnsw is a hierarchical navigable small world graph over the index's
// slots (Malkov and Yashunin, 2016): greedy descent through sparse upper
// layers, a beam search of width ef in the dense bottom layer, and the
// neighbour-selection heuristic that keeps links diverse. It is guarded by
// the index's lock.
type hnsw struct {
	x              *Index
	m, m0          int // links per node above layer 0, and in layer 0
	efConstruction int
	ml             float64
	links          [][][]int32 // slot -> layer -> neighbours
	entry          int32
	top            int
	rng            *rand.Rand
}

func newHNSW(x *Index, m, efConstruction int) *hnsw {
	return &hnsw{x: x, m: m, m0: 2 * m, efConstruction: efConstruction, ml: 1 / math.Log(float64(m)),
		entry: -1, rng: rand.New(rand.NewPCG(0x5eed, uint64(m)))}
}

func (h *hnsw) dist(q []float32, s int32) float32 { return 1 - vek32.Dot(q, h.x.vec(s)) }

type cand struct {
	slot int32
	dist float32
}

// minHeap pops the closest first; maxHeap the farthest first.
type minHeap []cand
type maxHeap []cand

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].dist < h[j].dist }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(v any)        { *h = append(*h, v.(cand)) }
func (h *minHeap) Pop() any          { o := *h; v := o[len(o)-1]; *h = o[:len(o)-1]; return v }
func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i].dist > h[j].dist }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(v any)        { *h = append(*h, v.(cand)) }
func (h *maxHeap) Pop() any          { o := *h; v := o[len(o)-1]; *h = o[:len(o)-1]; return v }

// layer searches one layer from the entry points with width ef and
// returns the ef closest found, closest first.
func (h *hnsw) layer(q []float32, entries []cand, ef, lc int, visited map[int32]bool) []cand {
	var frontier minHeap
	var found maxHeap
	for _, e := range entries {
		if !visited[e.slot] {
			visited[e.slot] = true
			heap.Push(&frontier, e)
			heap.Push(&found, e)
		}
	}
	for frontier.Len() > 0 {
		c := heap.Pop(&frontier).(cand)
		if found.Len() >= ef && c.dist > found[0].dist {
			break
		}
		if lc >= len(h.links[c.slot]) {
			continue
		}
		for _, n := range h.links[c.slot][lc] {
			if visited[n] {
				continue
			}
			visited[n] = true
			d := h.dist(q, n)
			if found.Len() < ef || d < found[0].dist {
				heap.Push(&frontier, cand{n, d})
				heap.Push(&found, cand{n, d})
				if found.Len() > ef {
					heap.Pop(&found)
				}
			}
		}
	}
	out := make([]cand, found.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&found).(cand)
	}
	return out
}

// search returns about ef candidates closest to q, closest first.
func (h *hnsw) search(q []float32, ef int) []cand {
	if h.entry < 0 {
		return nil
	}
	ep := []cand{{h.entry, h.dist(q, h.entry)}}
	for lc := h.top; lc > 0; lc-- {
		ep = h.layer(q, ep, 1, lc, map[int32]bool{})[:1]
	}
	return h.layer(q, ep, ef, 0, make(map[int32]bool, ef*4))
}

// selectNeighbours keeps up to m of the candidates (closest first) that are
// closer to the new node than to any neighbour already kept: links that
// point in different directions make the graph navigable.
func (h *hnsw) selectNeighbours(cands []cand, m int) []int32 {
	out := make([]int32, 0, m)
	var skipped []int32
	for _, c := range cands {
		if len(out) == m {
			break
		}
		good := true
		for _, o := range out {
			if 1-vek32.Dot(h.x.vec(c.slot), h.x.vec(o)) < c.dist {
				good = false
				break
			}
		}
		if good {
			out = append(out, c.slot)
		} else {
			skipped = append(skipped, c.slot)
		}
	}
	// Fill up with the closest skipped ones (keeps connectivity).
	for _, s := range skipped {
		if len(out) == m {
			break
		}
		out = append(out, s)
	}
	return out
}

func (h *hnsw) insert(s int32) {
	level := int(math.Floor(-math.Log(1-h.rng.Float64()) * h.ml))
	for int(s) >= len(h.links) {
		h.links = append(h.links, nil)
	}
	h.links[s] = make([][]int32, level+1)
	if h.entry < 0 {
		h.entry, h.top = s, level
		return
	}
	q := h.x.vec(s)
	ep := []cand{{h.entry, h.dist(q, h.entry)}}
	for lc := h.top; lc > level; lc-- {
		ep = h.layer(q, ep, 1, lc, map[int32]bool{})[:1]
	}
	for lc := min(level, h.top); lc >= 0; lc-- {
		cands := h.layer(q, ep, h.efConstruction, lc, make(map[int32]bool, h.efConstruction*4))
		max := h.m
		if lc == 0 {
			max = h.m0
		}
		nbrs := h.selectNeighbours(cands, h.m)
		h.links[s][lc] = nbrs
		for _, n := range nbrs {
			links := append(h.links[n][lc], s)
			if len(links) > max {
				// Shrink the neighbour's links with the same heuristic.
				nv := h.x.vec(n)
				cs := make([]cand, len(links))
				for i, l := range links {
					cs[i] = cand{l, 1 - vek32.Dot(nv, h.x.vec(l))}
				}
				sortCands(cs)
				links = h.selectNeighbours(cs, max)
			}
			h.links[n][lc] = links
		}
		ep = cands
	}
	if level > h.top {
		h.entry, h.top = s, level
	}
}

func sortCands(cs []cand) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].dist < cs[j-1].dist; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

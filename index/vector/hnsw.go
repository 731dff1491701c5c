package vector

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"
)

// hnsw is a hierarchical navigable small world graph over the index's
// slots (Malkov and Yashunin, 2016): greedy descent through sparse upper
// layers, a beam search of width ef in the dense bottom layer, and the
// neighbour-selection heuristic that keeps links diverse. Searches read it
// under the index's read lock; an insertion is planned under the writer
// lock alone and applied under the write lock (plan, apply).
type hnsw struct {
	x              *Index
	m, m0          int // links per node above layer 0, and in layer 0
	efConstruction int
	ml             float64
	links          [][][]int32 // slot -> layer -> neighbours
	entry          int32
	top            int
	rng            *rand.Rand
	insertVisits   visits    // plans run under the index's writer lock
	pool           sync.Pool // *visits for concurrent searches
	// indeg counts, per slot, the layer-0 lists that link to it (nil until
	// the first plan after a load: counted then). Only writers read and
	// change it (plan under the writer lock, apply under both).
	indeg []int32
}

func newHNSW(x *Index, m, efConstruction int) *hnsw {
	h := &hnsw{x: x, m: m, m0: 2 * m, efConstruction: efConstruction, ml: 1 / math.Log(float64(m)),
		entry: -1, rng: rand.New(rand.NewPCG(0x5eed, uint64(m)))}
	h.pool.New = func() any { return &visits{} }
	return h
}

func (h *hnsw) dist(q []float32, s int32) float32 { return 1 - vek32.Dot(q, h.x.vec(s)) }

type cand struct {
	slot int32
	dist float32
}

// candHeap is a binary heap of candidates; far orders the farthest first.
// Equal distances are ordered by a hash of the slot salted by the walk
// (before): a strict order in which a crowd of equal vectors is not all
// one place.
type candHeap struct {
	c    []cand
	far  bool
	salt int32
}

func (h *candHeap) less(i, j int) bool {
	if h.far {
		return before(h.c[j], h.c[i], h.salt)
	}
	return before(h.c[i], h.c[j], h.salt)
}

// before orders candidates closest first, equal distances by a hash of
// their slot salted by the walk's (the new slot in an insertion's): among
// duplicates a walk whose found set is full still takes one that comes
// before the last, so it spreads over the crowd instead of stopping at
// the first ef it reached from the entry point. Every insertion into a
// crowd of 1,500 identical vectors linked to the same few nodes near the
// entry point, whose full lists then dropped the links to the others:
// most of the crowd, and the distinct drawers added after it, were
// unreachable (issue: semantic search leaves out the best drawer).
func before(a, b cand, salt int32) bool {
	if a.dist != b.dist {
		return a.dist < b.dist
	}
	return tieHash(salt, a.slot) < tieHash(salt, b.slot)
}

func (h *candHeap) push(v cand) {
	h.c = append(h.c, v)
	for i := len(h.c) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.c[i], h.c[p] = h.c[p], h.c[i]
		i = p
	}
}

func (h *candHeap) pop() cand {
	top := h.c[0]
	last := len(h.c) - 1
	h.c[0] = h.c[last]
	h.c = h.c[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.c) && h.less(l, m) {
			m = l
		}
		if r < len(h.c) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.c[i], h.c[m] = h.c[m], h.c[i]
		i = m
	}
	return top
}

// visits marks the slots seen by one layer search, one bit per slot: at
// 100,000 slots the set is 12.5 KB and stays in the core's cache, where a
// word per slot missed it on most marks; clearing it costs about a
// microsecond per layer search.
type visits struct {
	bits []uint64
}

func (v *visits) reset(n int) {
	words := (n + 63) / 64
	if len(v.bits) < words {
		v.bits = make([]uint64, words)
		return
	}
	clear(v.bits[:words])
}

func (v *visits) seen(s int32) bool {
	w, b := s>>6, uint64(1)<<(s&63)
	if v.bits[w]&b != 0 {
		return true
	}
	v.bits[w] |= b
	return false
}

// layer searches one layer from the entry points with width ef and
// returns the ef closest found, closest first.
func (h *hnsw) layer(q []float32, entries []cand, ef, lc int, vis *visits, salt int32) []cand {
	vis.reset(len(h.links))
	frontier := candHeap{salt: salt}
	found := candHeap{far: true, salt: salt}
	for _, e := range entries {
		if !vis.seen(e.slot) {
			frontier.push(e)
			found.push(e)
		}
	}
	for len(frontier.c) > 0 {
		c := frontier.pop()
		if len(found.c) >= ef && before(found.c[0], c, salt) {
			break
		}
		if lc >= len(h.links[c.slot]) {
			continue
		}
		for _, n := range h.links[c.slot][lc] {
			if vis.seen(n) {
				continue
			}
			d := h.dist(q, n)
			if len(found.c) < ef || before(cand{n, d}, found.c[0], salt) {
				frontier.push(cand{n, d})
				found.push(cand{n, d})
				if len(found.c) > ef {
					found.pop()
				}
			}
		}
	}
	out := make([]cand, len(found.c))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = found.pop()
	}
	return out
}

// search returns about ef candidates closest to q, closest first.
func (h *hnsw) search(q []float32, ef int) []cand {
	if h.entry < 0 {
		return nil
	}
	vis := h.pool.Get().(*visits)
	defer h.pool.Put(vis)
	ep := []cand{{h.entry, h.dist(q, h.entry)}}
	for lc := h.top; lc > 0; lc-- {
		ep = h.layer(q, ep, 1, lc, vis, -1)[:1]
	}
	return h.layer(q, ep, ef, 0, vis, -1)
}

// dupDist is the distance under which two vectors count as the same
// point (1 - cosine of identical normalised vectors is a few ulps from 0).
const dupDist = 1e-6

// selectNeighbours keeps up to m of the candidates (closest first) that are
// closer to the new node than to any neighbour already kept, and are not a
// duplicate of one kept: links that point in different directions make the
// graph navigable. The rest fill up what is left of m, closest first.
//
// The duplicate rule is what keeps a node distinct from a crowd of
// identical vectors (1,500 mined files of the same words) in its
// neighbours' lists: without it every duplicate passed the test (its
// distance to a kept duplicate, 0, is not less than its distance to the
// node, 0), the m places went to the duplicates, closest first, and the
// distinct node, farther than all of them, lost every link to it: no walk
// reached it (issue: semantic search leaves out the drawer that matches
// best).
func (h *hnsw) selectNeighbours(cands []cand, m int) []int32 {
	out := make([]int32, 0, m)
	var skipped []int32
	for _, c := range cands {
		if len(out) == m {
			break
		}
		good := true
		for _, o := range out {
			if d := 1 - vek32.Dot(h.x.vec(c.slot), h.x.vec(o)); d < c.dist || d <= dupDist {
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

// linkPlan is an insertion worked out: the new slot's links per layer,
// the neighbours' new link lists, and whether the slot becomes the entry.
type linkPlan struct {
	slot  int32
	level int
	mine  [][]int32
	their []linkUpdate
	// indeg is the change of layer-0 in-degrees the plan makes.
	indeg map[int32]int32
}

// linkUpdate is one neighbour's new link list in one layer.
type linkUpdate struct {
	slot  int32
	layer int
	links []int32
}

// plan works out slot s's insertion (its vector stored, its links
// empty) without changing the graph: it only reads it, so it runs while
// searches read it too, under the index's writer lock alone (no other
// writer changes the graph meanwhile). apply then publishes it under the
// index's write lock, in microseconds: an insertion, most of whose time
// is this plan, no longer makes searches wait (issue 38, point 8). A
// neighbour's list is copied, never appended to in place, as searches
// may be reading it.
func (h *hnsw) plan(s int32) *linkPlan {
	level := int(math.Floor(-math.Log(1-h.rng.Float64()) * h.ml))
	p := &linkPlan{slot: s, level: level, mine: make([][]int32, level+1)}
	if h.entry < 0 {
		return p
	}
	q := h.x.vec(s)
	ep := []cand{{h.entry, h.dist(q, h.entry)}}
	vis := &h.insertVisits
	h.countInDegrees()
	p.indeg = map[int32]int32{}
	for lc := h.top; lc > level; lc-- {
		ep = h.layer(q, ep, 1, lc, vis, s)[:1]
	}
	for lc := min(level, h.top); lc >= 0; lc-- {
		cands := h.layer(q, ep, h.efConstruction, lc, vis, s)
		max := h.m
		if lc == 0 {
			max = h.m0
		}
		nbrs := h.selectNeighbours(cands, h.m)
		p.mine[lc] = nbrs
		if lc == 0 {
			for _, n := range nbrs {
				p.indeg[n]++
			}
		}
		for _, n := range nbrs {
			old := h.links[n][lc]
			links := make([]int32, len(old), len(old)+1)
			copy(links, old)
			links = append(links, s)
			if len(links) > max {
				// Shrink the neighbour's links with the same heuristic.
				nv := h.x.vec(n)
				cs := make([]cand, len(links))
				for i, l := range links {
					cs[i] = cand{l, 1 - vek32.Dot(nv, h.x.vec(l))}
				}
				sortCands(cs, n)
				kept := h.selectNeighbours(cs, max)
				if lc == 0 {
					kept = h.keepReachable(p, s, links, kept)
				}
				links = kept
			} else if lc == 0 {
				p.indeg[s]++
			}
			p.their = append(p.their, linkUpdate{n, lc, links})
		}
		ep = cands
	}
	return p
}

// countInDegrees counts the layer-0 in-degrees once (after a load or in a
// fresh graph); apply keeps them.
func (h *hnsw) countInDegrees() {
	if h.indeg != nil {
		return
	}
	h.indeg = make([]int32, len(h.links))
	for _, ls := range h.links {
		if len(ls) > 0 {
			for _, t := range ls[0] {
				h.indeg[t]++
			}
		}
	}
}

// inDegree is t's layer-0 in-degree with the plan's changes so far.
func (h *hnsw) inDegree(p *linkPlan, t int32) int32 {
	d := p.indeg[t]
	if int(t) < len(h.indeg) {
		d += h.indeg[t]
	}
	return d
}

// keepReachable settles the one link a full layer-0 list of a neighbour
// drops when new slot s joins it (links: the old list and s; kept: what
// the heuristic keeps). A list must not drop the last link to a node (s
// included, which has none yet): among crowds of equal vectors the
// heuristic's choice is arbitrary, and dropping last links left most of a
// crowd of 1,500 duplicates unreachable. It drops instead the last kept
// (the least wanted) that other lists still link to; if none, the
// heuristic's choice stands. It records the in-degree changes.
func (h *hnsw) keepReachable(p *linkPlan, s int32, links, kept []int32) []int32 {
	dropped := int32(-1)
	for _, l := range links {
		if !slices.Contains(kept, l) {
			dropped = l
			break
		}
	}
	if dropped < 0 {
		p.indeg[s]++
		return kept
	}
	last := dropped == s && h.inDegree(p, s) == 0 || dropped != s && h.inDegree(p, dropped) <= 1
	if last {
		for i := len(kept) - 1; i >= 0; i-- {
			v := kept[i]
			if v != s && h.inDegree(p, v) >= 2 {
				kept[i] = dropped
				dropped = v
				break
			}
		}
	}
	if dropped != s {
		p.indeg[dropped]--
		p.indeg[s]++
	}
	return kept
}

// apply publishes a plan: the one step of an insertion that changes what
// searches read.
func (h *hnsw) apply(p *linkPlan) {
	s := p.slot
	for int(s) >= len(h.links) {
		h.links = append(h.links, nil)
	}
	h.links[s] = p.mine
	for _, u := range p.their {
		h.links[u.slot][u.layer] = u.links
	}
	if h.indeg != nil {
		for len(h.indeg) < len(h.links) {
			h.indeg = append(h.indeg, 0)
		}
		for t, d := range p.indeg {
			h.indeg[t] += d
		}
	}
	if h.entry < 0 || p.level > h.top {
		h.entry, h.top = s, p.level
	}
}

// insert plans and applies at once (an index no search reads yet).
func (h *hnsw) insert(s int32) { h.apply(h.plan(s)) }

// sortCands orders a neighbour list of slot n closest first, equal
// distances in an order that depends on n and the slot (a hash), not on
// when the link was made: among duplicates, the one a full list drops is
// then any of them, not always the newest, which left every duplicate
// inserted after a list filled up with no link to it.
func sortCands(cs []cand, n int32) {
	less := func(a, b cand) bool {
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		return tieHash(n, a.slot) < tieHash(n, b.slot)
	}
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && less(cs[j], cs[j-1]); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// tieHash mixes two slots (splitmix64's finaliser).
func tieHash(n, s int32) uint64 {
	z := uint64(uint32(n))<<32 | uint64(uint32(s))
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// reach marks in seen the slots a layer-0 walk from start reaches (start
// included), skipping those already marked; it returns how many it marked.
func (h *hnsw) reach(seen []bool, start int32, stack []int32) ([]int32, int) {
	if seen[start] {
		return stack, 0
	}
	seen[start] = true
	n := 1
	stack = append(stack[:0], start)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(h.links[s]) == 0 {
			continue
		}
		for _, t := range h.links[s][0] {
			if !seen[t] {
				seen[t] = true
				n++
				stack = append(stack, t)
			}
		}
	}
	return stack, n
}

// heal makes every live slot reachable in layer 0 from the entry point
// and returns how many it relinked. A graph saved by a release before the
// tie order and keepReachable may hold slots no link leads to (most of a
// crowd of identical vectors): a whole-palace search, which has no exact
// completion, never found them. A walk from the entry point marks what it
// reaches (O(slots × m0), a few milliseconds at 100,000); each live slot
// left is relinked as an insertion links a new one (relink), then what it
// leads to is marked as well, so a disconnected part costs one relink, not
// one per slot. Relinking may drop a link (a neighbour's full list), so the
// walk is made again, at most a few rounds. Only for an index no search
// reads yet (Load).
func (h *hnsw) heal(dead []bool) int {
	if h.entry < 0 {
		return 0
	}
	relinked := 0
	seen := make([]bool, len(h.links))
	var stack []int32
	for range 4 {
		clear(seen)
		stack, _ = h.reach(seen, h.entry, stack)
		n := 0
		for s := range h.links {
			if seen[s] || dead[s] {
				continue
			}
			h.relink(int32(s))
			n++
			stack, _ = h.reach(seen, int32(s), stack)
		}
		relinked += n
		if n == 0 {
			break
		}
	}
	return relinked
}

// relink links slot s, which no layer-0 walk from the entry point reaches,
// from its nearest neighbours found by a walk from the entry point, with
// the rules an insertion uses (plan): the heuristic's choice, a full list
// shrunk by it, and keepReachable. s keeps its own links (they lead to
// the part of the graph that only it reaches), or gets the neighbours as
// links when it had none.
func (h *hnsw) relink(s int32) {
	h.countInDegrees()
	q := h.x.vec(s)
	vis := &h.insertVisits
	p := &linkPlan{slot: s, indeg: map[int32]int32{}}
	ep := []cand{{h.entry, h.dist(q, h.entry)}}
	for lc := h.top; lc > 0; lc-- {
		ep = h.layer(q, ep, 1, lc, vis, s)[:1]
	}
	cands := h.layer(q, ep, h.efConstruction, 0, vis, s)
	cands = slices.DeleteFunc(cands, func(c cand) bool { return c.slot == s })
	nbrs := h.selectNeighbours(cands, h.m)
	for _, n := range nbrs {
		old := h.links[n][0]
		if slices.Contains(old, s) {
			continue
		}
		links := make([]int32, len(old), len(old)+1)
		copy(links, old)
		links = append(links, s)
		if len(links) > h.m0 {
			nv := h.x.vec(n)
			cs := make([]cand, len(links))
			for i, l := range links {
				cs[i] = cand{l, 1 - vek32.Dot(nv, h.x.vec(l))}
			}
			sortCands(cs, n)
			links = h.keepReachable(p, s, links, h.selectNeighbours(cs, h.m0))
		} else {
			p.indeg[s]++
		}
		p.their = append(p.their, linkUpdate{n, 0, links})
	}
	mine := slices.Clone(h.links[s])
	if len(mine) == 0 {
		mine = [][]int32{nil}
	}
	if len(mine[0]) == 0 {
		mine[0] = nbrs
		for _, n := range nbrs {
			p.indeg[n]++
		}
	}
	p.mine = mine
	p.level = len(mine) - 1
	h.apply(p)
}

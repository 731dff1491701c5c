package vector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/loci-dev/loci/index/embed"
)

// nearIdentical is the tester's palace (issue: semantic search leaves out
// the best drawer): 1,500 mined files of near-identical text ("document N
// about topic K ... lorem ipsum") embedded by the static provider, then
// three distinct drawers added after them.
func nearIdentical(t *testing.T) (x *Index, distinct []string, vecs map[string][]float32) {
	t.Helper()
	st, err := embed.NewStatic()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(15, 15))
	texts := make([]string, 1500)
	for i := range texts {
		texts[i] = fmt.Sprintf("document %d about topic %d\nlorem ipsum dolor sit amet, consectetur adipiscing elit\nline %d of document %d about topic %d lorem ipsum",
			i, r.IntN(20), r.IntN(50), i, r.IntN(20))
	}
	mined, err := st.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	x = New(embed.StaticDim)
	for i, v := range mined {
		if err := x.Add(fmt.Sprintf("mined-%04d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	own := []string{"Alice leads the billing project.", "Bob maintains the deployment scripts.", "The team meets every Tuesday morning."}
	ov, err := st.Embed(context.Background(), own)
	if err != nil {
		t.Fatal(err)
	}
	vecs = map[string][]float32{}
	for i, v := range ov {
		id := fmt.Sprintf("notes-%d", i)
		if err := x.Add(id, v); err != nil {
			t.Fatal(err)
		}
		distinct = append(distinct, id)
		vecs[id] = v
	}
	return x, distinct, vecs
}

// TestNearIdenticalFindsDistinct: a query equal to a distinct drawer finds
// it first at about 1.0, over the whole index and in a scope of the three
// distinct drawers (a wing); a scope with vectors never answers empty.
func TestNearIdenticalFindsDistinct(t *testing.T) {
	x, distinct, vecs := nearIdentical(t)
	inScope := map[string]bool{}
	for _, id := range distinct {
		inScope[id] = true
	}
	wing := func(ids []string) []bool {
		out := make([]bool, len(ids))
		for i, id := range ids {
			out[i] = inScope[id]
		}
		return out
	}
	for _, id := range distinct {
		q := vecs[id]
		for _, c := range []struct {
			name string
			keep func([]string) []bool
		}{{"palace", nil}, {"wing", wing}} {
			hits, err := x.Search(q, 10, 0, c.keep)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 || hits[0].ID != id || hits[0].Score < 0.99 {
				t.Errorf("%s search for %s: got %v, want %s first at ~1.0", c.name, id, head(hits, 3), id)
			}
			if c.keep != nil && len(hits) != len(distinct) {
				t.Errorf("%s search for %s: %d hits, the scope has %d", c.name, id, len(hits), len(distinct))
			}
		}
	}
	// Every live vector is reachable from the entry point in layer 0.
	if n := unreachable(x); n > 0 {
		t.Errorf("%d of %d vectors are unreachable in the graph's bottom layer", n, x.Len())
	}
}

func head(h []Hit, n int) []Hit { return h[:min(n, len(h))] }

// unreachable counts the live slots that no walk of layer 0 from the
// entry point reaches.
func unreachable(x *Index) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	h := x.graph
	if h.entry < 0 {
		return 0
	}
	seen := make([]bool, len(h.links))
	stack := []int32{h.entry}
	seen[h.entry] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(h.links[s]) == 0 {
			continue
		}
		for _, n := range h.links[s][0] {
			if !seen[n] {
				seen[n] = true
				stack = append(stack, n)
			}
		}
	}
	n := 0
	for s := range seen {
		if !seen[s] && !x.dead[s] {
			n++
		}
	}
	return n
}

// TestCrowdFindsDistinct: crowds of identical and of near-identical
// vectors (inserted first), then distinct ones; each distinct one is found
// first by a query equal to it, and by a filtered search that accepts the
// distinct ones only; every vector is reachable.
func TestCrowdFindsDistinct(t *testing.T) {
	for _, c := range []struct {
		name   string
		crowd  int
		spread float64
	}{{"identical", 4000, 0}, {"near-identical", 4000, 1e-3}} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 7))
			const dim = 64
			centre := make([]float32, dim)
			for j := range centre {
				centre[j] = float32(r.NormFloat64())
			}
			x := New(dim)
			for i := range c.crowd {
				v := make([]float32, dim)
				for j := range v {
					v[j] = centre[j] + float32(r.NormFloat64()*c.spread)
				}
				if err := x.Add(fmt.Sprintf("crowd-%05d", i), v); err != nil {
					t.Fatal(err)
				}
			}
			distinct := map[string][]float32{}
			for i := range 20 {
				v := make([]float32, dim)
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
				id := fmt.Sprintf("own-%02d", i)
				distinct[id] = v
				if err := x.Add(id, v); err != nil {
					t.Fatal(err)
				}
			}
			keep := func(ids []string) []bool {
				out := make([]bool, len(ids))
				for i, id := range ids {
					_, out[i] = distinct[id]
				}
				return out
			}
			missed := 0
			for id, v := range distinct {
				for _, k := range []func([]string) []bool{nil, keep} {
					hits, err := x.Search(v, 10, 0, k)
					if err != nil {
						t.Fatal(err)
					}
					if len(hits) == 0 || hits[0].ID != id || hits[0].Score < 0.99 {
						missed++
					}
				}
			}
			if missed > 0 {
				t.Errorf("%d of %d searches missed the distinct vector equal to the query", missed, 2*len(distinct))
			}
			if n := unreachable(x); n > 0 {
				t.Errorf("%d of %d vectors are unreachable in the graph's bottom layer", n, x.Len())
			}
		})
	}
}

// TestFilteredSearchReachesUnlinked: a filtered search whose walk cannot
// reach the scope's vectors (no link leads to them) scans them exactly: a
// scope with vectors never answers empty (the wing search answered []).
func TestFilteredSearchReachesUnlinked(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	x := build(t, clustered(r, 500, 5, 32, 0.3))
	lost := make([]float32, 32)
	for j := range lost {
		lost[j] = float32(r.NormFloat64())
	}
	if err := x.Add("lost", lost); err != nil {
		t.Fatal(err)
	}
	// Cut every link to it.
	s := x.slot["lost"]
	for n, ls := range x.graph.links {
		for l, links := range ls {
			x.graph.links[n][l] = slices.DeleteFunc(slices.Clone(links), func(v int32) bool { return v == s })
		}
	}
	if x.graph.entry == s {
		t.Skip("the cut vector is the entry point")
	}
	only := func(ids []string) []bool {
		out := make([]bool, len(ids))
		for i, id := range ids {
			out[i] = id == "lost"
		}
		return out
	}
	hits, err := x.Search(lost, 10, 0, only)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].ID != "lost" || hits[0].Score < 0.99 {
		t.Fatalf("got %v, want [lost ~1.0]", hits)
	}
}

// TestLoadRelinksUnreachable: an index saved by an earlier release may
// hold vectors no layer-0 link leads to (a crowd of identical vectors
// disconnected the graph); a whole-palace search, which has no exact
// completion, never found them. Loading relinks them: afterwards every
// live vector is reachable, and an unfiltered search finds each first.
func TestLoadRelinksUnreachable(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	x := build(t, clustered(r, 600, 5, 32, 0.3))
	lost := map[string][]float32{}
	for i := range 4 {
		v := make([]float32, 32)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		id := fmt.Sprintf("lost%d", i)
		lost[id] = v
		if err := x.Add(id, v); err != nil {
			t.Fatal(err)
		}
	}
	// Cut every link to them, in every layer.
	for id := range lost {
		s := x.slot[id]
		if x.graph.entry == s {
			t.Skip("a cut vector is the entry point")
		}
		for n, ls := range x.graph.links {
			for l, links := range ls {
				x.graph.links[n][l] = slices.DeleteFunc(slices.Clone(links), func(v int32) bool { return v == s })
			}
		}
	}
	if n := unreachable(x); n < len(lost) {
		t.Fatalf("%d unreachable before the save, want at least %d", n, len(lost))
	}
	path := t.TempDir() + "/x.vec"
	if err := x.Save(path, 7, "id"); err != nil {
		t.Fatal(err)
	}
	y, _, err := Load(path, "id")
	if err != nil {
		t.Fatal(err)
	}
	if n := unreachable(y); n > 0 {
		t.Errorf("%d of %d vectors are unreachable after the load", n, y.Len())
	}
	if y.Healed() < 1 {
		t.Errorf("Healed() = %d, want the relinked count", y.Healed())
	}
	for id, v := range lost {
		hits, err := y.Search(v, 5, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].ID != id || hits[0].Score < 0.99 {
			t.Errorf("search for %s: got %v, want it first", id, head(hits, 3))
		}
	}
	// The healed graph, saved again, loads with nothing to relink.
	if err := y.Save(path, 8, "id"); err != nil {
		t.Fatal(err)
	}
	z, _, err := Load(path, "id")
	if err != nil {
		t.Fatal(err)
	}
	if z.Healed() != 0 || unreachable(z) != 0 {
		t.Errorf("reloaded: Healed() = %d, %d unreachable; want 0, 0", z.Healed(), unreachable(z))
	}
}

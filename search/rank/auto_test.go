package rank

import (
	"math"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestBaseScores(t *testing.T) {
	cases := []struct {
		name  string
		cands []Cand
		top   float64
		f     Fusion
		want  []float64
	}{
		{"scores: bm25 over the best plus weighted cosine",
			[]Cand{{ID: "a", BM25: 4, Cos: 0.5}, {ID: "b", BM25: 2}, {ID: "c", Cos: 0.8}}, 4, Fusion{SemanticWeight: 0.5},
			[]float64{1.25, 0.5, 0.4}},
		{"scores: no lexical leg counts the cosine alone",
			[]Cand{{ID: "a", BM25: 3, Cos: 0.5}}, 0, Fusion{SemanticWeight: 1}, []float64{0.5}},
		{"scores: an offered answer is weighed up",
			[]Cand{{ID: "a", BM25: 2, Offers: true}, {ID: "b", BM25: 2}}, 2, Fusion{AnswerWeight: 0.5}, []float64{1.5, 1}},
		{"rrf: ranks with the package's constant",
			[]Cand{{ID: "a", LexRank: 1, SemRank: 2}, {ID: "b", SemRank: 1}}, 9, Fusion{RRF: true, SemanticWeight: 2},
			[]float64{1.0/61 + 2.0/62, 2.0 / 61}},
		{"rrf: its own constant, answers not weighed",
			[]Cand{{ID: "a", LexRank: 1, Offers: true}}, 1, Fusion{RRF: true, K: 1, AnswerWeight: 9}, []float64{0.5}},
		{"stale scores are reset",
			[]Cand{{ID: "a", Base: 7}}, 0, Fusion{}, []float64{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := make([]*Cand, len(c.cands))
			for i := range c.cands {
				ps[i] = &c.cands[i]
			}
			BaseScores(ps, c.top, c.f)
			for i, w := range c.want {
				if !near(ps[i].Base, w) {
					t.Fatalf("%s: base %v, want %v", ps[i].ID, ps[i].Base, w)
				}
			}
		})
	}
}

func TestBest(t *testing.T) {
	cands := []*Cand{{ID: "c", Base: 1}, {ID: "a", Base: 2}, {ID: "b", Base: 1}, {ID: "d", Base: 0.5}}
	cases := []struct {
		name string
		n    int
		want []string
	}{
		{"highest own score, ties by id", 3, []string{"a", "b", "c"}},
		{"more than there are", 9, []string{"a", "b", "c", "d"}},
		{"none", 0, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ids(Best(cands, c.n)); !slices.Equal(got, c.want) {
				t.Fatalf("best %v, want %v", got, c.want)
			}
			if cands[0].ID != "c" {
				t.Fatal("the candidates were reordered")
			}
		})
	}
}

func ids(cs []*Cand) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestContext(t *testing.T) {
	type want struct {
		score     float64
		neighbour string
	}
	cases := []struct {
		name   string
		cands  []Cand
		lifted []string
		weight float64
		want   map[string]want
	}{
		{"a neighbour lends its score times the weight, both ways",
			[]Cand{{ID: "q", Found: true, Base: 1, Neighbours: []string{"r"}}, {ID: "r", Found: true, Base: 0.2}}, []string{"q"}, 0.5,
			map[string]want{"q": {1.1, "r"}, "r": {0.7, "q"}}},
		{"the best neighbour counts, not the sum",
			[]Cand{{ID: "r", Found: true, Neighbours: []string{"a", "b"}}, {ID: "a", Found: true, Base: 1}, {ID: "b", Found: true, Base: 0.6}},
			[]string{"r"}, 1, map[string]want{"r": {1, "a"}}},
		{"no context across sources",
			[]Cand{{ID: "q", Found: true, Doc: "file:///a", Base: 1, Neighbours: []string{"r"}}, {ID: "r", Found: true, Doc: "file:///b"}},
			[]string{"q"}, 1, map[string]want{"q": {1, ""}, "r": {0, ""}}},
		{"a drawer not found lends nothing",
			[]Cand{{ID: "q", Found: true, Base: 1, Neighbours: []string{"r"}}, {ID: "r", Base: 5}}, []string{"q"}, 1,
			map[string]want{"q": {1, ""}, "r": {5, ""}}},
		{"weight 0: own scores only",
			[]Cand{{ID: "q", Found: true, Base: 1, Neighbours: []string{"r"}}, {ID: "r", Found: true, Base: 0.5}}, []string{"q"}, 0,
			map[string]want{"q": {1, ""}, "r": {0.5, ""}}},
		{"a neighbour no candidate is is skipped",
			[]Cand{{ID: "q", Found: true, Base: 1, Neighbours: []string{"x"}}}, []string{"q"}, 1, map[string]want{"q": {1, ""}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			byID := map[string]*Cand{}
			var all []*Cand
			for i := range c.cands {
				byID[c.cands[i].ID] = &c.cands[i]
				all = append(all, &c.cands[i])
			}
			var lifted []*Cand
			for _, id := range c.lifted {
				lifted = append(lifted, byID[id])
			}
			Context(all, lifted, byID, c.weight)
			for id, w := range c.want {
				if got := byID[id]; !near(got.Score, w.score) || got.Neighbour != w.neighbour {
					t.Fatalf("%s: score %v by %q, want %v by %q", id, got.Score, got.Neighbour, w.score, w.neighbour)
				}
			}
		})
	}
}

func TestOrder(t *testing.T) {
	cases := []struct {
		name  string
		cands []*Cand
		want  []string
	}{
		{"best first", []*Cand{{ID: "a", Score: 1}, {ID: "b", Score: 3}, {ID: "c", Score: 2}}, []string{"b", "c", "a"}},
		{"ties by id", []*Cand{{ID: "z", Score: 1}, {ID: "y", Score: 1}, {ID: "x", Score: 2}}, []string{"x", "y", "z"}},
		{"empty", nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			Order(c.cands)
			if got := ids(c.cands); !slices.Equal(got, c.want) {
				t.Fatalf("order %v, want %v", got, c.want)
			}
		})
	}
}

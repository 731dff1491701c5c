package actors

import (
	"testing"
	"time"

	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/index/vector"
	"github.com/loci-dev/loci/store"
)

func drawers(ids ...string) map[string]*store.Drawer {
	m := map[string]*store.Drawer{}
	for _, id := range ids {
		m[id] = &store.Drawer{ID: id}
	}
	return m
}

// Reciprocal rank fusion: a drawer both legs rank well beats one that only
// one leg ranks first; equal fused scores are ordered by drawer id.
func TestFuseRRF(t *testing.T) {
	lex := []lexical.Hit{{ID: "a", Score: 9}, {ID: "b", Score: 5}, {ID: "c", Score: 1}}
	sem := []vector.Hit{{ID: "d", Score: 0.9}, {ID: "b", Score: 0.8}, {ID: "a", Score: 0.1}}
	got := fuse(RankHybrid, lex, sem, drawers("a", "b", "c", "d"), 10)
	order := []string{}
	for _, h := range got {
		order = append(order, h.ID)
	}
	// a: 1/61+1/63 = 0.03227, b: 2/62 = 0.03226, d: 1/61, c: 1/63.
	want := []string{"a", "b", "d", "c"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("fused order %v, want %v", order, want)
		}
	}
	if got[0].Signals["lexical"] == nil || got[0].Signals["semantic"] == nil || got[2].Signals["lexical"] != nil {
		t.Fatalf("signals: %+v", got)
	}
	// Ties by id, and the limit.
	tie := fuse(RankHybrid, []lexical.Hit{{ID: "z"}}, []vector.Hit{{ID: "y"}}, drawers("y", "z"), 1)
	if len(tie) != 1 || tie[0].ID != "y" {
		t.Fatalf("tie: %+v", tie)
	}
	// A drawer the scope refused (not found) is not returned.
	if got := fuse(RankSemantic, nil, sem, drawers("b"), 10); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("scope: %+v", got)
	}
}

func TestCheckSearchTimeRules(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	a, b := now.Add(-time.Hour), now
	cases := []struct {
		q      SearchQuery
		ok     bool
		window [2]time.Time
	}{
		{SearchQuery{Text: "x"}, true, [2]time.Time{now, now.Add(1)}},
		{SearchQuery{Text: "x", AsOf: &a}, true, [2]time.Time{a, a.Add(1)}},
		{SearchQuery{Text: "x", From: &a, Until: &b}, true, [2]time.Time{a, b}},
		{SearchQuery{Text: "x", Historical: true}, true, [2]time.Time{}},
		{SearchQuery{Text: "x", From: &b, Until: &a}, false, [2]time.Time{}},
		{SearchQuery{Text: "x", From: &a}, false, [2]time.Time{}},
		{SearchQuery{Text: "x", AsOf: &a, Historical: true}, false, [2]time.Time{}},
		{SearchQuery{Text: "x", AsOf: &a, From: &a, Until: &b}, false, [2]time.Time{}},
		{SearchQuery{Text: " "}, false, [2]time.Time{}},
		{SearchQuery{Text: "x", Limit: 201}, false, [2]time.Time{}},
		{SearchQuery{Text: "x", Embedding: []float32{1}}, false, [2]time.Time{}},
	}
	for i, c := range cases {
		_, from, until, err := CheckSearch(&c.q, now)
		if (err == nil) != c.ok {
			t.Errorf("case %d: err %v", i, err)
			continue
		}
		if c.ok && (!from.Equal(c.window[0]) || !until.Equal(c.window[1])) {
			t.Errorf("case %d: window [%s, %s)", i, from, until)
		}
	}
}

// A one-leg page keeps the leg's order: a lexical hit matching only some
// words follows every all-word hit, whatever its BM25 score.
func TestFuseKeepsOneLegOrder(t *testing.T) {
	lex := []lexical.Hit{{ID: "b", Score: 1, AllWords: true}, {ID: "a", Score: 7}}
	got := fuse(RankLexical, lex, nil, drawers("a", "b"), 10)
	if len(got) != 2 || got[0].ID != "b" || got[1].ID != "a" || got[1].Score != 7 {
		t.Fatalf("lexical page: %+v", got)
	}
	if s := got[0].Signals["lexical"].(map[string]any); s["all_words"] != true || s["rank"] != 1 {
		t.Fatalf("signals: %+v", s)
	}
}

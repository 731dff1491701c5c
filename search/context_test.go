package search

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/store"
)

// The auto ranking finds a turn by the words of the turns around it: the
// reply that says "it was powerful" is found for "support group" through
// its neighbour, with a context signal naming it; with context_weight 0
// no hit is lifted; and a drawer of another source (another mined file)
// never lends its context.
func TestAutoRankingScoresWithContext(t *testing.T) {
	st := newSearchStack(t)
	db, sys, ix, log := st.db, st.sys, st.ix, st.log
	cfg := config.Default(func(string) (string, bool) { return "", false })
	profiles, err := embed.Open(actors.EmbedSettings(cfg.Embedding))
	if err != nil {
		t.Fatal(err)
	}
	embed.SetDocFreqs(profiles, ix)
	vec := actors.NewVectors(db, sys, profiles, config.StaticProfile, log, actors.VectorOptions{})
	st.kicks = append(st.kicks, vec.Kick)
	vec.Start(nil)
	t.Cleanup(func() { vec.Stop(context.Background()) }) // before the stack's
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	ctx := context.Background()
	file := func(room, uri, content string) *store.Drawer {
		t.Helper()
		res, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: "w", Room: room, Content: content,
			Source: store.Source{Kind: store.KindTranscript, URI: uri}, Provenance: store.Provenance{RequestedBy: store.ByCLI}})
		if err != nil {
			t.Fatal(err)
		}
		vs, _ := profiles[config.StaticProfile].Provider.Embed(ctx, []string{content})
		if _, err := vec.PutEmbedding(ctx, res.Drawer.ID, config.StaticProfile, vs[0]); err != nil {
			t.Fatal(err)
		}
		return res.Drawer
	}
	for i := range 20 {
		file("other", "", fmt.Sprintf("Filler line %d about the weather and the trains, number %d.", i, i*37))
	}
	// A drawer of another source just before: never its context.
	other := file("talk", "file:///b.md", "Chapter two begins with the harbour at dawn.")
	asked := file("talk", "", "Caroline: I went to the support group yesterday.")
	reply := file("talk", "", "Melanie: Oh? And how did it feel?")
	felt := file("talk", "", "Caroline: It was powerful, the stories moved me.")

	search := func(weight float64) *SearchResult {
		t.Helper()
		s := &Search{DB: db, Indexer: ix, Vectors: vec, Log: log, Auto: cfg.Search}
		s.Auto.ContextWeight = weight
		var res *SearchResult
		deadline := time.Now().Add(10 * time.Second)
		for {
			res, err = s.Search(ctx, SearchQuery{Text: "support group", Ranking: RankAuto, Limit: 5}, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) > 0 && res.Hits[0].Drawer.ID == asked.ID || time.Now().After(deadline) {
				return res
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	res := search(0.7)
	if res.Ranking != RankHybrid || len(res.Hits) < 2 || res.Hits[0].Drawer.ID != asked.ID {
		t.Fatalf("auto: %+v", res)
	}
	lifted := map[string]string{}
	for _, h := range res.Hits {
		if h.Signals != nil && h.Signals.Context != nil {
			lifted[h.Drawer.ID] = h.Signals.Context.Neighbour
		}
	}
	if lifted[reply.ID] != asked.ID || lifted[felt.ID] != asked.ID {
		t.Fatalf("the two turns after the question's should be lifted by it: %v", lifted)
	}
	if next := map[string]bool{res.Hits[1].Drawer.ID: true, res.Hits[2].Drawer.ID: true}; !next[reply.ID] || !next[felt.ID] {
		t.Fatalf("the lifted turns should come next, got %q and %q", res.Hits[1].Drawer.Content, res.Hits[2].Drawer.Content)
	}
	if _, ok := lifted[other.ID]; ok {
		t.Fatalf("a drawer of another source was lifted: %v", lifted)
	}
	for _, h := range search(0).Hits {
		if h.Signals != nil && h.Signals.Context != nil {
			t.Fatalf("context_weight 0 still lifted %s", h.Drawer.Content)
		}
	}
}

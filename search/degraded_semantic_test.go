package search

import (
	"context"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/store"
)

// Issue 31 (trial): while the store is out of reach a semantic search
// answers from the local vector index, with the semantic stale warning
// (before, it answered the store's 503); a scoped semantic search falls
// back to the lexical index with the lexical warning.
func TestSemanticSearchDegradesWhenTheStoreIsDown(t *testing.T) {
	st := newSearchStack(t)
	cfg := config.Default(func(string) (string, bool) { return "", false })
	profiles, err := embed.Open(actors.EmbedSettings(cfg.Embedding))
	if err != nil {
		t.Fatal(err)
	}
	embed.SetDocFreqs(profiles, st.ix)
	vec := actors.NewVectors(st.db, st.sys, profiles, config.StaticProfile, st.log, actors.VectorOptions{})
	vec.Start(nil)
	t.Cleanup(func() { vec.Stop(context.Background()) })
	st.kicks = append(st.kicks, vec.Kick)
	p := &Palace{DB: st.db, Sys: st.sys}
	ctx := context.Background()
	texts := []string{"Alice leads the billing project.", "Bob maintains the deployment scripts.", "The team meets every Tuesday morning."}
	var ids []string
	for _, text := range texts {
		wr, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: "projects", Room: "notes", Content: text,
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, wr.Drawer.ID)
	}
	vs, err := profiles[config.StaticProfile].EmbedChecked(embed.ForStored(ctx), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if _, err := vec.PutEmbedding(ctx, id, config.StaticProfile, vs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if ix := vec.Index(config.StaticProfile); ix != nil && ix.Len() == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the vectors did not catch up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	db := &downDB{DB: st.db}
	s := &Search{DB: db, Indexer: st.ix, Vectors: vec, Log: st.log, Auto: cfg.Search}
	q := SearchQuery{Text: "Alice leads the billing project.", Ranking: RankSemantic, Limit: 3}
	up, err := s.Search(ctx, SearchQuery{Text: "billing", Ranking: RankSemantic, Wing: "projects", Room: "notes", Limit: 1}, false)
	if err != nil || up.Warning != "" || len(up.Hits) != 1 {
		t.Fatalf("store up: %+v %v", up, err)
	}
	read := up.Hits[0].ID

	db.down.Store(true)
	res, err := s.Search(ctx, q, false)
	if err != nil {
		t.Fatalf("store down: semantic search: %v", err)
	}
	if res.Warning != StaleSemanticWarning || res.Ranking != RankSemantic || len(res.Hits) != 3 || res.Hits[0].ID != ids[0] {
		t.Fatalf("store down: %+v", res)
	}
	for i, h := range res.Hits {
		if h.Signals == nil || h.Signals.Semantic == nil || h.Signals.Semantic.Rank != i+1 {
			t.Fatalf("hit %d: %+v", i, h)
		}
		if h.ID == read && (h.Content == "" || h.WingName != "projects") {
			t.Fatalf("the drawer read before shows whole: %+v", h)
		}
		if h.ID != read && h.Content != "" {
			t.Fatalf("a drawer never read shows its id and score only: %+v", h)
		}
	}
	res, err = s.Search(ctx, SearchQuery{Text: "billing", Ranking: RankSemantic, Wing: "projects", Room: "notes"}, false)
	if err != nil || res.Warning != StaleWarning || res.Ranking != RankLexical || len(res.Hits) != 1 || res.Hits[0].ID != ids[0] {
		t.Fatalf("store down: a scoped semantic search: %+v %v", res, err)
	}
	if _, err := s.Search(ctx, SearchQuery{Text: "billing", Ranking: RankSemantic, Wing: "elsewhere"}, false); !Unreachable(err) {
		t.Fatalf("a scope never resolved: %v; want the store's 503", err)
	}

	db.down.Store(false)
	if res, err = s.Search(ctx, q, false); err != nil || res.Warning != "" {
		t.Fatalf("store back: %+v %v", res, err)
	}
}

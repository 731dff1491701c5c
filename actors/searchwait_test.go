package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/config"
)

// A search waits for the lexical follower to apply every change committed
// before it began, even when nothing kicked the follower (its one-second
// gathering delay or period still running): a drawer filed just before is
// found, each time, and the index's position has reached the change log's
// end as it was when the search began (issue 38, point 8).
func TestSearchWaitsForTheLexicalFollower(t *testing.T) {
	st := newSearchStack(t)
	st.kicks = nil // no commit kicks the follower: only the search does
	p := &Palace{DB: st.db, Sys: st.sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	s := &Search{DB: st.db, Indexer: st.ix, Log: st.log}
	ctx := context.Background()
	n := 0
	for round := range 4 {
		var last string
		for range 150 {
			n++
			last = fmt.Sprintf("zq%dword", n)
			if _, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: "w", Room: "r",
				Content: fmt.Sprintf("note %d about the lamp and %s", n, last),
				Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}); err != nil {
				t.Fatal(err)
			}
		}
		var target uint64
		_ = st.db.View(ctx, func(r store.Reader) error { target, _ = r.LastSeq(); return nil })
		if pos := st.ix.f.Position(); pos >= target {
			t.Fatalf("round %d: the follower had already applied %d of %d: nothing to wait for", round, pos, target)
		}
		t0 := time.Now()
		res, err := s.Search(ctx, SearchQuery{Text: last, Ranking: RankLexical}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 1 || res.Hits[0].Content != fmt.Sprintf("note %d about the lamp and %s", n, last) {
			t.Fatalf("round %d: %q found %d hits, want the drawer just filed", round, last, len(res.Hits))
		}
		if pos := st.ix.f.Position(); pos < target {
			t.Fatalf("round %d: the index is at %d, the search began at %d", round, pos, target)
		}
		t.Logf("round %d: waited for %d changes in %v", round, 150, time.Since(t0).Round(time.Millisecond))
	}
}

// A search does not stall while the vector follower is behind: vectors
// are made and applied asynchronously, and the search waits for them only
// briefly (SearchWaitVectors), then ranks with what the index holds. Here
// the vector follower never runs (standing for one busy with a long batch
// of embeddings after a burst): an auto search still answers at once and
// finds the drawer by its words. Before, every such search waited two
// seconds (issue 38, point 8: p99 409 ms while the vectors caught up).
func TestSearchDoesNotStallWhileVectorsCatchUp(t *testing.T) {
	st := newSearchStack(t)
	cfg := config.Default(func(string) (string, bool) { return "", false })
	profiles, err := embed.Open(cfg.Embedding)
	if err != nil {
		t.Fatal(err)
	}
	embed.SetDocFreqs(profiles, st.ix)
	vec := NewVectors(st.db, st.sys, profiles, config.StaticProfile, st.log, VectorOptions{}) // not started
	p := &Palace{DB: st.db, Sys: st.sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	ctx := context.Background()
	if _, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: "w", Room: "r", Content: "The kettle in the garden shed is broken.",
		Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}); err != nil {
		t.Fatal(err)
	}
	s := &Search{DB: st.db, Indexer: st.ix, Vectors: vec, Log: st.log, Auto: cfg.Search}
	for _, ranking := range []string{RankAuto, RankHybrid} {
		t0 := time.Now()
		res, err := s.Search(ctx, SearchQuery{Text: "broken kettle", Ranking: ranking}, false)
		took := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 1 {
			t.Fatalf("%s: %d hits, want the drawer", ranking, len(res.Hits))
		}
		if took > 500*time.Millisecond {
			t.Fatalf("%s: the search took %v waiting for the vectors", ranking, took)
		}
	}
}

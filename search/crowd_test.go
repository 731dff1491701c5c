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

// A palace of 1,500 mined files of near-identical text and three drawers
// of its own: a semantic search for one of the three finds it first, over
// the whole palace, in its wing and in its room. Before, the mined files
// (identical vectors under the static profile) left the three unreachable
// in the HNSW graph: the palace search answered mined files at about
// -0.04 and the wing search answered nothing; only the room's exact scan
// found it.
func TestSemanticSearchFindsADrawerAmongACrowd(t *testing.T) {
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
	file := func(wing, room, content string) string {
		t.Helper()
		wr, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: wing, Room: room, Content: content,
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}})
		if err != nil {
			t.Fatal(err)
		}
		return wr.Drawer.ID
	}
	const crowd = 1500
	var ids, texts []string
	for i := range crowd {
		texts = append(texts, fmt.Sprintf("document %d about topic %d\nlorem ipsum dolor sit amet, consectetur adipiscing elit", i, i%20))
		ids = append(ids, file("mined", "files", texts[i]))
	}
	for _, text := range []string{"Alice leads the billing project.", "Bob maintains the deployment scripts.", "The team meets every Tuesday morning."} {
		texts = append(texts, text)
		ids = append(ids, file("projects", "notes", text))
	}
	want := ids[crowd]
	// The embed job's part: embed the drawers and store their vectors.
	vs, err := profiles[config.StaticProfile].EmbedChecked(embed.ForStored(ctx), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if _, err := vec.PutEmbedding(ctx, id, config.StaticProfile, vs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if ix := vec.Index(config.StaticProfile); ix != nil && ix.Len() == crowd+3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the vectors did not catch up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := &Search{DB: st.db, Indexer: st.ix, Vectors: vec, Log: st.log, Auto: cfg.Search}
	for _, c := range []struct{ name, wing, room string }{{"palace", "", ""}, {"wing", "projects", ""}, {"room", "projects", "notes"}} {
		res, err := s.Search(ctx, SearchQuery{Text: "Alice leads the billing project.", Ranking: RankSemantic, Wing: c.wing, Room: c.room, Limit: 5}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || res.Hits[0].ID != want {
			var got []string
			for _, h := range res.Hits {
				got = append(got, h.Content)
			}
			t.Errorf("%s search: %q, want the drawer about Alice first", c.name, got)
		}
	}
}

package search

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// downDB is a store that can be put out of reach: every read then fails
// as a shared store's does when its database is down (503).
type downDB struct {
	store.DB
	down atomic.Bool
}

func (d *downDB) View(ctx context.Context, fn func(store.Reader) error) error {
	if d.down.Load() {
		return &fault.Error{Code: fault.StoreBackendFailed, Status: 503, RetryAfter: 5, Msg: "the shared store at h:5432/db is unreachable",
			Help: "try again", Err: errors.New("connection refused")}
	}
	return d.DB.View(ctx, fn)
}

// Issue 31: while the store is out of reach a search still answers from
// the local lexical index, with a warning that it may be stale: the
// drawers this daemon's searches read show whole (named, in a scope it
// resolved), the others their id and score; a scope never resolved gets
// the store's 503. Once the store is back, no
// warning.
func TestSearchDegradesWhenTheStoreIsDown(t *testing.T) {
	st := newSearchStack(t)
	p := &Palace{DB: st.db, Sys: st.sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	file := func(wing, content string) string {
		res, err := p.CreateDrawer(context.Background(), store.NewDrawer{Wing: wing, Room: "r", Content: content,
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Drawer.ID
	}
	seen := file("work", "the lighthouse keeper logs every storm")
	db := &downDB{DB: st.db}
	s := &Search{DB: db, Indexer: st.ix, Log: st.log}
	res, err := s.Search(context.Background(), SearchQuery{Text: "lighthouse", Wing: "work", Room: "r"}, false)
	if err != nil || len(res.Hits) != 1 || res.Warning != "" {
		t.Fatalf("store up: %+v %v", res, err)
	}
	unseen := file("home", "a lighthouse painted on the kitchen wall")
	if _, err := s.Search(context.Background(), SearchQuery{Text: "storm"}, false); err != nil { // the index applies it
		t.Fatal(err)
	}

	db.down.Store(true)
	res, err = s.Search(context.Background(), SearchQuery{Text: "lighthouse"}, false)
	if err != nil {
		t.Fatalf("store down: %v", err)
	}
	if res.Warning != StaleWarning || res.Ranking != RankLexical || len(res.Hits) != 2 {
		t.Fatalf("store down: %+v", res)
	}
	byID := map[string]Hit{}
	for _, h := range res.Hits {
		byID[h.ID] = h
	}
	if h := byID[seen]; h.Content != "the lighthouse keeper logs every storm" || h.WingName != "work" || h.RoomName != "r" || h.Signals == nil {
		t.Fatalf("the drawer read before: %+v", h)
	}
	if h, ok := byID[unseen]; !ok || h.Content != "" || h.Score <= 0 {
		t.Fatalf("the drawer never read: %+v", h)
	}
	res, err = s.Search(context.Background(), SearchQuery{Text: "lighthouse", Wing: "work", Room: "r"}, false)
	if err != nil || len(res.Hits) != 1 || res.Hits[0].ID != seen || res.Warning == "" {
		t.Fatalf("a scope resolved before: %+v %v", res, err)
	}
	for _, q := range []SearchQuery{{Text: "lighthouse", Wing: "home"}} {
		if _, err := s.Search(context.Background(), q, false); !Unreachable(err) || fault.As(err).RetryAfter != 5 {
			t.Fatalf("%+v: %v; want the store's 503", q, err)
		}
	}

	db.down.Store(false)
	res, err = s.Search(context.Background(), SearchQuery{Text: "lighthouse"}, false)
	if err != nil || res.Warning != "" || len(res.Hits) != 2 {
		t.Fatalf("store back: %+v %v", res, err)
	}
	for _, h := range res.Hits {
		if !strings.Contains(h.Content, "lighthouse") {
			t.Fatalf("store back: %+v", h)
		}
	}
}

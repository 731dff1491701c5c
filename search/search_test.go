package search

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/index/vector"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
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
	if got[0].Signals == nil || got[0].Signals.Lexical == nil || got[0].Signals.Semantic == nil || (got[2].Signals != nil && got[2].Signals.Lexical != nil) {
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
	if s := got[0].Signals.Lexical; !s.AllWords || s.Rank != 1 {
		t.Fatalf("signals: %+v", s)
	}
}

// readCountingDB counts how a search reads drawers.
type readCountingDB struct {
	store.DB
	one, many atomic.Int64
	// wings and rooms count the reads of wing and room records by id.
	wings, rooms atomic.Int64
}

func (c *readCountingDB) View(ctx context.Context, fn func(store.Reader) error) error {
	return c.DB.View(ctx, func(r store.Reader) error { return fn(readCountingReader{r, c}) })
}

type readCountingReader struct {
	store.Reader
	c *readCountingDB
}

func (r readCountingReader) Drawer(id string) (*store.Drawer, error) {
	r.c.one.Add(1)
	return r.Reader.Drawer(id)
}

func (r readCountingReader) DrawersByID(ids []string) ([]*store.Drawer, error) {
	r.c.many.Add(1)
	return r.Reader.DrawersByID(ids)
}

func (r readCountingReader) Wing(id string) (*store.Wing, error) {
	r.c.wings.Add(1)
	return r.Reader.Wing(id)
}

func (r readCountingReader) Room(id string) (*store.Room, error) {
	r.c.rooms.Add(1)
	return r.Reader.Room(id)
}

// Palace files drawers in these tests as the palace service does: the
// writer running store.CreateDrawer with dedup (package search may not
// import the services, which stand above it).
type Palace struct {
	DB    store.DB
	Sys   *actors.System
	Dedup store.Dedup
}

// CreateDrawer files one drawer.
func (p *Palace) CreateDrawer(ctx context.Context, in store.NewDrawer) (*store.WriteResult, error) {
	v, err := p.Sys.Write(ctx, func(tx store.Tx) (any, error) { return store.CreateDrawer(tx, in, p.Dedup) })
	if err != nil {
		return nil, err
	}
	return v.(*store.WriteResult), nil
}

// searchStack is what a search runs on in these tests: a real store, the
// writer, the lexical index and its follower, stopped at cleanup. Commits
// kick the follower and whatever is added to kicks before the first write.
type searchStack struct {
	db    *badgerdb.DB
	lex   *lexical.Index
	sys   *actors.System
	ix    *actors.Indexer
	log   *slog.Logger
	kicks []func()
}

func newSearchStack(tb testing.TB) *searchStack {
	tb.Helper()
	dir := tb.TempDir()
	st := &searchStack{log: slog.New(slog.DiscardHandler)}
	var err error
	if st.db, err = badgerdb.Open(filepath.Join(dir, "p"), st.log); err != nil {
		tb.Fatal(err)
	}
	if st.lex, err = lexical.Open(filepath.Join(dir, "lex")); err != nil {
		tb.Fatal(err)
	}
	st.sys = actors.Start(st.db, st.log, slog.LevelInfo)
	st.ix = actors.NewIndexer(st.db, st.lex, st.log)
	st.kicks = []func(){st.ix.Kick}
	st.sys.OnCommit(func() {
		for _, k := range st.kicks {
			k()
		}
	})
	st.ix.Start()
	tb.Cleanup(func() {
		st.ix.Stop(context.Background())
		st.sys.Stop(context.Background())
		st.lex.Close()
		st.db.Close()
	})
	return st
}

// A search reads its candidates' drawers a window at a time, not one read
// per candidate: a page of ten from forty matches is one read.
func TestSearchReadsCandidatesInBatches(t *testing.T) {
	st := newSearchStack(t)
	db, sys, ix, log := st.db, st.sys, st.ix, st.log
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	for i := range 40 {
		if _, err := p.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r",
			Content: fmt.Sprintf("deploy note %d about lamp %d and kettle %d", i, i*31, i*7919),
			Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}); err != nil {
			t.Fatal(err)
		}
	}
	c := &readCountingDB{DB: db}
	s := &Search{DB: c, Indexer: ix, Log: log}
	res, err := s.Search(context.Background(), SearchQuery{Text: "deploy", Ranking: RankLexical, Limit: 10}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 10 || c.one.Load() != 0 || c.many.Load() != 1 {
		t.Fatalf("%d hits with %d single reads and %d batched reads; want 10 with 0 and 1", len(res.Hits), c.one.Load(), c.many.Load())
	}
}

// Every hit names its wing and room, read once per wing and room the page
// holds (not once per hit), in the search's own view, and not read again
// by the searches after.
func TestSearchHitsNameTheirWingAndRoom(t *testing.T) {
	st := newSearchStack(t)
	p := &Palace{DB: st.db, Sys: st.sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	places := [][2]string{{"work", "ops"}, {"work", "web"}, {"home", "garden"}}
	for i := range 12 {
		pl := places[i%len(places)]
		if _, err := p.CreateDrawer(context.Background(), store.NewDrawer{Wing: pl[0], Room: pl[1],
			Content: fmt.Sprintf("deploy note %d about lamp %d in %s", i, i*31, pl[1]),
			Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}); err != nil {
			t.Fatal(err)
		}
	}
	c := &readCountingDB{DB: st.db}
	s := &Search{DB: c, Indexer: st.ix, Log: st.log}
	search := func(text string) {
		t.Helper()
		res, err := s.Search(context.Background(), SearchQuery{Text: text, Ranking: RankLexical, Limit: 12}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 12 {
			t.Fatalf("%q: %d hits, want 12", text, len(res.Hits))
		}
		for _, h := range res.Hits {
			pl := places[0]
			for _, p := range places {
				if strings.HasSuffix(h.Content, " in "+p[1]) {
					pl = p
				}
			}
			if h.WingName != pl[0] || h.RoomName != pl[1] {
				t.Errorf("%q: hit %q names %q / %q, want %q / %q", text, h.Content, h.WingName, h.RoomName, pl[0], pl[1])
			}
		}
	}
	search("deploy")
	if c.wings.Load() > 2 || c.rooms.Load() > 3 {
		t.Fatalf("%d wing and %d room reads for a page in 2 wings and 3 rooms; want at most one each", c.wings.Load(), c.rooms.Load())
	}
	c.wings.Store(0)
	c.rooms.Store(0)
	search("lamp")
	if c.wings.Load() != 0 || c.rooms.Load() != 0 {
		t.Fatalf("the second search read %d wings and %d rooms; want none", c.wings.Load(), c.rooms.Load())
	}
}

// The names a search keeps are bounded: past the bound the cache starts
// again from what was just read.
func TestPlaceNamesAreBounded(t *testing.T) {
	var c placeNames
	for i := range placeNamesMax + 10 {
		c.put(map[string]string{fmt.Sprint(i): "n"})
		if len(c.names) > placeNamesMax {
			t.Fatalf("%d names kept after %d puts, bound %d", len(c.names), i+1, placeNamesMax)
		}
	}
	if len(c.names) != 10 || c.names[fmt.Sprint(placeNamesMax+9)] != "n" {
		t.Fatalf("after the bound: %d names", len(c.names))
	}
}

// KnownIn answers as loci would have at an instant: drawers recorded by
// then, their end counted only once recorded.
func TestKnownIn(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	end := at(10)
	old := &store.Drawer{ValidFrom: at(0), CreatedAt: at(0), ValidTo: &end} // superseded at hour 10
	repl := &store.Drawer{ValidFrom: at(10), CreatedAt: at(10)}             // its replacement
	back := &store.Drawer{ValidFrom: at(-100), CreatedAt: at(20)}           // recorded at 20, valid since long before
	k := func(h int) *time.Time { x := at(h); return &x }
	for _, c := range []struct {
		name        string
		d           *store.Drawer
		known       *time.Time
		from, until time.Time
		want        bool
	}{
		{"known at 5, valid at 5", old, k(5), at(5), at(5).Add(1), true},
		{"known at 5: its end was not known yet", old, k(5), at(15), at(15).Add(1), true},
		{"known at 15: superseded", old, k(15), at(15), at(15).Add(1), false},
		{"never known: no record time", old, nil, at(15), at(15).Add(1), false},
		{"not recorded yet at 5", repl, k(5), at(15), at(15).Add(1), false},
		{"known at 15, valid at 15", repl, k(15), at(15), at(15).Add(1), true},
		{"valid then, but recorded later", back, k(15), at(-50), at(-50).Add(1), false},
		{"recorded by 25, valid then", back, k(25), at(-50), at(-50).Add(1), true},
		{"historical: known, whatever its validity", old, k(15), time.Time{}, time.Time{}, true},
		{"historical: not recorded yet at 5", repl, k(5), time.Time{}, time.Time{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := KnownIn(c.d, c.known, c.from, c.until); got != c.want {
				t.Errorf("%+v known %v window %v: %v, want %v", c.d, c.known, c.from, got, c.want)
			}
		})
	}
}

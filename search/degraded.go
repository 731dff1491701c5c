package search

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/index/vector"
	"github.com/loci-dev/loci/store"
)

// StaleWarning is the warning of a search answered while the store is out
// of reach (a shared store's database down): from this daemon's own
// lexical index and the drawers it read recently.
const StaleWarning = "the store is out of reach: these results come from this daemon's own lexical index and may be stale " +
	"(drawers written since may be missing, deleted or superseded ones may show, time filters apply to the drawers it read recently only); " +
	"a hit this daemon has not read recently shows its id and score only"

// StaleSemanticWarning is the warning of a semantic search answered while
// the store is out of reach from this daemon's own vector index.
const StaleSemanticWarning = "the store is out of reach: these results come from this daemon's own vector index and may be stale " +
	"(drawers written since may be missing, deleted or superseded ones may show, time filters apply to the drawers it read recently only); " +
	"a hit this daemon has not read recently shows its id and score only"

// Unreachable reports whether err is the store out of reach (a shared
// store's database down or unreachable: loci::store::backend_failed with
// status 503), not a refusal of the request.
func Unreachable(err error) bool {
	var fe *fault.Error
	return errors.As(err, &fe) && fe.Code == fault.StoreBackendFailed && fe.HTTPStatus() == 503
}

// degraded answers a search the store could not serve (cause, Unreachable)
// from what this daemon holds: the lexical index (ids and scores) and the
// drawers its searches read recently (recent), with the wing and room
// names and scopes they resolved. A semantic search over the whole palace
// (no wing, tags or source kind: the vector index cannot filter those)
// answers from the local vector index of its profile (qvec); any other
// search, a scoped semantic one included, from the lexical index. A scope
// this daemon never resolved gets cause.
func (s *Search) degraded(ctx context.Context, q *SearchQuery, f lexical.Filter, limit int, profile string, qvec []float32, cause error) (*SearchResult, error) {
	if q.Ranking == RankSemantic && q.Wing == "" && len(q.Tags) == 0 && q.SourceKind == "" && s.Vectors != nil && qvec != nil {
		if ix := s.Vectors.Index(profile); ix != nil {
			return s.degradedSemantic(ix, q, limit, qvec, cause)
		}
	}
	if q.Wing != "" {
		ids, ok := s.scopes.get(q.Wing, q.Room)
		if !ok {
			return nil, cause
		}
		f.WingID, f.RoomID = ids[0], ids[1]
	}
	lex, err := s.Indexer.Lex.Search(ctx, q.Text, f, limit, s.keepRecent(q))
	if err != nil {
		return nil, fault.Wrap(fault.ServerFailed, err, "the lexical index failed: "+err.Error(), "see the daemon log")
	}
	out := &SearchResult{Query: q.Text, Ranking: RankLexical, Hits: make([]Hit, 0, len(lex)), Warning: StaleWarning}
	s.names.mu.RLock()
	for i, h := range lex {
		hit := Hit{Drawer: store.Drawer{ID: h.ID}, Score: h.Score,
			Signals: &api.HitSignals{Lexical: &api.LexicalSignal{Rank: i + 1, Score: h.Score, AllWords: h.AllWords}}}
		if d := s.recent.get(h.ID); d != nil {
			hit.Drawer = *d
			hit.WingName, hit.RoomName = s.names.names[d.WingID], s.names.names[d.RoomID]
		}
		out.Hits = append(out.Hits, hit)
	}
	s.names.mu.RUnlock()
	locateHits(out.Hits)
	if s.Log != nil {
		s.Log.Debug("the store is out of reach: a search was answered from the local lexical index", "hits", len(out.Hits), "err", cause)
	}
	return out, nil
}

// keepRecent keeps, of a degraded search's hits, the drawers this daemon
// read recently that pass q's time options, and every drawer it has not
// read (nothing to check them against).
func (s *Search) keepRecent(q *SearchQuery) func(ids []string) []bool {
	_, from, until, _ := CheckSearch(&SearchQuery{Text: q.Text, AsOf: q.AsOf, From: q.From, Until: q.Until, Historical: q.Historical, KnownAt: q.KnownAt}, time.Now().UTC())
	return func(ids []string) []bool {
		ok := make([]bool, len(ids))
		for i, id := range ids {
			d := s.recent.get(id)
			ok[i] = d == nil || KnownIn(d, q.KnownAt, from, until)
		}
		return ok
	}
}

// degradedSemantic answers a semantic search over the whole palace from
// the local vector index ix while the store is out of reach.
func (s *Search) degradedSemantic(ix *vector.Index, q *SearchQuery, limit int, qvec []float32, cause error) (*SearchResult, error) {
	sem, err := ix.Search(qvec, limit, 0, s.keepRecent(q))
	if err != nil {
		return nil, fault.Wrap(fault.EmbedDimensionMismatch, err, err.Error(), "send a vector of the profile's length")
	}
	out := &SearchResult{Query: q.Text, Ranking: RankSemantic, Hits: make([]Hit, 0, len(sem)), Warning: StaleSemanticWarning}
	s.names.mu.RLock()
	for i, h := range sem {
		hit := Hit{Drawer: store.Drawer{ID: h.ID}, Score: float64(h.Score),
			Signals: &api.HitSignals{Semantic: &api.SemanticSignal{Rank: i + 1, Similarity: h.Score}}}
		if d := s.recent.get(h.ID); d != nil {
			hit.Drawer = *d
			hit.WingName, hit.RoomName = s.names.names[d.WingID], s.names.names[d.RoomID]
		}
		out.Hits = append(out.Hits, hit)
	}
	s.names.mu.RUnlock()
	locateHits(out.Hits)
	if s.Log != nil {
		s.Log.Debug("the store is out of reach: a semantic search was answered from the local vector index", "hits", len(out.Hits), "err", cause)
	}
	return out, nil
}

// recentBytes bounds the content the recent-drawers cache keeps.
const recentBytes = 16 << 20

// drawerCache keeps the drawers searches served, by id, up to
// recentBytes of content (the oldest put leave first): what a search
// answered while the store is out of reach shows of them. A drawer's
// content never changes (supersession makes a new drawer); its validity
// may have, which the stale warning says. The zero value is empty.
type drawerCache struct {
	mu    sync.Mutex
	m     map[string]*store.Drawer
	order []string
	bytes int
}

func (c *drawerCache) get(id string) *store.Drawer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

func (c *drawerCache) put(hits []Hit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*store.Drawer{}
	}
	for i := range hits {
		d := hits[i].Drawer
		if _, ok := c.m[d.ID]; ok || d.ID == "" || len(d.Content) > recentBytes/4 {
			continue
		}
		c.m[d.ID] = &d
		c.order = append(c.order, d.ID)
		c.bytes += len(d.Content)
	}
	for c.bytes > recentBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if d := c.m[old]; d != nil {
			c.bytes -= len(d.Content)
			delete(c.m, old)
		}
	}
}

// scopeCache keeps the wing and room ids searches resolved by name, for a
// scoped search while the store is out of reach. Bounded like placeNames.
type scopeCache struct {
	mu sync.Mutex
	m  map[[2]string][2]string
}

func (c *scopeCache) get(wing, room string) ([2]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids, ok := c.m[[2]string{wing, room}]
	return ids, ok
}

func (c *scopeCache) put(wing, room, wingID, roomID string) {
	if wing == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= placeNamesMax {
		c.m = map[[2]string][2]string{}
	}
	c.m[[2]string{wing, room}] = [2]string{wingID, roomID}
}

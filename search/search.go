package search

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/index/vector"
	"github.com/loci-dev/loci/search/rank"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

// Search limits (spec: default 10, max 200, 0 means the default).
const (
	SearchLimit    = 10
	SearchMaxLimit = 200
)

// How long a search waits for the indexes to apply the changes committed
// before it began (issue 38, point 8). The lexical index is waited for,
// so that an agent finds what it has just filed: the follower applies
// only what is missing, in batches of at most lexBatch, so the wait is a
// few milliseconds to tens; the bound is for a follower rebuilding or
// stuck, after which the search runs anyway (a debug log says so). The
// vector index is waited for only briefly: vectors are made
// asynchronously anyway (embed jobs), and after a burst the vector
// follower can be thousands of graph insertions behind; every search
// waited for them (two seconds at most), p99 409 ms against 9.6 ms.
//
// A vector follower more than SearchWaitVectorsBehind changes behind is
// catching up a backlog (an embed job commits its vectors in batches of
// up to 1,024) and is not waited for at all: the wait could not close the
// gap, and during a catch-up every search paid it in full (p50 17-20 ms
// against 4.5 ms once caught up). A vector stored just before a search
// (a PUT, one change) is still waited for.
const (
	SearchWaitLexical       = time.Second
	SearchWaitVectors       = 10 * time.Millisecond
	SearchWaitVectorsBehind = 256
)

// Ranking modes.
const (
	RankAuto     = "auto"
	RankLexical  = "lexical"
	RankSemantic = "semantic"
	RankHybrid   = "hybrid"
)

// SearchQuery is a search as every interface asks it.
type SearchQuery struct {
	Text       string
	Ranking    string
	Limit      int
	Wing, Room string
	Tags       []string
	SourceKind string
	// Time: at most one of AsOf, From+Until, Historical.
	AsOf        *time.Time
	From, Until *time.Time
	Historical  bool
	Profile     string
	Embedding   []float32
	Expand      bool
	// KnownAt answers as loci would have at that instant (record time):
	// drawers recorded by then and not yet superseded or invalidated by
	// then, their validity as known then. Without a time option it asks
	// for what was valid at that instant.
	KnownAt *time.Time
}

// Hit is a drawer found, verbatim, with its score and the legs that found
// it.
type Hit struct {
	store.Drawer
	// WingName and RoomName name the drawer's wing and room as the search's
	// own read of the store has them.
	WingName, RoomName string
	// Document and Chunk say where a mined drawer sits in its document:
	// the document's path (its name at its source) and the chunk's
	// number, from 1 (0: not a mined chunk). Only the first chunk of a
	// document carries its name; every chunk has these.
	Document string
	Chunk    int
	Score    float64
	// Signals say which legs found it (nil: none to say).
	Signals *api.HitSignals
	// Via names the entities an expanded hit was reached through.
	Via []string
	// Turn is, for a hit from a transcript, the turn that matched: who
	// said it and when (nil otherwise).
	Turn *api.HitTurn
}

// SearchResult is a search answer.
type SearchResult struct {
	Query   string
	Ranking string
	Hits    []Hit
	// Warning says the results may be stale (StaleWarning: the store was
	// out of reach); "" otherwise.
	Warning string
	// passages finds where each hit matched (nil: windows start at the
	// content's start).
	passages *passages
}

// Passage is where hit h of this result matched its query, to clip its
// content around.
func (r *SearchResult) Passage(ctx context.Context, h *Hit) *Passage {
	transcript := h.Source.Kind == store.KindTranscript
	if r.passages == nil {
		ps := &Passage{content: h.Content}
		if transcript {
			ps.turns = sources.SplitTurns(h.Content)
		}
		return ps
	}
	return r.passages.of(ctx, h.ID, h.Content, transcript)
}

// Search is the search service over the palace's indexes.
type Search struct {
	DB      store.DB
	Indexer *actors.Indexer
	Vectors *actors.Vectors // nil: no embedding profile
	Log     *slog.Logger
	// Auto tunes the auto ranking (config.Search); the zero value is
	// plain fusion without context.
	Auto config.Search
	// names are the wings' and rooms' names hits carry.
	names placeNames
	// recent and scopes are the drawers searches served and the scopes
	// they resolved: what a search answers from while the store is out of
	// reach (degraded).
	recent drawerCache
	scopes scopeCache
}

// CheckSearch validates a query and returns its limit and validity window
// (zero times: no time filter). now is the instant "valid now" means.
func CheckSearch(q *SearchQuery, now time.Time) (limit int, from, until time.Time, err error) {
	if strings.TrimSpace(q.Text) == "" {
		return 0, from, until, fault.Invalid("text", "is required: the words to search for")
	}
	switch q.Ranking {
	case "":
		q.Ranking = RankAuto
	case RankAuto, RankLexical, RankSemantic, RankHybrid:
	default:
		return 0, from, until, fault.Invalid("ranking", fmt.Sprintf("%q is not one of auto, lexical, semantic, hybrid", q.Ranking))
	}
	switch {
	case q.Limit < 0 || q.Limit > SearchMaxLimit:
		return 0, from, until, fault.Invalid("limit", fmt.Sprintf("%d is outside 0 to %d (0 means the default, %d)", q.Limit, SearchMaxLimit, SearchLimit))
	case q.Limit == 0:
		limit = SearchLimit
	default:
		limit = q.Limit
	}
	if q.SourceKind != "" {
		if err := store.CheckSourceKind(q.SourceKind); err != nil {
			return 0, from, until, fault.Invalid("source_kind", fault.As(err).Msg)
		}
	}
	if len(q.Embedding) > 0 && q.Profile == "" {
		return 0, from, until, fault.Invalid("profile", "is required with query_embedding: name the configured embedding profile the vector comes from")
	}
	asked := 0
	for _, given := range []bool{q.AsOf != nil, q.From != nil || q.Until != nil, q.Historical} {
		if given {
			asked++
		}
	}
	if asked > 1 {
		field := "as_of"
		if q.AsOf == nil {
			field = "include_historical"
		}
		return 0, from, until, fault.Invalid(field, "as_of, the pair from and until, and include_historical cannot be combined")
	}
	switch {
	case q.AsOf != nil:
		from, until = *q.AsOf, q.AsOf.Add(time.Nanosecond)
	case q.From != nil || q.Until != nil:
		if q.From == nil {
			return 0, from, until, fault.Invalid("from", "is required with until")
		}
		if q.Until == nil {
			return 0, from, until, fault.Invalid("until", "is required with from")
		}
		if !q.From.Before(*q.Until) {
			return 0, from, until, fault.Invalid("from", "must be before until")
		}
		from, until = *q.From, *q.Until
	case q.Historical:
	case q.KnownAt != nil:
		from, until = *q.KnownAt, q.KnownAt.Add(time.Nanosecond)
	default:
		from, until = now, now.Add(time.Nanosecond)
	}
	return limit, from, until, nil
}

// Search runs a search; recall ignores the room.
func (s *Search) Search(ctx context.Context, q SearchQuery, recall bool) (*SearchResult, error) {
	if recall {
		q.Room = ""
	}
	limit, from, until, err := CheckSearch(&q, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	// Vectors are made asynchronously (embed jobs): a search does not wait
	// for those, and waits only briefly (SearchWaitVectors) for the
	// follower to apply the vectors already stored; it waits for the
	// lexical index to apply every change committed before it began, and
	// only then embeds its query, with the frequencies of that palace (the
	// embedding itself never waits for the index).
	var target uint64 // the change log's end: both legs catch up to it
	_ = s.DB.View(ctx, func(r store.Reader) error {
		var err error
		target, err = r.LastSeq()
		return err
	})
	if q.Ranking != RankSemantic { // auto and hybrid have a lexical leg
		t0 := time.Now()
		if !s.Indexer.Sync(ctx, target, SearchWaitLexical) && s.Log != nil {
			s.Log.Debug("the lexical index had not reached the search's start; searching anyway",
				"target", target, "applied", s.Indexer.Position(), "waited", time.Since(t0).Round(time.Millisecond))
		}
	}
	qvec, profile, err := s.queryVector(ctx, &q)
	if err != nil {
		return nil, err
	}
	ranking := q.Ranking
	auto := ranking == RankAuto
	if auto && embed.NoInformation(qvec) {
		qvec = nil // no known word: nothing to find semantically
	}
	switch {
	case ranking == RankAuto && qvec != nil:
		ranking = RankHybrid
	case ranking == RankAuto:
		// No vector: the specification's lexical ranking, as asked.
		ranking, auto = RankLexical, false
	case qvec == nil && (ranking == RankSemantic || ranking == RankHybrid):
		return nil, fault.New(fault.SearchSemanticUnavail,
			ranking+" search needs a query vector: no embedding profile is configured, or its provider failed",
			"use ranking lexical or auto, pass query_embedding with its profile, or configure an embedding provider")
	}
	f := lexical.Filter{Tags: q.Tags, Kind: q.SourceKind}
	out := &SearchResult{Query: q.Text, Ranking: ranking, Hits: []Hit{}}
	if ranking != RankLexical && s.Vectors != nil {
		t0 := time.Now()
		if pos := s.Vectors.Position(); target > pos+SearchWaitVectorsBehind {
			// Catching up a backlog (an embed job's batches): SearchWaitVectors
			// would not close the gap, and every search would pay it.
			if s.Log != nil {
				s.Log.Debug("the vector index is catching up; searching without waiting", "target", target, "applied", pos)
			}
		} else if !s.Vectors.Sync(ctx, target, SearchWaitVectors) && s.Log != nil {
			s.Log.Debug("the vector index had not reached the search's start; searching anyway",
				"target", target, "applied", s.Vectors.Position(), "waited", time.Since(t0).Round(time.Millisecond))
		}
	}
	err = s.DB.View(ctx, func(r store.Reader) error {
		wingID, roomID, err := searchScope(r, &q)
		if err != nil {
			return err
		}
		f.WingID, f.RoomID = wingID, roomID
		v := &searchView{r: r, q: &q, wingID: wingID, roomID: roomID, from: from, until: until, known: q.KnownAt,
			found: map[string]*store.Drawer{}, lexFound: map[string]*store.Drawer{}}
		depth := limit
		if ranking == RankHybrid {
			depth = max(2*limit, 20) // fuse from deeper lists than the page
		}
		if auto {
			depth = max(s.Auto.Depth, limit)
		}
		lex, sem, err := s.legs(ctx, v, ranking, f, profile, qvec, depth, auto && !s.Auto.AllWordsFirst)
		if err != nil {
			return err
		}
		if auto {
			if lex, err = s.feedback(ctx, v, f, lex, depth, s.Auto.FeedbackDocs, s.Auto.FeedbackTerms, s.Auto.FeedbackWeight); err != nil {
				return err
			}
		}
		for id, d := range v.lexFound {
			if v.found[id] == nil {
				v.found[id] = d
			}
		}
		if auto {
			if out.Hits, err = s.autoRank(v, lex, sem, profile, qvec, limit); err != nil {
				return err
			}
		} else {
			out.Hits = fuse(ranking, lex, sem, v.found, limit)
		}
		if q.Expand {
			if out.Hits, err = s.expand(v, out.Hits, limit); err != nil {
				return err
			}
		}
		locateHits(out.Hits)
		if err := s.nameHits(r, out.Hits); err != nil {
			return err
		}
		s.scopes.put(q.Wing, q.Room, wingID, roomID)
		return nil
	})
	if Unreachable(err) {
		// The store is out of reach (a shared store's database down): the
		// local lexical index still answers, saying it may be stale.
		return s.degraded(ctx, &q, f, limit, profile, qvec, err)
	}
	if err != nil {
		return nil, err
	}
	s.recent.put(out.Hits)
	out.passages = newPassages(q.Text, s.Indexer.Lex.DocFreqs, s.sentenceEmbedder(profile), qvec)
	for i := range out.Hits {
		if h := &out.Hits[i]; h.Source.Kind == store.KindTranscript {
			h.Turn = out.Passage(ctx, h).Turn()
		}
	}
	return out, nil
}

// sentenceEmbedder embeds a clipped semantic hit's sentences to find the
// one closest to the query: only with a provider in the daemon itself
// (the built-in static one, or hash), never one that costs a call to a
// model server per search (nil then).
func (s *Search) sentenceEmbedder(profile string) func(context.Context, []string) ([][]float32, error) {
	if s.Vectors == nil || profile == "" {
		return nil
	}
	p, err := s.Vectors.Profile(profile)
	if err != nil || p == nil {
		return nil
	}
	switch p.Provider.(type) {
	case *embed.Static, embed.Hash:
		return p.EmbedChecked
	}
	return nil
}

// locateHits reads where each mined hit sits in its document from its
// source's origin (the miner records the document's path and the chunk's
// index there, for every chunk).
func locateHits(hits []Hit) {
	for i := range hits {
		h := &hits[i]
		h.Document, h.Chunk = store.ChunkPlace(h.Source)
	}
}

// searchScope resolves a query's wing and room to their ids ("" when not
// given); a room needs its wing.
func searchScope(r store.Reader, q *SearchQuery) (wingID, roomID string, err error) {
	if q.Wing == "" {
		if q.Room != "" {
			return "", "", fault.Invalid("room", "needs wing: rooms are looked up inside a wing")
		}
		return "", "", nil
	}
	w, err := store.FindWing(r, q.Wing)
	if err != nil {
		return "", "", err
	}
	if q.Room == "" {
		return w.ID, "", nil
	}
	rm, err := store.FindRoom(r, w, q.Room)
	if err != nil {
		return "", "", err
	}
	return w.ID, rm.ID, nil
}

// placeNamesMax bounds the names a Search keeps: past it the cache is
// emptied and filled again from the searches that follow.
const placeNamesMax = 1 << 14

// placeNames caches the names of wings and rooms by id, for search hits.
// A name never changes (no operation renames a wing or a room: they are
// created and deleted) and an id is never reused, so an entry stays true
// while its wing or room exists and is merely unused after. The zero
// value is an empty cache.
type placeNames struct {
	mu    sync.RWMutex
	names map[string]string
}

// put records names read from the store.
func (c *placeNames) put(read map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil || len(c.names)+len(read) > placeNamesMax {
		c.names = make(map[string]string, len(read))
	}
	for id, n := range read {
		c.names[id] = n
	}
}

// nameHits names each hit's wing and room from the cache, reading what it
// lacks in the search's own view, each wing and room once.
func (s *Search) nameHits(r store.Reader, hits []Hit) error {
	missing := false
	s.names.mu.RLock()
	for i := range hits {
		h := &hits[i]
		var wok, rok bool
		h.WingName, wok = s.names.names[h.WingID]
		h.RoomName, rok = s.names.names[h.RoomID]
		missing = missing || !wok || !rok
	}
	s.names.mu.RUnlock()
	if !missing {
		return nil
	}
	read := map[string]string{}
	name := func(id string, get func(string) (string, error)) (string, error) {
		if n, ok := read[id]; ok || id == "" {
			return n, nil
		}
		n, err := get(id)
		if err == nil && n != "" {
			read[id] = n
		}
		return n, err
	}
	wing := func(id string) (string, error) {
		w, err := r.Wing(id)
		if w == nil || err != nil {
			return "", err
		}
		return w.Name, nil
	}
	room := func(id string) (string, error) {
		rm, err := r.Room(id)
		if rm == nil || err != nil {
			return "", err
		}
		return rm.Name, nil
	}
	var err error
	for i := range hits {
		h := &hits[i]
		if h.WingName == "" {
			if h.WingName, err = name(h.WingID, wing); err != nil {
				return err
			}
		}
		if h.RoomName == "" {
			if h.RoomName, err = name(h.RoomID, room); err != nil {
				return err
			}
		}
	}
	s.names.put(read)
	return nil
}

// searchView is one search's read of the store. The legs of a hybrid
// search run side by side over this one view (one snapshot: two views
// could straddle a commit and show a drawer's old version beside its
// replacement). A view is not safe for concurrent use, so its reads take
// turns; the index walks, most of a leg's time, still overlap. Scope and
// validity are checked on the stored drawer, in rank order, before the
// limit; the same view serves the hits verbatim.
type searchView struct {
	r              store.Reader
	mu             sync.Mutex
	q              *SearchQuery
	wingID, roomID string
	from, until    time.Time
	known          *time.Time
	// found holds the semantic leg's drawers, lexFound the lexical leg's.
	found, lexFound map[string]*store.Drawer
	// read holds every drawer read so far (nil for an unknown id), under mu.
	read map[string]*store.Drawer
}

// drawers reads a window of candidates in one call; a drawer read once
// by the search (by another leg, the feedback query or as a neighbour) is
// not read and decoded again.
func (v *searchView) drawers(ids []string) ([]*store.Drawer, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.read == nil {
		v.read = map[string]*store.Drawer{}
	}
	out := make([]*store.Drawer, len(ids))
	var need []string
	var at []int
	for i, id := range ids {
		if d, ok := v.read[id]; ok {
			out[i] = d
		} else {
			need, at = append(need, id), append(at, i)
		}
	}
	if len(need) == 0 {
		return out, nil
	}
	ds, err := v.r.DrawersByID(need)
	if err != nil {
		return nil, err
	}
	for j, d := range ds {
		v.read[need[j]] = d
		out[at[j]] = d
	}
	return out, nil
}

func (v *searchView) inTime(d *store.Drawer) bool {
	return KnownIn(d, v.known, v.from, v.until)
}

// KnownIn reports a drawer valid in [from, until) (zero: any time) as
// known at known (nil: now): recorded by then, and its end counted only if
// it was recorded by then (supersession and invalidation set valid_to to
// the instant they happen). A deleted drawer is gone: deletion is erasure.
func KnownIn(d *store.Drawer, known *time.Time, from, until time.Time) bool {
	if known != nil {
		if d.CreatedAt.After(*known) {
			return false
		}
		if d.ValidTo != nil && d.ValidTo.After(*known) {
			c := *d
			c.ValidTo = nil
			d = &c
		}
	}
	return (from.IsZero() && until.IsZero()) || d.ValidIn(from, until)
}

// keepLex keeps the lexical hits that are valid in the query's time (the
// index applied the other filters).
func (v *searchView) keepLex(ids []string) []bool {
	return v.keep(ids, v.lexFound, v.inTime)
}

// keepVec keeps the semantic hits that pass every filter of the query.
func (v *searchView) keepVec(ids []string) []bool {
	return v.keep(ids, v.found, v.passes)
}

// passes reports a drawer that passes every filter of the query.
func (v *searchView) passes(d *store.Drawer) bool {
	q := v.q
	return v.inTime(d) && (v.wingID == "" || d.WingID == v.wingID) && (v.roomID == "" || d.RoomID == v.roomID) &&
		(q.SourceKind == "" || d.Source.Kind == q.SourceKind) && hasTags(d.Tags, q.Tags)
}

// keep reads a window of candidates and records in found those that exist
// and pass.
func (v *searchView) keep(ids []string, found map[string]*store.Drawer, pass func(*store.Drawer) bool) []bool {
	ok := make([]bool, len(ids))
	ds, err := v.drawers(ids)
	if err != nil {
		return ok // a failed read keeps nothing, as a missing drawer
	}
	for i, d := range ds {
		if d != nil && pass(d) {
			ok[i] = true
			found[ids[i]] = d
		}
	}
	return ok
}

// legs runs the legs the ranking needs, depth hits each: the lexical leg
// alone, the semantic leg alone, or both side by side.
func (s *Search) legs(ctx context.Context, v *searchView, ranking string, f lexical.Filter, profile string, qvec []float32, depth int, bm25 bool) (
	lex []lexical.Hit, sem []vector.Hit, err error) {
	lexLeg := func() error {
		var err error
		search := s.Indexer.Lex.Search
		if bm25 {
			search = s.Indexer.Lex.SearchBM25
		}
		if lex, err = search(ctx, v.q.Text, f, depth, v.keepLex); err != nil {
			return fault.Wrap(fault.ServerFailed, err, "the lexical index failed: "+err.Error(), "see the daemon log")
		}
		return nil
	}
	if ranking == RankLexical {
		return lex, nil, lexLeg()
	}
	scope, err := scopeOf(v.r, v.roomID)
	if err != nil {
		return nil, nil, err
	}
	if ranking == RankSemantic {
		sem, err = s.semantic(scope, profile, qvec, depth, v.keepVec)
		return nil, sem, err
	}
	lexDone := make(chan error, 1)
	go func() {
		// A panic in Bleve fails this search, not the daemon.
		defer func() {
			if p := recover(); p != nil {
				lexDone <- s.recovered("the lexical leg of a hybrid search", p)
			}
		}()
		lexDone <- lexLeg()
	}()
	sem, err = s.semantic(scope, profile, qvec, depth, v.keepVec)
	if lexErr := <-lexDone; err == nil {
		err = lexErr
	}
	return lex, sem, err
}

func hasTags(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// smallScope is the room size under which the vector leg scans exactly.
const smallScope = 20000

// vectorScope is what the vector leg scans exactly: all drawers of a room
// of at most smallScope drawers. Otherwise (a larger room, a wing, the
// whole palace) the leg walks the HNSW graph: exact is false.
type vectorScope struct {
	exact bool
	ids   []string
}

// scopeOf reads the vector scope of a search in roomID ("" for none).
func scopeOf(r store.Reader, roomID string) (vectorScope, error) {
	if roomID == "" {
		return vectorScope{}, nil
	}
	if cur, _, err := r.CountDrawers(roomID); err != nil || cur > smallScope {
		return vectorScope{}, nil
	}
	ids, err := r.DrawerIDs(roomID)
	return vectorScope{exact: true, ids: ids}, err
}

// semantic is the vector leg: an exact scan of scope when there is one,
// else the HNSW graph widened until enough drawers pass keep.
func (s *Search) semantic(scope vectorScope, profile string, qvec []float32, k int, keep rank.Keep) ([]vector.Hit, error) {
	ix := s.Vectors.Index(profile)
	if scope.exact {
		hits, err := ix.ExactAmong(qvec, len(scope.ids), scope.ids)
		if err != nil {
			return nil, fault.Wrap(fault.EmbedDimensionMismatch, err, err.Error(), "send a vector of the profile's length")
		}
		return vector.Kept(hits, k, keep), nil
	}
	hits, err := ix.Search(qvec, k, 0, keep)
	if err != nil {
		return nil, fault.Wrap(fault.EmbedDimensionMismatch, err, err.Error(), "send a vector of the profile's length")
	}
	return hits, nil
}

// fuse builds the page: one leg as ranked, or both by reciprocal rank
// fusion (package fusion; ties by drawer id), each hit with the signals of
// the legs that found it.
func fuse(ranking string, lex []lexical.Hit, sem []vector.Hit, found map[string]*store.Drawer, limit int) []Hit {
	lexItems := lexItems(lex)
	semItems := make([]rank.Item, len(sem))
	for i, h := range sem {
		semItems[i] = rank.Item{ID: h.ID, Score: float64(h.Score)}
	}
	var ranked []rank.Fused
	switch ranking {
	case RankHybrid:
		ranked = rank.RRF(rank.K, lexItems, semItems)
	case RankSemantic:
		ranked = rank.Single(semItems)
	default:
		ranked = rank.Single(lexItems)
	}
	out := make([]Hit, 0, min(limit, len(ranked)))
	for _, f := range ranked {
		if len(out) == limit {
			break
		}
		d := found[f.ID]
		if d == nil {
			continue
		}
		var signals *api.HitSignals
		if i := lexRank(ranking, f); i > 0 && i <= len(lex) {
			h := lex[i-1]
			signals = &api.HitSignals{Lexical: &api.LexicalSignal{Rank: i, Score: h.Score, AllWords: h.AllWords}}
		}
		if i := semRank(ranking, f); i > 0 && i <= len(sem) {
			if signals == nil {
				signals = &api.HitSignals{}
			}
			signals.Semantic = &api.SemanticSignal{Rank: i, Similarity: sem[i-1].Score}
		}
		out = append(out, Hit{Drawer: *d, Score: f.Score, Signals: signals})
	}
	return out
}

// lexRank and semRank are f's rank in the lexical and the semantic leg (0:
// not found by it): a hybrid fusion lists the lexical leg first, a
// single-leg ranking has only its own.
func lexRank(ranking string, f rank.Fused) int {
	if ranking == RankSemantic {
		return 0
	}
	return f.Ranks[0]
}

func semRank(ranking string, f rank.Fused) int {
	switch ranking {
	case RankHybrid:
		return f.Ranks[1]
	case RankSemantic:
		return f.Ranks[0]
	}
	return 0
}

// queryVector is the query's vector and profile: the caller's (checked),
// or the provider's; nil when none can be had (auto then runs lexical, with
// a warning when the provider failed).
func (s *Search) queryVector(ctx context.Context, q *SearchQuery) ([]float32, string, error) {
	if s.Vectors == nil {
		if q.Profile != "" {
			return nil, "", fault.Newf(fault.InputInvalid, "no embedding profile is configured", "profile: %q is not a configured embedding profile", q.Profile)
		}
		return nil, "", nil
	}
	p, err := s.Vectors.Profile(q.Profile)
	if err != nil || p == nil {
		return nil, "", err
	}
	if len(q.Embedding) > 0 {
		if len(q.Embedding) != p.Dimension {
			return nil, "", fault.Newf(fault.EmbedDimensionMismatch, fmt.Sprintf("send %d values", p.Dimension),
				"query_embedding has %d values; profile %s has %d", len(q.Embedding), p.Name, p.Dimension)
		}
		return q.Embedding, p.Name, nil
	}
	if q.Ranking == RankLexical {
		return nil, "", nil
	}
	vs, err := p.EmbedChecked(ctx, []string{q.Text})
	if err != nil {
		if s.Log != nil {
			s.Log.Warn("the query could not be embedded; searching lexically", "profile", p.Name, "err", err)
		}
		return nil, "", nil
	}
	return vs[0], p.Name, nil
}

// Indexes reports the lexical index and every profile's vector index.
func (s *Search) Indexes(ctx context.Context) (api.Indexes, error) {
	var st api.Indexes
	var stored int
	err := s.DB.View(ctx, func(r store.Reader) error {
		var err error
		if st.LastSeq, err = r.LastSeq(); err != nil {
			return err
		}
		c, err := r.Counts()
		stored = c.DrawersStored
		return err
	})
	if err != nil {
		return st, err
	}
	behind := func(seq uint64) uint64 { return st.LastSeq - min(seq, st.LastSeq) }
	seq := s.Indexer.Lex.Seq()
	n, _ := s.Indexer.Lex.DocCount()
	st.Lexical = api.IndexState{Seq: seq, Behind: behind(seq), Drawers: n}
	st.Vectors = map[string]api.VectorIndex{}
	if s.Vectors != nil {
		vseq := s.Vectors.Position()
		saved := s.Vectors.SavedSeq()
		for name := range s.Vectors.Profiles {
			st.Vectors[name] = api.VectorIndex{
				IndexState: api.IndexState{Seq: vseq, Behind: behind(vseq), Drawers: uint64(s.Vectors.Index(name).Len())},
				SavedSeq:   saved}
		}
		st.Serving = s.Vectors.Serving()
		if from, to, ok := s.Vectors.Switching(); ok {
			st.Switch = &api.ProfileSwitch{From: from, To: to, Embedded: uint64(s.Vectors.Index(to).Len()), Total: uint64(stored)}
		}
	}
	return st, nil
}

// recovered logs a panic recovered in what, with its stack, and is the
// error the caller gets.
func (s *Search) recovered(what string, p any) error {
	if s.Log != nil {
		s.Log.Error(what+" panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	}
	return fault.Newf(fault.ServerFailed, "see the daemon log", "%s failed: %v", what, p)
}

// PlaceNames names a wing and a room by their ids, from the names cache
// hits use (reading what it lacks).
func (s *Search) PlaceNames(ctx context.Context, wingID, roomID string) (wing, room string, err error) {
	hits := []Hit{{Drawer: store.Drawer{WingID: wingID, RoomID: roomID}}}
	err = s.DB.View(ctx, func(r store.Reader) error { return s.nameHits(r, hits) })
	return hits[0].WingName, hits[0].RoomName, err
}

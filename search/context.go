package search

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/extract"
	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/index/vector"
	"github.com/loci-dev/loci/search/rank"
	"github.com/loci-dev/loci/store"
)

// The auto ranking's fusions (config.Search.Fusion).
const (
	// FusionScores adds the legs' scores: BM25 over the best BM25 of the
	// candidates, plus semantic_weight times the cosine similarity.
	FusionScores = "scores"
	// FusionRRF fuses the legs' ranks by weighted reciprocal rank.
	FusionRRF = "rrf"
)

// autoCand is one candidate of the auto ranking.
type autoCand struct {
	id         string
	d          *store.Drawer
	bm25       float64 // 0 when the lexical leg did not list it
	cos        float64 // 0 when it has no vector
	lexRank    int     // in the lexical leg, 0 when not listed
	semRank    int     // in the semantic leg, 0 when not listed
	base       float64 // its own score
	score      float64 // base plus what its context adds
	neighbour  string  // the neighbour that added the most
	added      float64
	neighbours []string
	// checked: offers was read; offers: the drawer holds an answer of the
	// kind the question asks for (extract.Offers).
	checked, offers bool
}

// autoRank builds the page of the auto ranking (config.Search): the
// legs' candidates and, with context on, their neighbours (the drawers
// filed just before and after each in its room; for a drawer of a mined
// document, only chunks of the same document), each scored by the legs
// and then with the best score among its neighbours times
// context_weight, so that a turn of a conversation is found by the words
// of the turns around it. A neighbour no leg listed joins when it passes
// every filter of the query. Results stay verbatim: only their order
// changes. Best first, ties by drawer id.
func (s *Search) autoRank(v *searchView, lex []lexical.Hit, sem []vector.Hit, profile string, qvec []float32, limit int) ([]Hit, error) {
	cfg := s.Auto
	// A drawer no nearer the query than an unrelated text is no match.
	for len(sem) > 0 && sem[len(sem)-1].Score <= 0 {
		sem = sem[:len(sem)-1]
	}
	if cfg.SemanticWeight <= 0 {
		sem = nil
	}
	byID := map[string]*autoCand{}
	var cands []*autoCand
	add := func(id string, d *store.Drawer) *autoCand {
		c := byID[id]
		if c == nil {
			c = &autoCand{id: id, d: d}
			byID[id] = c
			cands = append(cands, c)
		}
		return c
	}
	for i, h := range lex {
		c := add(h.ID, v.found[h.ID])
		c.bm25, c.lexRank = h.Score, i+1
	}
	for i, h := range sem {
		c := add(h.ID, v.found[h.ID])
		c.cos, c.semRank = float64(h.Score), i+1
	}
	legs := len(cands)
	// Every candidate's cosine, then its own score.
	cosines := func(cs []*autoCand) {
		if sem == nil || qvec == nil {
			return
		}
		var ids []string
		for _, c := range cs {
			if c.semRank == 0 {
				ids = append(ids, c.id)
			}
		}
		if ix := s.Vectors.Index(profile); ix != nil && len(ids) > 0 {
			if hits, err := ix.ExactAmong(qvec, len(ids), ids); err == nil {
				for _, h := range hits {
					byID[h.ID].cos = max(0, float64(h.Score))
				}
			}
		}
	}
	cosines(cands)
	kind := ""
	if cfg.AnswerWeight > 0 {
		kind = extract.QuestionKind(v.q.Text)
	}
	offers := func() {
		for _, c := range cands {
			if kind != "" && !c.checked && c.d != nil {
				c.checked, c.offers = true, extract.Offers(c.d.Content, kind)
			}
		}
	}
	offers()
	s.baseScores(cands, lex, sem)
	// Context: the neighbours of the best candidates (three pages' worth:
	// a drawer further down is rarely lifted onto the page by its
	// neighbours, and reading theirs cost most of a search).
	var lifted []*autoCand
	if cfg.ContextWeight > 0 && cfg.ContextWindow > 0 && legs > 0 {
		lifted = slices.Clone(cands)
		slices.SortFunc(lifted, func(a, b *autoCand) int {
			if a.base != b.base {
				return cmp.Compare(b.base, a.base)
			}
			return cmp.Compare(a.id, b.id)
		})
		lifted = lifted[:min(len(lifted), max(3*limit, 30))]
		ds := make([]*store.Drawer, len(lifted))
		for i, c := range lifted {
			ds[i] = c.d
		}
		v.mu.Lock()
		near, err := v.r.Neighbours(ds, cfg.ContextWindow)
		if err == nil {
			err = chunkNeighbours(v.r, ds, near, cfg.ContextWindow)
		}
		v.mu.Unlock()
		if err != nil {
			return nil, err
		}
		var extra []string
		seen := map[string]bool{}
		for i, ns := range near {
			lifted[i].neighbours = ns
			for _, id := range ns {
				if byID[id] == nil && !seen[id] {
					seen[id] = true
					extra = append(extra, id)
				}
			}
		}
		slices.Sort(extra)
		kept := v.keep(extra, v.found, v.passes)
		var added []*autoCand
		for i, id := range extra {
			if kept[i] {
				added = append(added, add(id, v.found[id]))
			}
		}
		cosines(added)
		offers()
		s.baseScores(cands, lex, sem)
	}
	for _, c := range cands {
		c.score = c.base
	}
	if cfg.ContextWeight > 0 {
		for _, c := range lifted {
			for _, id := range c.neighbours {
				n := byID[id]
				if n == nil || c.d == nil || n.d == nil || c.d.Source.URI != n.d.Source.URI {
					continue
				}
				// Both ways: a candidate lifts its neighbour and is lifted
				// by it (the neighbours of a neighbour-only candidate are
				// not read).
				for _, p := range [][2]*autoCand{{c, n}, {n, c}} {
					if a := cfg.ContextWeight * p[0].base; a > p[1].added {
						p[1].added, p[1].neighbour = a, p[0].id
					}
				}
			}
		}
		for _, c := range cands {
			c.score = c.base + c.added
		}
	}
	slices.SortFunc(cands, func(a, b *autoCand) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]Hit, 0, min(limit, len(cands)))
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		if c.d == nil || c.score <= 0 {
			continue
		}
		signals := &api.HitSignals{}
		if c.lexRank > 0 {
			h := lex[c.lexRank-1]
			signals.Lexical = &api.LexicalSignal{Rank: c.lexRank, Score: h.Score, AllWords: h.AllWords}
		}
		if c.semRank > 0 {
			signals.Semantic = &api.SemanticSignal{Rank: c.semRank, Similarity: sem[c.semRank-1].Score}
		}
		if c.neighbour != "" && c.added > 0 {
			signals.Context = &api.ContextSignal{Neighbour: c.neighbour, Added: c.added}
		}
		out = append(out, Hit{Drawer: *c.d, Score: c.score, Signals: signals})
	}
	return out, nil
}

// chunkNeighbours adds to near, for each mined transcript drawer of ds,
// the chunks up to n before and after it in its session as last filed: a
// session that grew was filed a mine at a time, its new turns after other
// sessions' chunks (or other drawers of the room), so the drawers filed
// just before and after a chunk are not always the turns around it.
func chunkNeighbours(r store.Reader, ds []*store.Drawer, near [][]string, n int) error {
	for i, d := range ds {
		if d == nil || d.Source.Kind != store.KindTranscript {
			continue
		}
		if _, chunk := store.ChunkPlace(d.Source); chunk == 0 {
			continue
		}
		src, doc, err := r.ChunkOwner(d.ID)
		if err != nil {
			return err
		}
		if src == "" {
			continue
		}
		st, err := r.SourceDocument(src, doc)
		if err != nil {
			return err
		}
		if st == nil {
			continue
		}
		at := slices.IndexFunc(st.Chunks, func(c store.ChunkState) bool { return c.Drawer == d.ID })
		if at < 0 {
			continue
		}
		for j := max(0, at-n); j <= min(len(st.Chunks)-1, at+n); j++ {
			if id := st.Chunks[j].Drawer; j != at && !slices.Contains(near[i], id) {
				near[i] = append(near[i], id)
			}
		}
	}
	return nil
}

// baseScores sets each candidate's own score by the configured fusion.
func (s *Search) baseScores(cands []*autoCand, lex []lexical.Hit, sem []vector.Hit) {
	w := s.Auto.SemanticWeight
	for _, c := range cands {
		c.base = 0
	}
	if s.Auto.Fusion == FusionRRF {
		k := s.Auto.FusionK
		if k <= 0 {
			k = rank.K
		}
		for _, c := range cands {
			if c.lexRank > 0 {
				c.base += 1 / float64(k+c.lexRank)
			}
			if c.semRank > 0 {
				c.base += w / float64(k+c.semRank)
			}
		}
		return
	}
	top := 0.0
	for _, h := range lex {
		top = max(top, h.Score)
	}
	for _, c := range cands {
		if top > 0 {
			c.base = c.bm25 / top
		}
		c.base += w * c.cos
		if c.offers {
			c.base *= 1 + s.Auto.AnswerWeight
		}
	}
}

// feedback is pseudo-relevance feedback (RM3-like): the words that weigh
// most in the lexical leg's best drawers (by BM25 share × frequency in the
// drawer × IDF), the query's own left out, searched as a second query;
// its BM25 scores (half as deep: the words are secondary), scaled to the
// first query's and times weight, are added to the first's. terms 0: none.
func (s *Search) feedback(ctx context.Context, v *searchView, f lexical.Filter, lex []lexical.Hit, depth, docs, terms int, weight float64) ([]lexical.Hit, error) {
	if terms <= 0 || weight <= 0 || len(lex) == 0 {
		return lex, nil
	}
	own := map[string]bool{}
	for _, w := range embed.Words(v.q.Text) {
		own[w] = true
	}
	top := lex[0].Score
	tf := map[string]float64{}
	for _, h := range lex[:min(docs, len(lex))] {
		d := v.found[h.ID]
		if d == nil || top <= 0 {
			continue
		}
		words := embed.Words(d.Content)
		for _, w := range words {
			if !own[w] && len(w) > 2 {
				tf[w] += h.Score / top / float64(len(words))
			}
		}
	}
	words := make([]string, 0, len(tf))
	for w := range tf {
		words = append(words, w)
	}
	slices.Sort(words)
	n, dfs := s.Indexer.Lex.DocFreqs(words)
	type tw struct {
		w string
		x float64
	}
	var ws []tw
	for i, w := range words {
		df := float64(min(dfs[i], n))
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		if df < 2 {
			continue // a word of one drawer says nothing of the others
		}
		ws = append(ws, tw{w, tf[w] * idf})
	}
	slices.SortFunc(ws, func(a, b tw) int {
		if a.x != b.x {
			return cmp.Compare(b.x, a.x)
		}
		return cmp.Compare(a.w, b.w)
	})
	var exp []string
	for _, t := range ws[:min(terms, len(ws))] {
		exp = append(exp, t.w)
	}
	if len(exp) == 0 {
		return lex, nil
	}
	more, err := s.Indexer.Lex.SearchBM25(ctx, strings.Join(exp, " "), f, max(depth/2, 10), v.keepLex)
	if err != nil || len(more) == 0 {
		return lex, err
	}
	scale := weight * top / more[0].Score
	at := map[string]int{}
	out := slices.Clone(lex)
	for i, h := range out {
		at[h.ID] = i
	}
	for _, h := range more {
		if i, ok := at[h.ID]; ok {
			out[i].Score += scale * h.Score
		} else {
			out = append(out, lexical.Hit{ID: h.ID, Score: scale * h.Score})
		}
	}
	slices.SortStableFunc(out, func(a, b lexical.Hit) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out[:min(len(out), depth)], nil
}

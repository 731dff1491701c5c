package search

import (
	"context"
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
	byID := map[string]*rank.Cand{}
	var cands []*rank.Cand
	add := func(id string, d *store.Drawer) *rank.Cand {
		c := byID[id]
		if c == nil {
			c = &rank.Cand{ID: id, Found: d != nil}
			if d != nil {
				c.Doc = d.Source.URI
			}
			byID[id] = c
			cands = append(cands, c)
		}
		return c
	}
	for i, h := range lex {
		c := add(h.ID, v.found[h.ID])
		c.BM25, c.LexRank = h.Score, i+1
	}
	for i, h := range sem {
		c := add(h.ID, v.found[h.ID])
		c.Cos, c.SemRank = float64(h.Score), i+1
	}
	legs := len(cands)
	// Every candidate's cosine, then its own score.
	cosines := func(cs []*rank.Cand) {
		if sem == nil || qvec == nil {
			return
		}
		var ids []string
		for _, c := range cs {
			if c.SemRank == 0 {
				ids = append(ids, c.ID)
			}
		}
		if ix := s.Vectors.Index(profile); ix != nil && len(ids) > 0 {
			if hits, err := ix.ExactAmong(qvec, len(ids), ids); err == nil {
				for _, h := range hits {
					byID[h.ID].Cos = max(0, float64(h.Score))
				}
			}
		}
	}
	cosines(cands)
	kind := ""
	if cfg.AnswerWeight > 0 {
		kind = extract.QuestionKind(v.q.Text)
	}
	checked := map[string]bool{}
	offers := func() {
		for _, c := range cands {
			if d := v.found[c.ID]; kind != "" && !checked[c.ID] && c.Found && d != nil {
				checked[c.ID], c.Offers = true, extract.Offers(d.Content, kind)
			}
		}
	}
	offers()
	fusion := rank.Fusion{RRF: cfg.Fusion == rank.MethodRRF, K: cfg.FusionK, SemanticWeight: cfg.SemanticWeight, AnswerWeight: cfg.AnswerWeight}
	top := 0.0
	for _, h := range lex {
		top = max(top, h.Score)
	}
	rank.BaseScores(cands, top, fusion)
	// Context: the neighbours of the best candidates (three pages' worth:
	// a drawer further down is rarely lifted onto the page by its
	// neighbours, and reading theirs cost most of a search).
	var lifted []*rank.Cand
	if cfg.ContextWeight > 0 && cfg.ContextWindow > 0 && legs > 0 {
		lifted = rank.Best(cands, max(3*limit, 30))
		ds := make([]*store.Drawer, len(lifted))
		for i, c := range lifted {
			if c.Found {
				ds[i] = v.found[c.ID]
			}
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
			lifted[i].Neighbours = ns
			for _, id := range ns {
				if byID[id] == nil && !seen[id] {
					seen[id] = true
					extra = append(extra, id)
				}
			}
		}
		slices.Sort(extra)
		kept := v.keep(extra, v.found, v.passes)
		var added []*rank.Cand
		for i, id := range extra {
			if kept[i] {
				added = append(added, add(id, v.found[id]))
			}
		}
		cosines(added)
		offers()
		rank.BaseScores(cands, top, fusion)
	}
	rank.Context(cands, lifted, byID, cfg.ContextWeight)
	rank.Order(cands)
	out := make([]Hit, 0, min(limit, len(cands)))
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		d := v.found[c.ID]
		if !c.Found || d == nil || c.Score <= 0 {
			continue
		}
		signals := &api.HitSignals{}
		if c.LexRank > 0 {
			h := lex[c.LexRank-1]
			signals.Lexical = &api.LexicalSignal{Rank: c.LexRank, Score: h.Score, AllWords: h.AllWords}
		}
		if c.SemRank > 0 {
			signals.Semantic = &api.SemanticSignal{Rank: c.SemRank, Similarity: sem[c.SemRank-1].Score}
		}
		if c.Neighbour != "" && c.Added > 0 {
			signals.Context = &api.ContextSignal{Neighbour: c.Neighbour, Added: c.Added}
		}
		out = append(out, Hit{Drawer: *d, Score: c.Score, Signals: signals})
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

// feedback is pseudo-relevance feedback (RM3-like): the words that weigh
// most in the lexical leg's best drawers (by BM25 share × frequency in the
// drawer × IDF), the query's own left out, searched as a second query;
// its BM25 scores (half as deep: the words are secondary), scaled to the
// first query's and times weight, are added to the first's. terms 0: none.
func (s *Search) feedback(ctx context.Context, v *searchView, f lexical.Filter, lex []lexical.Hit, depth, docs, terms int, weight float64) ([]lexical.Hit, error) {
	if terms <= 0 || weight <= 0 || len(lex) == 0 {
		return lex, nil
	}
	var best []rank.FeedbackDoc
	for _, h := range lex[:min(docs, len(lex))] {
		if d := v.found[h.ID]; d != nil {
			best = append(best, rank.FeedbackDoc{Score: h.Score, Words: embed.Words(d.Content)})
		}
	}
	exp := rank.FeedbackTerms(embed.Words(v.q.Text), best, lex[0].Score, s.Indexer.Lex.DocFreqs, terms)
	if len(exp) == 0 {
		return lex, nil
	}
	more, err := s.Indexer.Lex.SearchBM25(ctx, strings.Join(exp, " "), f, max(depth/2, 10), v.keepLex)
	if err != nil || len(more) == 0 {
		return lex, err
	}
	hit := map[string]lexical.Hit{}
	for _, h := range lex {
		hit[h.ID] = h
	}
	out := make([]lexical.Hit, 0, depth)
	for _, it := range rank.AddFeedback(lexItems(lex), lexItems(more), weight, depth) {
		h, ok := hit[it.ID]
		if !ok {
			h = lexical.Hit{ID: it.ID}
		}
		h.Score = it.Score
		out = append(out, h)
	}
	return out, nil
}

// lexItems is a lexical leg's list as fusion reads it.
func lexItems(hits []lexical.Hit) []rank.Item {
	out := make([]rank.Item, len(hits))
	for i, h := range hits {
		out[i] = rank.Item{ID: h.ID, Score: h.Score}
	}
	return out
}

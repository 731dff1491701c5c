package rank

import (
	"cmp"
	"math"
	"slices"
)

// FeedbackDoc is one of the lexical leg's best drawers as feedback reads
// it: its BM25 score and its words (embed.Words).
type FeedbackDoc struct {
	Score float64
	Words []string
}

// FeedbackTerms picks pseudo-relevance feedback's terms (RM3-like): the
// words that weigh most in docs, by BM25 share (a doc's score over top)
// times frequency in the doc times IDF, at most terms of them, best
// first, ties by word. The query's own words (own) and words of two
// letters or fewer are left out, and so is a word of fewer than two
// drawers (it says nothing of the others). df gives the palace's drawer
// count and each word's document frequency.
func FeedbackTerms(own []string, docs []FeedbackDoc, top float64, df func(words []string) (uint64, []uint64), terms int) []string {
	skip := map[string]bool{}
	for _, w := range own {
		skip[w] = true
	}
	tf := map[string]float64{}
	for _, d := range docs {
		if top <= 0 {
			continue
		}
		for _, w := range d.Words {
			if !skip[w] && len(w) > 2 {
				tf[w] += d.Score / top / float64(len(d.Words))
			}
		}
	}
	words := make([]string, 0, len(tf))
	for w := range tf {
		words = append(words, w)
	}
	slices.Sort(words)
	n, dfs := df(words)
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
	var out []string
	for _, t := range ws[:min(terms, len(ws))] {
		out = append(out, t.w)
	}
	return out
}

// AddFeedback adds the feedback query's list (more, best first) to the
// first query's (lex, best first): more's scores, scaled so that its best
// is weight times lex's best, are added to the same ids' and the others
// join; best first, ties by id, at most depth. lex is left as it is.
func AddFeedback(lex, more []Item, weight float64, depth int) []Item {
	if len(lex) == 0 || len(more) == 0 {
		return lex
	}
	scale := weight * lex[0].Score / more[0].Score
	at := map[string]int{}
	out := slices.Clone(lex)
	for i, h := range out {
		at[h.ID] = i
	}
	for _, h := range more {
		if i, ok := at[h.ID]; ok {
			out[i].Score += scale * h.Score
		} else {
			out = append(out, Item{ID: h.ID, Score: scale * h.Score})
		}
	}
	slices.SortStableFunc(out, func(a, b Item) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out[:min(len(out), depth)]
}

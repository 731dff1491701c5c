package rank

import (
	"cmp"
	"slices"
)

// Cand is one candidate of the auto ranking: what the legs said of it,
// and the scores the ranking gives it.
type Cand struct {
	ID string
	// Found: its drawer was read and passes the query (a candidate
	// without one is scored but never listed nor lends context).
	Found bool
	// Doc is its drawer's source URI: context is lent only within one.
	Doc     string
	BM25    float64 // 0 when the lexical leg did not list it
	Cos     float64 // 0 when it has no vector
	LexRank int     // in the lexical leg, 0 when not listed
	SemRank int     // in the semantic leg, 0 when not listed
	// Offers: the drawer holds an answer of the kind the question asks
	// for (extract.Offers).
	Offers bool
	Base   float64 // its own score
	Score  float64 // Base plus what its context adds
	// Neighbour is the neighbour that added the most, Added what it added.
	Neighbour string
	Added     float64
	// Neighbours are the drawers filed around it (read for the best).
	Neighbours []string
}

// Fusion says how the auto ranking fuses the legs: by weighted
// reciprocal rank (RRF, with constant K; 0 means the package's K) or by
// scores, and the weights of the semantic leg and of an offered answer.
type Fusion struct {
	RRF            bool
	K              int
	SemanticWeight float64
	AnswerWeight   float64
}

// BaseScores sets each candidate's own score by the fusion: with RRF,
// 1/(K+lexical rank) plus SemanticWeight/(K+semantic rank); by scores,
// BM25 over top (the best BM25 of the lexical leg; 0: none) plus
// SemanticWeight times the cosine, times 1+AnswerWeight for a candidate
// that offers the answer asked for.
func BaseScores(cands []*Cand, top float64, f Fusion) {
	w := f.SemanticWeight
	for _, c := range cands {
		c.Base = 0
	}
	if f.RRF {
		k := f.K
		if k <= 0 {
			k = K
		}
		for _, c := range cands {
			if c.LexRank > 0 {
				c.Base += 1 / float64(k+c.LexRank)
			}
			if c.SemRank > 0 {
				c.Base += w / float64(k+c.SemRank)
			}
		}
		return
	}
	for _, c := range cands {
		if top > 0 {
			c.Base = c.BM25 / top
		}
		c.Base += w * c.Cos
		if c.Offers {
			c.Base *= 1 + f.AnswerWeight
		}
	}
}

// Best is the n candidates of the highest own score, ties by id (a new
// slice; cands is left as it is).
func Best(cands []*Cand, n int) []*Cand {
	out := slices.Clone(cands)
	slices.SortFunc(out, func(a, b *Cand) int {
		if a.Base != b.Base {
			return cmp.Compare(b.Base, a.Base)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out[:min(len(out), n)]
}

// Context scores every candidate: its own score plus, when weight is
// above 0, the best of weight times a neighbour's own score, both ways
// between each of lifted and its Neighbours found among byID (the
// neighbours of a neighbour-only candidate are not read), only between
// found candidates of one Doc. It records the neighbour that added the
// most.
func Context(cands, lifted []*Cand, byID map[string]*Cand, weight float64) {
	for _, c := range cands {
		c.Score = c.Base
	}
	if weight <= 0 {
		return
	}
	for _, c := range lifted {
		for _, id := range c.Neighbours {
			n := byID[id]
			if n == nil || !c.Found || !n.Found || c.Doc != n.Doc {
				continue
			}
			for _, p := range [][2]*Cand{{c, n}, {n, c}} {
				if a := weight * p[0].Base; a > p[1].Added {
					p[1].Added, p[1].Neighbour = a, p[0].ID
				}
			}
		}
	}
	for _, c := range cands {
		c.Score = c.Base + c.Added
	}
}

// Order sorts candidates best first (Score), ties by id.
func Order(cands []*Cand) {
	slices.SortFunc(cands, func(a, b *Cand) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// Fusion merges the ranked lists of a search's legs (lexical,
// semantic) into one ranking: reciprocal rank fusion for a hybrid search,
// or one leg's order as it is. It knows nothing of drawers: lists of ids,
// best first.

package rank

import "sort"

// Item is one entry of a leg's ranked list: an id and the leg's score.
type Item struct {
	ID    string
	Score float64
}

// Fused is one id of the fused ranking: its fused score and its rank in
// each leg (1 for the first; 0 when the leg did not list it).
type Fused struct {
	ID    string
	Score float64
	Ranks []int
}

// K is the usual constant of reciprocal rank fusion: a rank r adds
// 1/(K+r), so the first places of each leg weigh about alike.
const K = 60

// RRF fuses legs by reciprocal rank fusion: an id scores the sum over the
// legs that list it of 1/(k+rank). Higher scores first; ties by id, so the
// order never depends on map iteration.
func RRF(k int, legs ...[]Item) []Fused {
	w := make([]float64, len(legs))
	for i := range w {
		w[i] = 1
	}
	return WeightedRRF(k, w, legs...)
}

// WeightedRRF is RRF with a weight per leg: rank r of leg l adds
// weights[l]/(k+r).
func WeightedRRF(k int, weights []float64, legs ...[]Item) []Fused {
	byID := map[string]*Fused{}
	var out []*Fused
	for l, leg := range legs {
		for i, it := range leg {
			f := byID[it.ID]
			if f == nil {
				f = &Fused{ID: it.ID, Ranks: make([]int, len(legs))}
				byID[it.ID] = f
				out = append(out, f)
			}
			if f.Ranks[l] != 0 {
				continue // listed twice by one leg: its best rank counts
			}
			f.Ranks[l] = i + 1
			f.Score += weights[l] / float64(k+i+1)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	res := make([]Fused, len(out))
	for i, f := range out {
		res[i] = *f
	}
	return res
}

// Single is one leg's ranking as it is: its order and its scores (an id
// listed twice keeps its first place).
func Single(leg []Item) []Fused {
	seen := map[string]bool{}
	out := make([]Fused, 0, len(leg))
	for i, it := range leg {
		if seen[it.ID] {
			continue
		}
		seen[it.ID] = true
		out = append(out, Fused{ID: it.ID, Score: it.Score, Ranks: []int{i + 1}})
	}
	return out
}

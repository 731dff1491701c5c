package actors

import (
	"cmp"
	"slices"

	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/store"
)

// contextHit is a lexical hit of the auto ranking scored with its
// context: its own BM25 score plus weight times the best score among its
// neighbours.
type contextHit struct {
	lexical.Hit
	own       float64
	neighbour string  // the neighbour that added the most, "" for none
	added     float64 // what it added
}

// withContext scores the lexical leg's hits with their neighbours: the
// window drawers filed just before and after each in its room (for a
// drawer of a mined document, only chunks of the same document), so that
// a turn of a conversation is found by the words of the turns around it.
// A neighbour that the leg did not list joins the candidates with its
// context alone, when it passes every filter of the query. Results stay
// verbatim: only their order changes. Best first, ties by drawer id; Rank
// stays the hit's rank in the leg (0 for a neighbour it did not list).
func (v *searchView) withContext(hits []lexical.Hit, weight float64, window int) ([]contextHit, error) {
	out := make([]contextHit, len(hits))
	for i, h := range hits {
		out[i] = contextHit{Hit: h, own: h.Score}
	}
	if weight <= 0 || window <= 0 || len(hits) == 0 {
		return out, nil
	}
	ds := make([]*store.Drawer, len(hits))
	for i, h := range hits {
		ds[i] = v.lexFound[h.ID]
	}
	v.mu.Lock()
	near, err := v.r.Neighbours(ds, window)
	v.mu.Unlock()
	if err != nil {
		return nil, err
	}
	at := make(map[string]int, len(hits))
	for i, h := range hits {
		at[h.ID] = i
	}
	var extra []string
	seen := map[string]bool{}
	for _, ns := range near {
		for _, id := range ns {
			if _, ok := at[id]; !ok && !seen[id] {
				seen[id] = true
				extra = append(extra, id)
			}
		}
	}
	slices.Sort(extra)
	kept := v.keep(extra, v.lexFound, v.passes)
	for i, id := range extra {
		if kept[i] {
			at[id] = len(out)
			out = append(out, contextHit{Hit: lexical.Hit{ID: id}})
		}
	}
	for i, ns := range near {
		d := ds[i]
		for _, id := range ns {
			j, ok := at[id]
			n := v.lexFound[id]
			if !ok || d == nil || n == nil || d.Source.URI != n.Source.URI {
				continue
			}
			if add := weight * hits[i].Score; add > out[j].added {
				out[j].added, out[j].neighbour = add, hits[i].ID
			}
		}
	}
	for i := range out {
		out[i].Score = out[i].own + out[i].added
	}
	slices.SortFunc(out, func(a, b contextHit) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

package store

import (
	"sort"

	"github.com/loci-dev/loci/store/dedup"
)

// LinkNear judges the near duplicates of a drawer written while its
// scope's near-duplicate index was still loading (a write into a big room
// right after a start), and records the similar_to links its write would
// have recorded: exact and normalised copies were linked at the write, from
// their own keys; near ones are linked now, newer to older, keeping at most
// MaxLinksPerDrawer links per drawer, both sides counted (links.go). A drawer gone or no longer current is left
// alone. It returns the links made.
func LinkNear(tx Tx, id string, dd Dedup) (int, error) {
	if !dd.Enabled {
		return 0, nil
	}
	d, err := tx.Drawer(id)
	if err != nil || d == nil || !d.Current() {
		return 0, err
	}
	have, err := tx.Links(id)
	if err != nil {
		return 0, err
	}
	skip := map[string]bool{id: true}
	for _, l := range have {
		skip[l.Older], skip[l.Newer] = true, true
	}
	if len(have) >= maxLinks {
		return 0, nil
	}
	rec := newDedupRecord(d)
	judged := map[string]Judgement{}
	cands, err := judgeBands(tx, d, rec, dd.Threshold, skip, judged)
	if err != nil {
		return 0, err
	}
	type match struct {
		id  string
		sig dedup.Signals
	}
	var near []match
	for _, c := range cands {
		if j, ok := judged[c]; ok && j.Verdict == dedup.Near {
			near = append(near, match{c, j.Signals})
		}
	}
	sort.SliceStable(near, func(i, j int) bool {
		if near[i].sig.Similarity != near[j].sig.Similarity {
			return near[i].sig.Similarity > near[j].sig.Similarity
		}
		return near[i].id < near[j].id
	})
	now := tx.Now()
	links := make([]Link, 0, len(near))
	newer := map[string]bool{} // candidates written after d
	for _, m := range near {
		other, err := tx.Drawer(m.id)
		if err != nil {
			return 0, err
		}
		if other == nil {
			continue
		}
		newer[m.id] = other.CreatedAt.After(d.CreatedAt)
		links = append(links, Link{ID: NewID(), Older: m.id, Newer: id, Kind: dedup.Near, Signals: m.sig, CreatedAt: now})
	}
	// Older is the candidate's end until the links are admitted.
	if links, err = admitLinks(tx, links, maxLinks-len(have), olderEnd); err != nil {
		return 0, err
	}
	for _, l := range links {
		if newer[l.Older] {
			l.Older, l.Newer = id, l.Older
		}
		if err := tx.PutLink(&l); err != nil {
			return 0, err
		}
		if err := tx.Log(ChangeLink, ActionCreated, l.ID); err != nil {
			return 0, err
		}
	}
	return len(links), nil
}

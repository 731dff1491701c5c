package actors

import (
	"sort"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/store"
)

// expandCommon is the most drawers an entity may be mentioned by and still
// connect hits.
const expandCommon = 50

// expand appends, after the direct hits (never reordering them), up to
// limit drawers that share an entity with a hit or mention one an open
// relates_to fact away, each with a graph signal and via (the entity
// names). Expanded drawers pass the query's filters and time, and the
// hops are facts valid at the query's time.
func (s *Search) expand(v *searchView, hits []Hit, limit int) ([]Hit, error) {
	r := v.r
	at := v.from
	if at.IsZero() {
		at = time.Now().UTC()
	}
	now := time.Now().UTC()
	if v.known != nil {
		now = *v.known
	}
	// The hits' entities (hop 0), then those one fact away (hop 1).
	hop := map[string]int{}
	names := map[string]string{}
	var order []string
	note := func(id string, h int) error {
		if _, ok := hop[id]; ok {
			return nil
		}
		e, err := r.Entity(id)
		if err != nil || e == nil {
			return err
		}
		hop[id], names[id] = h, e.Name
		order = append(order, id)
		return nil
	}
	direct := map[string]bool{}
	for _, h := range hits {
		direct[h.ID] = true
		ms, err := r.DrawerMentions(h.ID)
		if err != nil {
			return hits, err
		}
		for _, m := range ms {
			if err := note(m.Entity, 0); err != nil {
				return hits, err
			}
		}
	}
	type cand struct {
		id   string
		via  []string
		hops int
		at   int // the first entity's place: earlier hits' entities first
	}
	cands := map[string]*cand{}
	gather := func(from int) error {
		for i := from; i < len(order); i++ {
			eid := order[i]
			// An entity mentioned everywhere (the speaker of every turn, the
			// project of every file) connects nothing: like a stop word, it
			// is skipped. Only the index's keys are read.
			var drawers []string
			if err := r.MentioningDrawers(eid, func(id string) bool {
				drawers = append(drawers, id)
				return len(drawers) <= expandCommon
			}); err != nil {
				return err
			}
			if len(drawers) > expandCommon {
				continue
			}
			for _, id := range drawers {
				if direct[id] {
					continue
				}
				c := cands[id]
				if c == nil {
					c = &cand{id: id, hops: hop[eid], at: i}
					cands[id] = c
				}
				c.via = append(c.via, names[eid])
				c.hops = min(c.hops, hop[eid])
			}
		}
		return nil
	}
	// Drawers sharing an entity with a hit first; one fact further only
	// when those are too few (each hop-1 entity costs a walk of its facts
	// and mentions).
	if err := gather(0); err != nil {
		return hits, err
	}
	if len(cands) < 2*limit {
		hop0 := len(order)
		for _, id := range order[:hop0:hop0] {
			err := store.OpenFacts(r, id, at, now, func(_ store.Fact, other string) (bool, error) { return true, note(other, 1) })
			if err != nil {
				return hits, err
			}
		}
		if err := gather(hop0); err != nil {
			return hits, err
		}
	}
	list := make([]*cand, 0, len(cands))
	for _, c := range cands {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		switch {
		case a.hops != b.hops:
			return a.hops < b.hops
		case len(a.via) != len(b.via):
			return len(a.via) > len(b.via)
		case a.at != b.at:
			return a.at < b.at
		}
		return a.id < b.id
	})
	q := v.q
	added := 0
	// Read the candidates a window at a time, best first.
	for start := 0; start < len(list) && added < limit; start += 2 * limit {
		window := list[start:min(start+2*limit, len(list))]
		ids := make([]string, len(window))
		for i, c := range window {
			ids[i] = c.id
		}
		ds, err := r.DrawersByID(ids)
		if err != nil {
			return hits, err
		}
		for i, c := range window {
			if added == limit {
				break
			}
			d := ds[i]
			if d == nil || !v.inTime(d) || v.wingID != "" && d.WingID != v.wingID || v.roomID != "" && d.RoomID != v.roomID ||
				q.SourceKind != "" && d.Source.Kind != q.SourceKind || !hasTags(d.Tags, q.Tags) {
				continue
			}
			hits = append(hits, Hit{Drawer: *d, Score: 0, Via: c.via,
				Signals: &api.HitSignals{Graph: &api.GraphSignal{Hops: c.hops, Entities: len(c.via)}}})
			added++
		}
	}
	return hits, nil
}

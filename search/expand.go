package search

import (
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/search/rank"
	"github.com/loci-dev/loci/store"
)

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
	reached := map[string]*rank.Reached{}
	var entities []rank.Entity
	gather := func(from int) error {
		for i := from; i < len(order); i++ {
			eid := order[i]
			// Only the index's keys are read, and no more than show the
			// entity too common (rank.ExpandCommon).
			e := rank.Entity{Name: names[eid], Hops: hop[eid]}
			if err := r.MentioningDrawers(eid, func(id string) bool {
				e.Drawers = append(e.Drawers, id)
				return len(e.Drawers) <= rank.ExpandCommon
			}); err != nil {
				return err
			}
			entities = append(entities, e)
		}
		rank.Reach(reached, entities, from, direct)
		return nil
	}
	// Drawers sharing an entity with a hit first; one fact further only
	// when those are too few (each hop-1 entity costs a walk of its facts
	// and mentions).
	if err := gather(0); err != nil {
		return hits, err
	}
	if len(reached) < 2*limit {
		hop0 := len(order)
		for _, id := range order[:hop0:hop0] {
			err := relatedEntities(r, id, at, now, func(other string) error { return note(other, 1) })
			if err != nil {
				return hits, err
			}
		}
		if err := gather(hop0); err != nil {
			return hits, err
		}
	}
	list := rank.OrderReached(reached)
	q := v.q
	added := 0
	// Read the candidates a window at a time, best first.
	for start := 0; start < len(list) && added < limit; start += 2 * limit {
		window := list[start:min(start+2*limit, len(list))]
		ids := make([]string, len(window))
		for i, c := range window {
			ids[i] = c.ID
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
			hits = append(hits, Hit{Drawer: *d, Score: 0, Via: c.Via,
				Signals: &api.HitSignals{Graph: &api.GraphSignal{Hops: c.Hops, Entities: len(c.Via)}}})
			added++
		}
	}
	return hits, nil
}

// relatedEntities visits the entities one fact away from entity id, by
// the facts that hold at t as known at now (store.Relationship.Holds),
// until fn returns an error.
func relatedEntities(r store.Reader, id string, t, now time.Time, fn func(other string) error) error {
	var inner error
	err := r.EntityRelationships(id, func(rel *store.Relationship) bool {
		holds, err := rel.Holds(r, t, now)
		if err != nil || !holds {
			inner = err
			return err == nil
		}
		other := rel.Object
		if other == id {
			other = rel.Subject
		}
		inner = fn(other)
		return inner == nil
	})
	if err == nil {
		err = inner
	}
	return err
}

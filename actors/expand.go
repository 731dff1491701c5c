package actors

import (
	"sort"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/store"
)

// expandFanOut bounds the drawers read per entity while expanding: an
// entity mentioned by thousands of drawers adds the first ones by id.
const expandFanOut = 200

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
	for _, id := range order[:len(order):len(order)] {
		var inner error
		err := r.EntityRelationships(id, func(rel *store.Relationship) bool {
			f, err := factOf(r, rel, at, now)
			if err != nil {
				inner = err
				return false
			}
			if !f.Current {
				return true
			}
			other := rel.Object
			if other == id {
				other = rel.Subject
			}
			inner = note(other, 1)
			return inner == nil
		})
		if err == nil {
			err = inner
		}
		if err != nil {
			return hits, err
		}
	}
	type cand struct {
		id   string
		via  []string
		hops int
		at   int // the first entity's place: earlier hits' entities first
	}
	cands := map[string]*cand{}
	for i, eid := range order {
		// An entity mentioned everywhere (the speaker of every turn, the
		// project of every file) connects nothing: like a stop word, it
		// is skipped.
		common := 0
		_ = r.Mentions(eid, func(*store.Mention) bool { common++; return common <= expandCommon })
		if common > expandCommon {
			continue
		}
		n := 0
		err := r.Mentions(eid, func(m *store.Mention) bool {
			if direct[m.Drawer] {
				return true
			}
			c := cands[m.Drawer]
			if c == nil {
				c = &cand{id: m.Drawer, hops: hop[eid], at: i}
				cands[m.Drawer] = c
			}
			c.via = append(c.via, names[eid])
			c.hops = min(c.hops, hop[eid])
			n++
			return n < expandFanOut
		})
		if err != nil {
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
	for _, c := range list {
		if added == limit {
			break
		}
		ds, err := r.DrawersByID([]string{c.id})
		if err != nil {
			return hits, err
		}
		d := ds[0]
		if d == nil || !v.inTime(d) || v.wingID != "" && d.WingID != v.wingID || v.roomID != "" && d.RoomID != v.roomID ||
			q.SourceKind != "" && d.Source.Kind != q.SourceKind || !hasTags(d.Tags, q.Tags) {
			continue
		}
		hits = append(hits, Hit{Drawer: *d, Score: 0, Via: c.via,
			Signals: &api.HitSignals{Graph: &api.GraphSignal{Hops: c.hops, Entities: len(c.via)}}})
		added++
	}
	return hits, nil
}

package rank

import "sort"

// ExpandCommon is the most drawers an entity may be mentioned by and
// still connect hits: one mentioned everywhere (the speaker of every
// turn, the project of every file) connects nothing, like a stop word.
const ExpandCommon = 50

// Reached is a drawer the graph expansion reached from a search's hits:
// the names of the entities it was reached through, the fewest fact hops
// (0: it shares an entity with a hit), and the place of the first entity
// (earlier hits' entities first).
type Reached struct {
	ID   string
	Via  []string
	Hops int
	At   int
}

// Entity is an entity the expansion walks from: its name, its hops from
// the hits and the drawers mentioning it (ExpandCommon+1 at most are
// read: more means too common).
type Entity struct {
	Name    string
	Hops    int
	Drawers []string
}

// Reach adds to reached the drawers that entities[from:] lead to, each
// entity's place being its index: an entity of more than ExpandCommon
// drawers is skipped, and the direct hits are never reached.
func Reach(reached map[string]*Reached, entities []Entity, from int, direct map[string]bool) {
	for i := from; i < len(entities); i++ {
		e := entities[i]
		if len(e.Drawers) > ExpandCommon {
			continue
		}
		for _, id := range e.Drawers {
			if direct[id] {
				continue
			}
			c := reached[id]
			if c == nil {
				c = &Reached{ID: id, Hops: e.Hops, At: i}
				reached[id] = c
			}
			c.Via = append(c.Via, e.Name)
			c.Hops = min(c.Hops, e.Hops)
		}
	}
}

// OrderReached lists reached drawers best first: fewest hops, then most
// entities, then the earliest entity, then by id.
func OrderReached(reached map[string]*Reached) []*Reached {
	list := make([]*Reached, 0, len(reached))
	for _, c := range reached {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		switch {
		case a.Hops != b.Hops:
			return a.Hops < b.Hops
		case len(a.Via) != len(b.Via):
			return len(a.Via) > len(b.Via)
		case a.At != b.At:
			return a.At < b.At
		}
		return a.ID < b.ID
	})
	return list
}

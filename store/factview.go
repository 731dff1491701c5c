package store

import "time"

// The knowledge graph's facts as read, for the graph service and search's
// expansion alike.

// Fact is a relationship as read: the fact, its two entities, whether it
// holds at the time asked, whether an evidence drawer is current, and
// every assertion of it (the first one, then the later ones known then).
type Fact struct {
	Relationship
	Subject, Object Entity
	Current         bool
	EvidenceCurrent bool
	Assertions      []Assertion
}

// Assertion is one assertion of a fact: its evidence drawer (and whether
// that drawer is current), job, extractor and record time. (The fact's
// confidence is the highest asserted.)
type Assertion struct {
	Drawer, Job, Extractor string
	RecordedAt             time.Time
	DrawerCurrent          bool
}

// FactOf reads a fact's entities and evidence: current at t (valid time)
// as known at now (record time).
func FactOf(r Reader, rel *Relationship, t, now time.Time) (Fact, error) {
	f := Fact{Relationship: *rel}
	for _, p := range []struct {
		id  string
		dst *Entity
	}{{rel.Subject, &f.Subject}, {rel.Object, &f.Object}} {
		e, err := r.Entity(p.id)
		if err != nil {
			return f, err
		}
		if e != nil {
			*p.dst = *e
		}
	}
	// The evidence drawers as known then: recorded, not yet closed. A
	// fact holds while one of them is current; one without a drawer
	// holds on its own.
	current := func(id string) (bool, error) { return EvidenceCurrent(r, id, now) }
	first, err := current(rel.Drawer)
	if err != nil {
		return f, err
	}
	f.EvidenceCurrent = first
	f.Assertions = []Assertion{{Drawer: rel.Drawer, Job: rel.Job, Extractor: rel.Extractor, RecordedAt: rel.RecordedAt, DrawerCurrent: first}}
	for _, e := range rel.Evidence {
		if e.RecordedAt.After(now) {
			continue
		}
		ok, err := current(e.Drawer)
		if err != nil {
			return f, err
		}
		f.EvidenceCurrent = f.EvidenceCurrent || ok
		f.Assertions = append(f.Assertions, Assertion{Drawer: e.Drawer, Job: e.Job, Extractor: e.Extractor, RecordedAt: e.RecordedAt, DrawerCurrent: ok})
	}
	f.Current = rel.CurrentAt(t, now, f.EvidenceCurrent)
	return f, nil
}

// OpenFacts visits the facts of an entity that hold at t as known at now,
// with the entity at their other end, until fn returns false or an error.
func OpenFacts(r Reader, id string, t, now time.Time, fn func(f Fact, other string) (bool, error)) error {
	var inner error
	err := r.EntityRelationships(id, func(rel *Relationship) bool {
		f, err := FactOf(r, rel, t, now)
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
		more, err := fn(f, other)
		inner = err
		return more && err == nil
	})
	if err == nil {
		err = inner
	}
	return err
}

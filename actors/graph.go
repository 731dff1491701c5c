package actors

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/graph"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
	"github.com/loci-dev/loci/store/fault"
)

// Graph is the knowledge graph's service shared by every interface:
// entities, their aliases, candidates and mentions.
type Graph struct {
	DB  store.DB
	Sys *System
	// Fuzzy is dedup.entity_fuzzy: the typo and resemblance rules.
	Fuzzy bool
}

// EntityFilter narrows GET /api/entities: a name containing Name (any
// case), of Kind, at most Limit.
type EntityFilter struct {
	Name, Kind string
	Limit      int
}

// Entities lists entities by name; truncated reports more past Limit.
func (g *Graph) Entities(ctx context.Context, f EntityFilter) (out []store.Entity, truncated bool, err error) {
	if f.Kind != "" && !graph.CheckKind(f.Kind) {
		return nil, false, fault.Invalid("kind", "is not one of "+strings.Join(graph.Kinds, ", "))
	}
	needle := strings.ToLower(f.Name)
	err = g.DB.View(ctx, func(r store.Reader) error {
		return r.Entities(func(e *store.Entity) bool {
			if f.Kind != "" && e.Kind != f.Kind || needle != "" && !strings.Contains(strings.ToLower(e.Name), needle) {
				return true
			}
			if len(out) == f.Limit {
				truncated = true
				return false
			}
			out = append(out, *e)
			return true
		})
	})
	return out, truncated, err
}

// Entity is one entity, or loci::graph::entity_not_found.
func (g *Graph) Entity(ctx context.Context, id string) (*store.Entity, error) {
	var e *store.Entity
	err := g.DB.View(ctx, func(r store.Reader) error {
		var err error
		e, err = entityIn(r, id)
		return err
	})
	return e, err
}

func entityIn(r store.Reader, id string) (*store.Entity, error) {
	e, err := r.Entity(id)
	if err == nil && e == nil {
		err = fault.Newf(fault.GraphEntityNotFound, "list the entities (GET /api/entities, loci entity list) to see their ids", "no entity %s", id)
	}
	return e, err
}

// AddAlias records another spelling of an entity.
func (g *Graph) AddAlias(ctx context.Context, id, alias string) (*store.Entity, error) {
	v, err := g.Sys.Write(ctx, func(tx store.Tx) (any, error) { return store.AddAlias(tx, id, alias) })
	if err != nil {
		return nil, err
	}
	return v.(*store.Entity), nil
}

// LinkMention links a drawer to the entity a name resolves to (created if
// none converges); linked is false when it already was.
func (g *Graph) LinkMention(ctx context.Context, drawer, name, kind, origin string) (*store.Mention, *store.Entity, bool, error) {
	type out struct {
		m      *store.Mention
		e      *store.Entity
		linked bool
	}
	v, err := g.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		m, e, linked, err := store.LinkMention(tx, drawer, name, kind, g.Fuzzy, "manual", origin, 1)
		return out{m, e, linked}, err
	})
	if err != nil {
		return nil, nil, false, err
	}
	o := v.(out)
	return o.m, o.e, o.linked, nil
}

// Mentions is the mentions of an entity, by drawer id.
func (g *Graph) Mentions(ctx context.Context, id string) ([]store.Mention, error) {
	var out []store.Mention
	err := g.DB.View(ctx, func(r store.Reader) error {
		if _, err := entityIn(r, id); err != nil {
			return err
		}
		return r.Mentions(id, func(m *store.Mention) bool { out = append(out, *m); return true })
	})
	return out, err
}

// Candidate is an entity another one resembles (side "to": this entity
// was linked to it when made) or that resembles it (side "from"), with the
// edit similarity of their keys.
type Candidate struct {
	Entity     store.Entity
	Side       string
	Similarity float64
}

// Candidates is the entities linked possibly_same_as to or from one.
func (g *Graph) Candidates(ctx context.Context, id string) ([]Candidate, error) {
	var out []Candidate
	err := g.DB.View(ctx, func(r store.Reader) error {
		e, err := entityIn(r, id)
		if err != nil {
			return err
		}
		links, err := r.EntityLinks(id)
		if err != nil {
			return err
		}
		for _, l := range links {
			if l.Kind != graph.PossiblySameAs {
				continue
			}
			other, side := l.To, "to"
			if l.To == id {
				other, side = l.From, "from"
			}
			o, err := r.Entity(other)
			if err != nil || o == nil {
				continue
			}
			out = append(out, Candidate{Entity: *o, Side: side, Similarity: dedup.Similarity(e.Key, o.Key, 0)})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Similarity > out[j].Similarity })
	return out, err
}

// Fact is a relationship as read: the fact, its two entities, whether it
// holds at the time asked, and whether its evidence drawer is current.
type Fact struct {
	store.Relationship
	Subject, Object store.Entity
	Current         bool
	EvidenceCurrent bool
}

// Relationships is an entity's facts: those current now (default), all of
// them (includeExpired), or those valid at asOf; knownAt answers as loci
// would have then (facts recorded by then and not retracted by then).
func (g *Graph) Relationships(ctx context.Context, id string, includeExpired bool, asOf, knownAt *time.Time) ([]Fact, error) {
	var out []Fact
	now, at := instants(asOf, knownAt)
	err := g.DB.View(ctx, func(r store.Reader) error {
		if _, err := entityIn(r, id); err != nil {
			return err
		}
		var inner error
		err := r.EntityRelationships(id, func(rel *store.Relationship) bool {
			f, err := factOf(r, rel, at, now)
			if err != nil {
				inner = err
				return false
			}
			if includeExpired || f.Current {
				out = append(out, f)
			}
			return true
		})
		if err == nil {
			err = inner
		}
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ValidFrom.Before(out[j].ValidFrom) })
	return out, err
}

// instants are the record time a read answers at (knownAt, default now)
// and the valid time it asks about (asOf, default that record time).
func instants(asOf, knownAt *time.Time) (known, at time.Time) {
	known = time.Now().UTC()
	if knownAt != nil {
		known = *knownAt
	}
	at = known
	if asOf != nil {
		at = *asOf
	}
	return known, at
}

// factOf reads a fact's entities and evidence: current at t (valid time)
// as known at now (record time).
func factOf(r store.Reader, rel *store.Relationship, t, now time.Time) (Fact, error) {
	f := Fact{Relationship: *rel}
	for _, p := range []struct {
		id  string
		dst *store.Entity
	}{{rel.Subject, &f.Subject}, {rel.Object, &f.Object}} {
		e, err := r.Entity(p.id)
		if err != nil {
			return f, err
		}
		if e != nil {
			*p.dst = *e
		}
	}
	if rel.Drawer != "" {
		d, err := r.Drawer(rel.Drawer)
		if err != nil {
			return f, err
		}
		// The evidence drawer as known then: recorded, not yet closed.
		f.EvidenceCurrent = d != nil && !d.CreatedAt.After(now) && (d.ValidTo == nil || d.ValidTo.After(now))
	} else {
		f.EvidenceCurrent = true
	}
	f.Current = rel.CurrentAt(t, now, f.EvidenceCurrent)
	return f, nil
}

// FactHistory is a fact with the facts linked to it: what it superseded
// and what superseded it, and the confirmations, contradictions and
// refinements, each with the decision (the link) and its evidence.
type FactHistory struct {
	Fact    Fact
	Related []RelatedFact
}

// RelatedFact is one fact of a history and how it relates.
type RelatedFact struct {
	Fact Fact
	// Relation is supersedes, superseded_by, or a link kind with Side
	// (from: the related fact links to this one; to: this one links to
	// it).
	Relation, Side, Reason, Drawer string
}

// History is a fact's history, judged at asOf (valid time; nil: now).
func (g *Graph) History(ctx context.Context, id string, asOf, knownAt *time.Time) (FactHistory, error) {
	var h FactHistory
	now, at := instants(asOf, knownAt)
	err := g.DB.View(ctx, func(r store.Reader) error {
		rel, err := r.Relationship(id)
		if err != nil {
			return err
		}
		if rel == nil {
			return fault.Newf(fault.GraphRelationshipNotFound, "read an entity's relationships (GET /api/entities/{id}/relationships, loci graph --entity ID) to see their ids",
				"no relationship %s", id)
		}
		if h.Fact, err = factOf(r, rel, at, now); err != nil {
			return err
		}
		add := func(otherID, relation, side, reason, drawer string) error {
			o, err := r.Relationship(otherID)
			if err != nil || o == nil {
				return err
			}
			f, err := factOf(r, o, at, now)
			if err != nil {
				return err
			}
			h.Related = append(h.Related, RelatedFact{Fact: f, Relation: relation, Side: side, Reason: reason, Drawer: drawer})
			return nil
		}
		if rel.SupersededBy != "" {
			if err := add(rel.SupersededBy, "superseded_by", "", rel.Reason, rel.ClosedBy); err != nil {
				return err
			}
		}
		// What this one superseded: a fact of the same subject whose
		// successor is this one.
		var before []string
		_ = r.EntityRelationships(rel.Subject, func(o *store.Relationship) bool {
			if o.SupersededBy == rel.ID {
				before = append(before, o.ID)
			}
			return true
		})
		for _, b := range before {
			o, _ := r.Relationship(b)
			if err := add(b, "supersedes", "", o.Reason, o.ClosedBy); err != nil {
				return err
			}
		}
		links, err := r.RelationshipLinks(rel.ID)
		if err != nil {
			return err
		}
		for _, l := range links {
			other, side := l.To, "to"
			if l.To == rel.ID {
				other, side = l.From, "from"
			}
			if err := add(other, l.Kind, side, l.Reason, l.Drawer); err != nil {
				return err
			}
		}
		return nil
	})
	return h, err
}

// Neighbourhood is GET /api/graph: entities (nodes) and the open facts
// among them (edges).
type Neighbourhood struct {
	Nodes     []store.Entity
	Edges     []Fact
	Truncated bool
}

// Neighbourhood walks the open (current) facts from an entity, both
// directions, depth hops out, at most limit nodes; without an entity it
// takes the first limit entities by name and the open facts among them.
func (g *Graph) Neighbourhood(ctx context.Context, entity string, depth, limit int, knownAt *time.Time) (Neighbourhood, error) {
	var n Neighbourhood
	now, _ := instants(nil, knownAt)
	err := g.DB.View(ctx, func(r store.Reader) error {
		seen := map[string]bool{}
		edges := map[string]bool{}
		add := func(e *store.Entity) bool {
			if seen[e.ID] {
				return true
			}
			if len(n.Nodes) == limit {
				n.Truncated = true
				return false
			}
			seen[e.ID] = true
			n.Nodes = append(n.Nodes, *e)
			return true
		}
		if entity == "" {
			if err := r.Entities(func(e *store.Entity) bool { return add(e) }); err != nil {
				return err
			}
			for _, e := range n.Nodes {
				err := r.EntityRelationships(e.ID, func(rel *store.Relationship) bool {
					if !edges[rel.ID] && seen[rel.Subject] && seen[rel.Object] {
						if f, err := factOf(r, rel, now, now); err == nil && f.Current {
							edges[rel.ID] = true
							n.Edges = append(n.Edges, f)
						}
					}
					return true
				})
				if err != nil {
					return err
				}
			}
			return nil
		}
		start, err := entityIn(r, entity)
		if err != nil {
			return err
		}
		add(start)
		frontier := []string{start.ID}
		for hop := 0; hop < depth && len(frontier) > 0 && !n.Truncated; hop++ {
			var next []string
			for _, id := range frontier {
				err := openFacts(r, id, now, now, func(f Fact, other string) (bool, error) {
					if edges[f.ID] {
						return true, nil
					}
					if !seen[other] {
						o, err := r.Entity(other)
						if err != nil || o == nil {
							return err == nil, err
						}
						if !add(o) {
							return false, nil
						}
						next = append(next, other)
					}
					edges[f.ID] = true
					n.Edges = append(n.Edges, f)
					return true, nil
				})
				if err != nil {
					return err
				}
			}
			frontier = next
		}
		return nil
	})
	return n, err
}

// openFacts visits the facts of an entity that hold at t as known at now,
// with the entity at their other end, until fn returns false or an error.
func openFacts(r store.Reader, id string, t, now time.Time, fn func(f Fact, other string) (bool, error)) error {
	var inner error
	err := r.EntityRelationships(id, func(rel *store.Relationship) bool {
		f, err := factOf(r, rel, t, now)
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

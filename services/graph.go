package services

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
	"github.com/loci-dev/loci/store/graph"
)

// Graph is the knowledge graph's service shared by every interface:
// entities, their aliases, candidates and mentions.
type Graph struct {
	DB  store.DB
	Sys *actors.System
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

// Fact is a relationship as read (store.Fact).
type Fact = store.Fact

// Assertion is one assertion of a fact (store.Assertion).
type Assertion = store.Assertion

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
			f, err := store.FactOf(r, rel, at, now)
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
		if h.Fact, err = store.FactOf(r, rel, at, now); err != nil {
			return err
		}
		add := func(otherID, relation, side, reason, drawer string) error {
			o, err := r.Relationship(otherID)
			if err != nil || o == nil {
				return err
			}
			f, err := store.FactOf(r, o, at, now)
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
// among them (edges), from Start when one was asked for.
type Neighbourhood struct {
	Start     *store.Entity
	Nodes     []store.Entity
	Edges     []Fact
	Truncated bool
}

// FindEntity resolves an entity by id or by name: the entities of the
// name's key (case, punctuation and spacing aside; the one spelled
// exactly first, then the one with the most open facts), else an alias,
// else the one entity whose name contains it (any case, as the entity
// list's name search). Several containing it is loci::input::invalid
// naming them; none is loci::graph::entity_not_found.
func (g *Graph) FindEntity(ctx context.Context, ref string) (*store.Entity, error) {
	var e *store.Entity
	err := g.DB.View(ctx, func(r store.Reader) error {
		var err error
		e, err = findEntity(r, ref, time.Now().UTC())
		return err
	})
	return e, err
}

func findEntity(r store.Reader, ref string, now time.Time) (*store.Entity, error) {
	if id, ok := store.CanonicalUUID(ref); ok {
		return entityIn(r, id)
	}
	name := strings.TrimSpace(ref)
	if name == "" {
		return nil, fault.Invalid("entity", "is blank: give an entity's name or id")
	}
	byIndex := func(index store.EntityIndex, v string) ([]*store.Entity, error) {
		ids, err := r.EntityIDs(index, v)
		var out []*store.Entity
		for _, id := range ids {
			if err != nil {
				break
			}
			var e *store.Entity
			if e, err = r.Entity(id); e != nil {
				out = append(out, e)
			}
		}
		return out, err
	}
	key := graph.Key(name)
	for _, index := range []store.EntityIndex{store.EntityByKey, store.EntityByAlias} {
		es, err := byIndex(index, key)
		if err != nil || len(es) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		best, bestFacts := es[0], -1
		for _, e := range es {
			if e.Name == name {
				return e, nil
			}
			n, err := openFactCount(r, e.ID, now)
			if err != nil {
				return nil, err
			}
			if n > bestFacts {
				best, bestFacts = e, n
			}
		}
		return best, nil
	}
	needle := strings.ToLower(name)
	var found []store.Entity
	err := r.Entities(func(e *store.Entity) bool {
		if strings.Contains(strings.ToLower(e.Name), needle) {
			found = append(found, *e)
		}
		return len(found) <= 5
	})
	switch {
	case err != nil:
		return nil, err
	case len(found) == 1:
		return &found[0], nil
	case len(found) == 0:
		return nil, fault.Newf(fault.GraphEntityNotFound, "list the entities (GET /api/entities?name=..., loci entity list --name ...) to see their names and ids",
			"no entity is named %q or has it in its name", name)
	}
	names := make([]string, 0, len(found))
	for i, e := range found {
		if i == 5 {
			names = append(names, "...")
			break
		}
		names = append(names, fmt.Sprintf("%s (%s)", e.Name, e.Kind))
	}
	return nil, fault.Invalid("entity", fmt.Sprintf("%q is in several entities' names: %s; give the whole name or the id", name, strings.Join(names, ", ")))
}

// openFactCount is the number of an entity's facts that hold now as
// known now (recorded, not retracted, valid), whatever their evidence
// drawers (reading those for every fact of every entity would make the
// overview slow; the edges drawn are checked in full).
func openFactCount(r store.Reader, id string, now time.Time) (int, error) {
	n := 0
	err := r.EntityRelationships(id, func(rel *store.Relationship) bool {
		if rel.CurrentAt(now, now, true) {
			n++
		}
		return true
	})
	return n, err
}

// Neighbourhood walks the open (current) facts from an entity (an id or a
// name, FindEntity), both directions, depth hops out, at most limit nodes;
// without an entity it takes the limit entities with the most open facts
// (ties by name; the first by name when no entity has a fact) and the
// open facts among them.
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
			busiest, more, err := busiestEntities(r, limit, now)
			if err != nil {
				return err
			}
			if len(busiest) == 0 {
				err = r.Entities(func(e *store.Entity) bool { return add(e) })
			}
			for i := range busiest {
				add(&busiest[i])
			}
			n.Truncated = n.Truncated || more
			if err != nil {
				return err
			}
			for _, e := range n.Nodes {
				err := r.EntityRelationships(e.ID, func(rel *store.Relationship) bool {
					if !edges[rel.ID] && seen[rel.Subject] && seen[rel.Object] {
						if f, err := store.FactOf(r, rel, now, now); err == nil && f.Current {
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
		start, err := findEntity(r, entity, now)
		if err != nil {
			return err
		}
		n.Start = start
		add(start)
		frontier := []string{start.ID}
		for hop := 0; hop < depth && len(frontier) > 0 && !n.Truncated; hop++ {
			var next []string
			for _, id := range frontier {
				err := store.OpenFacts(r, id, now, now, func(f Fact, other string) (bool, error) {
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

// busiestEntities is the limit entities with the most open facts as
// known at now (ties by name), and whether more entities have one.
func busiestEntities(r store.Reader, limit int, now time.Time) ([]store.Entity, bool, error) {
	type counted struct {
		e store.Entity
		n int
	}
	var all []counted
	var inner error
	err := r.Entities(func(e *store.Entity) bool {
		c, err := openFactCount(r, e.ID, now)
		if err != nil {
			inner = err
			return false
		}
		if c > 0 {
			all = append(all, counted{*e, c})
		}
		return true
	})
	if err == nil {
		err = inner
	}
	// Entities come in name order: a stable sort keeps it among equals.
	sort.SliceStable(all, func(i, j int) bool { return all[i].n > all[j].n })
	more := len(all) > limit
	out := make([]store.Entity, 0, min(limit, len(all)))
	for _, c := range all[:min(limit, len(all))] {
		out = append(out, c.e)
	}
	return out, more, err
}

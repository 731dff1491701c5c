package actors

import (
	"context"
	"sort"
	"strings"

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

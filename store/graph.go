package store

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/graph"
)

// Entity is a node of the knowledge graph: a canonical name (never
// rewritten), a kind of graph.Kinds, its normalised key, and the other
// spellings it was taken under (aliases, as spelled).
type Entity struct {
	ID        string
	Name      string
	Kind      string
	Key       string
	Aliases   []string
	CreatedAt time.Time
}

// EntityLink links two entities: possibly_same_as, from the new entity to
// one it resembles.
type EntityLink struct {
	ID, From, To, Kind string
	CreatedAt          time.Time
}

// Mention links a drawer to an entity it names: the name as spelled, the
// rule that resolved it, a confidence, who found it (extractor: manual,
// checkpoint or an extraction provider) and where (origin: the channel or
// the job).
type Mention struct {
	Drawer, Entity    string
	Name, Rule        string
	Confidence        float64
	Extractor, Origin string
	CreatedAt         time.Time
}

// LinkMention resolves name (of kind) to an entity and links the drawer to
// it; linked is false when the drawer already mentioned that entity (the
// first mention is kept).
func LinkMention(tx Tx, drawerID, name, kind string, fuzzy bool, extractor, origin string, confidence float64) (*Mention, *Entity, bool, error) {
	d, err := tx.Drawer(drawerID)
	if err != nil {
		return nil, nil, false, err
	}
	if d == nil {
		return nil, nil, false, fault.Newf(fault.PalaceDrawerNotFound, "list a room's drawers to see their ids", "no drawer %s", drawerID)
	}
	res, err := ResolveEntity(tx, name, kind, fuzzy, "")
	if err != nil {
		return nil, nil, false, err
	}
	if m, err := tx.Mention(d.ID, res.Entity.ID); err != nil || m != nil {
		return m, res.Entity, false, err
	}
	rule := res.Rule
	if res.New {
		rule = "exact"
	}
	m := &Mention{Drawer: d.ID, Entity: res.Entity.ID, Name: name, Rule: rule, Confidence: confidence,
		Extractor: extractor, Origin: origin, CreatedAt: tx.Now()}
	if err := tx.PutMention(m); err != nil {
		return nil, nil, false, err
	}
	// A mention is not a change of the entity (its name, kind or
	// aliases): no entity notice of its own.
	return m, res.Entity, true, nil
}

// AddAlias records another spelling of an entity (idempotent).
func AddAlias(tx Tx, id, alias string) (*Entity, error) {
	if err := CheckEntityName("alias", alias); err != nil {
		return nil, err
	}
	e, err := tx.Entity(id)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, fault.Newf(fault.GraphEntityNotFound, "list the entities (GET /api/entities, loci entity list) to see their ids", "no entity %s", id)
	}
	if alias == e.Name || containsFold(e.Aliases, alias) {
		return e, nil
	}
	prev := *e
	e.Aliases = append(append([]string(nil), e.Aliases...), alias)
	if err := tx.PutEntity(e, &prev); err != nil {
		return nil, err
	}
	return e, tx.Log(ChangeEntity, ActionUpdated, e.ID)
}

// ChangeEntity is the change-log kind of entity changes.
const ChangeEntity = "entity"

// CheckEntityName validates an entity name: not blank, no control
// characters, at most 200 characters.
func CheckEntityName(field, name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return fault.New(fault.GraphEmptyLabel, field+": an entity name must not be blank", "give the entity a name")
	case len(name) > 200:
		return fault.Invalid(field, "is longer than 200 bytes")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fault.Invalid(field, "must not hold control characters")
	}
	return nil
}

// entityLookup answers graph.Lookup from a reader's entity indexes.
type entityLookup struct{ r Reader }

func (l entityLookup) cands(ids []string, err error) ([]graph.Candidate, error) {
	if err != nil {
		return nil, err
	}
	out := make([]graph.Candidate, 0, len(ids))
	for _, id := range ids {
		e, err := l.r.Entity(id)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, graph.Candidate{ID: e.ID, Name: e.Name, Kind: e.Kind, Key: e.Key})
		}
	}
	return out, nil
}

func (l entityLookup) ByName(n string) ([]graph.Candidate, error) {
	return l.cands(l.r.EntityIDs(EntityByName, n))
}
func (l entityLookup) ByKey(k string) ([]graph.Candidate, error) {
	return l.cands(l.r.EntityIDs(EntityByKey, k))
}
func (l entityLookup) ByAlias(k string) ([]graph.Candidate, error) {
	return l.cands(l.r.EntityIDs(EntityByAlias, k))
}
func (l entityLookup) ByDeletion(v string) ([]graph.Candidate, error) {
	return l.cands(l.r.EntityIDs(EntityByDeletion, v))
}

// EntityIndex names an entity index of EntityIDs.
type EntityIndex int

// The entity indexes.
const (
	EntityByName EntityIndex = iota
	EntityByKey
	EntityByAlias
	// EntityByDeletion holds each entity under its key and each of the
	// key's graph.Deletions.
	EntityByDeletion
)

// Resolved is where ResolveEntity took a name.
type Resolved struct {
	Entity *Entity
	Rule   string // graph.Rule*, empty for a new entity
	New    bool
}

// ResolveEntity resolves a name of a kind to an entity by the graph's
// rules (fuzzy: dedup.entity_fuzzy), creating it when nothing converges:
// a new entity is linked possibly_same_as to each one it resembles. A
// spelling taken by another rule than exact is added to the entity's
// aliases. idSeed, when set, makes the new entity's id and links derive
// from it (replay-safe checkpoint and extract items).
func ResolveEntity(tx Tx, name, kind string, fuzzy bool, idSeed string) (Resolved, error) {
	if err := CheckEntityName("name", name); err != nil {
		return Resolved{}, err
	}
	if strings.TrimSpace(kind) == "" {
		return Resolved{}, fault.New(fault.GraphEmptyLabel, "kind: an entity kind must not be blank", "give one of "+strings.Join(graph.Kinds, ", "))
	}
	if !graph.CheckKind(kind) {
		return Resolved{}, fault.Invalid("kind", fmt.Sprintf("%q is not one of %s", kind, strings.Join(graph.Kinds, ", ")))
	}
	res, err := graph.Resolve(entityLookup{tx}, name, kind, fuzzy)
	if err != nil {
		return Resolved{}, err
	}
	if !res.New {
		e, err := tx.Entity(res.ID)
		if err != nil || e == nil {
			return Resolved{}, err
		}
		if res.Rule != graph.RuleExact && name != e.Name && !containsFold(e.Aliases, name) {
			prev := *e
			e.Aliases = append(append([]string(nil), e.Aliases...), name)
			if err := tx.PutEntity(e, &prev); err != nil {
				return Resolved{}, err
			}
			if err := tx.Log(ChangeEntity, ActionUpdated, e.ID); err != nil {
				return Resolved{}, err
			}
		}
		return Resolved{Entity: e, Rule: res.Rule}, nil
	}
	id := uuid.NewString()
	if idSeed != "" {
		id = uuid.NewSHA1(uuid.NameSpaceURL, []byte("loci/entity/"+idSeed)).String()
	}
	e := &Entity{ID: id, Name: name, Kind: kind, Key: graph.Key(name), CreatedAt: tx.Now()}
	if err := tx.PutEntity(e, nil); err != nil {
		return Resolved{}, err
	}
	if err := tx.Log(ChangeEntity, ActionCreated, e.ID); err != nil {
		return Resolved{}, err
	}
	for _, other := range res.PossiblySame {
		lid := uuid.NewSHA1(uuid.NameSpaceURL, []byte("loci/entity-link/"+e.ID+"/"+other)).String()
		if err := tx.PutEntityLink(&EntityLink{ID: lid, From: e.ID, To: other, Kind: graph.PossiblySameAs, CreatedAt: tx.Now()}); err != nil {
			return Resolved{}, err
		}
	}
	return Resolved{Entity: e, New: true}, nil
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

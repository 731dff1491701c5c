package transport

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store"
)

// EntitiesLimit and EntitiesMaxLimit bound GET /api/entities.
const (
	EntitiesLimit    = 50
	EntitiesMaxLimit = 200
)

func (s *Server) graph() (*services.Graph, error) {
	if s.Graph == nil {
		return nil, fault.New(fault.ServerFailed, "this server has no knowledge graph", "report it")
	}
	return s.Graph, nil
}

// listEntities is GET /api/entities: name (contains, any case), kind, limit.
func (s *Server) listEntities(w http.ResponseWriter, r *http.Request) error {
	g, err := s.graph()
	if err != nil {
		return err
	}
	limit, err := queryLimit(r, "limit", EntitiesLimit, EntitiesMaxLimit)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	list, truncated, err := g.Entities(r.Context(), services.EntityFilter{Name: q.Get("name"), Kind: q.Get("kind"), Limit: limit})
	if err != nil {
		return err
	}
	out := api.EntityList{Entities: make([]api.Entity, len(list)), Truncated: truncated}
	for i := range list {
		out.Entities[i] = apiEntity(&list[i])
	}
	return writeJSON(w, http.StatusOK, out)
}

// getEntity is GET /api/entities/{id}.
func (s *Server) getEntity(w http.ResponseWriter, r *http.Request) error {
	g, id, err := s.graphAndID(r)
	if err != nil {
		return err
	}
	e, err := g.Entity(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiEntity(e))
}

// addAlias is POST /api/entities/{id}/aliases: {alias}.
func (s *Server) addAlias(w http.ResponseWriter, r *http.Request) error {
	g, id, err := s.graphAndID(r)
	if err != nil {
		return err
	}
	var b api.AliasAdd
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	e, err := g.AddAlias(r.Context(), id, b.Alias)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiEntity(e))
}

// entityMentions is GET /api/entities/{id}/mentions.
func (s *Server) entityMentions(w http.ResponseWriter, r *http.Request) error {
	g, id, err := s.graphAndID(r)
	if err != nil {
		return err
	}
	e, err := g.Entity(r.Context(), id)
	if err != nil {
		return err
	}
	ms, err := g.Mentions(r.Context(), id)
	if err != nil {
		return err
	}
	out := api.MentionList{Entity: apiEntity(e), Mentions: make([]api.Mention, len(ms))}
	for i := range ms {
		out.Mentions[i] = apiMention(&ms[i])
	}
	return writeJSON(w, http.StatusOK, out)
}

// entityCandidates is GET /api/entities/{id}/candidates.
func (s *Server) entityCandidates(w http.ResponseWriter, r *http.Request) error {
	g, id, err := s.graphAndID(r)
	if err != nil {
		return err
	}
	cs, err := g.Candidates(r.Context(), id)
	if err != nil {
		return err
	}
	out := api.EntityCandidates{Candidates: make([]api.EntityCandidate, len(cs))}
	for i, c := range cs {
		out.Candidates[i] = api.EntityCandidate{Entity: apiEntity(&c.Entity), Side: c.Side, Similarity: c.Similarity}
	}
	return writeJSON(w, http.StatusOK, out)
}

// linkMention is POST /api/drawers/{id}/mentions: {name, kind}; 201 when
// linked, 200 when the drawer already mentioned that entity.
func (s *Server) linkMention(w http.ResponseWriter, r *http.Request) error {
	g, err := s.graph()
	if err != nil {
		return err
	}
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	if cid, ok := store.CanonicalUUID(id); ok {
		id = cid
	}
	var b api.MentionLink
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	m, e, linked, err := g.LinkMention(r.Context(), id, b.Name, b.Kind, store.ByHTTP)
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(linked), api.MentionLinked{Mention: apiMention(m), Entity: apiEntity(e), Linked: linked})
}

func (s *Server) graphAndID(r *http.Request) (*services.Graph, string, error) {
	g, err := s.graph()
	if err != nil {
		return nil, "", err
	}
	id, err := param(r, "id")
	if err != nil {
		return nil, "", err
	}
	cid, ok := store.CanonicalUUID(id)
	if !ok {
		return nil, "", fault.Newf(fault.GraphEntityNotFound, "list the entities (GET /api/entities, loci entity list) to see their ids", "no entity %s", id)
	}
	return g, cid, nil
}

func apiEntity(e *store.Entity) api.Entity {
	aliases := append([]string{}, e.Aliases...)
	return api.Entity{ID: e.ID, Name: e.Name, Kind: e.Kind, Key: e.Key, Aliases: aliases, CreatedAt: e.CreatedAt}
}

func apiMention(m *store.Mention) api.Mention {
	return api.Mention{Drawer: m.Drawer,
		Provenance:  api.MentionProvenance{Drawer: m.Drawer, Extractor: m.Extractor, Origin: m.Origin},
		Observation: api.MentionObservation{Name: m.Name, Rule: m.Rule, Confidence: m.Confidence}}
}

// entityRelationships is GET /api/entities/{id}/relationships:
// include_expired or as_of (RFC 3339 or a date), not both.
func (s *Server) entityRelationships(w http.ResponseWriter, r *http.Request) error {
	g, id, err := s.graphAndID(r)
	if err != nil {
		return err
	}
	expired, err := queryBool(r, "include_expired")
	if err != nil {
		return err
	}
	asOf, err := asOfParam(r)
	if err != nil {
		return err
	}
	if expired && asOf != nil {
		return fault.Invalid("as_of", "cannot be combined with include_expired: ask for the facts valid at a time, or for all of them")
	}
	e, err := g.Entity(r.Context(), id)
	if err != nil {
		return err
	}
	knownAt, err := instantParam(r, "known_at")
	if err != nil {
		return err
	}
	facts, err := g.Relationships(r.Context(), id, expired, asOf, knownAt)
	if err != nil {
		return err
	}
	out := api.FactList{Entity: apiEntity(e), Relationships: make([]api.Fact, len(facts))}
	for i := range facts {
		out.Relationships[i] = apiFact(&facts[i])
	}
	return writeJSON(w, http.StatusOK, out)
}

// relationshipHistory is GET /api/relationships/{id}/history.
func (s *Server) relationshipHistory(w http.ResponseWriter, r *http.Request) error {
	g, err := s.graph()
	if err != nil {
		return err
	}
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	asOf, err := asOfParam(r)
	if err != nil {
		return err
	}
	knownAt, err := instantParam(r, "known_at")
	if err != nil {
		return err
	}
	h, err := s.factHistory(r.Context(), g, id, asOf, knownAt)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, h)
}

func (s *Server) factHistory(ctx context.Context, g *services.Graph, id string, asOf, knownAt *time.Time) (api.FactHistory, error) {
	cid, ok := store.CanonicalUUID(id)
	if !ok {
		return api.FactHistory{}, fault.Newf(fault.GraphRelationshipNotFound, "read an entity's relationships to see their ids", "no relationship %s", id)
	}
	h, err := g.History(ctx, cid, asOf, knownAt)
	if err != nil {
		return api.FactHistory{}, err
	}
	out := api.FactHistory{Relationship: apiFact(&h.Fact), Related: make([]api.RelatedFact, len(h.Related))}
	for i, rf := range h.Related {
		out.Related[i] = api.RelatedFact{Relation: rf.Relation, Side: rf.Side, Reason: rf.Reason, Evidence: rf.Drawer, Relationship: apiFact(&rf.Fact)}
	}
	return out, nil
}

func asOfParam(r *http.Request) (*time.Time, error) { return instantParam(r, "as_of") }

// instantParam reads an optional instant query parameter (RFC 3339 or a
// date).
func instantParam(r *http.Request, name string) (*time.Time, error) { return queryInstant(r, name) }

func apiFact(f *services.Fact) api.Fact {
	ev := make([]api.FactEvidence, len(f.Assertions))
	for i, a := range f.Assertions {
		ev[i] = api.FactEvidence{Drawer: a.Drawer, DrawerCurrent: a.DrawerCurrent, Job: a.Job, Extractor: a.Extractor, RecordedAt: a.RecordedAt}
	}
	return api.Fact{ID: f.ID, Subject: api.EntityRef{ID: f.Subject.ID, Name: f.Subject.Name, Kind: f.Subject.Kind}, Predicate: f.Predicate,
		Object: api.EntityRef{ID: f.Object.ID, Name: f.Object.Name, Kind: f.Object.Kind}, Confidence: f.Confidence,
		ValidFrom: f.ValidFrom, ValidTo: f.ValidTo, RecordedAt: f.RecordedAt, RetractedAt: f.RetractedAt,
		Provenance:   api.FactProvenance{Drawer: f.Drawer, DrawerCurrent: f.EvidenceCurrent, Job: f.Job, Extractor: f.Extractor, ClosedByDrawer: f.ClosedBy},
		Evidence:     ev,
		SupersededBy: f.SupersededBy, Reason: f.Reason, Current: f.Current}
}

// graphRead is GET /api/graph: entity (an id or a name), depth (1 to 3,
// default 1), limit (default 50, max 200); without an entity, the
// entities with the most open facts.
func (s *Server) graphRead(w http.ResponseWriter, r *http.Request) error {
	g, err := s.graph()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	depth, err := queryRange(r, "depth", 1, 1, 3)
	if err != nil {
		return err
	}
	limit, err := queryLimit(r, "limit", EntitiesLimit, EntitiesMaxLimit)
	if err != nil {
		return err
	}
	// entity is an id or a name (Graph.FindEntity).
	entity := q.Get("entity")
	if q.Has("entity") && strings.TrimSpace(entity) == "" {
		return fault.Invalid("entity", "is blank: give an entity's name or id, or leave entity out for the entities with the most facts")
	}
	knownAt, err := instantParam(r, "known_at")
	if err != nil {
		return err
	}
	n, err := g.Neighbourhood(r.Context(), entity, depth, limit, knownAt)
	if err != nil {
		return err
	}
	out := api.Graph{Nodes: make([]api.Entity, len(n.Nodes)), Edges: make([]api.Fact, len(n.Edges)), Truncated: n.Truncated}
	if n.Start != nil {
		start := apiEntity(n.Start)
		out.Entity = &start
	}
	for i := range n.Nodes {
		out.Nodes[i] = apiEntity(&n.Nodes[i])
	}
	for i := range n.Edges {
		out.Edges[i] = apiFact(&n.Edges[i])
	}
	return writeJSON(w, http.StatusOK, out)
}

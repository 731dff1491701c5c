package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/graph"
)

// Relationship is a relates_to edge between entities: a fact, bi-temporal.
// Valid time (ValidFrom, ValidTo) is when it held in the world; record time
// (RecordedAt, RetractedAt) is when loci learned it and when it stopped
// believing it. Its provenance is the evidence drawer, the job and the
// extractor.
type Relationship struct {
	ID, Subject, Predicate, Object string
	Confidence                     float64
	ValidFrom                      time.Time
	ValidTo                        *time.Time
	RecordedAt                     time.Time
	RetractedAt                    *time.Time
	Drawer, Job, Extractor         string
	// SupersededBy is the fact that replaced this one; Reason and
	// ClosedBy (the evidence drawer) say why it was superseded or
	// invalidated.
	SupersededBy, Reason, ClosedBy string
	// Evidence is the later assertions of the same fact (same subject,
	// predicate and object while it was open), after the first one
	// (Drawer, Job, Extractor).
	Evidence []Evidence
}

// Evidence is one more assertion of a fact: its id (the fact it would
// have made), the drawer it was read in or filed with, the job, the
// extractor, its confidence and when it was recorded.
type Evidence struct {
	ID, Drawer, Job, Extractor string
	Confidence                 float64
	RecordedAt                 time.Time
}

// Open reports a fact not closed: not retracted, not superseded, with no
// end of validity.
func (r *Relationship) Open() bool {
	return r.RetractedAt == nil && r.SupersededBy == "" && r.ValidTo == nil
}

// Drawers is the fact's evidence drawers: the first assertion's, then the
// later ones'.
func (r *Relationship) Drawers() []string {
	out := make([]string, 0, 1+len(r.Evidence))
	if r.Drawer != "" {
		out = append(out, r.Drawer)
	}
	for _, e := range r.Evidence {
		out = append(out, e.Drawer)
	}
	return out
}

// openTwin is the open fact stating the same subject, predicate and
// object; nil when none.
func openTwin(tx Tx, subject, predicate, object string) (*Relationship, error) {
	var twin *Relationship
	err := tx.EntityRelationships(subject, func(r *Relationship) bool {
		if r.Subject == subject && r.Predicate == predicate && r.Object == object && r.Open() {
			twin = r
			return false
		}
		return true
	})
	return twin, err
}

// assertAgain records an assertion of a fact identical to an open one as
// more evidence of it (its confidence the highest asserted, its validity
// from the earliest); false when this assertion (ev.ID) was recorded
// already.
func assertAgain(tx Tx, r *Relationship, ev Evidence, validFrom time.Time) (bool, error) {
	if r.ID == ev.ID {
		return false, nil
	}
	for _, e := range r.Evidence {
		if e.ID == ev.ID {
			return false, nil
		}
	}
	prev := *r
	r.Evidence = append(append([]Evidence(nil), r.Evidence...), ev)
	r.Confidence = max(r.Confidence, ev.Confidence)
	if validFrom.Before(r.ValidFrom) {
		r.ValidFrom = validFrom
	}
	if err := tx.PutRelationship(r, &prev); err != nil {
		return false, err
	}
	return true, tx.Log(ChangeRelationship, ActionUpdated, r.ID)
}

// RelationshipLink is a lifecycle link between facts (confirms,
// contradicts, refines): it closes neither.
type RelationshipLink struct {
	ID, From, To, Kind, Reason, Drawer, Job string
	CreatedAt                               time.Time
}

// ChangeRelationship is the change-log kind of fact changes.
const ChangeRelationship = "relationship"

// CurrentAt reports a fact valid at t and believed at known (record time);
// evidence is whether its evidence drawer was current at known (a fact
// stops being current when its evidence drawer is superseded).
func (r *Relationship) CurrentAt(t, known time.Time, evidence bool) bool {
	if !evidence || r.RecordedAt.After(known) || r.RetractedAt != nil && !r.RetractedAt.After(known) {
		return false
	}
	return !r.ValidFrom.After(t) && (r.ValidTo == nil || r.ValidTo.After(t))
}

// RelationshipID is the replay-safe id of the fact a checkpoint item adds:
// derived from the job id and the item index.
func RelationshipID(jobID string, index int) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprintf("loci/fact/%s/%d", jobID, index))).String()
}

func relationshipNotFound(field, id string) error {
	return fault.Newf(fault.GraphRelationshipNotFound, "read an entity's relationships (GET /api/entities/{id}/relationships, loci graph --entity ID) to see their ids",
		"%s: no relationship %s", field, id)
}

// CheckFactRefs checks what a fact names exists now (relationships, and
// entities given by id): the synchronous answer of a checkpoint
// submission; ApplyFact checks again when the job runs.
func CheckFactRefs(r Reader, f *FactOp, at string) error {
	for _, ref := range []struct{ field, id string }{{"relationship_id", f.RelationshipID}, {"other_id", f.OtherID}} {
		if ref.id == "" {
			continue
		}
		rel, err := r.Relationship(ref.id)
		if err != nil {
			return err
		}
		if rel == nil {
			return relationshipNotFound(at+"."+ref.field, ref.id)
		}
	}
	if f.Op == "add" {
		for _, ref := range []struct{ field, v string }{{"subject", f.Subject}, {"object", f.Object}} {
			if id, ok := CanonicalUUID(ref.v); ok {
				if e, err := r.Entity(id); err != nil || e == nil {
					if err != nil {
						return err
					}
					return fault.Newf(fault.GraphEntityNotFound, "name the entity ({name, kind}) or give an existing entity's id",
						"%s.%s: no entity %s", at, ref.field, id)
				}
			}
		}
	}
	return nil
}

// spelled is an entity as a fact named it: the entity, the name as
// spelled and the rule that resolved it.
type spelled struct {
	entity     *Entity
	name, rule string
}

// entityOf resolves a fact's subject or object: an existing entity's id,
// or a name resolved (created when nothing converges) with its kind
// (default other).
func entityOf(tx Tx, v, kind, at string, fuzzy bool, seed string) (spelled, error) {
	if id, ok := CanonicalUUID(v); ok {
		return entityByID(tx, id, at)
	}
	if kind == "" {
		kind = graph.KindOther
	}
	res, err := ResolveEntity(tx, v, kind, fuzzy, seed)
	if err != nil {
		e := fault.As(err)
		return spelled{}, fault.Wrap(e.Code, err, at+": "+e.Msg, e.Help)
	}
	rule := res.Rule
	if res.New {
		rule = graph.RuleExact
	}
	return spelled{res.Entity, v, rule}, nil
}

// entityByID is an existing entity named by its id (its canonical name,
// exactly).
func entityByID(tx Tx, id, at string) (spelled, error) {
	e, err := tx.Entity(id)
	if err == nil && e == nil {
		err = fault.Newf(fault.GraphEntityNotFound, "name the entity ({name, kind}) or give an existing entity's id", "%s: no entity %s", at, id)
	}
	if err != nil {
		return spelled{}, err
	}
	return spelled{e, e.Name, graph.RuleExact}, nil
}

// mentionFact records that a fact's evidence drawer mentions its subject
// and object (extractor checkpoint, origin the job), as search's expand
// and the entity pages read mentions; a drawer's existing mention of an
// entity is kept, so a replay adds nothing.
func mentionFact(tx Tx, drawer, job string, ents ...spelled) error {
	for _, e := range ents {
		if m, err := tx.Mention(drawer, e.entity.ID); err != nil || m != nil {
			if err != nil {
				return err
			}
			continue
		}
		m := &Mention{Drawer: drawer, Entity: e.entity.ID, Name: e.name, Rule: e.rule, Confidence: 1,
			Extractor: "checkpoint", Origin: "job:" + job, CreatedAt: tx.Now()}
		if err := tx.PutMention(m); err != nil {
			return err
		}
	}
	return nil
}

// relationshipEntities are the subject and object of a recorded fact.
func relationshipEntities(tx Tx, r *Relationship, at string) ([]spelled, error) {
	s, err := entityByID(tx, r.Subject, at+".subject")
	if err != nil {
		return nil, err
	}
	o, err := entityByID(tx, r.Object, at+".object")
	if err != nil {
		return nil, err
	}
	return []spelled{s, o}, nil
}

// ApplyFact applies a checkpoint item's fact operation with the item's
// drawer as evidence; ids derive from the job id and item index. The
// drawer mentions the subject and object of the fact it adds, supersedes
// with or invalidates. An add identical to an open fact (same subject,
// predicate and object) records more evidence of it instead of a second
// fact.
func ApplyFact(tx Tx, f *FactOp, drawer, job string, index int, fuzzy bool) error {
	_, err := ApplyFactID(tx, f, drawer, job, index, fuzzy)
	return err
}

// ApplyFactID is ApplyFact, answering the id of the fact the item is
// about now: the fact it added (or the open one it is more evidence of),
// the fact a supersede recorded, the fact it invalidated; for a link, the
// link's id. A replayed item answers the same id.
func ApplyFactID(tx Tx, f *FactOp, drawer, job string, index int, fuzzy bool) (held string, err error) {
	held = RelationshipID(job, index)
	err = applyFact(tx, f, drawer, job, index, fuzzy, &held)
	return held, err
}

func applyFact(tx Tx, f *FactOp, drawer, job string, index int, fuzzy bool, held *string) error {
	at := fmt.Sprintf("items[%d].fact", index)
	id := RelationshipID(job, index)
	if done, err := tx.Relationship(id); err != nil || done != nil {
		return err // replayed: applied already
	}
	now := tx.Now()
	conf := 1.0
	if f.Confidence != nil {
		conf = *f.Confidence
	}
	validFrom := now
	if f.ValidFrom != "" {
		t, err := ParseTimeOrDate(f.ValidFrom)
		if err != nil {
			return fault.Invalid(at+".valid_from", "is not RFC 3339 or a date (YYYY-MM-DD)")
		}
		validFrom = t
	}
	predicate := func(p *string) (string, error) {
		if p == nil || strings.TrimSpace(*p) == "" {
			return "", fault.Newf(fault.GraphEmptyLabel, "give "+at+".predicate a non-blank value", "%s.predicate is blank", at)
		}
		if !graph.CheckPredicate(*p) {
			return "", fault.Invalid(at+".predicate", fmt.Sprintf("%q is not one of %s", *p, strings.Join(graph.Predicates, ", ")))
		}
		return *p, nil
	}
	put := func(r *Relationship, prev *Relationship, action string) error {
		if err := tx.PutRelationship(r, prev); err != nil {
			return err
		}
		return tx.Log(ChangeRelationship, action, r.ID)
	}
	switch f.Op {
	case "add":
		p, err := predicate(f.Predicate)
		if err != nil {
			return err
		}
		s, err := entityOf(tx, f.Subject, f.SubjectKind, at+".subject", fuzzy, id+"/subject")
		if err != nil {
			return err
		}
		o, err := entityOf(tx, f.Object, f.ObjectKind, at+".object", fuzzy, id+"/object")
		if err != nil {
			return err
		}
		if err := mentionFact(tx, drawer, job, s, o); err != nil {
			return err
		}
		// The same statement as an open fact is more evidence of it.
		if twin, err := openTwin(tx, s.entity.ID, p, o.entity.ID); err != nil || twin != nil {
			if err == nil {
				*held = twin.ID
				_, err = assertAgain(tx, twin, Evidence{ID: id, Drawer: drawer, Job: job, Extractor: "checkpoint", Confidence: conf, RecordedAt: now}, validFrom)
			}
			return err
		}
		return put(&Relationship{ID: id, Subject: s.entity.ID, Predicate: p, Object: o.entity.ID, Confidence: conf, ValidFrom: validFrom,
			RecordedAt: now, Drawer: drawer, Job: job, Extractor: "checkpoint"}, nil, ActionCreated)
	case "supersede", "invalidate":
		old, err := tx.Relationship(f.RelationshipID)
		if err != nil {
			return err
		}
		if old == nil {
			return relationshipNotFound(at+".relationship_id", f.RelationshipID)
		}
		prev := *old
		reason := ""
		if f.Reason != nil {
			reason = *f.Reason
		}
		old.Reason, old.ClosedBy = reason, drawer
		if f.Op == "invalidate" {
			*held = old.ID
			ents, err := relationshipEntities(tx, old, at)
			if err != nil {
				return err
			}
			if err := mentionFact(tx, drawer, job, ents...); err != nil {
				return err
			}
			if old.RetractedAt != nil {
				return nil // retracted already (or this item replayed)
			}
			// Never true: loci stops believing it (record time).
			old.RetractedAt = &now
			return put(old, &prev, ActionUpdated)
		}
		next := Relationship{ID: id, Subject: old.Subject, Predicate: old.Predicate, Object: old.Object, Confidence: conf,
			ValidFrom: validFrom, RecordedAt: now, Drawer: drawer, Job: job, Extractor: "checkpoint"}
		if f.Predicate != nil {
			if next.Predicate, err = predicate(f.Predicate); err != nil {
				return err
			}
		}
		ents, err := relationshipEntities(tx, old, at)
		if err != nil {
			return err
		}
		if f.Object != "" {
			o, err := entityOf(tx, f.Object, f.ObjectKind, at+".object", fuzzy, id+"/object")
			if err != nil {
				return err
			}
			next.Object, ents[1] = o.entity.ID, o
		}
		if err := mentionFact(tx, drawer, job, ents...); err != nil {
			return err
		}
		if old.ValidTo == nil || old.ValidTo.After(validFrom) {
			old.ValidTo = &validFrom
		}
		old.SupersededBy = id
		if err := put(old, &prev, ActionUpdated); err != nil {
			return err
		}
		return put(&next, nil, ActionCreated)
	case "link":
		for _, ref := range []struct{ field, id string }{{"relationship_id", f.RelationshipID}, {"other_id", f.OtherID}} {
			r, err := tx.Relationship(ref.id)
			if err != nil {
				return err
			}
			if r == nil {
				return relationshipNotFound(at+"."+ref.field, ref.id)
			}
		}
		return tx.PutRelationshipLink(&RelationshipLink{ID: id, From: f.RelationshipID, To: f.OtherID, Kind: f.Kind,
			Reason: *f.Reason, Drawer: drawer, Job: job, CreatedAt: now})
	}
	return fault.Invalid(at+".op", fmt.Sprintf("%q is not one of add, supersede, invalidate, link", f.Op))
}

// ParseTimeOrDate reads RFC 3339 or a date (midnight UTC).
func ParseTimeOrDate(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	return time.Parse("2006-01-02", v)
}

// ExtractedFact is a fact an extraction provider read in a drawer.
type ExtractedFact struct {
	Subject, SubjectKind, Predicate, Object, ObjectKind string
	Confidence                                          float64
}

// AddExtractedFact records a fact read in a drawer, the drawer its
// evidence; its id derives from the drawer and the fact's place in the
// drawer's reading, so reading the drawer again adds nothing. A fact
// identical to an open one (same subject, predicate and object) is more
// evidence of it (true when added). A predicate outside the vocabulary or
// a kind outside the kinds is skipped (false).
func AddExtractedFact(tx Tx, f ExtractedFact, drawer string, index int, job, extractor string, fuzzy bool) (bool, error) {
	if !graph.CheckPredicate(f.Predicate) || !graph.CheckKind(orOther(f.SubjectKind)) || !graph.CheckKind(orOther(f.ObjectKind)) {
		return false, nil
	}
	id := uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprintf("loci/extracted-fact/%s/%d", drawer, index))).String()
	if done, err := tx.Relationship(id); err != nil || done != nil {
		return false, err
	}
	s, err := ResolveEntity(tx, f.Subject, orOther(f.SubjectKind), fuzzy, "")
	if err != nil {
		return false, nil // a name that cannot be an entity: skipped
	}
	o, err := ResolveEntity(tx, f.Object, orOther(f.ObjectKind), fuzzy, "")
	if err != nil {
		return false, nil
	}
	conf := min(max(f.Confidence, 0), 1)
	now := tx.Now()
	if twin, err := openTwin(tx, s.Entity.ID, f.Predicate, o.Entity.ID); err != nil || twin != nil {
		if err != nil {
			return false, err
		}
		return assertAgain(tx, twin, Evidence{ID: id, Drawer: drawer, Job: job, Extractor: extractor, Confidence: conf, RecordedAt: now}, now)
	}
	r := &Relationship{ID: id, Subject: s.Entity.ID, Predicate: f.Predicate, Object: o.Entity.ID, Confidence: conf,
		ValidFrom: now, RecordedAt: now, Drawer: drawer, Job: job, Extractor: extractor}
	if err := tx.PutRelationship(r, nil); err != nil {
		return false, err
	}
	return true, tx.Log(ChangeRelationship, ActionCreated, id)
}

func orOther(kind string) string {
	if strings.TrimSpace(kind) == "" {
		return graph.KindOther
	}
	return kind
}

// EvidenceCurrent reports a fact's evidence drawer current as known at
// now (record time): recorded by then and not closed by then. A fact
// without a drawer ("") holds on its own.
func EvidenceCurrent(r Reader, drawer string, now time.Time) (bool, error) {
	if drawer == "" {
		return true, nil
	}
	d, err := r.Drawer(drawer)
	return err == nil && d != nil && !d.CreatedAt.After(now) && (d.ValidTo == nil || d.ValidTo.After(now)), err
}

// Holds reports a fact that holds at t (valid time) as known at now
// (record time): CurrentAt, with its evidence current while one of its
// evidence drawers known then is (EvidenceCurrent).
func (r *Relationship) Holds(rd Reader, t, now time.Time) (bool, error) {
	evidence, err := EvidenceCurrent(rd, r.Drawer, now)
	if err != nil {
		return false, err
	}
	for _, e := range r.Evidence {
		if e.RecordedAt.After(now) {
			continue
		}
		ok, err := EvidenceCurrent(rd, e.Drawer, now)
		if err != nil {
			return false, err
		}
		evidence = evidence || ok
	}
	return r.CurrentAt(t, now, evidence), nil
}

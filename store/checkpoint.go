package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/graph"
)

// CheckpointPayload is what a checkpoint job stores (spec "Checkpoint
// payload").
type CheckpointPayload struct {
	Items []CheckpointItem `json:"items"`
}

// CheckpointItem is one memory of a checkpoint.
type CheckpointItem struct {
	Destination string    `json:"destination"`
	Wing        string    `json:"wing,omitempty"`
	Content     string    `json:"content"`
	Name        string    `json:"name,omitempty"`
	Tags        *[]string `json:"tags"`
	Source      Source    `json:"source"`
	Fact        *FactOp   `json:"fact,omitempty"`
}

// FactOp is a knowledge-graph operation carried by a checkpoint item. It
// is validated and stored as given; the graph gives it its meaning. A
// subject or object is read as a name or an entity id (with subject_kind /
// object_kind) or nested as {name, kind}; either way it lands in Subject
// and SubjectKind (Object and ObjectKind).
type FactOp struct {
	Op             string   `json:"op"`
	Subject        string   `json:"subject,omitempty"`
	SubjectKind    string   `json:"subject_kind,omitempty"`
	Predicate      *string  `json:"predicate,omitempty"`
	Object         string   `json:"object,omitempty"`
	ObjectKind     string   `json:"object_kind,omitempty"`
	Confidence     *float64 `json:"confidence,omitempty"`
	ValidFrom      string   `json:"valid_from,omitempty"`
	RelationshipID string   `json:"relationship_id,omitempty"`
	OtherID        string   `json:"other_id,omitempty"`
	Kind           string   `json:"kind,omitempty"`
	Reason         *string  `json:"reason,omitempty"`

	// subjectRef and objectRef say how the subject and object were
	// given, for check to name the fields as sent.
	subjectRef, objectRef entityRef
}

// entityRef is how a fact's subject or object was given.
type entityRef struct {
	// nested: given as {name, kind}; nestedKind: with a kind.
	nested, nestedKind bool
	// bad names a field and what is wrong with it ("" when nothing).
	badField, bad string
}

// FactFields are the fields each fact operation takes, op aside; any other
// field given a value is refused.
var FactFields = map[string][]string{
	"add":        {"subject", "subject_kind", "predicate", "object", "object_kind", "confidence", "valid_from"},
	"supersede":  {"relationship_id", "predicate", "object", "object_kind", "confidence", "valid_from", "reason"},
	"invalidate": {"relationship_id", "reason"},
	"link":       {"relationship_id", "other_id", "kind", "reason"},
}

// FactOps are the fact operations, in the spec's order.
var FactOps = []string{"add", "supersede", "invalidate", "link"}

// UnmarshalJSON reads a fact operation, its subject and object in either
// form; unknown fields are refused.
func (f *FactOp) UnmarshalJSON(b []byte) error {
	type plain FactOp // without this method
	var in struct {
		plain
		Subject json.RawMessage `json:"subject"`
		Object  json.RawMessage `json:"object"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return err
	}
	*f = FactOp(in.plain)
	f.Subject, f.subjectRef = readEntityRef("subject", in.Subject, &f.SubjectKind)
	f.Object, f.objectRef = readEntityRef("object", in.Object, &f.ObjectKind)
	return nil
}

// readEntityRef reads a subject or object (field) given as a string or as
// {name, kind}; a nested kind fills *kind (field_kind), which it must not
// contradict.
func readEntityRef(field string, raw json.RawMessage, kind *string) (string, entityRef) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", entityRef{}
	}
	var name string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &name); err == nil {
			return name, entityRef{}
		}
	}
	shape := entityRef{badField: field, bad: "must be a name or an entity id (a string), or an object {name, kind}"}
	if raw[0] != '{' {
		return "", shape
	}
	var nested struct {
		Name *string `json:"name"`
		Kind *string `json:"kind"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&nested); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return "", entityRef{badField: field + "." + te.Field, bad: "must be a string"}
		}
		shape.bad = strings.TrimPrefix(err.Error(), "json: ") + "; " + shape.bad
		return "", shape
	}
	ref := entityRef{nested: true}
	if nested.Name != nil {
		name = *nested.Name
	}
	if nested.Kind != nil && *nested.Kind != "" {
		ref.nestedKind = true
		if *kind != "" && *kind != *nested.Kind {
			ref.badField, ref.bad = field+"_kind", fmt.Sprintf("differs from %s.kind: give the kind once", field)
		}
		*kind = *nested.Kind
	}
	return name, ref
}

// CheckpointRoom is the room of a wing that holds checkpoint drawers.
const CheckpointRoom = "checkpoints"

// DiaryRoom is the room of a wing that holds diary entries.
const DiaryRoom = "diary"

// DestinationNames are the destinations in the spec's order.
var DestinationNames = []string{"preference", "project", "diary", "general"}

// Destinations and their default wings.
var Destinations = map[string]string{
	"preference": "preferences",
	"project":    "projects",
	"diary":      "diary",
	"general":    "general",
}

// ParseCheckpoint decodes and validates a payload that came through channel
// (ByCLI, ByHTTP, ByMCP, ByUnknown): over MCP the source kinds kept as given
// narrow to file and manual (others are stored as other).
// Errors name the field, e.g. items[2].content.
func ParseCheckpoint(raw json.RawMessage, channel string) (*CheckpointPayload, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, fault.Invalid("payload", "is required: an object {items: [...]}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p CheckpointPayload
	if err := dec.Decode(&p); err != nil {
		return nil, fault.Invalid("payload", "is not a checkpoint payload: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(p.Items) == 0 {
		return nil, fault.Invalid("payload.items", "needs at least one item")
	}
	for i := range p.Items {
		if err := p.Items[i].check(fmt.Sprintf("items[%d]", i), channel == ByMCP); err != nil {
			return nil, err
		}
	}
	return &p, nil
}

func (it *CheckpointItem) check(at string, mcp bool) error {
	wing, ok := Destinations[it.Destination]
	if !ok {
		return fault.Invalid(at+".destination", fmt.Sprintf("%q is not one of %s", it.Destination, strings.Join(DestinationNames, ", ")))
	}
	if it.Wing == "" {
		it.Wing = wing
	} else if err := CheckPlace(at+".wing", it.Wing); err != nil {
		return err
	}
	if err := CheckContent(at+".content", it.Content); err != nil {
		return err
	}
	if it.Name != "" {
		if err := CheckDrawerName(it.Name); err != nil {
			return fault.Invalid(at+".name", fault.As(err).Msg)
		}
	}
	if it.Tags == nil {
		return fault.Invalid(at+".tags", "is required (it may be empty: [])")
	}
	tags, err := CheckTags(*it.Tags)
	if err != nil {
		return fault.Invalid(at+".tags", fault.As(err).Msg)
	}
	it.Tags = &tags
	switch it.Source.Kind {
	case KindFile, KindManual:
	case KindTranscript, KindNote:
		if mcp {
			it.Source.Kind = KindOther
		}
	case "":
		return fault.Invalid(at+".source.kind", "is required")
	default:
		it.Source.Kind = KindOther
	}
	if it.Fact != nil {
		return it.Fact.check(at + ".fact")
	}
	return nil
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

func (f *FactOp) check(at string) error {
	fields, ok := FactFields[f.Op]
	if !ok {
		return fault.Invalid(at+".op", fmt.Sprintf("%q is not one of %s", f.Op, strings.Join(FactOps, ", ")))
	}
	for field, set := range map[string]bool{
		"subject": f.Subject != "" || f.subjectRef.nested || f.subjectRef.bad != "", "subject_kind": f.SubjectKind != "" && !f.subjectRef.nestedKind,
		"predicate": f.Predicate != nil, "object": f.Object != "" || f.objectRef.nested || f.objectRef.bad != "",
		"object_kind": f.ObjectKind != "" && !f.objectRef.nestedKind, "confidence": f.Confidence != nil, "valid_from": f.ValidFrom != "",
		"relationship_id": f.RelationshipID != "", "other_id": f.OtherID != "", "kind": f.Kind != "", "reason": f.Reason != nil,
	} {
		if set && !slices.Contains(fields, field) {
			return fault.Invalid(at+"."+field, fmt.Sprintf("is not a field of %s, which takes %s", f.Op, strings.Join(fields, ", ")))
		}
	}
	if f.Confidence != nil && (*f.Confidence < 0 || *f.Confidence > 1) {
		return fault.Invalid(at+".confidence", fmt.Sprintf("%v is outside 0 to 1", *f.Confidence))
	}
	if f.ValidFrom != "" {
		if _, err := ParseTimeOrDate(f.ValidFrom); err != nil {
			return fault.Invalid(at+".valid_from", "is not RFC 3339 or a date (YYYY-MM-DD)")
		}
	}
	emptyLabel := func(field string) error {
		return fault.Newf(fault.GraphEmptyLabel, "give "+at+"."+field+" a non-blank value", "%s.%s is blank", at, field)
	}
	predicate := func() error {
		switch {
		case f.Predicate == nil:
			return nil
		case blank(*f.Predicate):
			return emptyLabel("predicate")
		case !graph.CheckPredicate(*f.Predicate):
			return fault.Invalid(at+".predicate", fmt.Sprintf("%q is not one of %s", *f.Predicate, strings.Join(graph.Predicates, ", ")))
		}
		return nil
	}
	// entity checks a subject or object (field) and its kind, named as
	// the client sent them.
	entity := func(field, name, kind string, ref entityRef, required bool) error {
		if ref.bad != "" {
			return fault.Invalid(at+"."+ref.badField, ref.bad)
		}
		nameField, kindField := field, field+"_kind"
		if ref.nested {
			nameField = field + ".name"
		}
		if ref.nestedKind {
			kindField = field + ".kind"
		}
		if blank(name) && (required || ref.nested) {
			return fault.Invalid(at+"."+nameField, "is required")
		}
		switch {
		case kind != "" && blank(kind):
			return emptyLabel(kindField)
		case kind != "" && !graph.CheckKind(kind):
			return fault.Invalid(at+"."+kindField, fmt.Sprintf("%q is not one of %s", kind, strings.Join(graph.Kinds, ", ")))
		}
		return nil
	}
	relationship := func() error {
		if _, err := uuid.Parse(f.RelationshipID); err != nil {
			return fault.Invalid(at+".relationship_id", "is required: the id of a relationship")
		}
		return nil
	}
	switch f.Op {
	case "add":
		if err := entity("subject", f.Subject, f.SubjectKind, f.subjectRef, true); err != nil {
			return err
		}
		if f.Predicate == nil {
			return emptyLabel("predicate")
		}
		if err := predicate(); err != nil {
			return err
		}
		return entity("object", f.Object, f.ObjectKind, f.objectRef, true)
	case "supersede":
		if err := relationship(); err != nil {
			return err
		}
		if err := predicate(); err != nil {
			return err
		}
		return entity("object", f.Object, f.ObjectKind, f.objectRef, false)
	case "invalidate":
		return relationship()
	default: // link
		if err := relationship(); err != nil {
			return err
		}
		if _, err := uuid.Parse(f.OtherID); err != nil {
			return fault.Invalid(at+".other_id", "is required: the id of the other relationship")
		}
		if !slices.Contains(graph.LinkKinds, f.Kind) {
			return fault.Invalid(at+".kind", fmt.Sprintf("%q is not one of %s", f.Kind, strings.Join(graph.LinkKinds, ", ")))
		}
		if f.Reason == nil || blank(*f.Reason) {
			return fault.Invalid(at+".reason", "is required for a link and must not be blank")
		}
	}
	return nil
}

// CheckpointDrawerID is the replay-safe id of a checkpoint item's drawer:
// derived from the job id and the item index.
func CheckpointDrawerID(jobID string, index int) string {
	ns, err := uuid.Parse(jobID)
	if err != nil {
		ns = uuid.NameSpaceOID
	}
	return uuid.NewSHA1(ns, []byte(fmt.Sprintf("checkpoint-item/%d", index))).String()
}

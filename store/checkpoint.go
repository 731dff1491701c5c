package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/store/fault"
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
// is validated and stored as given; the graph gives it its meaning.
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
}

// CheckpointRoom is the room of a wing that holds checkpoint drawers.
const CheckpointRoom = "checkpoints"

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
		return fault.Invalid(at+".destination", fmt.Sprintf("%q is not one of preference, project, diary, general", it.Destination))
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
	if f.Confidence != nil && (*f.Confidence < 0 || *f.Confidence > 1) {
		return fault.Invalid(at+".confidence", fmt.Sprintf("%v is outside 0 to 1", *f.Confidence))
	}
	emptyLabel := func(field string) error {
		return fault.Newf(fault.GraphEmptyLabel, "give "+at+"."+field+" a non-blank value", "%s.%s is blank", at, field)
	}
	relationship := func() error {
		if _, err := uuid.Parse(f.RelationshipID); err != nil {
			return fault.Invalid(at+".relationship_id", "is required: the id of a relationship")
		}
		return nil
	}
	switch f.Op {
	case "add":
		if blank(f.Subject) {
			return fault.Invalid(at+".subject", "is required")
		}
		if blank(f.Object) {
			return fault.Invalid(at+".object", "is required")
		}
		if f.Predicate == nil || blank(*f.Predicate) {
			return emptyLabel("predicate")
		}
		for field, v := range map[string]string{"subject_kind": f.SubjectKind, "object_kind": f.ObjectKind} {
			if v != "" && blank(v) {
				return emptyLabel(field)
			}
		}
	case "supersede", "invalidate":
		if err := relationship(); err != nil {
			return err
		}
		if f.Predicate != nil && blank(*f.Predicate) {
			return emptyLabel("predicate")
		}
	case "link":
		if err := relationship(); err != nil {
			return err
		}
		if _, err := uuid.Parse(f.OtherID); err != nil {
			return fault.Invalid(at+".other_id", "is required: the id of the other relationship")
		}
		switch f.Kind {
		case "confirms", "contradicts", "refines":
		default:
			return fault.Invalid(at+".kind", fmt.Sprintf("%q is not one of confirms, contradicts, refines", f.Kind))
		}
		if f.Reason == nil || blank(*f.Reason) {
			return fault.Invalid(at+".reason", "is required for a link and must not be blank")
		}
	default:
		return fault.Invalid(at+".op", fmt.Sprintf("%q is not one of add, supersede, invalidate, link", f.Op))
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

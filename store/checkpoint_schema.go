package store

import (
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/store/graph"
)

// CheckpointPayloadSchema is the JSON Schema (draft 2020-12) of a
// checkpoint payload as ParseCheckpoint reads it: what the schema allows,
// ParseCheckpoint accepts (names, wings and ids aside, which it checks
// further), and what it refuses for its shape, the schema refuses too.
// A fresh copy on every call.
func CheckpointPayloadSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Description:          "A checkpoint: {items: [...]}, each item one memory filed as a drawer in the room checkpoints of its wing.",
		Required:             []string{"items"},
		AdditionalProperties: closed(),
		Properties: map[string]*jsonschema.Schema{
			"items": {Type: "array", MinItems: intp(1), Items: checkpointItemSchema(),
				Description: "The memories to file, at least one."},
		},
	}
}

func checkpointItemSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Required:             []string{"destination", "content", "tags", "source"},
		AdditionalProperties: closed(),
		PropertyOrder:        []string{"destination", "wing", "content", "name", "tags", "source", "fact"},
		Properties: map[string]*jsonschema.Schema{
			"destination": {Type: "string", Enum: strs(DestinationNames),
				Description: "What kind of memory: preference, project, diary or general; it is filed in the wing preferences, projects, diary or general unless wing is given."},
			"wing": {Type: "string",
				Description: "A wing to file into instead of the destination's (a name: one segment without '/', control characters or surrounding spaces, not a UUID); created when missing."},
			"content": {Type: "string", MinLength: intp(1), Pattern: `\S`,
				Description: "The memory, stored verbatim: not blank, at most 1 MiB of UTF-8."},
			"name": {Type: "string",
				Description: "Optional drawer name, unique within the room: may contain '/' but no empty, '.' or '..' segment, no control characters or surrounding spaces, not a UUID. Leave it out for an unnamed drawer (an exact copy of an existing one is then counted as a duplicate and not stored)."},
			"tags": {Type: "array", MaxItems: intp(MaxTags), Items: &jsonschema.Schema{Type: "string", MinLength: intp(1), MaxLength: intp(128), Pattern: `^[^\s,\x00-\x1f\x7f]([^,\x00-\x1f\x7f]*[^\s,\x00-\x1f\x7f])?$`},
				Description: "Required, may be empty ([]): labels search can filter by; no commas, no surrounding spaces, at most 128 bytes each, at most 64."},
			"source": {Type: "object", Required: []string{"kind"}, AdditionalProperties: closed(),
				Description: "Where the memory comes from.",
				Properties: map[string]*jsonschema.Schema{
					"kind":   {Type: "string", Enum: strs(SourceKinds), Description: "file or manual (typed or said by someone); over MCP transcript and note are stored as other, over REST and the CLI as given; any other value is stored as other."},
					"uri":    {Type: "string", Description: "Optional: the file path or URL it was read from."},
					"agent":  {Type: "string", Description: "Optional: the agent that wrote it."},
					"origin": {Description: "Optional: any JSON value saying where in the source it was read (stored with the drawer)."},
				}},
			"fact": FactOpSchema(),
		},
	}
}

// FactOpSchema is the JSON Schema of a checkpoint item's fact: one object
// per operation (FactFields), told apart by op.
func FactOpSchema() *jsonschema.Schema {
	props := map[string]func() *jsonschema.Schema{
		"subject": func() *jsonschema.Schema {
			return entityRefSchema("Who or what the fact is about: a name, an existing entity's id, or {name, kind}.")
		},
		"subject_kind": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Enum: strs(graph.Kinds), Description: "The kind of a subject given by name (default other); or give subject as {name, kind}."}
		},
		"predicate": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Enum: strs(graph.Predicates), Description: "The relation, from this closed vocabulary (subject predicate object: Alice leads Billing)."}
		},
		"object": func() *jsonschema.Schema {
			return entityRefSchema("What the subject relates to: a name, an existing entity's id, or {name, kind}.")
		},
		"object_kind": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Enum: strs(graph.Kinds), Description: "The kind of an object given by name (default other); or give object as {name, kind}."}
		},
		"confidence": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "number", Minimum: floatp(0), Maximum: floatp(1), Description: "How sure, 0 to 1 (default 1)."}
		},
		"valid_from": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Pattern: InstantPattern,
				Description: "When it became true in the world: RFC 3339 (2026-03-01T09:00:00Z) or a date (2026-03-01); default now."}
		},
		"relationship_id": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Format: "uuid", Description: "The id (a UUID) of an existing fact (relationship), as the checkpoint job that stated it answers in result.facts, or the graph reads show it."}
		},
		"other_id": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Format: "uuid", Description: "The id (a UUID) of the other fact the link points to."}
		},
		"kind": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Enum: strs(graph.LinkKinds), Description: "How this checkpoint's fact relates to the other: confirms, contradicts or refines."}
		},
		"reason": func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Description: "Why, in a few words."}
		},
	}
	does := map[string]string{
		"add":        "add: record a new fact, subject predicate object.",
		"supersede":  "supersede: the fact relationship_id stops holding at valid_from and a new one takes over, with the same subject and its predicate and object unless given.",
		"invalidate": "invalidate: the fact relationship_id was never true; loci stops believing it.",
		"link":       "link: relate the fact relationship_id to other_id (confirms, contradicts, refines) without closing either.",
	}
	required := map[string][]string{
		"add": {"op", "subject", "predicate", "object"}, "supersede": {"op", "relationship_id"},
		"invalidate": {"op", "relationship_id"}, "link": {"op", "relationship_id", "other_id", "kind", "reason"},
	}
	out := &jsonschema.Schema{Type: "object", Description: "Optional: a knowledge-graph operation this memory is the evidence for; op is one of " +
		strings.Join(FactOps, ", ") + ". The item keeps its own drawer, which mentions the fact's subject and object."}
	for _, op := range FactOps {
		s := &jsonschema.Schema{Type: "object", Description: does[op], Required: required[op], AdditionalProperties: closed(),
			PropertyOrder: append([]string{"op"}, FactFields[op]...),
			Properties:    map[string]*jsonschema.Schema{"op": {Type: "string", Enum: []any{op}, Description: "The operation."}}}
		for _, f := range FactFields[op] {
			s.Properties[f] = props[f]()
		}
		if op == "link" {
			s.Properties["reason"].MinLength, s.Properties["reason"].Pattern = intp(1), `\S`
			s.Properties["reason"].Description = "Why they relate (required, not blank)."
		}
		if op == "supersede" {
			s.Properties["predicate"].Description = "A new predicate (default the old fact's)."
			s.Properties["object"].Description = "A new object (default the old fact's): a name, an existing entity's id, or {name, kind}."
		}
		out.OneOf = append(out.OneOf, s)
	}
	return out
}

// entityRefSchema is a fact's subject or object: a name or id, or
// {name, kind}.
func entityRefSchema(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Description: desc, OneOf: []*jsonschema.Schema{
		{Type: "string", MinLength: intp(1), Pattern: `\S`, Description: "A name (it resolves to an existing entity of that name, spelling or alias, else a new one is made) or an existing entity's id."},
		{Type: "object", Required: []string{"name"}, AdditionalProperties: closed(), PropertyOrder: []string{"name", "kind"},
			Properties: map[string]*jsonschema.Schema{
				"name": {Type: "string", MinLength: intp(1), Pattern: `\S`, Description: "The entity's name (or an existing entity's id)."},
				"kind": {Type: "string", Enum: strs(graph.Kinds), Description: "Its kind (default other)."},
			}},
	}}
}

// InstantPattern is the shape of an RFC 3339 timestamp or a date
// (YYYY-MM-DD), as ParseTimeOrDate reads them.
const InstantPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2}))?$`

// closed is additionalProperties: false.
func closed() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

func intp(n int) *int           { return &n }
func floatp(f float64) *float64 { return &f }
func strs(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

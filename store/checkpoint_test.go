package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// payloadWithFact is a one-item checkpoint payload carrying fact (JSON).
func payloadWithFact(fact string) json.RawMessage {
	return json.RawMessage(`{"items":[{"destination":"project","content":"Alice leads the billing project.","tags":[],"source":{"kind":"manual"},"fact":` + fact + `}]}`)
}

// A fact's subject and object may be a name or id with subject_kind /
// object_kind, or nested {name, kind}: both read the same.
func TestCheckpointFactEntityForms(t *testing.T) {
	flat := `{"op":"add","subject":"Alice","subject_kind":"person","predicate":"leads","object":"billing project","object_kind":"project"}`
	want, err := store.ParseCheckpoint(payloadWithFact(flat), store.ByHTTP)
	if err != nil {
		t.Fatal(err)
	}
	for name, fact := range map[string]string{
		"nested":            `{"op":"add","subject":{"name":"Alice","kind":"person"},"predicate":"leads","object":{"name":"billing project","kind":"project"}}`,
		"mixed":             `{"op":"add","subject":{"name":"Alice","kind":"person"},"predicate":"leads","object":"billing project","object_kind":"project"}`,
		"nested, same kind": `{"op":"add","subject":{"name":"Alice","kind":"person"},"subject_kind":"person","predicate":"leads","object":{"name":"billing project","kind":"project"}}`,
	} {
		got, err := store.ParseCheckpoint(payloadWithFact(fact), store.ByMCP)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if g, w := *got.Items[0].Fact, *want.Items[0].Fact; g.Subject != w.Subject || g.SubjectKind != w.SubjectKind || g.Object != w.Object || g.ObjectKind != w.ObjectKind {
			t.Errorf("%s: %+v, want %+v", name, g, w)
		}
	}
	// Without a kind the nested form is a name of kind other (the default),
	// as the flat form without subject_kind.
	got, err := store.ParseCheckpoint(payloadWithFact(`{"op":"supersede","relationship_id":"6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a","object":{"name":"Initech"}}`), store.ByCLI)
	if err != nil || got.Items[0].Fact.Object != "Initech" || got.Items[0].Fact.ObjectKind != "" {
		t.Fatalf("supersede with a nested object: %+v %v", got, err)
	}
}

// Bad facts are refused when the payload is read (at submission), naming
// the field as sent; a bad kind reads the same in either form.
func TestCheckpointFactRefusals(t *testing.T) {
	rel := `"relationship_id":"6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"`
	for _, c := range []struct{ fact, code, msg string }{
		{`{"op":"add","subject":"Alice","subject_kind":"wizard","predicate":"leads","object":"billing"}`, "loci::input::invalid",
			`items[0].fact.subject_kind: "wizard" is not one of person, organization, project, tool, place, event, date, concept, other`},
		{`{"op":"add","subject":{"name":"Alice","kind":"wizard"},"predicate":"leads","object":"billing"}`, "loci::input::invalid",
			`items[0].fact.subject.kind: "wizard" is not one of person, organization, project, tool, place, event, date, concept, other`},
		{`{"op":"add","subject":"Alice","predicate":"leads","object":"billing","object_kind":" "}`, "loci::graph::empty_label", "items[0].fact.object_kind is blank"},
		{`{"op":"add","subject":"Alice","predicate":"leads","object":{"name":"billing","kind":" "}}`, "loci::graph::empty_label", "items[0].fact.object.kind is blank"},
		{`{"op":"add","subject":{"name":"Alice","kind":"person"},"subject_kind":"project","predicate":"leads","object":"billing"}`, "loci::input::invalid",
			"items[0].fact.subject_kind: differs from subject.kind"},
		{`{"op":"add","subject":{"name":" "},"predicate":"leads","object":"billing"}`, "loci::input::invalid", "items[0].fact.subject.name: is required"},
		{`{"op":"add","subject":{"kind":"person"},"predicate":"leads","object":"billing"}`, "loci::input::invalid", "items[0].fact.subject.name: is required"},
		{`{"op":"add","subject":{"name":"Alice","role":"lead"},"predicate":"leads","object":"billing"}`, "loci::input::invalid", `items[0].fact.subject: unknown field "role"`},
		{`{"op":"add","subject":7,"predicate":"leads","object":"billing"}`, "loci::input::invalid",
			"items[0].fact.subject: must be a name or an entity id (a string), or an object {name, kind}"},
		{`{"op":"add","subject":"Alice","predicate":"fancies","object":"billing"}`, "loci::input::invalid", `items[0].fact.predicate: "fancies" is not one of works_on`},
		{`{"op":"add","subject":"Alice","predicate":"leads","object":"billing","valid_from":"last week"}`, "loci::input::invalid",
			"items[0].fact.valid_from: is not RFC 3339 or a date (YYYY-MM-DD)"},
		{`{"op":"add","subject":"Alice","predicate":"leads","object":"billing",` + rel + `}`, "loci::input::invalid",
			"items[0].fact.relationship_id: is not a field of add"},
		{`{"op":"supersede",` + rel + `,"subject":"Bob"}`, "loci::input::invalid", "items[0].fact.subject: is not a field of supersede"},
		{`{"op":"invalidate",` + rel + `,"predicate":"leads"}`, "loci::input::invalid", "items[0].fact.predicate: is not a field of invalidate"},
		{`{"op":"link",` + rel + `,"other_id":"6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2b","kind":"confirms","reason":"r","confidence":0.5}`, "loci::input::invalid",
			"items[0].fact.confidence: is not a field of link"},
	} {
		t.Run(c.msg, func(t *testing.T) {
			_, err := store.ParseCheckpoint(payloadWithFact(c.fact), store.ByHTTP)
			if err == nil || string(fault.As(err).Code) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%s: %v, want %s %q", c.fact, err, c.code, c.msg)
			}
		})
	}
}

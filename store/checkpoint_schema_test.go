package store_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/store"
)

// jsonFields are the JSON names of a struct type's fields.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func keys(m map[string]*jsonschema.Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The published schema names exactly the payload's fields: an item's,
// its source's, and for each fact operation op and the fields it takes.
func TestCheckpointSchemaNamesEveryField(t *testing.T) {
	s := store.CheckpointPayloadSchema()
	item := s.Properties["items"].Items
	if got, want := keys(item.Properties), jsonFields(reflect.TypeFor[store.CheckpointItem]()); !slices.Equal(got, want) {
		t.Errorf("item properties %v, want %v", got, want)
	}
	if got, want := keys(item.Properties["source"].Properties), jsonFields(reflect.TypeFor[store.Source]()); !slices.Equal(got, want) {
		t.Errorf("source properties %v, want %v", got, want)
	}
	all := map[string]bool{}
	fact := item.Properties["fact"]
	if len(fact.OneOf) != len(store.FactOps) {
		t.Fatalf("fact: %d operations, want %v", len(fact.OneOf), store.FactOps)
	}
	for i, op := range store.FactOps {
		branch := fact.OneOf[i]
		if !reflect.DeepEqual(branch.Properties["op"].Enum, []any{op}) {
			t.Errorf("operation %d: op %v, want %s", i, branch.Properties["op"].Enum, op)
		}
		want := append([]string{"op"}, store.FactFields[op]...)
		slices.Sort(want)
		if got := keys(branch.Properties); !slices.Equal(got, want) {
			t.Errorf("%s: properties %v, want %v", op, got, want)
		}
		for _, f := range want {
			all[f] = true
		}
	}
	if got, want := slices.Sorted(func(yield func(string) bool) {
		for k := range all {
			if !yield(k) {
				return
			}
		}
	}), jsonFields(reflect.TypeFor[store.FactOp]()); !slices.Equal(got, want) {
		t.Errorf("the operations' fields %v, want FactOp's %v", got, want)
	}
}

// What the schema allows, ParseCheckpoint accepts, and the shapes it
// refuses, the schema refuses: the two agree on every payload here.
func TestCheckpointSchemaAgreesWithTheDecoder(t *testing.T) {
	resolved, err := store.CheckpointPayloadSchema().Resolve(nil)
	if err != nil {
		t.Fatalf("the schema does not resolve: %v", err)
	}
	item := func(extra string) string {
		return `{"items":[{"destination":"project","content":"Alice leads the billing project.","tags":["billing"],"source":{"kind":"manual"}` + extra + `}]}`
	}
	rel := `"relationship_id":"6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"`
	for _, c := range []struct {
		payload string
		ok      bool
	}{
		{item(""), true},
		{item(`,"wing":"work","name":"billing/lead"`), true},
		{`{"items":[{"destination":"diary","content":"x","tags":[],"source":{"kind":"transcript","uri":"file:///a","agent":"claude","origin":{"line":3}}}]}`, true},
		{`{"items":[{"destination":"general","content":"x","tags":[],"source":{"kind":"note"}}]}`, true},
		{item(`,"fact":{"op":"add","subject":"Alice","subject_kind":"person","predicate":"leads","object":"Billing","object_kind":"project","confidence":0.9,"valid_from":"2026-03-01"}`), true},
		{item(`,"fact":{"op":"add","subject":{"name":"Alice","kind":"person"},"predicate":"leads","object":{"name":"Billing"},"valid_from":"2026-03-01T09:00:00Z"}`), true},
		{item(`,"fact":{"op":"supersede",` + rel + `,"object":{"name":"Initech","kind":"organization"},"valid_from":"2026-06-01","reason":"moved"}`), true},
		{item(`,"fact":{"op":"supersede",` + rel + `,"predicate":"works_with"}`), true},
		{item(`,"fact":{"op":"invalidate",` + rel + `,"reason":"never true"}`), true},
		{item(`,"fact":{"op":"invalidate",` + rel + `}`), true},
		{item(`,"fact":{"op":"link",` + rel + `,"other_id":"6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2b","kind":"refines","reason":"more precise"}`), true},

		{`{}`, false},
		{`{"items":[]}`, false},
		{`{"items":[{}]}`, false},
		{`{"items":[],"extra":1}`, false},
		{item(`,"colour":"red"`), false},
		{`{"items":[{"destination":"work","content":"x","tags":[],"source":{"kind":"manual"}}]}`, false},
		{`{"items":[{"destination":"project","content":"  ","tags":[],"source":{"kind":"manual"}}]}`, false},
		{`{"items":[{"destination":"project","content":"x","source":{"kind":"manual"}}]}`, false},
		{`{"items":[{"destination":"project","content":"x","tags":null,"source":{"kind":"manual"}}]}`, false},
		{`{"items":[{"destination":"project","content":"x","tags":["a,b"],"source":{"kind":"manual"}}]}`, false},
		{`{"items":[{"destination":"project","content":"x","tags":[" a"],"source":{"kind":"manual"}}]}`, false},
		{`{"items":[{"destination":"project","content":"x","tags":[],"source":{}}]}`, false},
		{`{"items":[{"destination":"project","content":"x","tags":[],"source":{"kind":"manual","author":"me"}}]}`, false},
		{item(`,"fact":{"op":"merge"}`), false},
		{item(`,"fact":{"subject":"Alice"}`), false},
		{item(`,"fact":{"op":"add","subject":"Alice","predicate":"leads"}`), false},
		{item(`,"fact":{"op":"add","subject":"Alice","predicate":"fancies","object":"Billing"}`), false},
		{item(`,"fact":{"op":"add","subject":"Alice","subject_kind":"wizard","predicate":"leads","object":"Billing"}`), false},
		{item(`,"fact":{"op":"add","subject":{"name":"Alice","kind":"wizard"},"predicate":"leads","object":"Billing"}`), false},
		{item(`,"fact":{"op":"add","subject":{"kind":"person"},"predicate":"leads","object":"Billing"}`), false},
		{item(`,"fact":{"op":"add","subject":{"name":"Alice","role":"x"},"predicate":"leads","object":"Billing"}`), false},
		{item(`,"fact":{"op":"add","subject":7,"predicate":"leads","object":"Billing"}`), false},
		{item(`,"fact":{"op":"add","subject":" ","predicate":"leads","object":"Billing"}`), false},
		{item(`,"fact":{"op":"add","subject":"Alice","predicate":"leads","object":"Billing","confidence":1.5}`), false},
		{item(`,"fact":{"op":"add","subject":"Alice","predicate":"leads","object":"Billing","valid_from":"last week"}`), false},
		{item(`,"fact":{"op":"add","subject":"Alice","predicate":"leads","object":"Billing",` + rel + `}`), false},
		{item(`,"fact":{"op":"supersede","subject":"Bob",` + rel + `}`), false},
		{item(`,"fact":{"op":"supersede"}`), false},
		{item(`,"fact":{"op":"invalidate",` + rel + `,"predicate":"leads"}`), false},
		{item(`,"fact":{"op":"link",` + rel + `,"other_id":"6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2b","kind":"refines"}`), false},
		{item(`,"fact":{"op":"link",` + rel + `,"other_id":"6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2b","kind":"refines","reason":" "}`), false},
		{item(`,"fact":{"op":"link",` + rel + `,"other_id":"6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2b","kind":"agrees","reason":"r"}`), false},
	} {
		t.Run(c.payload, func(t *testing.T) {
			var instance any
			if err := json.Unmarshal([]byte(c.payload), &instance); err != nil {
				t.Fatal(err)
			}
			schemaErr := resolved.Validate(instance)
			_, parseErr := store.ParseCheckpoint(json.RawMessage(c.payload), store.ByMCP)
			if (schemaErr == nil) != c.ok || (parseErr == nil) != c.ok {
				t.Errorf("%s: schema %v, decoder %v; want both to accept: %v", c.payload, schemaErr, parseErr, c.ok)
			}
		})
	}
}

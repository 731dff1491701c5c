package main_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// A fact's checkpoint drawer mentions the fact's subject and object, so
// expand reaches the other drawers that mention them (issue 25, point 6;
// a replayed item adds no second mention: the store's conformance suite).
func TestCheckpointFactDrawerMentionsItsEntities(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	other := d.do("POST", "/api/wings/team/rooms/people/drawers", map[string]any{"content": "Weekly standups happen on Mondays at nine."})
	otherID := get[string](other.body, "drawer", "id")
	if r := d.do("POST", "/api/drawers/"+otherID+"/mentions", map[string]any{"name": "Alice", "kind": "person"}); r.status != 201 {
		t.Fatalf("mention: %s", r.raw)
	}
	r := checkpointFact(t, d, "Alice leads the billing project.", map[string]any{"op": "add", "subject": "Alice", "subject_kind": "person",
		"predicate": "leads", "object": "billing project", "object_kind": "project"})
	job := get[string](r.body, "id")

	res := d.do("POST", "/api/search", map[string]any{"query": "billing project leads", "expand": true, "limit": 1})
	hits := get[[]any](res.body, "hits")
	var ids []string
	for _, h := range hits {
		ids = append(ids, get[string](h.(map[string]any), "id"))
	}
	// One direct hit, then up to one drawer linked through its entities.
	if len(hits) != 2 || get[string](hits[0].(map[string]any), "content") != "Alice leads the billing project." || ids[1] != otherID ||
		!slices.Equal(get[[]any](hits[1].(map[string]any), "via"), []any{"Alice"}) {
		t.Fatalf("search with expand: %s", res.raw)
	}
	cp := ids[0]
	mentions := func() []string {
		var out []string
		for _, name := range []string{"alice", "billing+project"} {
			ent := get[[]any](d.do("GET", "/api/entities?name="+name, nil).body, "entities")
			if len(ent) != 1 {
				t.Fatalf("entity %s: %v", name, ent)
			}
			ms := d.do("GET", "/api/entities/"+get[string](ent[0].(map[string]any), "id")+"/mentions", nil)
			for _, m := range get[[]any](ms.body, "mentions") {
				m := m.(map[string]any)
				if get[string](m, "drawer") == cp {
					if get[string](m, "provenance", "extractor") != "checkpoint" || get[string](m, "provenance", "origin") != "job:"+job {
						t.Fatalf("mention provenance: %s", ms.raw)
					}
					out = append(out, get[string](m, "observation", "name"))
				}
			}
		}
		return out
	}
	if got := mentions(); !slices.Equal(got, []string{"Alice", "billing project"}) {
		t.Fatalf("the checkpoint drawer's mentions: %v", got)
	}
}

// The nested {name, kind} form of a fact's subject and object is accepted
// over MCP, REST and the CLI, and a bad kind reads the same in either form
// (issue 25, point 5).
func TestCheckpointFactNestedEntities(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	payload := func(content, subject string) map[string]any {
		return map[string]any{"items": []any{map[string]any{"destination": "project", "content": content, "tags": []string{}, "source": map[string]any{"kind": "manual"},
			"fact": map[string]any{"op": "add", "subject": map[string]any{"name": subject, "kind": "person"}, "predicate": "works_on",
				"object": map[string]any{"name": "Billing", "kind": "project"}}}}}
	}
	// REST.
	r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": payload("Alice works on Billing.", "Alice")})
	if r.status != 202 {
		t.Fatalf("REST: %d %s", r.status, r.raw)
	}
	waitJob(t, d, get[string](r.body, "id"), 10*time.Second, finished)
	// MCP, as an object and as a JSON string.
	s := mcpSession(t, d)
	if job, isErr := callTool(t, s, "loci_checkpoint", map[string]any{"payload": payload("Bob works on Billing.", "Bob")}); isErr {
		t.Fatalf("MCP: %v", job)
	} else {
		waitJob(t, d, job["id"].(string), 10*time.Second, finished)
	}
	b, _ := json.Marshal(payload("Carol works on Billing.", "Carol"))
	if job, isErr := callTool(t, s, "loci_checkpoint", map[string]any{"payload": string(b)}); isErr {
		t.Fatalf("MCP (JSON string): %v", job)
	} else {
		waitJob(t, d, job["id"].(string), 10*time.Second, finished)
	}
	// The CLI.
	b, _ = json.Marshal(payload("Dan works on Billing.", "Dan"))
	if out, errOut, code := d.cli(string(b), "checkpoint", "--watch"); code != 0 {
		t.Fatalf("CLI: %d %s %s", code, out, errOut)
	}
	billing := get[[]any](d.do("GET", "/api/entities?name=billing", nil).body, "entities")
	if len(billing) != 1 || get[string](billing[0].(map[string]any), "kind") != "project" {
		t.Fatalf("billing: %v", billing)
	}
	rels := d.do("GET", "/api/entities/"+get[string](billing[0].(map[string]any), "id")+"/relationships", nil)
	var people []string
	for _, rel := range get[[]any](rels.body, "relationships") {
		people = append(people, get[string](rel.(map[string]any), "subject", "name")+"/"+get[string](rel.(map[string]any), "subject", "kind"))
	}
	slices.Sort(people)
	if !slices.Equal(people, []string{"Alice/person", "Bob/person", "Carol/person", "Dan/person"}) {
		t.Fatalf("facts on billing: %v (%s)", people, rels.raw)
	}

	// A bad kind: the same error in either form, at submission, over every
	// interface; nothing queued.
	jobs := len(get[[]any](d.do("GET", "/api/jobs?limit=200", nil).body, "jobs"))
	for field, fact := range map[string]map[string]any{
		"subject_kind": {"op": "add", "subject": "Eve", "subject_kind": "wizard", "predicate": "works_on", "object": "Billing"},
		"subject.kind": {"op": "add", "subject": map[string]any{"name": "Eve", "kind": "wizard"}, "predicate": "works_on", "object": "Billing"},
	} {
		p := map[string]any{"items": []any{map[string]any{"destination": "project", "content": "Eve works on Billing.", "tags": []string{},
			"source": map[string]any{"kind": "manual"}, "fact": fact}}}
		msg := `items[0].fact.` + field + `: "wizard" is not one of person, organization, project, tool, place, event, date, concept, other`
		if r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": p}); r.code() != "loci::input::invalid" || get[string](r.body, "error") != msg {
			t.Errorf("REST %s: %s", field, r.raw)
		}
		wantError(t, s, "loci_checkpoint", map[string]any{"payload": p}, "loci::input::invalid", strings.ToLower(msg))
		b, _ := json.Marshal(p)
		if _, errOut, code := d.cli(string(b), "checkpoint"); code == 0 || !strings.Contains(errOut, msg) {
			t.Errorf("CLI %s: %d %s", field, code, errOut)
		}
	}
	if n := len(get[[]any](d.do("GET", "/api/jobs?limit=200", nil).body, "jobs")); n != jobs {
		t.Fatalf("refused checkpoints queued jobs: %d then %d", jobs, n)
	}
}

// An agent that reads only tools/list: the example in loci_checkpoint's
// description, sent as it stands, files its memory and its fact on the
// real daemon (issue 25, point 4).
func TestMCPCheckpointExampleOnTheDaemon(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	s := mcpSession(t, d)
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var example map[string]any
	for _, tl := range tools.Tools {
		if tl.Name == "loci_checkpoint" {
			_, text, _ := strings.Cut(tl.Description, "Example payload: ")
			if err := json.Unmarshal([]byte(text), &example); err != nil {
				t.Fatalf("the published example: %v\n%s", err, tl.Description)
			}
		}
	}
	job, isErr := callTool(t, s, "loci_checkpoint", map[string]any{"payload": example})
	if isErr {
		t.Fatalf("the example: %v", job)
	}
	if j := waitJob(t, d, job["id"].(string), 10*time.Second, finished); j["status"] != "completed" {
		t.Fatalf("the example's job: %v", j)
	}
	alice := get[[]any](d.do("GET", "/api/entities?name=alice", nil).body, "entities")
	if len(alice) != 1 || get[string](alice[0].(map[string]any), "kind") != "person" {
		t.Fatalf("the example's subject: %v", alice)
	}
	rels := get[[]any](d.do("GET", "/api/entities/"+get[string](alice[0].(map[string]any), "id")+"/relationships", nil).body, "relationships")
	if len(rels) != 1 || get[string](rels[0].(map[string]any), "predicate") != "leads" {
		t.Fatalf("the example's fact: %v", rels)
	}
}

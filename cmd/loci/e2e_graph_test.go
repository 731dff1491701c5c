package main_test

import (
	"strings"
	"testing"
)

// Entities and mentions through REST and the CLI: linking a drawer to a
// name (201, then 200), resolution by key and typo with the spelling kept
// as an alias, C++ and C# apart, resemblance candidates, aliases by hand,
// listing filters, and bad input refused with nothing changed.
func TestEntitiesAndMentions(t *testing.T) {
	home, palace := newPalace(t)
	d := start(t, home, palace)
	w := d.do("POST", "/api/wings/projects/rooms/notes/drawers", map[string]any{"content": "Caroline moved the queue to PostgreSQL; C++ and C# services read it."})
	if w.status != 201 {
		t.Fatalf("file a drawer: %d %s", w.status, w.raw)
	}
	drawer := get[string](w.body, "drawer", "id")
	link := func(name, kind string) response {
		t.Helper()
		return d.do("POST", "/api/drawers/"+drawer+"/mentions", map[string]any{"name": name, "kind": kind})
	}
	r := link("PostgreSQL", "tool")
	if r.status != 201 || !get[bool](r.body, "linked") || get[string](r.body, "mention", "observation", "name") != "PostgreSQL" ||
		get[string](r.body, "mention", "provenance", "drawer") != drawer || get[string](r.body, "mention", "observation", "rule") != "exact" {
		t.Fatalf("first mention: %d %s", r.status, r.raw)
	}
	pg := get[string](r.body, "entity", "id")
	if r := link("postgre sql", "tool"); r.status != 200 || get[bool](r.body, "linked") || get[string](r.body, "entity", "id") != pg {
		t.Fatalf("the same entity again: %d %s", r.status, r.raw)
	}
	cpp, cs := link("C++", "tool"), link("C#", "tool")
	if cpp.status != 201 || cs.status != 201 || get[string](cpp.body, "entity", "id") == get[string](cs.body, "entity", "id") {
		t.Fatalf("C++ and C#: %s %s", cpp.raw, cs.raw)
	}
	caroline := get[string](link("Caroline", "person").body, "entity", "id")
	// A typo of a long name converges and is kept as an alias.
	if r := link("Carolline", "person"); r.status != 200 || get[string](r.body, "entity", "id") != caroline ||
		len(get[[]any](r.body, "entity", "aliases")) != 1 || get[[]any](r.body, "entity", "aliases")[0] != "Carolline" {
		t.Fatalf("a typo: %d %s", r.status, r.raw)
	}
	// The same name as another kind: a new entity, a candidate of the first.
	place := link("Caroline", "place")
	if place.status != 201 || get[string](place.body, "entity", "id") == caroline {
		t.Fatalf("Caroline the place: %s", place.raw)
	}
	c := d.do("GET", "/api/entities/"+caroline+"/candidates", nil)
	if c.status != 200 || !strings.Contains(c.raw, get[string](place.body, "entity", "id")) || !strings.Contains(c.raw, `"side": "from"`) {
		t.Fatalf("candidates: %d %s", c.status, c.raw)
	}

	out, errOut, code := d.cli("", "entity", "alias", pg, "Postgres")
	if code != 0 || !strings.Contains(out, "aliases: postgre sql, Postgres") {
		t.Fatalf("entity alias: %d %s %s", code, out, errOut)
	}
	if r := d.do("POST", "/api/drawers/"+drawer+"/mentions", map[string]any{"name": "postgres", "kind": "tool"}); r.status != 200 || get[string](r.body, "entity", "id") != pg {
		t.Fatalf("by the alias: %d %s", r.status, r.raw)
	}
	out, _, _ = d.cli("", "entity", "list", "--kind", "tool")
	if !strings.Contains(out, "PostgreSQL") || !strings.Contains(out, "C++") || strings.Contains(out, "Caroline") {
		t.Fatalf("entity list --kind tool:\n%s", out)
	}
	if r := d.do("GET", "/api/entities?name=CARO&limit=1", nil); len(get[[]any](r.body, "entities")) != 1 || !get[bool](r.body, "truncated") {
		t.Fatalf("name filter and limit: %s", r.raw)
	}
	out, _, _ = d.cli("", "entity", "mentions", pg)
	if !strings.Contains(out, drawer) || !strings.Contains(out, `"PostgreSQL" (exact, manual`) {
		t.Fatalf("entity mentions:\n%s", out)
	}

	before := d.do("GET", "/api/entities?limit=200", nil).raw
	for _, c := range []struct {
		path string
		body map[string]any
		code string
	}{
		{"/api/drawers/" + drawer + "/mentions", map[string]any{"name": "  ", "kind": "tool"}, "loci::graph::empty_label"},
		{"/api/drawers/" + drawer + "/mentions", map[string]any{"name": "Go", "kind": ""}, "loci::graph::empty_label"},
		{"/api/drawers/" + drawer + "/mentions", map[string]any{"name": "Go", "kind": "gadget"}, "loci::input::invalid"},
		{"/api/drawers/0190c4c8-0000-7000-8000-000000000000/mentions", map[string]any{"name": "Go", "kind": "tool"}, "loci::palace::drawer_not_found"},
		{"/api/entities/0190c4c8-0000-7000-8000-000000000000/aliases", map[string]any{"alias": "x"}, "loci::graph::entity_not_found"},
		{"/api/entities/" + pg + "/aliases", map[string]any{"alias": ""}, "loci::graph::empty_label"},
	} {
		r := d.do("POST", c.path, c.body)
		if r.code() != c.code || get[string](r.body, "help") == "" {
			t.Errorf("POST %s %v: %d %s, want %s", c.path, c.body, r.status, r.raw, c.code)
		}
	}
	if r := d.do("GET", "/api/entities/nope/mentions", nil); r.status != 404 || r.code() != "loci::graph::entity_not_found" {
		t.Fatalf("unknown entity: %d %s", r.status, r.raw)
	}
	if after := d.do("GET", "/api/entities?limit=200", nil).raw; after != before {
		t.Fatalf("refused requests changed the entities:\n%s\n%s", before, after)
	}
}

package main_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Entities and mentions through REST and the CLI: linking a drawer to a
// name (201, then 200), resolution by key and typo with the spelling kept
// as an alias, C++ and C# apart, resemblance candidates, aliases by hand,
// listing filters, and bad input refused with nothing changed.
func TestEntitiesAndMentions(t *testing.T) {
	t.Parallel()
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

// checkpointFact submits one checkpoint item carrying fact and waits for
// the job; it returns the submission's answer.
func checkpointFact(t *testing.T, d *daemon, content string, fact map[string]any) response {
	t.Helper()
	r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{map[string]any{
		"destination": "project", "content": content, "tags": []string{}, "source": map[string]any{"kind": "manual"}, "fact": fact}}}})
	if r.status == 202 {
		j := waitJob(t, d, get[string](r.body, "id"), 10*time.Second, finished)
		if j["status"] != "completed" {
			t.Fatalf("checkpoint with %v: %v", fact, j)
		}
	}
	return r
}

// Facts through checkpoints: add by names (the entities resolved and
// made), supersede with a new object and valid time, the history with the
// decision and its evidence, as_of before and after the change, invalidate,
// link, the refusals at submission, the CLI and MCP.
func TestFactsThroughCheckpoints(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	checkpointFact(t, d, "Caroline joined Acme in March.", map[string]any{"op": "add", "subject": "Caroline", "subject_kind": "person",
		"predicate": "works_at", "object": "Acme", "object_kind": "organization", "valid_from": "2026-03-01", "confidence": 0.9})
	ents := d.do("GET", "/api/entities?name=caroline", nil)
	caroline := get[string](get[[]any](ents.body, "entities")[0].(map[string]any), "id")
	rels := d.do("GET", "/api/entities/"+caroline+"/relationships", nil)
	list := get[[]any](rels.body, "relationships")
	if rels.status != 200 || len(list) != 1 {
		t.Fatalf("relationships: %d %s", rels.status, rels.raw)
	}
	first := list[0].(map[string]any)
	if get[string](first, "predicate") != "works_at" || get[string](first, "object", "name") != "Acme" || !get[bool](first, "current") ||
		get[float64](first, "confidence") != 0.9 || get[string](first, "provenance", "extractor") != "checkpoint" {
		t.Fatalf("the fact: %v", first)
	}
	firstID := get[string](first, "id")
	checkpointFact(t, d, "Caroline moved to Initech in June.", map[string]any{"op": "supersede", "relationship_id": firstID,
		"object": "Initech", "object_kind": "organization", "valid_from": "2026-06-01", "reason": "she changed jobs"})
	now := d.do("GET", "/api/entities/"+caroline+"/relationships", nil)
	if l := get[[]any](now.body, "relationships"); len(l) != 1 || get[string](l[0].(map[string]any), "object", "name") != "Initech" {
		t.Fatalf("current after the supersede: %s", now.raw)
	}
	may := d.do("GET", "/api/entities/"+caroline+"/relationships?as_of=2026-05-01", nil)
	if l := get[[]any](may.body, "relationships"); len(l) != 1 || get[string](l[0].(map[string]any), "object", "name") != "Acme" {
		t.Fatalf("as of May: %s", may.raw)
	}
	if l := get[[]any](d.do("GET", "/api/entities/"+caroline+"/relationships?as_of=2026-01-15", nil).body, "relationships"); len(l) != 0 {
		t.Fatalf("as of January, before either fact: %v", l)
	}
	all := d.do("GET", "/api/entities/"+caroline+"/relationships?include_expired=true", nil)
	if l := get[[]any](all.body, "relationships"); len(l) != 2 {
		t.Fatalf("include_expired: %s", all.raw)
	}
	h := d.do("GET", "/api/relationships/"+firstID+"/history", nil)
	rel := get[[]any](h.body, "related")
	if h.status != 200 || len(rel) != 1 || get[string](rel[0].(map[string]any), "relation") != "superseded_by" ||
		get[string](rel[0].(map[string]any), "reason") != "she changed jobs" || get[string](rel[0].(map[string]any), "evidence") == "" {
		t.Fatalf("history: %d %s", h.status, h.raw)
	}
	second := get[string](rel[0].(map[string]any), "relationship", "id")
	checkpointFact(t, d, "HR says Caroline never left.", map[string]any{"op": "link", "relationship_id": second, "other_id": firstID,
		"kind": "contradicts", "reason": "HR records"})
	out, errOut, code := d.cli("", "fact", "history", second)
	if code != 0 || !strings.Contains(out, "Caroline works_at Initech") || !strings.Contains(out, "supersedes") || !strings.Contains(out, "contradicts (to): HR records") {
		t.Fatalf("loci fact history: %d\n%s\n%s", code, out, errOut)
	}
	checkpointFact(t, d, "Caroline never worked at Initech.", map[string]any{"op": "invalidate", "relationship_id": second})
	if l := get[[]any](d.do("GET", "/api/entities/"+caroline+"/relationships", nil).body, "relationships"); len(l) != 0 {
		t.Fatalf("an invalidated fact is still current: %v", l)
	}
	s := mcpSession(t, d)
	if res, isErr := callTool(t, s, "loci_fact_history", map[string]any{"relationship_id": firstID, "as_of": "2026-05-01"}); isErr ||
		!get[bool](res, "relationship", "current") {
		t.Fatalf("loci_fact_history as of May: %v", res)
	}

	// Refusals at submission: nothing queued.
	jobs := len(get[[]any](d.do("GET", "/api/jobs?limit=200", nil).body, "jobs"))
	for _, c := range []struct {
		fact map[string]any
		code string
	}{
		{map[string]any{"op": "supersede", "relationship_id": "0190c4c8-2222-7000-8000-000000000000"}, "loci::graph::relationship_not_found"},
		{map[string]any{"op": "add", "subject": "A", "predicate": " ", "object": "B"}, "loci::graph::empty_label"},
		{map[string]any{"op": "add", "subject": "0190c4c8-3333-7000-8000-000000000000", "predicate": "uses", "object": "Go"}, "loci::graph::entity_not_found"},
		{map[string]any{"op": "add", "subject": "A", "predicate": "uses", "object": "B", "confidence": 1.5}, "loci::input::invalid"},
		{map[string]any{"op": "link", "relationship_id": firstID, "other_id": second, "kind": "refines", "reason": " "}, "loci::input::invalid"},
	} {
		if r := checkpointFact(t, d, "A refused fact.", c.fact); r.code() != c.code {
			t.Errorf("%v: %d %s, want %s", c.fact, r.status, r.raw, c.code)
		}
	}
	if n := len(get[[]any](d.do("GET", "/api/jobs?limit=200", nil).body, "jobs")); n != jobs {
		t.Fatalf("refused checkpoints queued jobs: %d then %d", jobs, n)
	}
	if r := d.do("GET", "/api/entities/"+caroline+"/relationships?as_of=2026-05-01&include_expired=true", nil); r.code() != "loci::input::invalid" {
		t.Fatalf("as_of with include_expired: %s", r.raw)
	}

	// The graph: hops out over open facts only.
	for _, f := range [][3]string{{"Melanie", "works_with", "Caroline"}, {"Caroline", "lives_in", "Paris"}, {"Paris", "located_in", "France"}} {
		kinds := map[string]string{"Melanie": "person", "Caroline": "person", "Paris": "place", "France": "place"}
		checkpointFact(t, d, f[0]+" "+f[1]+" "+f[2]+".", map[string]any{"op": "add", "subject": f[0], "subject_kind": kinds[f[0]],
			"predicate": f[1], "object": f[2], "object_kind": kinds[f[2]]})
	}
	melanie := get[string](get[[]any](d.do("GET", "/api/entities?name=melanie", nil).body, "entities")[0].(map[string]any), "id")
	g1 := d.do("GET", "/api/graph?entity="+melanie, nil)
	g3 := d.do("GET", "/api/graph?entity="+melanie+"&depth=3", nil)
	if len(get[[]any](g1.body, "nodes")) != 2 || len(get[[]any](g1.body, "edges")) != 1 ||
		len(get[[]any](g3.body, "nodes")) != 4 || len(get[[]any](g3.body, "edges")) != 3 || get[bool](g3.body, "truncated") {
		t.Fatalf("graph depth 1: %s\ndepth 3: %s", g1.raw, g3.raw)
	}
	if g := d.do("GET", "/api/graph?entity="+melanie+"&depth=3&limit=2", nil); !get[bool](g.body, "truncated") || len(get[[]any](g.body, "nodes")) != 2 {
		t.Fatalf("graph limit: %s", g.raw)
	}
	if g := d.do("GET", "/api/graph?depth=4", nil); g.code() != "loci::input::invalid" {
		t.Fatalf("depth 4: %s", g.raw)
	}
	out, _, _ = d.cli("", "graph", "--entity", melanie, "--depth", "2")
	if !strings.Contains(out, "3 entities, 2 facts") || !strings.Contains(out, "Caroline lives_in Paris") {
		t.Fatalf("loci graph:\n%s", out)
	}
}

// expand: after the direct hits, never reordering them, the drawers that
// share an entity with a hit, then those one open fact away; a fact not
// valid yet is no hop.
func TestSearchExpand(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	file := func(content string, mentions ...[2]string) string {
		t.Helper()
		r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": content})
		id := get[string](r.body, "drawer", "id")
		for _, m := range mentions {
			if r := d.do("POST", "/api/drawers/"+id+"/mentions", map[string]any{"name": m[0], "kind": m[1]}); r.status != 201 {
				t.Fatalf("mention: %s", r.raw)
			}
		}
		return id
	}
	a := file("The lamp project kickoff went well on Tuesday.", [2]string{"Caroline", "person"})
	b := file("Budget review notes for the next quarter.", [2]string{"Caroline", "person"})
	c := file("The office lease renewal is due in spring.", [2]string{"Paris", "place"})
	e := file("Opening hours of the bakery near the station.", [2]string{"Lyon", "place"})
	checkpointFact(t, d, "Caroline lives in Paris.", map[string]any{"op": "add", "subject": "Caroline", "subject_kind": "person",
		"predicate": "lives_in", "object": "Paris", "object_kind": "place", "valid_from": "2020-01-01"})
	checkpointFact(t, d, "Caroline will move to Lyon.", map[string]any{"op": "add", "subject": "Caroline", "subject_kind": "person",
		"predicate": "moved_to", "object": "Lyon", "object_kind": "place", "valid_from": "2099-01-01"})
	ids := func(r response) []string {
		var out []string
		for _, h := range get[[]any](r.body, "hits") {
			out = append(out, get[string](h.(map[string]any), "id"))
		}
		return out
	}
	// In wing w (the facts' checkpoint drawers are in projects): b shares
	// Caroline with a, c mentions Paris, where Caroline lives.
	plain := d.do("POST", "/api/search", map[string]any{"query": "lamp kickoff", "ranking": "lexical", "filter": map[string]any{"wing": "w"}})
	exp := d.do("POST", "/api/search", map[string]any{"query": "lamp kickoff", "ranking": "lexical", "expand": true, "filter": map[string]any{"wing": "w"}})
	p, x := ids(plain), ids(exp)
	if len(p) != 1 || p[0] != a || len(x) != 3 || x[0] != a || x[1] != b || x[2] != c {
		t.Fatalf("direct %v, expanded %v (a %s b %s c %s e %s)", p, x, a, b, c, e)
	}
	// Everywhere: the facts' checkpoint drawers mention their subject and
	// object, so they share Caroline with a too; the one about Paris
	// mentions both a hit's entity and the one a fact away, so it comes
	// first.
	fact := func(content string) string {
		r := d.do("POST", "/api/search", map[string]any{"query": content, "ranking": "lexical", "filter": map[string]any{"wing": "projects"}, "limit": 1})
		return ids(r)[0]
	}
	paris, lyon := fact("Caroline lives in Paris."), fact("Caroline will move to Lyon.")
	all := ids(d.do("POST", "/api/search", map[string]any{"query": "lamp kickoff", "ranking": "lexical", "expand": true}))
	if len(all) != 5 || all[0] != a || all[1] != paris || !slices.Contains(all[2:4], b) || !slices.Contains(all[2:4], lyon) || all[4] != c {
		t.Fatalf("expanded everywhere %v (a %s b %s c %s; the facts' drawers %s %s)", all, a, b, c, paris, lyon)
	}
	hits := get[[]any](exp.body, "hits")
	second, third := hits[1].(map[string]any), hits[2].(map[string]any)
	if get[[]any](second, "via")[0] != "Caroline" || get[float64](second, "signals", "graph", "hops") != 0 ||
		get[[]any](third, "via")[0] != "Paris" || get[float64](third, "signals", "graph", "hops") != 1 {
		t.Fatalf("expanded hits' signals: %s", exp.raw)
	}
	for _, h := range hits {
		if m := h.(map[string]any); m["wing"] != "w" || m["room"] != "r" {
			t.Fatalf("a hit without its wing and room names: %s", exp.raw)
		}
	}
	if _, ok := hits[0].(map[string]any)["via"]; ok {
		t.Fatalf("a direct hit carries via: %s", exp.raw)
	}
	if r := d.do("POST", "/api/search", map[string]any{"query": "lamp kickoff", "ranking": "lexical", "expand": true, "limit": 1}); len(ids(r)) != 2 {
		t.Fatalf("limit 1 expands by at most 1: %v", ids(r))
	}
	// The CLI says what an expanded hit was reached through.
	if out, _, code := d.cli("", "search", "--ranking", "lexical", "--expand", "--wing", "w", "lamp", "kickoff"); code != 0 || !strings.Contains(out, "(linked through Caroline)") {
		t.Fatalf("loci search --expand: %d %s", code, out)
	}
}

// With extraction.provider = heuristic, a mine queues an extract job that
// reads what was mined into entities and facts; without a provider an
// extract job is refused.
func TestExtractAfterMine(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	os.WriteFile(filepath.Join(root, "docs", "team.md"), []byte("Caroline works at Acme Inc. She moved to Lisbon last year.\n"), 0o644)
	d, _ := withConfig(t, "[extraction]\nprovider = \"heuristic\"\n")
	r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root})
	waitJob(t, d, get[string](r.body, "id"), 20*time.Second, finished)
	eventually(t, 20*time.Second, "the extract job after the mine", func() bool {
		for _, j := range get[[]any](d.do("GET", "/api/jobs?kind=extract", nil).body, "jobs") {
			if get[string](j.(map[string]any), "status") == "completed" {
				return true
			}
		}
		return false
	})
	out, _, _ := d.cli("", "entity", "list", "--kind", "person")
	if !strings.Contains(out, "Caroline") {
		t.Fatalf("entities after extraction:\n%s", out)
	}
	ents := d.do("GET", "/api/entities?name=caroline", nil)
	id := get[string](get[[]any](ents.body, "entities")[0].(map[string]any), "id")
	rels := d.do("GET", "/api/entities/"+id+"/relationships", nil)
	if l := get[[]any](rels.body, "relationships"); len(l) != 1 || get[string](l[0].(map[string]any), "provenance", "extractor") != "heuristic" {
		t.Fatalf("extracted facts: %s", rels.raw)
	}

	home, palace := newPalace(t)
	plain := start(t, home, palace)
	if r := plain.do("POST", "/api/jobs", map[string]any{"type": "extract"}); r.code() != "loci::extract::not_configured" || r.status != 400 {
		t.Fatalf("extract without a provider: %d %s", r.status, r.raw)
	}
}

// known_at answers as loci would have then: on search, a drawer recorded
// later is unknown and a supersession recorded later is not yet seen; on
// facts, a retraction recorded later is not yet seen.
func TestKnownAt(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	w := d.do("POST", "/api/wings/ops/rooms/deploys/drawers", map[string]any{"content": "Deploys happen on Fridays after lunch.", "name": "deploys"})
	id := get[string](w.body, "drawer", "id")
	time.Sleep(20 * time.Millisecond)
	before := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(20 * time.Millisecond)
	if r := d.do("POST", "/api/drawers/"+id+"/supersede", map[string]any{"content": "Deploys happen on Mondays before standup."}); r.status/100 != 2 {
		t.Fatalf("supersede: %d %s", r.status, r.raw)
	}
	search := func(extra map[string]any) string {
		body := map[string]any{"query": "deploys happen", "ranking": "lexical"}
		for k, v := range extra {
			body[k] = v
		}
		r := d.do("POST", "/api/search", body)
		if r.status != 200 {
			t.Fatalf("search %v: %d %s", extra, r.status, r.raw)
		}
		return r.raw
	}
	if now := search(nil); !strings.Contains(now, "Mondays") || strings.Contains(now, "Fridays") {
		t.Fatalf("now: %s", now)
	}
	if then := search(map[string]any{"known_at": before}); !strings.Contains(then, "Fridays") || strings.Contains(then, "Mondays") {
		t.Fatalf("known at %s: %s", before, then)
	}
	if r := d.do("GET", "/api/search?q=deploys+happen&ranking=lexical&known_at="+before, nil); !strings.Contains(r.raw, "Fridays") {
		t.Fatalf("GET with known_at: %s", r.raw)
	}
	if r := d.do("POST", "/api/search", map[string]any{"query": "x", "known_at": "yesterday-ish"}); r.code() != "loci::input::invalid" || !strings.Contains(r.raw, "known_at") {
		t.Fatalf("a bad known_at: %s", r.raw)
	}

	checkpointFact(t, d, "Caroline works at Acme.", map[string]any{"op": "add", "subject": "Caroline", "subject_kind": "person",
		"predicate": "works_at", "object": "Acme", "object_kind": "organization", "valid_from": "2020-01-01"})
	ents := d.do("GET", "/api/entities?name=caroline", nil)
	caroline := get[string](get[[]any](ents.body, "entities")[0].(map[string]any), "id")
	fact := get[string](get[[]any](d.do("GET", "/api/entities/"+caroline+"/relationships", nil).body, "relationships")[0].(map[string]any), "id")
	time.Sleep(20 * time.Millisecond)
	believed := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(20 * time.Millisecond)
	checkpointFact(t, d, "Caroline never worked at Acme.", map[string]any{"op": "invalidate", "relationship_id": fact})
	if l := get[[]any](d.do("GET", "/api/entities/"+caroline+"/relationships", nil).body, "relationships"); len(l) != 0 {
		t.Fatalf("after the correction: %v", l)
	}
	if l := get[[]any](d.do("GET", "/api/entities/"+caroline+"/relationships?known_at="+believed, nil).body, "relationships"); len(l) != 1 {
		t.Fatalf("known before the correction: %v", l)
	}
	s := mcpSession(t, d)
	if res, isErr := callTool(t, s, "loci_fact_history", map[string]any{"relationship_id": fact, "known_at": believed}); isErr || !get[bool](res, "relationship", "current") {
		t.Fatalf("loci_fact_history known before the correction: %v", res)
	}
	if res, isErr := callTool(t, s, "loci_search", map[string]any{"query": "deploys happen", "ranking": "lexical", "known_at": before}); isErr || !strings.Contains(fmt.Sprint(res), "Fridays") {
		t.Fatalf("loci_search known_at: %v", res)
	}
}

// The graph a newcomer sees: without an entity, GET /api/graph and loci
// graph start from the entities with the most open facts (not the first
// names, which had no facts); --entity and ?entity= take a name, the
// exact one first, then one the name search finds alone; an identical
// fact asserted again is one fact with more evidence.
func TestGraphStartsFromTheBusiestEntities(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	w := d.do("POST", "/api/wings/notes/rooms/misc/drawers", map[string]any{"content": "Dates like 2006-01-02 and names like Aaron mean nothing here."})
	drawer := get[string](w.body, "drawer", "id")
	// Entities early by name, without facts.
	for _, date := range []string{"1999-12-31", "2006-01-02", "2010-05-17", "2013-08-24", "2017-03-09", "2020-11-28"} {
		if r := d.do("POST", "/api/drawers/"+drawer+"/mentions", map[string]any{"name": date, "kind": "date"}); r.status != 201 {
			t.Fatalf("mention: %s", r.raw)
		}
	}
	kinds := map[string]string{"Caroline": "person", "Melanie": "person", "Acme": "organization", "Lisbon": "place", "Carla": "person"}
	for _, f := range [][3]string{{"Caroline", "works_at", "Acme"}, {"Caroline", "lives_in", "Lisbon"}, {"Melanie", "works_with", "Caroline"},
		{"Melanie", "lives_in", "Lisbon"}, {"Caroline", "works_at", "Acme"}, {"Caroline", "works_at", "Acme"}} {
		checkpointFact(t, d, f[0]+" "+f[1]+" "+f[2]+".", map[string]any{"op": "add", "subject": f[0], "subject_kind": kinds[f[0]],
			"predicate": f[1], "object": f[2], "object_kind": kinds[f[2]]})
	}
	checkpointFact(t, d, "Carla joined.", map[string]any{"op": "add", "subject": "Carla", "subject_kind": "person", "predicate": "works_at", "object": "Globex", "object_kind": "organization"})

	g := d.do("GET", "/api/graph?limit=3", nil)
	nodes := get[[]any](g.body, "nodes")
	if g.status != 200 || len(nodes) != 3 || get[string](nodes[0].(map[string]any), "name") != "Caroline" || len(get[[]any](g.body, "edges")) != 3 || !get[bool](g.body, "truncated") {
		t.Fatalf("the graph without an entity: %d %s", g.status, g.raw)
	}
	for _, n := range nodes {
		if strings.HasPrefix(get[string](n.(map[string]any), "name"), "20") {
			t.Fatalf("an entity without facts in the overview: %s", g.raw)
		}
	}
	out, errOut, code := d.cli("", "graph")
	if code != 0 || !strings.Contains(out, "6 entities, 5 facts") || !strings.Contains(out, "Caroline works_at Acme") {
		t.Fatalf("loci graph: %d\n%s\n%s", code, out, errOut)
	}

	// Three assertions of "Caroline works_at Acme": one fact, three pieces
	// of evidence.
	caroline := get[string](nodes[0].(map[string]any), "id")
	rels := d.do("GET", "/api/entities/"+caroline+"/relationships", nil)
	works := 0
	for _, r := range get[[]any](rels.body, "relationships") {
		if f := r.(map[string]any); get[string](f, "predicate") == "works_at" {
			works++
			if ev := get[[]any](f, "evidence"); len(ev) != 3 || get[string](ev[0].(map[string]any), "drawer") != get[string](f, "provenance", "drawer") {
				t.Fatalf("the fact's evidence: %v", f)
			}
		}
	}
	if works != 1 {
		t.Fatalf("%d works_at facts, want one: %s", works, rels.raw)
	}

	// By name: exact first (Caroline, not Carla), then a unique match.
	for _, c := range []struct{ ref, centre, count string }{{"Caroline", "Caroline", "4 entities, 3 facts"}, {"caroline", "Caroline", "4 entities, 3 facts"},
		{"mela", "Melanie", "3 entities, 2 facts"}, {caroline, "Caroline", "4 entities, 3 facts"}} {
		g := d.do("GET", "/api/graph?entity="+url.QueryEscape(c.ref), nil)
		if g.status != 200 || get[string](g.body, "entity", "name") != c.centre {
			t.Fatalf("?entity=%s: %d %s", c.ref, g.status, g.raw)
		}
		out, errOut, code := d.cli("", "graph", "--entity", c.ref)
		if code != 0 || !strings.Contains(out, c.count) || !strings.Contains(out, c.centre) {
			t.Fatalf("loci graph --entity %s: %d\n%s\n%s", c.ref, code, out, errOut)
		}
	}
	// Several names contain "car" and none is it: refused, naming them.
	if g := d.do("GET", "/api/graph?entity=car", nil); g.status != 400 || g.code() != "loci::input::invalid" || !strings.Contains(g.raw, "Carla") {
		t.Fatalf("an ambiguous name: %d %s", g.status, g.raw)
	}
	if g := d.do("GET", "/api/graph?entity=Nobody", nil); g.status != 404 || g.code() != "loci::graph::entity_not_found" {
		t.Fatalf("an unknown name: %d %s", g.status, g.raw)
	}
	if _, errOut, code := d.cli("", "graph", "--entity", "car"); code == 0 || !strings.Contains(errOut, "Caroline") || !strings.Contains(errOut, "loci::input::invalid") {
		t.Fatalf("loci graph --entity car: %d %s", code, errOut)
	}
}

// Mining a source tree with the heuristic extractor files its prose's
// names, not its junk: no lockfile hashes, generated files, redaction
// markers, identifiers, regular-expression classes, layout dates or
// licence text in capitals.
func TestExtractFilesNamesNotJunk(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{
		"go.sum":        "github.com/dgraph-io/badger/v4 v4.5.1 h1:DhzuOOF2ATzADvBadXxruRBLzYTpT36CKvDb3+aBEFg=\n",
		"api/api.pb.go": "// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage api\n\n// Melanie Jones wrote it in Lisbon.\ntype Request struct{}\n",
		"cmd/main.go": "// Package main starts the server that Caroline wrote in Berlin.\npackage main\n\n// ActorLogLevel is the level of the actors' log.\n" +
			"var ActorLogLevel = 1\n\n// Reader is the read side.\ntype Reader interface{ Get(id string) string }\n\nvar layout = \"2006-01-02\"\nvar name = regexp.MustCompile(`[A-Za-z0-9]+`)\n",
		"deploy.env": "AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP\n",
		"LICENSE":    "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED. IN NO EVENT SHALL THE AUTHORS BE LIABLE IN CONNECTION WITH THE SOFTWARE.\n",
		"README.md":  "# Tour\n\nPriya Patel keeps the `ActorLogLevel` setting in PostgreSQL; see Daniel in Paris.\n",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := withConfig(t, "[extraction]\nprovider = \"heuristic\"\n")
	r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root})
	waitJob(t, d, get[string](r.body, "id"), 20*time.Second, finished)
	eventually(t, 20*time.Second, "the extract job after the mine", func() bool {
		for _, j := range get[[]any](d.do("GET", "/api/jobs?kind=extract&automatic=true", nil).body, "jobs") {
			if get[string](j.(map[string]any), "status") == "completed" {
				return true
			}
		}
		return false
	})
	var names []string
	for _, e := range get[[]any](d.do("GET", "/api/entities?limit=200", nil).body, "entities") {
		names = append(names, get[string](e.(map[string]any), "name"))
	}
	got := strings.Join(names, ", ")
	for _, want := range []string{"Caroline", "Berlin", "Priya Patel", "PostgreSQL", "Daniel", "Paris"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s is not among the entities: %s", want, got)
		}
	}
	for _, junk := range []string{"DhzuOOF2", "Melanie", "Lisbon", "ActorLogLevel", "Reader", "2006-01-02", "A-Za-z0-9", "REDACTED", "ACCESS", "SOFTWARE", "WARRANTY", "CONNECTION"} {
		if strings.Contains(got, junk) {
			t.Errorf("junk among the entities (%s): %s", junk, got)
		}
	}
}

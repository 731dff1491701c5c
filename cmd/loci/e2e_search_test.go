package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func hitNames(r response) []string {
	var out []string
	for _, h := range get[[]any](r.body, "hits") {
		m := h.(map[string]any)
		n, _ := m["name"].(string)
		if n == "" {
			n, _ = m["content"].(string)
		}
		out = append(out, n)
	}
	return out
}

func TestSearchOverRESTAndCLI(t *testing.T) {
	t.Parallel()
	// The lexical ranking as the specification has it: a palace with
	// semantic search turned off, where auto is lexical (the built-in
	// semantic default is TestBuiltInSemanticSearch's).
	d, _ := withConfig(t, "[embedding]\ndefault = \"\"\n")
	file := func(wing, room, name, content string, tags ...string) map[string]any {
		r := d.do("POST", "/api/wings/"+wing+"/rooms/"+room+"/drawers", map[string]any{"name": name, "content": content, "tags": tags})
		if r.status != 201 {
			t.Fatalf("file %s: %d %s", name, r.status, r.raw)
		}
		return get[map[string]any](r.body, "drawer")
	}
	file("projects", "ops", "deploy", "Deploys happen on Fridays after the review.", "ops")
	file("projects", "ops", "rollback", "Rollbacks need the on-call engineer.", "ops")
	file("projects", "web", "deploy-web", "The web app deploys every Tuesday.")
	file("people", "team", "alice", "Alice reviews every deploy of the backend.", "people")

	// Search sees the caller's own writes at once; stemming and case.
	// The drawer with every word first, then those with some of them.
	r := d.do("GET", "/api/search?q=DEPLOYING+fridays", nil)
	if names := hitNames(r); r.status != 200 || len(names) != 3 || names[0] != "deploy" || get[string](r.body, "ranking") != "lexical" {
		t.Fatalf("search: %d %s", r.status, r.raw)
	}
	hits := get[[]any](r.body, "hits")
	h := hits[0].(map[string]any)
	if h["score"] == nil || get[float64](h, "signals", "lexical", "rank") != 1 || !get[bool](h, "signals", "lexical", "all_words") || h["content"] != "Deploys happen on Fridays after the review." {
		t.Fatalf("hit shape: %v", h)
	}
	// Each hit names its wing and room.
	where := map[string][2]string{"deploy": {"projects", "ops"}, "deploy-web": {"projects", "web"}, "alice": {"people", "team"}}
	for _, x := range hits {
		h := x.(map[string]any)
		if want := where[h["name"].(string)]; h["wing"] != want[0] || h["room"] != want[1] {
			t.Fatalf("hit %v is in %v / %v, want %s / %s: %s", h["name"], h["wing"], h["room"], want[0], want[1], r.raw)
		}
	}
	if get[bool](hits[1].(map[string]any), "signals", "lexical", "all_words") || get[float64](hits[2].(map[string]any), "signals", "lexical", "rank") != 3 {
		t.Fatalf("some-word hits: %s", r.raw)
	}
	// Scope before ranking: wing, room, tags.
	if r := d.do("GET", "/api/search?q=deploy&wing=projects&room=web", nil); strings.Join(hitNames(r), ",") != "deploy-web" {
		t.Fatalf("room scope: %s", r.raw)
	}
	if r := d.do("POST", "/api/search", map[string]any{"query": "deploy", "filter": map[string]any{"tags": []string{"people"}}}); strings.Join(hitNames(r), ",") != "alice" {
		t.Fatalf("tag scope: %s", r.raw)
	}
	// Recall ignores the room; its hits name theirs.
	r = d.do("GET", "/api/recall?q=deploy&wing=projects&room=web", nil)
	if len(hitNames(r)) != 2 {
		t.Fatalf("recall: %s", r.raw)
	}
	rooms := map[string]string{}
	for _, h := range get[[]any](r.body, "hits") {
		m := h.(map[string]any)
		if m["wing"] != "projects" {
			t.Fatalf("recall hit's wing: %s", r.raw)
		}
		rooms[m["name"].(string)], _ = m["room"].(string)
	}
	if rooms["deploy"] != "ops" || rooms["deploy-web"] != "web" {
		t.Fatalf("recall hits' rooms %v: %s", rooms, r.raw)
	}
	// Limit.
	if r := d.do("GET", "/api/search?q=deploy&limit=1", nil); len(hitNames(r)) != 1 {
		t.Fatalf("limit: %s", r.raw)
	}

	// Time: supersede the Friday drawer, then ask for now, the past, everything.
	before := time.Now().UTC()
	time.Sleep(5 * time.Millisecond)
	f := d.do("GET", "/api/wings/projects/rooms/ops/drawers/deploy", nil)
	r = d.do("POST", "/api/drawers/"+get[string](f.body, "id")+"/supersede", map[string]any{"content": "Deploys happen on Thursdays after the review."})
	if r.status >= 300 {
		t.Fatalf("supersede: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/search?q=deploy+review&wing=projects", nil); len(hitNames(r)) != 2 || !strings.Contains(r.raw, "Thursdays") || strings.Contains(r.raw, "Fridays") {
		t.Fatalf("current only: %s", r.raw)
	}
	if r := d.do("GET", "/api/search?q=deploy+review&wing=projects&as_of="+before.Format(time.RFC3339Nano), nil); !strings.Contains(r.raw, "Fridays") || strings.Contains(r.raw, "Thursdays") {
		t.Fatalf("as_of the past: %s", r.raw)
	}
	if r := d.do("GET", "/api/search?q=deploy+review&wing=projects&include_historical=true", nil); len(hitNames(r)) != 3 || !strings.Contains(r.raw, "Fridays") || !strings.Contains(r.raw, "Thursdays") {
		t.Fatalf("historical: %s", r.raw)
	}
	if r := d.do("POST", "/api/search", map[string]any{"text": "deploy review", "filter": map[string]any{"wing": "projects", "temporal": map[string]any{"between": map[string]any{"from": "2000-01-01", "until": before.Format(time.RFC3339Nano)}}}}); !strings.Contains(r.raw, "Fridays") {
		t.Fatalf("between: %s", r.raw)
	}

	// Refusals.
	for _, c := range []struct{ path, code, want string }{
		{"/api/search", "loci::input::invalid", "text"},
		{"/api/search?q=x&limit=201", "loci::input::invalid", "limit"},
		{"/api/search?q=x&ranking=fuzzy", "loci::input::invalid", "ranking"},
		{"/api/search?q=x&ranking=semantic", "loci::search::semantic_unavailable", "semantic"},
		{"/api/search?q=x&ranking=hybrid", "loci::search::semantic_unavailable", "hybrid"},
		{"/api/search?q=x&as_of=2026-01-01&include_historical=true", "loci::input::invalid", "combined"},
		{"/api/search?q=x&from=2026-01-01", "loci::input::invalid", "until"},
		{"/api/search?q=x&from=2026-02-01&until=2026-01-01", "loci::input::invalid", "before"},
		{"/api/search?q=x&as_of=yesterday", "loci::input::invalid", "as_of"},
		{"/api/search?q=x&source_kind=fax", "loci::input::invalid", "source_kind"},
		{"/api/search?q=x&wing=nowhere", "loci::palace::wing_not_found", "nowhere"},
		{"/api/search?q=x&room=ops", "loci::input::invalid", "wing"},
		{"/api/search?q=x&profile=p", "loci::input::invalid", "profile"},
	} {
		r := d.do("GET", c.path, nil)
		if r.status < 400 || r.code() != c.code || !strings.Contains(r.raw, c.want) {
			t.Errorf("%s: %d %s", c.path, r.status, r.raw)
		}
	}
	if r := d.do("POST", "/api/search", map[string]any{"text": "x", "query_embedding": []float64{0.1, 0.2}}); r.code() != "loci::input::invalid" || !strings.Contains(r.raw, "profile") {
		t.Errorf("query_embedding without profile: %s", r.raw)
	}
	if r := d.do("POST", "/api/search", map[string]any{"text": "x", "filter": map[string]any{"temporal": "sometimes"}}); r.code() != "loci::input::invalid" {
		t.Errorf("bad temporal: %s", r.raw)
	}
	// Searching is a read: disabled mode refuses it.
	if r := d.do("GET", "/api/search?q=deploy", nil, "X-Loci-Mode", "disabled"); r.status != 403 {
		t.Errorf("disabled mode: %d %s", r.status, r.raw)
	}

	// CLI: one block a hit: the hit's address first, then the day it is
	// valid from and its score; an excerpt; the drawer's id.
	rb := d.do("GET", "/api/search?q=rollback+engineer", nil)
	rollback := get[[]any](rb.body, "hits")[0].(map[string]any)
	from, err := time.Parse(time.RFC3339Nano, get[string](rollback, "valid_from"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := d.cli("", "search", "rollback", "engineer")
	if want := "1. projects/ops/rollback  " + from.Local().Format("2006-01-02") + "  score "; code != 0 || !strings.HasPrefix(out, want) ||
		!strings.Contains(out, "\n   Rollbacks need the on-call engineer.\n   drawer "+get[string](rollback, "id")+"\n") {
		t.Fatalf("loci search (the hit's address first): %d\n%s\nwant it to start %q\n%s", code, out, want, errOut)
	}
	out, _, code = d.cli("", "--json", "recall", "--wing", "people", "deploy")
	var recalled struct {
		Hits []struct{ Name, Wing, Room string }
	}
	if err := json.Unmarshal([]byte(out), &recalled); code != 0 || err != nil || len(recalled.Hits) != 1 ||
		recalled.Hits[0].Name != "alice" || recalled.Hits[0].Wing != "people" || recalled.Hits[0].Room != "team" {
		t.Fatalf("loci --json recall (the hit names its wing and room): %d %v %s", code, err, out)
	}
	// An unnamed drawer is shown by its source file, else by its room.
	if r := d.do("POST", "/api/wings/people/rooms/team/drawers", map[string]any{"content": "The standup moved to half past nine.",
		"source": map[string]any{"kind": "file", "uri": "/srv/notes/standup.md"}}); r.status != 201 {
		t.Fatalf("file: %s", r.raw)
	}
	if r := d.do("POST", "/api/notes", map[string]any{"wing": "people", "room": "team", "content": "The standup room has a new whiteboard."}); r.status != 201 {
		t.Fatalf("note: %s", r.raw)
	}
	out, errOut, code = d.cli("", "search", "--wing", "people", "standup")
	if code != 0 || !strings.Contains(out, ". people/team  /srv/notes/standup.md  ") || !regexp.MustCompile(`(?m)^\d\. people/team  \d{4}-\d\d-\d\d  `).MatchString(out) {
		t.Fatalf("loci search (unnamed drawers): %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = d.cli("", "search", "x", "--ranking", "semantic")
	if code == 0 || !strings.Contains(errOut, "semantic_unavailable") {
		t.Fatalf("loci search semantic: %d %s", code, errOut)
	}
}

// TestIndexCatchUpAfterKill9 writes under load, kills the daemon, and
// checks that every acknowledged drawer is searchable after a restart;
// then a deleted index directory is rebuilt from the store.
func TestIndexCatchUpAfterKill9(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	var acked []string
	for i := range 300 {
		word := fmt.Sprintf("marker%04d", i)
		r := d.do("POST", "/api/wings/crash/rooms/load/drawers", map[string]any{"content": "a memory with the unique word " + word})
		if r.status == 201 {
			acked = append(acked, word)
		}
	}
	d.cmd.Process.Kill()
	<-d.exited
	d = start(t, home, palace)
	check := func(stage string) {
		t.Helper()
		for _, w := range acked {
			r := d.do("GET", "/api/search?q="+w, nil)
			if len(get[[]any](r.body, "hits")) != 1 {
				t.Fatalf("%s: %s not found: %s", stage, w, r.raw)
			}
		}
	}
	check("after kill -9")
	d.cmd.Process.Kill()
	<-d.exited
	if err := os.RemoveAll(filepath.Join(palace, "index")); err != nil {
		t.Fatal(err)
	}
	d = start(t, home, palace)
	check("after the index was deleted")
	if !strings.Contains(d.log.String(), "lexical index rebuilt") {
		t.Fatalf("log: %s", d.log.String())
	}
}

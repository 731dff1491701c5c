package main_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// Issue 31 (trial of the shared store): while PostgreSQL is stopped under
// a running daemon, a semantic search answers from the daemon's own vector
// index with the stale warning (REST, MCP and the CLI; before: 503 with a
// write's help), the CLI prints a hit it knows by id and score only as
// such, the status says the counts and migrations are unknown (before: 0
// of 4, not in sync, 0 drawers) and keeps the datastore's reason, and a
// read refused says nothing was changed. Doctor on a shared store says to
// back up with pg_dump and does not probe a port the daemon does not use.
func TestSharedStoreOutageReads(t *testing.T) {
	t.Parallel()
	pgtest.Shared(t) // skips (or fails under LOCI_REQUIRE_POSTGRES) without PostgreSQL
	s, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Remove)
	db, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	home, palace := newPalace(t)
	envs := append(sharedEnv(s, db), withHashProfile(t, home))
	d := start(t, home, palace, envs...)
	ids := map[string]string{}
	for _, c := range []struct{ name, content string }{
		{"deploy", "The web app deploys every Thursday morning."},
		{"lunch", "Lunch is at noon in the big kitchen."},
		{"queue", "The job queue moved from Redis to PostgreSQL."},
	} {
		r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"name": c.name, "content": c.content})
		if r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
		ids[c.name] = get[string](r.body, "drawer", "id")
	}
	eventually(t, 30*time.Second, "every drawer has a vector", func() bool {
		st := d.do("GET", "/api/status", nil)
		return get[float64](st.body, "indexes", "vectors", "test", "drawers") == 3
	})
	// One search while the store is up: the daemon reads the deploy drawer
	// (only it: limit 1), which it can then show whole.
	if r := d.do("GET", "/api/search?q=thursday+deploys&ranking=semantic&limit=1", nil); r.status != 200 ||
		len(get[[]any](r.body, "hits")) != 1 || get[string](get[[]any](r.body, "hits")[0].(map[string]any), "id") != ids["deploy"] {
		t.Fatalf("semantic search before: %s", r.raw)
	}
	// Doctor on a shared store (the daemon up, on a port of its own, not
	// the configured 8420).
	doctorEnv := append(envs, "LOCI_PALACE_PATH="+palace)
	out, _, _ := runCLI(home, "", []string{"doctor"}, doctorEnv)
	if !regexp.MustCompile(`(?m)^OK +store +held by the running daemon \(pid \d+\), which reaches the shared store at 127\.0\.0\.1:\d+/`).MatchString(out) || !regexp.MustCompile(`(?m)^OK +backup +.*pg_dump`).MatchString(out) || strings.Contains(out, "loci backups run`") ||
		strings.Contains(out, "8420 is free") || !strings.Contains(out, d.addr+" is served by this palace's daemon") {
		t.Fatalf("loci doctor on a shared store:\n%s", out)
	}
	noPassword(t, "loci doctor", out)

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	// Semantic search: REST.
	r := d.do("GET", "/api/search?q=thursday+deploys&ranking=semantic&limit=10", nil)
	hits := get[[]any](r.body, "hits")
	if r.status != 200 || !strings.Contains(get[string](r.body, "warning"), "vector index") || get[string](r.body, "ranking") != "semantic" || len(hits) != 3 {
		t.Fatalf("a semantic search while down: %d %s", r.status, r.raw)
	}
	first := hits[0].(map[string]any)
	if first["id"] != ids["deploy"] || !strings.Contains(get[string](first, "content"), "Thursday") {
		t.Fatalf("the drawer read before shows whole: %s", r.raw)
	}
	for _, h := range hits[1:] {
		if h := h.(map[string]any); get[string](h, "content") != "" || h["score"] == nil || get[string](h, "wing") != "" {
			t.Fatalf("a drawer never read shows its id and score only: %s", r.raw)
		}
	}
	// MCP.
	ms := mcpSession(t, d)
	res, isErr := callTool(t, ms, "loci_search", map[string]any{"query": "thursday deploys", "ranking": "semantic"})
	if isErr || !strings.Contains(get[string](res, "warning"), "vector index") || len(get[[]any](res, "hits")) != 3 {
		t.Fatalf("loci_search semantic while down: %v", res)
	}
	// The CLI: the hit known by id and score only.
	out, errOut, code := d.cli("", "search", "--ranking", "semantic", "--wing=", "thursday", "deploys")
	unread := regexp.MustCompile(`(?m)^\d\. drawer \S+  score \S+ \(not readable while the store is unreachable\)$`)
	if code != 0 || !strings.Contains(out, "warning: ") || len(unread.FindAllString(out, -1)) != 2 ||
		strings.Contains(out, "0001-01-01") || strings.Contains(out, "1. /") || !strings.Contains(out, "Thursday") {
		t.Fatalf("loci search while down (%d):\n%s%s", code, out, errOut)
	}

	// Status: unknown, not zero; the datastore's reason kept.
	st := d.do("GET", "/api/status", nil)
	if st.status != 200 || get[bool](st.body, "datastore", "healthy") || !strings.Contains(get[string](st.body, "datastore", "error"), "unreachable") ||
		st.body["counts"] != nil || st.body["migrations"] != nil {
		t.Fatalf("status while down: %s", st.raw)
	}
	res, isErr = callTool(t, ms, "loci_status", nil)
	if isErr || res["counts"] != nil || res["migrations"] != nil || get[bool](res, "datastore", "healthy") {
		t.Fatalf("loci_status while down: %v", res)
	}
	out, _, code = d.cli("", "status")
	if code == 0 || !strings.Contains(out, "migrations: unknown (the store is unreachable)") ||
		!strings.Contains(out, "contents:   unknown (the store is unreachable)") || !strings.Contains(out, "UNHEALTHY: ") ||
		strings.Contains(out, "data version 0") || strings.Contains(out, "0 wings") {
		t.Fatalf("loci status while down (%d):\n%s", code, out)
	}
	noPassword(t, "loci status while down", out)

	// Doctor says the daemon cannot reach the database.
	out, _, code = runCLI(home, "", []string{"doctor"}, doctorEnv)
	if code != 1 || !regexp.MustCompile(`(?m)^ERROR +store +the running daemon \(pid \d+\) cannot read the shared store at 127\.0\.0\.1:\d+/\S+: .*unreachable`).MatchString(out) {
		t.Fatalf("loci doctor while down (%d):\n%s", code, out)
	}
	noPassword(t, "loci doctor while down", out)

	// A read refused says it changed nothing.
	g := d.do("GET", "/api/wings/w/rooms/r/drawers/"+url.PathEscape(ids["lunch"]), nil)
	if g.status != 503 || g.code() != "loci::store::backend_failed" || !strings.HasPrefix(get[string](g.body, "help"), "nothing was changed; ") ||
		!strings.Contains(get[string](g.body, "help"), "try again in 5 s") {
		t.Fatalf("a read while down: %d %s", g.status, g.raw)
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the status reads the store again", func() bool {
		st := d.do("GET", "/api/status", nil)
		return get[bool](st.body, "datastore", "healthy") && get[float64](st.body, "counts", "drawers") == 3 &&
			get[bool](st.body, "migrations", "schema_in_sync")
	})
	if r := d.do("GET", "/api/search?q=thursday+deploys&ranking=semantic", nil); r.status != 200 || get[string](r.body, "warning") != "" {
		t.Fatalf("semantic search after: %s", r.raw)
	}
}

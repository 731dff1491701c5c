package main_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Issue 32: SQL over the live palace answers what REST answers.

// restDrawers is every drawer of the palace by "wing/room", historical
// ones included, as the REST listing pages them.
func restDrawers(t *testing.T, d *daemon) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	wings := d.do("GET", "/api/wings", nil)
	for _, w := range get[[]any](wings.body, "wings") {
		wing := get[string](w.(map[string]any), "name")
		rooms := d.do("GET", "/api/wings/"+url.PathEscape(wing)+"/rooms", nil)
		for _, r := range get[[]any](rooms.body, "rooms") {
			room := get[string](r.(map[string]any), "name")
			cursor := ""
			for {
				path := "/api/wings/" + url.PathEscape(wing) + "/rooms/" + url.PathEscape(room) + "/drawers?limit=200&include_historical=true"
				if cursor != "" {
					path += "&cursor=" + url.QueryEscape(cursor)
				}
				page := d.do("GET", path, nil)
				if page.status != 200 {
					t.Fatalf("GET %s: %d %s", path, page.status, page.raw)
				}
				for _, dr := range get[[]any](page.body, "drawers") {
					out[wing+"/"+room] = append(out[wing+"/"+room], get[string](dr.(map[string]any), "id"))
				}
				if cursor = get[string](page.body, "next_cursor"); cursor == "" {
					break
				}
			}
			slices.Sort(out[wing+"/"+room])
		}
	}
	return out
}

// sqlByKey groups rows by their first columns joined with "/" (n of them),
// collecting the last column, sorted.
func sqlByKey(rows [][]any, n int) map[string][]string {
	out := map[string][]string{}
	for _, r := range rows {
		parts := make([]string, n)
		for i := range n {
			parts[i] = fmt.Sprint(r[i])
		}
		k := strings.Join(parts, "/")
		out[k] = append(out[k], fmt.Sprint(r[len(r)-1]))
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// A palace filled by `loci demo`, a mine of a small folder and mentions:
// SQL joins across drawers, entities and mentions answer what the REST
// routes answer (the drawers of each room, their counts, each entity's
// mentions and the drawers they are in); a write statement is refused
// with loci::db::read_only and changes nothing; `loci db query` prints an
// aligned table, reads SQL from stdin for "-", and prints a refused
// statement's error with its help, exiting non-zero.
func TestDBSQLMatchesREST(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace, "LOCI_DB_PORT=0")
	if out, errOut, code := d.cli("", "demo"); code != 0 {
		t.Fatalf("loci demo: %d %s %s", code, out, errOut)
	}
	root := mineTree(t)
	if out, errOut, code := d.cli("", "mine", root); code != 0 {
		t.Fatalf("loci mine: %d %s %s", code, out, errOut)
	}
	// Mentions: two entities, one in two drawers.
	for _, m := range []struct{ content, name, kind string }{
		{"Caroline moved the queue to PostgreSQL.", "PostgreSQL", "tool"},
		{"The nightly deploy queue runs on PostgreSQL too.", "PostgreSQL", "tool"},
		{"Caroline reviewed the deploy.", "Caroline", "person"},
	} {
		w := d.do("POST", "/api/wings/projects/rooms/notes/drawers", map[string]any{"content": m.content})
		id := get[string](w.body, "drawer", "id")
		if r := d.do("POST", "/api/drawers/"+id+"/mentions", map[string]any{"name": m.name, "kind": m.kind}); r.status != 201 && r.status != 200 {
			t.Fatalf("a mention: %d %s", r.status, r.raw)
		}
	}
	rest := restDrawers(t, d)
	if len(rest) < 3 {
		t.Fatalf("the palace is too small to compare: %v", rest)
	}

	if r := d.do("POST", "/api/db", nil); r.status != 200 {
		t.Fatalf("POST /api/db: %d %s", r.status, r.raw)
	}
	st := dbStateOf(t, d.do("GET", "/api/db", nil))
	c := mustDialDB(t, st.URL)
	c.ok("signin", map[string]string{"user": "loci", "pass": "loci"})

	// The drawers of each room, and their counts, joined to rooms and
	// wings.
	byRoom := sqlByKey(c.rows("SELECT w.name, r.name, d.id FROM drawers d JOIN rooms r ON r.id = d.room_id JOIN wings w ON w.id = r.wing_id"), 2)
	if fmt.Sprint(byRoom) != fmt.Sprint(rest) {
		t.Fatalf("drawers by room:\nSQL  %v\nREST %v", byRoom, rest)
	}
	counts := map[string]string{}
	for _, r := range c.rows("SELECT wing, room, count(*) FROM drawers GROUP BY wing, room") {
		counts[fmt.Sprint(r[0])+"/"+fmt.Sprint(r[1])] = fmt.Sprint(r[2])
	}
	for k, ids := range rest {
		if counts[k] != fmt.Sprint(len(ids)) {
			t.Fatalf("count of %s: SQL %s, REST %d", k, counts[k], len(ids))
		}
	}
	if len(counts) != len(rest) {
		t.Fatalf("rooms with drawers: SQL %v, REST %v", counts, rest)
	}

	// Each entity's mentions, joined to the drawers they are in.
	ents := d.do("GET", "/api/entities?limit=200", nil)
	if ents.status != 200 || get[bool](ents.body, "truncated") {
		t.Fatalf("GET /api/entities: %d %s", ents.status, ents.raw)
	}
	restMentions := map[string][]string{}
	for _, e := range get[[]any](ents.body, "entities") {
		id := get[string](e.(map[string]any), "id")
		ms := d.do("GET", "/api/entities/"+id+"/mentions", nil)
		if ms.status != 200 {
			t.Fatalf("mentions of %s: %d %s", id, ms.status, ms.raw)
		}
		for _, m := range get[[]any](ms.body, "mentions") {
			restMentions[id] = append(restMentions[id], get[string](m.(map[string]any), "drawer"))
		}
		slices.Sort(restMentions[id])
	}
	sqlMentions := sqlByKey(c.rows("SELECT e.id, d.id FROM entities e JOIN mentions m ON m.entity_id = e.id JOIN drawers d ON d.id = m.drawer_id"), 1)
	if len(restMentions) < 2 || fmt.Sprint(sqlMentions) != fmt.Sprint(restMentions) {
		t.Fatalf("mentions by entity:\nSQL  %v\nREST %v", sqlMentions, restMentions)
	}
	pg := c.rows("SELECT count(DISTINCT m.drawer_id) FROM mentions m JOIN entities e ON e.id = m.entity_id WHERE e.name = 'PostgreSQL'")
	if len(pg) != 1 || fmt.Sprint(pg[0][0]) != "2" {
		t.Fatalf("drawers mentioning PostgreSQL: %v", pg)
	}

	// A write statement is refused and changes nothing.
	before := c.rows("SELECT count(*) FROM drawers")
	res := c.query("DELETE FROM drawers")
	if len(res) != 1 || res[0].Status != "ERR" || res[0].Code != "loci::db::read_only" || res[0].Help == "" {
		t.Fatalf("DELETE FROM drawers: %+v", res)
	}
	if after := c.rows("SELECT count(*) FROM drawers"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the drawer count changed: %v then %v", before, after)
	}
	if fmt.Sprint(restDrawers(t, d)) != fmt.Sprint(rest) {
		t.Fatal("the drawers changed after a refused DELETE")
	}

	// The console: a table, stdin, a refused statement with its help.
	out, errOut, code := d.cli("", "db", "query", "SELECT name FROM wings ORDER BY name")
	if code != 0 || !strings.Contains(out, "name\n----") || !strings.Contains(out, "projects") || !strings.Contains(out, " rows, ") {
		t.Fatalf("loci db query: %d %s %s", code, out, errOut)
	}
	out, errOut, code = d.cli("SELECT wing, room, count(*) AS n FROM drawers GROUP BY wing, room ORDER BY wing, room", "db", "query", "-")
	if code != 0 || !strings.Contains(out, "wing") || !strings.Contains(out, " | n") || !strings.Contains(out, fmt.Sprintf("(%d rows, ", len(rest))) {
		t.Fatalf("loci db query -: %d %s %s", code, out, errOut)
	}
	out, errOut, code = d.cli("", "db", "query", "DELETE FROM drawers")
	if code == 0 || !strings.Contains(errOut, "loci::db::read_only") || !strings.Contains(errOut, "help:") {
		t.Fatalf("loci db query DELETE: %d %s %s", code, out, errOut)
	}
	out, errOut, code = d.cli("", "--json", "db", "query", "SELECT count(*) AS n FROM wings")
	if code != 0 || !strings.Contains(out, `"status": "OK"`) || !strings.Contains(out, `"rows"`) {
		t.Fatalf("loci db query --json: %d %s %s", code, out, errOut)
	}
	if after := c.rows("SELECT count(*) FROM drawers"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the drawer count changed: %v then %v", before, after)
	}
}

// On a shared store there is no admin listener: GET, POST and DELETE
// /api/db answer 503 loci::db::unavailable with help saying to connect to
// the database itself, and `loci db serve`, `loci db status` and `loci db
// query` print that error and its help, exiting non-zero.
func TestDBSharedStoreUnavailable(t *testing.T) {
	t.Parallel()
	s, db := newSharedDB(t)
	home, palace := newPalace(t)
	d := start(t, home, palace, sharedEnv(s, db)...)
	for _, m := range []string{"GET", "POST", "DELETE"} {
		r := d.do(m, "/api/db", nil)
		if r.status != 503 || r.code() != "loci::db::unavailable" || !strings.Contains(get[string](r.body, "help"), "connect to the database itself") {
			t.Fatalf("%s /api/db: %d %s", m, r.status, r.raw)
		}
	}
	for _, args := range [][]string{{"db", "serve"}, {"db", "status"}, {"db", "query", "SELECT 1"}} {
		out, errOut, code := d.cli("", args...)
		if code == 0 || !strings.Contains(errOut, "loci::db::unavailable") || !strings.Contains(errOut, "help: connect to the database itself") {
			t.Fatalf("loci %s: %d %s %s", strings.Join(args, " "), code, out, errOut)
		}
		noPassword(t, "loci "+strings.Join(args, " "), out+errOut)
	}
	// loci status asks too, and prints no listener.
	if out, errOut, _ := d.cli("", "status"); !strings.Contains(out, "palace:") || strings.Contains(out, "sql:") || strings.Contains(out+errOut, "unavailable") {
		t.Fatalf("loci status on a shared store: %s %s", out, errOut)
	}
}

package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// dbQueryJSON runs one statement with `loci --json db query` and is its
// columns, its rows (JSON-decoded) and rows_read, with the raw answer.
func dbQueryJSON(t *testing.T, d *daemon, sql string) (cols []string, rows [][]any, read int, raw string) {
	t.Helper()
	out, errOut, code := d.cli("", "--json", "db", "query", sql)
	if code != 0 {
		t.Fatalf("loci db query %q: %d %s %s", sql, code, out, errOut)
	}
	var res []struct {
		Status  string `json:"status"`
		Columns []struct {
			Name string `json:"name"`
		} `json:"columns"`
		Rows     [][]any `json:"rows"`
		RowsRead int     `json:"rows_read"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].Status != "OK" {
		t.Fatalf("loci db query %q: %v %s", sql, err, out)
	}
	for _, c := range res[0].Columns {
		cols = append(cols, c.Name)
	}
	return cols, res[0].Rows, res[0].RowsRead, out + errOut
}

// opt is m's value at path, nil when absent.
func opt(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// Issue 32: the miners and the trigger definitions of the configuration
// file are SQL tables of the admin listener. `SELECT * FROM miners`
// answers what GET /api/miners (and `loci miner list`) answers, one row
// per miner, a credential's kind and availability but never its name or
// value; trigger_definitions answers what GET /api/triggers answers,
// never the webhook's secret nor where it is read, and joins the store's
// triggers table by name (the counters after a signed delivery); both are
// read at the statement's time (a miner disabled through REST shows at
// the next query); a write to them is refused and changes nothing.
func TestDBMinersAndTriggerDefinitions(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	port := freePort(t)
	const (
		keyVar    = "LOCI_TEST_DBMINERS_KEY"
		keyValue  = "miner-key-kept-out-of-sql"
		hookVar   = "LOCI_TEST_DBMINERS_HOOK"
		hookValue = "hook-secret-kept-out-of-sql"
	)
	d, _ := withConfig(t, fmt.Sprintf(`
[webhook]
enable = true
port = %d

[miners.docs]
locator = %q
wing = "project-docs"
enabled = true
options = { dir = "docs" }
max_documents = 5
schedule = { every = "1h" }

[miners.keyed]
locator = %q
enabled = true
credential = { env = %q }

[miners.broken]
source = "ftp"
locator = "x"
enabled = true

[triggers.gh]
miner = "docs"
type = "webhook"
enabled = true
settings = { delivery_header = "X-GitHub-Delivery" }
credential = { env = %q }

[triggers.off]
miner = "keyed"
type = "webhook"
`, port, root, root, keyVar, hookVar), keyVar+"="+keyValue, hookVar+"="+hookValue, "LOCI_DB_PORT=0")
	secrets := []string{keyVar, keyValue, hookVar, hookValue}

	eventually(t, 10*time.Second, "the webhook listening", func() bool {
		return get[bool](d.do("GET", "/api/triggers", nil).body, "webhook", "listening")
	})
	// A signed delivery, so that the store keeps gh's counters.
	body := `{"ref":"refs/heads/main"}`
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/gh", port), strings.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", githubSign(hookValue, body))
	req.Header.Set("X-GitHub-Delivery", "0b6f5a2e-1c1e-4a51-9a57-54d7ad9d0c11")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("a signed delivery: %d", resp.StatusCode)
	}
	eventually(t, 10*time.Second, "the delivery counted", func() bool {
		for _, tr := range get[[]any](d.do("GET", "/api/triggers", nil).body, "triggers") {
			m := tr.(map[string]any)
			if m["name"] == "gh" {
				return get[float64](m, "counters", "deliveries") == 1 && get[float64](m, "counters", "fired") == 1 && get[string](m, "last_job") != ""
			}
		}
		return false
	})

	if out, errOut, code := d.cli("", "db", "serve", "--port", "0"); code != 0 {
		t.Fatalf("loci db serve: %d %s %s", code, out, errOut)
	}

	// miners = GET /api/miners.
	restMiners := d.do("GET", "/api/miners", nil)
	list := get[[]any](restMiners.body, "miners")
	if restMiners.status != 200 || len(list) != 3 {
		t.Fatalf("GET /api/miners: %d %s", restMiners.status, restMiners.raw)
	}
	var want [][]any
	for _, x := range list {
		m := x.(map[string]any)
		want = append(want, []any{m["name"], m["source"], m["locator"], opt(m, "wing"), m["enabled"], m["state"], opt(m, "reason"),
			opt(m, "max_documents"), opt(m, "schedule", "every"), opt(m, "schedule", "at"), opt(m, "schedule", "enabled"), m["options"],
			opt(m, "credential", "kind"), opt(m, "credential", "available")})
	}
	cols, rows, read, raw := dbQueryJSON(t, d, "SELECT * FROM miners ORDER BY name")
	wantCols := []string{"name", "source", "locator", "wing", "enabled", "state", "reason", "max_documents", "schedule_every",
		"schedule_at", "schedule_enabled", "options", "credential_kind", "credential_available"}
	if !reflect.DeepEqual(cols, wantCols) {
		t.Fatalf("miners' columns %v", cols)
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("miners:\nSQL  %v\nREST %v", rows, want)
	}
	if read != 3 {
		t.Fatalf("rows_read %d for three miners", read)
	}
	// What the file says, as a check that the comparison compares something.
	byName := map[string][]any{}
	for _, r := range rows {
		byName[r[0].(string)] = r
	}
	if d := byName["docs"]; d[3] != "project-docs" || d[4] != true || d[5] != "ready" || d[7] != float64(5) || d[8] != "1h" ||
		d[10] != false || !reflect.DeepEqual(d[11], map[string]any{"dir": "docs"}) || d[12] != nil {
		t.Fatalf("docs: %v", d)
	}
	if k := byName["keyed"]; k[12] != "env" || k[13] != true || k[8] != nil || k[7] != nil {
		t.Fatalf("keyed: %v", k)
	}
	if b := byName["broken"]; b[5] != "unavailable" || !strings.Contains(fmt.Sprint(b[6]), "ftp") {
		t.Fatalf("broken: %v", b)
	}
	out, errOut, code := d.cli("", "miner", "list")
	if code != 0 {
		t.Fatalf("loci miner list: %d %s %s", code, out, errOut)
	}
	for name := range byName {
		if !strings.Contains(out, name) {
			t.Fatalf("loci miner list lacks %s:\n%s", name, out)
		}
	}

	// trigger_definitions = GET /api/triggers; joined to triggers, the
	// store's counters.
	restTriggers := d.do("GET", "/api/triggers", nil)
	tl := get[[]any](restTriggers.body, "triggers")
	if restTriggers.status != 200 || len(tl) != 2 {
		t.Fatalf("GET /api/triggers: %d %s", restTriggers.status, restTriggers.raw)
	}
	var wantDefs, wantJoin [][]any
	for _, x := range tl {
		m := x.(map[string]any)
		wantDefs = append(wantDefs, []any{m["name"], m["miner"], m["type"], m["enabled"], m["settings"], opt(m, "credential", "kind"),
			opt(m, "credential", "available"), m["status"], opt(m, "reason"), m["setup"], m["running"], opt(m, "endpoint"), opt(m, "next_due")})
		wantJoin = append(wantJoin, []any{m["name"], m["status"], get[float64](m, "counters", "fired"), get[float64](m, "counters", "deliveries"),
			opt(m, "last_job")})
	}
	_, defs, _, rawDefs := dbQueryJSON(t, d, "SELECT * FROM trigger_definitions ORDER BY name")
	if !reflect.DeepEqual(defs, wantDefs) {
		t.Fatalf("trigger_definitions:\nSQL  %v\nREST %v", defs, wantDefs)
	}
	if gh := defs[0]; gh[0] != "gh" || gh[5] != "env" || gh[6] != true || gh[10] != true || !strings.Contains(fmt.Sprint(gh[11]), "/hooks/gh") {
		t.Fatalf("gh: %v", gh)
	}
	if off := defs[1]; off[0] != "off" || off[3] != false || off[5] != nil || len(off[9].([]any)) == 0 {
		t.Fatalf("off: %v", off)
	}
	_, joined, _, rawJoin := dbQueryJSON(t, d, "SELECT d.name, d.status, COALESCE(t.fired, 0), COALESCE(t.deliveries, 0), t.last_job "+
		"FROM trigger_definitions d LEFT JOIN triggers t ON t.name = d.name ORDER BY d.name")
	if !reflect.DeepEqual(joined, wantJoin) || joined[0][3] != float64(1) || joined[0][4] == nil {
		t.Fatalf("trigger_definitions joined to triggers:\nSQL  %v\nREST %v", joined, wantJoin)
	}
	_, mj, _, _ := dbQueryJSON(t, d, "SELECT d.name, m.name, m.state FROM trigger_definitions d JOIN miners m ON m.name = d.miner ORDER BY d.name")
	if !reflect.DeepEqual(mj, [][]any{{"gh", "docs", "ready"}, {"off", "keyed", "ready"}}) {
		t.Fatalf("trigger_definitions joined to miners: %v", mj)
	}
	for _, s := range secrets {
		for what, text := range map[string]string{"miners": raw, "trigger_definitions": rawDefs, "the join": rawJoin} {
			if strings.Contains(text, s) {
				t.Fatalf("%s shows %q:\n%s", what, s, text)
			}
		}
	}

	// Read at the statement's time: a miner disabled through REST.
	if r := d.do("POST", "/api/miners/keyed/disable", nil); r.status != 200 {
		t.Fatalf("disable keyed: %d %s", r.status, r.raw)
	}
	if _, r, _, _ := dbQueryJSON(t, d, "SELECT enabled, state FROM miners WHERE name = 'keyed'"); !reflect.DeepEqual(r, [][]any{{false, "disabled"}}) {
		t.Fatalf("keyed after disable: %v", r)
	}

	// Writes are refused and change nothing.
	before := d.do("GET", "/api/miners", nil).raw
	for _, st := range []string{"DELETE FROM miners", "UPDATE trigger_definitions SET enabled = 0", "INSERT INTO miners (name) VALUES ('x')", "DROP TABLE miners"} {
		out, errOut, code := d.cli("", "db", "query", st)
		if code == 0 || !strings.Contains(errOut, "loci::db::read_only") {
			t.Fatalf("%s: %d %s %s", st, code, out, errOut)
		}
	}
	if after := d.do("GET", "/api/miners", nil).raw; after != before {
		t.Fatalf("the miners changed:\n%s\n%s", before, after)
	}
}

package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// browserSteps drives one Chromium tab: run does actions (a screenshot in
// failed.png when they fail), shot saves one, wait polls a script until
// it is true, click clicks what a selector finds, value reads a script's
// value as JSON into out.
type browserSteps struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

func newBrowser(t *testing.T) *browserSteps {
	t.Helper()
	browser := chromium(t)
	shots := screens(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// The browser starts with the first Run, bound to this context (not a
	// step's, whose timeout would close it).
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	return &browserSteps{t: t, ctx: ctx, shots: shots}
}

func (b *browserSteps) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	tctx, c := context.WithTimeout(b.ctx, 40*time.Second)
	defer c()
	if err := chromedp.Run(tctx, actions...); err != nil {
		var buf []byte
		var page string
		_ = chromedp.Run(b.ctx, chromedp.FullScreenshot(&buf, 100), chromedp.Evaluate(`document.getElementById('view')?.innerText || ''`, &page))
		_ = os.WriteFile(filepath.Join(b.shots, "failed.png"), buf, 0o644)
		b.t.Fatalf("%s: %v (screenshot in %s)\n%s", what, err, b.shots, page)
	}
}

func (b *browserSteps) shot(name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var buf []byte
		if err := chromedp.FullScreenshot(&buf, 100).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(b.shots, name+".png"), buf, 0o644)
	})
}

func (b *browserSteps) wait(js string) chromedp.Action {
	return chromedp.Poll(js, nil, chromedp.WithPollingTimeout(30*time.Second))
}

func (b *browserSteps) click(sel string) chromedp.Action {
	return chromedp.Click(sel, chromedp.ByQuery)
}

func (b *browserSteps) value(what, js string, out any) {
	b.t.Helper()
	var raw string
	b.run(what, chromedp.Evaluate(`JSON.stringify(`+js+`)`, &raw))
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		b.t.Fatalf("%s: %v in %s", what, err, raw)
	}
}

// sqlRun puts a query in the SQL view's box and runs it with the button,
// waiting for results newer than the ones shown.
func (b *browserSteps) sqlRun(query string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.Evaluate(`document.getElementById('sql-results').replaceChildren()`, nil),
		chromedp.SetValue("#sql-query", query, chromedp.ByQuery),
		b.click("#sql-run"),
		b.wait(`document.querySelectorAll('#sql-results .sql-result').length > 0 || !!document.getElementById('sql-query-error')`),
	}
}

// sqlResults reads the results the SQL view shows: per statement its
// status, its columns' titles, its cells' text, its error's parts.
const sqlResults = `[...document.querySelectorAll('#sql-results .sql-result')].map((s) => ({
	status: s.dataset.status,
	titles: [...s.querySelectorAll('thead th')].map((th) => th.title),
	rows: [...s.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent)),
	meta: s.querySelector('h2')?.textContent || '',
	message: s.querySelector('.error .sql-message')?.textContent || '',
	code: s.querySelector('.error .sql-code')?.textContent || '',
	help: s.querySelector('.error .help')?.textContent || '',
}))`

type sqlResult struct {
	Status  string     `json:"status"`
	Titles  []string   `json:"titles"`
	Rows    [][]string `json:"rows"`
	Meta    string     `json:"meta"`
	Message string     `json:"message"`
	Code    string     `json:"code"`
	Help    string     `json:"help"`
}

// The dashboard's SQL view in a real browser against the real binary
// with authentication on, over a palace `loci demo` filled: the listener
// is closed at first (the page says so and how to open it from a shell),
// the page opens it, connects and signs in with the session's token, lists
// the tables with their columns, inserts a table's query with a click and
// runs it with Ctrl+Enter; a join's cells equal what REST answers; NULL,
// markup and long text are shown as such; a DELETE answers read_only with
// its help and changes nothing; a refused sign-in is shown; a connection
// lost while the listener is open is made again; a listener closed from
// outside turns the page to its closed state; leaving the view ends its
// connection, and the page's own Close button closes the listener. The
// token is never shown.
func TestDashboardSQLInABrowser(t *testing.T) {
	// Not parallel: two browsers at once on two cores time out the other
	// dashboard tests' steps, and it writes artifacts/screens/failed.png.
	b := newBrowser(t)
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	// The listener on a port the OS chooses: 8000 may be anyone's.
	if err := os.WriteFile(cfg, []byte("[web]\nenable = true\n[db]\nport = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	if out, errOut, code := d.cli("", "demo"); code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("loci demo: %d %s %s", code, out, errOut)
	}
	r := d.do("POST", "/api/auth/token", nil)
	token := get[string](r.body, "token")
	if r.status != 200 || !strings.HasPrefix(token, "loci_") {
		t.Fatalf("generate a token: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %s", r.raw)
	}
	d.wait(30 * time.Second)
	d = start(t, home, palace, "LOCI_CONFIG="+cfg, "LOCI_AUTH_ENABLED=true")
	auth := []string{"Authorization", "Bearer " + token}
	base := "http://" + d.addr + "/ui/"
	dbState := func() map[string]any {
		t.Helper()
		r := d.do("GET", "/api/db", nil, auth...)
		if r.status != 200 {
			t.Fatalf("GET /api/db: %d %s", r.status, r.raw)
		}
		return r.body
	}
	if dbState()["open"] != false {
		t.Fatal("the listener is open before anyone asked")
	}

	b.run("sign in", chromedp.Navigate(base), chromedp.WaitVisible("#login-token", chromedp.ByQuery),
		chromedp.SendKeys("#login-token", token, chromedp.ByQuery), b.click(`#login-form button[type="submit"]`),
		b.wait(`document.querySelector('main h1')?.textContent === 'Overview'`))

	// Closed: said so, with the button and the command.
	b.run("the closed state", b.click(`nav a[data-nav="sql"]`),
		b.wait(`location.hash === '#/sql' && !!document.getElementById('sql-open') && document.querySelector('nav a[aria-current="page"]')?.textContent === 'SQL'`),
		b.wait(`document.getElementById('sql-closed').innerText.includes('The SQL listener is closed') && document.getElementById('sql-closed').innerText.includes('loci db serve')`),
		b.shot("sql-closed"))

	// Open it from the page: connected, signed in, the tables listed.
	b.run("open the listener", b.click("#sql-open"),
		b.wait(`document.getElementById('sql-conn')?.textContent.startsWith('Signed in as loci on ws://127.0.0.1:')`),
		b.wait(`document.querySelectorAll('#sql-tables li[data-table]').length >= 10`),
		// A table's columns are folded until asked for.
		b.wait(`document.getElementById('sql-cols-drawers')?.hidden === true`), b.click(`#sql-tables li[data-table="drawers"] button.sql-toggle`),
		b.wait(`document.getElementById('sql-cols-drawers').hidden === false && document.getElementById('sql-cols-drawers').offsetHeight > 0`),
		b.shot("sql-open"))
	st := dbState()
	if st["open"] != true || get[float64](st, "connections") != 1 || !strings.HasPrefix(get[string](st, "url"), "ws://127.0.0.1:") {
		t.Fatalf("after the page opened it: %v", st)
	}
	var tables map[string][]string
	b.value("the tables", `Object.fromEntries([...document.querySelectorAll('#sql-tables li[data-table]')].map((li) =>
		[li.dataset.table, [...li.querySelectorAll('.sql-cols li')].map((c) => c.firstChild.textContent)]))`, &tables)
	for _, want := range []string{"wings", "rooms", "drawers", "similar", "entities", "aliases", "mentions", "relationships", "jobs", "sources", "documents", "triggers"} {
		if len(tables[want]) == 0 {
			t.Errorf("the table %s is not listed with its columns: %v", want, tables)
		}
	}
	if !slices.Contains(tables["drawers"], "content") || slices.Contains(tables["drawers"], "embedding") {
		t.Errorf("the drawers' columns: %v", tables["drawers"])
	}
	// What a table and a column hold, on hovering (the engine's comments).
	var docs struct{ Table, Content string }
	b.value("the docs", `({ Table: document.querySelector('#sql-tables li[data-table="drawers"] button.sql-table').title,
		Content: [...document.querySelectorAll('#sql-cols-drawers li')].find((li) => li.firstChild.textContent === 'content')?.title })`, &docs)
	if !strings.HasSuffix(docs.Table, "\nA click puts SELECT * FROM drawers LIMIT 50 in the box.") || len(docs.Table) < 60 || docs.Content == "" {
		t.Errorf("the drawers' docs: %+v", docs)
	}

	// A click on a table puts its query in the box; Ctrl+Enter runs it.
	var storedDrawers int
	for _, w := range get[[]any](d.do("GET", "/api/wings", nil, auth...).body, "wings") {
		for _, rm := range get[[]any](d.do("GET", "/api/wings/"+url.PathEscape(get[string](w.(map[string]any), "name"))+"/rooms", nil, auth...).body, "rooms") {
			storedDrawers += int(get[float64](rm.(map[string]any), "drawers_stored"))
		}
	}
	b.run("a table's query", chromedp.Evaluate(`document.getElementById('sql-query').value = ''`, nil), b.click(`#sql-tables li[data-table="drawers"] button.sql-table`),
		b.wait(`document.getElementById('sql-query').value === 'SELECT * FROM drawers LIMIT 50'`),
		chromedp.Focus("#sql-query", chromedp.ByQuery), chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(input.ModifierCtrl)),
		b.wait(`document.querySelectorAll('#sql-results .sql-result tbody tr').length > 0`), b.shot("sql-table"))
	var res []sqlResult
	b.value("the table's rows", sqlResults, &res)
	var typed string
	b.run("the box after Ctrl+Enter", chromedp.Value("#sql-query", &typed, chromedp.ByQuery))
	if typed != "SELECT * FROM drawers LIMIT 50" {
		t.Errorf("Ctrl+Enter changed the query: %q", typed)
	}
	if len(res) != 1 || res[0].Status != "OK" || len(res[0].Rows) != min(50, storedDrawers) || len(res[0].Titles) != len(tables["drawers"]) {
		t.Fatalf("SELECT * FROM drawers LIMIT 50 (%d drawers stored): %+v", storedDrawers, res)
	}
	for i, title := range res[0].Titles {
		if name, typ, ok := strings.Cut(title, ": "); !ok || name != tables["drawers"][i] || typ == "" {
			t.Errorf("column %d's title %q does not name it and its type", i, title)
		}
	}
	if !strings.Contains(res[0].Meta, fmt.Sprintf("%d rows", len(res[0].Rows))) || !strings.Contains(res[0].Meta, "read ") {
		t.Errorf("the result's rows, rows read and time: %q", res[0].Meta)
	}

	// A join: the drawers of each room, as REST counts them.
	want := map[string]string{}
	for _, w := range get[[]any](d.do("GET", "/api/wings", nil, auth...).body, "wings") {
		wing := get[string](w.(map[string]any), "name")
		for _, rm := range get[[]any](d.do("GET", "/api/wings/"+url.PathEscape(wing)+"/rooms", nil, auth...).body, "rooms") {
			if n := get[float64](rm.(map[string]any), "drawers"); n > 0 {
				want[wing+"/"+get[string](rm.(map[string]any), "name")] = fmt.Sprint(n)
			}
		}
	}
	if len(want) < 2 {
		t.Fatalf("the demo filled fewer than two rooms: %v", want)
	}
	b.run("a join", b.sqlRun(`SELECT w.name AS wing, r.name AS room, count(*) AS drawers
FROM drawers d JOIN rooms r ON r.id = d.room_id JOIN wings w ON w.id = r.wing_id
WHERE d.valid_to IS NULL
GROUP BY w.name, r.name ORDER BY w.name, r.name`), b.wait(`document.querySelectorAll('#sql-results .sql-result tbody tr').length > 0`), b.shot("sql-join"))
	b.value("the join's rows", sqlResults, &res)
	if len(res) != 1 || res[0].Status != "OK" {
		t.Fatalf("the join: %+v", res)
	}
	got := map[string]string{}
	for _, row := range res[0].Rows {
		if len(row) != 3 {
			t.Fatalf("a row of the join: %v", row)
		}
		got[row[0]+"/"+row[1]] = row[2]
	}
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Fatalf("the join's counts differ from REST's:\nSQL  %v\nREST %v", sorted(got), sorted(want))
	}

	// NULL apart from text, markup as text, long text clipped until asked.
	b.run("special cells", b.sqlRun(`SELECT NULL AS nothing, 'NULL' AS word, '<b id="injected">bold</b>' AS markup, REPEAT('abcd', 100) AS long_text`))
	b.value("the special cells", sqlResults, &res)
	if len(res) != 1 || len(res[0].Rows) != 1 {
		t.Fatalf("special cells: %+v", res)
	}
	var cells struct {
		Null, Word, Injected bool
		Long                 string
		More                 bool
	}
	b.value("the cells' looks", `(() => { const td = document.querySelectorAll('#sql-results tbody td'); return {
		Null: td[0].classList.contains('sql-null'), Word: !td[1].classList.contains('sql-null'),
		Injected: !!document.getElementById('injected'), Long: td[3].firstChild.textContent, More: !!td[3].querySelector('button.sql-more') }; })()`, &cells)
	if !cells.Null || !cells.Word || cells.Injected || res[0].Rows[0][2] != `<b id="injected">bold</b>` || !cells.More ||
		cells.Long != strings.Repeat("abcd", 40)+"…" {
		t.Fatalf("NULL, markup or long text: %+v %v", cells, res[0].Rows)
	}
	b.run("the whole long text", b.click("#sql-results button.sql-more"),
		b.wait(`document.querySelectorAll('#sql-results tbody td')[3].firstChild.textContent === 'abcd'.repeat(100)`), b.shot("sql-cells"))

	// A write is refused with its help, and changes nothing.
	before := d.do("GET", "/api/wings", nil, auth...).raw
	b.run("a DELETE", b.sqlRun("DELETE FROM drawers"), b.wait(`!!document.querySelector('#sql-results .sql-result[data-status="ERR"] .sql-code')`), b.shot("sql-read-only"))
	b.value("the refusal", sqlResults, &res)
	if len(res) != 1 || res[0].Status != "ERR" || res[0].Code != "loci::db::read_only" || res[0].Message == "" || res[0].Help == "" {
		t.Fatalf("DELETE FROM drawers: %+v", res)
	}
	if after := d.do("GET", "/api/wings", nil, auth...).raw; after != before {
		t.Fatalf("the palace changed:\n%s\n%s", before, after)
	}
	// Several statements: one block each; the failed one stops the rest.
	b.run("several statements", b.sqlRun("SELECT 1 AS one; DELETE FROM drawers; SELECT 2 AS two"))
	b.value("several statements' results", sqlResults, &res)
	if len(res) != 2 || res[0].Status != "OK" || res[0].Rows[0][0] != "1" || res[1].Status != "ERR" || res[1].Code != "loci::db::read_only" {
		t.Fatalf("SELECT 1; DELETE; SELECT 2: %+v", res)
	}

	// A refused sign-in is shown as such: the page's password is replaced
	// on its way out (the listener refuses it for real).
	b.run("a refused sign-in", chromedp.Evaluate(`(() => {
		const send = WebSocket.prototype.send;
		WebSocket.prototype.send = function (data) {
			return send.call(this, String(data).replace(/"pass":"[^"]*"/, '"pass":"loci_not_the_token"'));
		};
		location.hash = '#/overview';
	})()`, nil), b.wait(`document.querySelector('main h1')?.textContent === 'Overview'`),
		chromedp.Evaluate(`location.hash = '#/sql'`, nil),
		b.wait(`!!document.querySelector('#sql-signin-error .sql-code')`), b.shot("sql-signin-refused"))
	var refused struct{ Message, Code, Conn string }
	b.value("the refusal", `({ Message: document.querySelector('#sql-signin-error .sql-message').textContent,
		Code: document.querySelector('#sql-signin-error .sql-code').textContent, Conn: document.getElementById('sql-conn').textContent })`, &refused)
	if !strings.Contains(refused.Message, "refused the sign-in") || refused.Code != "loci::db::signin_refused" || refused.Conn != "Not signed in." {
		t.Fatalf("a refused sign-in: %+v", refused)
	}

	// The listener closed from outside: the page says so, and opens it again.
	b.run("signed in again", chromedp.Reload(), b.wait(`document.getElementById('sql-conn')?.textContent.startsWith('Signed in as loci')`))
	// The query box kept its text through the reload (this tab only).
	b.run("the box's text", chromedp.Value("#sql-query", &typed, chromedp.ByQuery))
	if typed != "SELECT 1 AS one; DELETE FROM drawers; SELECT 2 AS two" {
		t.Errorf("the query box after a reload: %q", typed)
	}

	// A connection lost while the listener stays open is made again: the
	// page's sockets are recorded, one is closed under it.
	b.run("a lost connection", chromedp.Evaluate(`(() => {
		const W = window.WebSocket;
		window.sockets = [];
		window.WebSocket = class extends W { constructor(...a) { super(...a); window.sockets.push(this); } };
		location.hash = '#/overview';
	})()`, nil), b.wait(`document.querySelector('main h1')?.textContent === 'Overview'`),
		chromedp.Evaluate(`location.hash = '#/sql'`, nil),
		b.wait(`window.sockets.length === 1 && document.getElementById('sql-conn')?.textContent.startsWith('Signed in as loci')`),
		chromedp.Evaluate(`window.sockets[0].close()`, nil),
		b.wait(`document.getElementById('sql-conn')?.textContent.includes('Connecting again')`),
		b.wait(`window.sockets.length === 2 && window.sockets[1].readyState === 1 && document.getElementById('sql-conn')?.textContent.startsWith('Signed in as loci')`),
		b.sqlRun("SELECT count(*) AS wings FROM wings"))
	b.value("a query after the reconnect", sqlResults, &res)
	if wings := len(get[[]any](d.do("GET", "/api/wings", nil, auth...).body, "wings")); len(res) != 1 || len(res[0].Rows) != 1 || res[0].Rows[0][0] != fmt.Sprint(wings) {
		t.Fatalf("SELECT count(*) FROM wings after the reconnect (REST: %d wings): %+v", wings, res)
	}
	if r := d.do("DELETE", "/api/db", nil, auth...); r.status != 200 || r.body["open"] != false {
		t.Fatalf("DELETE /api/db: %d %s", r.status, r.raw)
	}
	b.run("closed from outside", b.wait(`!!document.getElementById('sql-open') && document.getElementById('sql-closed').innerText.includes('The listener was closed')`),
		b.shot("sql-closed-outside"),
		b.click("#sql-open"), b.wait(`document.getElementById('sql-conn')?.textContent.startsWith('Signed in as loci')`))
	// Leaving the view ends its connection.
	b.run("leave", chromedp.Evaluate(`location.hash = '#/overview'`, nil))
	eventually(t, 10*time.Second, "the page's connection closed", func() bool { return get[float64](dbState(), "connections") == 0 })
	b.run("back, and close it from the page", chromedp.Evaluate(`location.hash = '#/sql'`, nil),
		b.wait(`document.getElementById('sql-conn')?.textContent.startsWith('Signed in as loci')`),
		b.click("#sql-close"), b.wait(`!!document.getElementById('sql-open')`))
	if dbState()["open"] != false {
		t.Fatal("the page's Close left the listener open")
	}

	// The token is never shown, nor kept beyond the tab.
	var leaks []string
	b.value("the token's places", fmt.Sprintf(`(() => { const t = %q; const out = [];
		if (document.body.innerText.includes(t) || document.documentElement.outerHTML.includes(t)) out.push('page');
		if (JSON.stringify(localStorage).includes(t)) out.push('localStorage');
		if (document.cookie.includes(t) || location.href.includes(t)) out.push('cookie or URL');
		return out; })()`, token), &leaks)
	if len(leaks) > 0 {
		t.Fatalf("the token is in: %v", leaks)
	}
	if strings.Contains(d.log.String(), token) {
		t.Fatal("the daemon's log holds the token")
	}
}

// The SQL view on a shared PostgreSQL store: the error and its help (to
// connect to the database itself), no button to open anything.
func TestDashboardSQLOnASharedStore(t *testing.T) {
	// Not parallel: as TestDashboardSQLInABrowser.
	s, db := newSharedDB(t) // skips (or fails under LOCI_REQUIRE_POSTGRES) without PostgreSQL
	b := newBrowser(t)
	home, palace := newPalace(t)
	d := start(t, home, palace, append(sharedEnv(s, db), "LOCI_CONFIG="+webConfig(t, home))...)
	b.run("the SQL view", chromedp.Navigate("http://"+d.addr+"/ui/#/sql"),
		b.wait(`!!document.querySelector('#sql-unavailable .sql-code')`), b.shot("sql-unavailable"))
	var page struct {
		Code, Help string
		Button     bool
	}
	b.value("the page", `({ Code: document.querySelector('#sql-unavailable .sql-code').textContent,
		Help: document.querySelector('#sql-unavailable .help').textContent, Button: !!document.getElementById('sql-open') })`, &page)
	if page.Code != "loci::db::unavailable" || !strings.Contains(page.Help, "psql") || page.Button {
		t.Fatalf("the SQL view on a shared store: %+v", page)
	}
}

// sorted lists a map's entries by key, "key=value".
func sorted(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

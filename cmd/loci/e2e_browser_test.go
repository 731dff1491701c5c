package main_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/loci-dev/loci/sources/pack"
)

// chromium finds the browser for the dashboard tests: LOCI_CHROMIUM, else
// chromium or chromium-browser on PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("LOCI_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium found: the dashboard's browser tests are skipped. Install it with `apt-get install chromium` (.ci/run does), or point LOCI_CHROMIUM at a Chromium binary")
	return ""
}

// screens is where the browser tests save a screenshot of each view:
// LOCI_SCREENSHOTS, else artifacts/screens at the repository's root.
func screens(t *testing.T) string {
	dir := os.Getenv("LOCI_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts", "screens")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(dir, "failed.png"))
	return dir
}

// hitTitle is a script true once the search page's hit i has the title
// line want (wing / room / name or source file) followed by the day it is
// valid from, as the browser writes that day.
func hitTitle(i int, want, validFrom string) string {
	return fmt.Sprintf(`(() => {
		const t = document.querySelectorAll('#results .hit .hit-title')[%d];
		const day = new Date(%q).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
		return !!t && t.querySelector('a')?.textContent === %q && t.querySelector('time')?.getAttribute('datetime') === %q &&
			t.textContent === %q + ' · ' + day;
	})()`, i, validFrom, want, validFrom, want)
}

// The dashboard in a real browser against the real binary: sign in with a
// generated token (a wrong one refused), a note filed elsewhere appears
// without a reload, search finds it, superseding it shows its history, a
// mine job's row completes live, a job is paused and resumed from its
// buttons, read_only refuses a write with the daemon's help text, and the
// token never reaches localStorage, a cookie or a URL.
func TestDashboardInABrowser(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	shots := screens(t)

	// Provisioning as the spec has it: a token generated with
	// authentication off, then required.
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	// A slow embed job (a pause between batches of two) to pause and resume.
	// The webhook listener's port, for the endpoint the mining view shows.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hookPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	err = os.WriteFile(cfg, []byte(fmt.Sprintf("[webhook]\nenable = true\nport = %d\n", hookPort)+"[web]\nenable = true\n[embedding]\ndefault = \"test\"\n[embedding.profiles.test]\nprovider = \"hash\"\ndimension = 16\nbatch_size = 2\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	r := d.do("POST", "/api/auth/token", nil)
	token := get[string](r.body, "token")
	if r.status != 200 || !strings.HasPrefix(token, "loci_") {
		t.Fatalf("generate a token: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %s", r.raw)
	}
	d.wait(30 * time.Second)
	d = start(t, home, palace, "LOCI_CONFIG="+cfg, "LOCI_AUTH_ENABLED=true", "LOCI_TEST_EMBED_DELAY=600ms")
	auth := []string{"Authorization", "Bearer " + token}
	base := "http://" + d.addr + "/ui/"

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The browser starts with the first Run, bound to that context: this
	// one, not a step's (whose timeout would close it).
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		tctx, c := context.WithTimeout(ctx, 30*time.Second)
		defer c()
		if err := chromedp.Run(tctx, actions...); err != nil {
			var buf []byte
			_ = chromedp.Run(ctx, chromedp.FullScreenshot(&buf, 100))
			_ = os.WriteFile(filepath.Join(shots, "failed.png"), buf, 0o644)
			t.Fatalf("%s: %v (screenshot in %s)", what, err, shots)
		}
	}
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var buf []byte
			if err := chromedp.FullScreenshot(&buf, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), buf, 0o644)
		})
	}
	waitText := func(js string) chromedp.Action {
		return chromedp.Poll(js, nil, chromedp.WithPollingTimeout(25*time.Second))
	}
	// click clicks the element sel finds with the mouse. A view that
	// redraws on live events (jobs, triggers) may replace the element
	// between the query and the click ("Could not find node with given
	// id"): the click is then tried again on the new element, a few times.
	click := func(sel string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var err error
			for range 5 {
				if err = chromedp.Click(sel, chromedp.ByQuery).Do(ctx); err == nil || !strings.Contains(err.Error(), "Could not find node") {
					return err
				}
				time.Sleep(100 * time.Millisecond)
			}
			return err
		})
	}

	// Sign in: a wrong token is refused, the generated one accepted.
	var msg string
	run("a wrong token", chromedp.Navigate(base), chromedp.WaitVisible("#login-token", chromedp.ByQuery),
		chromedp.SendKeys("#login-token", "loci_wrong", chromedp.ByQuery), click(`#login-form button[type="submit"]`),
		chromedp.WaitVisible("#login-error", chromedp.ByQuery), chromedp.Text("#login-error", &msg, chromedp.ByQuery), shot("login"))
	if !strings.Contains(msg, "refused") {
		t.Fatalf("wrong token: %q", msg)
	}
	run("sign in", chromedp.SendKeys("#login-token", token, chromedp.ByQuery), click(`#login-form button[type="submit"]`),
		waitText(`document.querySelector('main h1') && document.querySelector('main h1')?.textContent === 'Overview'`),
		waitText(`document.getElementById('conn').textContent === 'live'`), shot("overview"))

	// A note filed by someone else appears without a reload.
	if r := d.do("POST", "/api/wings/work/rooms", map[string]any{"name": "notes"}, auth...); r.status != 201 {
		t.Fatalf("room: %s", r.raw)
	}
	// Someone is typing a note there meanwhile: the live update keeps it.
	run("the room", chromedp.Navigate(base+"#/palace/work/notes"), waitText(`!!document.getElementById('note')`),
		click("#note"), chromedp.SendKeys("#note", "half a thought", chromedp.ByQuery))
	if r := d.do("POST", "/api/notes", map[string]any{"wing": "work", "room": "notes", "content": "The kettle in the kitchen is broken again."}, auth...); r.status != 201 {
		t.Fatalf("note: %s", r.raw)
	}
	run("the note appears live", waitText(`document.body.innerText.includes('The kettle in the kitchen is broken again.')`), shot("palace"),
		waitText(`document.getElementById('note').value === 'half a thought' && document.activeElement.id === 'note'`))

	// Search finds it, titled by where it lives and the day it holds from.
	kettle := get[[]any](d.do("GET", "/api/search?q=kettle", nil, auth...).body, "hits")[0].(map[string]any)
	run("search", chromedp.Navigate(base+"#/search?q=kettle"),
		waitText(`document.getElementById('results') && document.getElementById('results').innerText.includes('The kettle in the kitchen')`), shot("search"),
		waitText(hitTitle(0, "work / notes", get[string](kettle, "valid_from"))),
		waitText(`document.querySelector('#results > p.muted')?.textContent === '1 hit, ranking hybrid (auto chose it)'`),
		click(`#results .hit a`),
		waitText(`document.getElementById('drawer-content')?.textContent === 'The kettle in the kitchen is broken again.' && document.querySelector('.crumbs')?.textContent === 'Palace › work › notes'`))
	// A link's own limit and expand=1 show in the form, so searching again
	// from it asks the same.
	run("search form from a link", chromedp.Navigate(base+"#/search?q=kettle&expand=1&limit=3"),
		waitText(`document.getElementById('s-expand')?.checked === true && document.getElementById('s-limit')?.value === '3'`))

	// Supersede it from its page and see the history.
	list := d.do("GET", "/api/wings/work/rooms/notes/drawers", nil, auth...)
	id := get[string](get[[]any](list.body, "drawers")[0].(map[string]any), "id")
	run("supersede", chromedp.Navigate(base+"#/drawer/work/notes/"+id), chromedp.WaitVisible("#replacement", chromedp.ByQuery),
		chromedp.SetValue("#replacement", "The kettle in the kitchen was repaired on Monday.", chromedp.ByQuery),
		chromedp.Evaluate(`window.confirm = () => true`, nil), // the page asks before superseding
		click(`#replacement ~ .row button[type="submit"]`),
		waitText(`document.getElementById('drawer-content')?.textContent === 'The kettle in the kitchen was repaired on Monday.'`),
		waitText(`document.querySelectorAll('#history li').length === 2`), shot("drawer"),
		// The replaced version is one click away and names its replacement.
		click(`#history li a`),
		waitText(`document.getElementById('drawer-content')?.textContent === 'The kettle in the kitchen is broken again.' && document.body.innerText.includes('superseded by')`))

	// A mine job's row completes live on the jobs page.
	dir := t.TempDir()
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("doc%d.md", i)), []byte(fmt.Sprintf("# Doc %d\n\nThe harbour of town %d at dawn.\n", i, i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A document longer than a drawer: its second chunk has no name.
	long := "# Long\n\n" + strings.Repeat("A paragraph of filler that says nothing about the sea or its ships at all.\n\n", 90) +
		"The lighthouse keeper logs every passing ship.\n"
	if err := os.WriteFile(filepath.Join(dir, "long.md"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	run("the jobs page", chromedp.Navigate(base+"#/jobs"), waitText(`document.querySelector('main h1')?.textContent === 'Jobs'`))
	m := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": dir}, auth...)
	if m.status != 202 {
		t.Fatalf("mine: %s", m.raw)
	}
	mineID := get[string](m.body, "id")
	run("the mine job completes live", waitText(fmt.Sprintf(`(() => { const p = document.querySelector('tr[data-job=%q][data-status="completed"] progress'); return !!p && p.max > 0 && p.value === p.max; })()`, mineID)), shot("jobs"),
		// Its page: the result, at a URL of its own.
		click(fmt.Sprintf(`tr[data-job=%q] a`, mineID)),
		waitText(fmt.Sprintf(`location.hash === '#/jobs?job=%s' && document.getElementById('job-card')?.textContent.includes('completed') && !!document.getElementById('job-result')`, mineID)))

	// Pause and resume a running job from its buttons: the embed job of
	// forty new drawers, two at a time.
	for i := range 40 {
		if r := d.do("POST", "/api/notes", map[string]any{"wing": "work", "room": "bulk", "content": fmt.Sprintf("Bulk note %d about lamp %d.", i, i*7)}, auth...); r.status != 201 {
			t.Fatalf("bulk: %s", r.raw)
		}
	}
	// A running embed job with at least ten drawers (five batches, three
	// seconds) still to embed: time for the page to show it and the click.
	var embedID string
	var seen []string
	defer func() {
		if embedID == "" {
			t.Logf("embed jobs seen: %v\n%s", seen, d.do("GET", "/api/jobs?kind=embed", nil, auth...).raw)
		}
	}()
	eventually(t, 30*time.Second, "a running embed job with work left", func() bool {
		for _, j := range get[[]any](d.do("GET", "/api/jobs?kind=embed&status=running", nil, auth...).body, "jobs") {
			seen = append(seen, fmt.Sprint(j.(map[string]any)["progress"]))
			job := j.(map[string]any)
			if get[float64](job, "progress", "total")-get[float64](job, "progress", "current") >= 10 {
				embedID = get[string](job, "id")
			}
		}
		return embedID != ""
	})
	row := fmt.Sprintf(`tr[data-job=%q]`, embedID)
	run("pause", waitText(fmt.Sprintf(`!!document.querySelector('%s[data-status="running"] button')`, row)),
		click(row+` button`),
		waitText(fmt.Sprintf(`!!document.querySelector('%s[data-status="paused"]')`, row)))
	run("resume", click(row+` button`),
		waitText(fmt.Sprintf(`!!document.querySelector('%s[data-status="completed"]')`, row)))

	// Mined files are titled by their wing, room and name, a later chunk
	// of a long file by its path and number; an unnamed drawer by its
	// source file.
	wing := filepath.Base(dir)
	if r := d.do("POST", "/api/wings/work/rooms/sources/drawers", map[string]any{"content": "The harbour master's log of town 9.",
		"source": map[string]any{"kind": "file", "uri": "/srv/logs/harbour.txt"}}, auth...); r.status != 201 {
		t.Fatalf("file: %s", r.raw)
	}
	for _, c := range []struct{ q, title string }{{"harbour town 1 dawn", wing + " / files / doc1.md"},
		{"lighthouse keeper ship", wing + " / files / long.md #2"}, {"harbour master log", "work / sources / /srv/logs/harbour.txt"}} {
		found := get[[]any](d.do("GET", "/api/search?ranking=lexical&q="+strings.ReplaceAll(c.q, " ", "+"), nil, auth...).body, "hits")
		if len(found) == 0 {
			t.Fatalf("%s: nothing found", c.q)
		}
		run("the title of "+c.title, chromedp.Navigate(base+"#/search?ranking=lexical&q="+strings.ReplaceAll(c.q, " ", "+")),
			waitText(hitTitle(0, c.title, get[string](found[0].(map[string]any), "valid_from"))), shot("search-"+strings.Fields(c.q)[1]))
	}

	// read_only: a write is refused with the daemon's help text.
	run("read_only", chromedp.SetValue("#mode", "read_only", chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('mode').dispatchEvent(new Event('change'))`, nil),
		chromedp.Navigate(base+"#/palace/work/notes"), chromedp.WaitVisible("#note", chromedp.ByQuery),
		chromedp.SetValue("#note", "A write in read_only mode.", chromedp.ByQuery),
		click(`#note ~ p button[type="submit"]`),
		waitText(`!!document.querySelector('.error .help') && document.querySelector('.error .help').textContent.length > 0`), shot("read-only"))
	if r := d.do("GET", "/api/wings/work/rooms/notes/drawers", nil, auth...); strings.Contains(r.raw, "A write in read_only mode.") {
		t.Fatalf("the refused write was stored: %s", r.raw)
	}

	// disabled: the stream is refused (403) and the header says so; back in
	// full, the page is live again at once.
	run("disabled", chromedp.SetValue("#mode", "disabled", chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('mode').dispatchEvent(new Event('change'))`, nil),
		waitText(`document.getElementById('conn').textContent === 'refused in this mode'`),
		waitText(`!!document.querySelector('main .error .help')`), shot("disabled"),
		chromedp.SetValue("#mode", "full", chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('mode').dispatchEvent(new Event('change'))`, nil),
		waitText(`document.getElementById('conn').textContent === 'live'`))

	// Create a wing from the page; delete a drawer with its confirmation.
	run("create a wing", chromedp.SetValue("#mode", "full", chromedp.ByQuery), chromedp.Evaluate(`document.getElementById('mode').dispatchEvent(new Event('change'))`, nil),
		chromedp.Navigate(base+"#/palace"), chromedp.WaitVisible("#new-wing", chromedp.ByQuery),
		chromedp.SetValue("#new-wing", "garden", chromedp.ByQuery), click(`#new-wing ~ p button[type="submit"]`),
		waitText(`!!document.querySelector('a[href="#/palace/garden"]')`))
	if r := d.do("GET", "/api/wings/garden", nil, auth...); r.status != 200 {
		t.Fatalf("the wing made from the page: %s", r.raw)
	}
	bulk := get[[]any](d.do("GET", "/api/wings/work/rooms/bulk/drawers?limit=1", nil, auth...).body, "drawers")[0].(map[string]any)
	run("delete a drawer", chromedp.Navigate(base+"#/drawer/work/bulk/"+get[string](bulk, "id")), chromedp.WaitVisible("#replacement", chromedp.ByQuery),
		chromedp.Evaluate(`window.confirm = () => true`, nil), click(`button.danger`),
		waitText(`location.hash === '#/palace/work/bulk'`))
	if r := d.do("GET", "/api/drawers/"+get[string](bulk, "id")+"/history", nil, auth...); r.status != 404 {
		t.Fatalf("the deleted drawer: %d %s", r.status, r.raw)
	}

	// Keyboard: Tab from the page start reaches the views' links in order.
	// A navigation moves focus to the view (main), and blur() leaves Chrome's
	// sequential focus starting point there, so a link inside the view (a
	// running job's, when one runs) would come first: the test puts the
	// starting point at the page start by focusing the document element.
	var focused string
	run("keyboard", chromedp.Navigate(base+"#/overview"), waitText(`document.querySelector('main h1')?.textContent === 'Overview'`),
		chromedp.Evaluate(`window.lociTrail = [document.activeElement.outerHTML.slice(0, 80)]; document.activeElement.blur();
			document.documentElement.tabIndex = -1; document.documentElement.focus(); window.lociTrail.push(document.activeElement.tagName)`, nil),
		chromedp.KeyEvent("\t"), chromedp.Evaluate(`window.lociTrail.push(document.activeElement.outerHTML.slice(0, 80))`, nil),
		chromedp.KeyEvent("\t"), chromedp.Evaluate(`window.lociTrail.push(document.activeElement.outerHTML.slice(0, 80))`, nil),
		chromedp.Evaluate(`document.documentElement.removeAttribute('tabindex'); document.activeElement.textContent`, &focused))
	if focused != "Overview" {
		var trail []string
		chromedp.Run(ctx, chromedp.Evaluate(`window.lociTrail`, &trail))
		t.Fatalf("the second Tab should reach the Overview link, reached %q (focus before the blur, at the start, after each Tab: %q)", focused, trail)
	}

	// A narrow window.
	var overflow string
	run("narrow", chromedp.EmulateViewport(420, 860), chromedp.Navigate(base+"#/palace/work/notes"),
		chromedp.WaitVisible("#note", chromedp.ByQuery), shot("narrow"),
		// The jobs table scrolls inside the page with every column: the
		// page itself is no wider than the window, the actions are there.
		chromedp.Navigate(base+"#/jobs"), waitText(`document.querySelectorAll('#jobs tr[data-job]').length > 0`),
		chromedp.Evaluate(`[document.documentElement.scrollWidth > innerWidth + 1 ? 'the page scrolls sideways (' + document.documentElement.scrollWidth + ' px)' : '',
			getComputedStyle(document.querySelector('#jobs tr[data-job] td:last-child')).display === 'none' ? 'the actions column is hidden' : ''].filter(Boolean).join(', ')`, &overflow),
		shot("narrow-jobs"), chromedp.EmulateViewport(1280, 800))
	if overflow != "" {
		t.Fatalf("jobs at 420 px: %s", overflow)
	}

	// The overview's chart counts every drawer filed today.
	st := d.do("GET", "/api/status", nil, auth...)
	stored, links := int(get[float64](st.body, "counts", "drawers_stored")), int(get[float64](st.body, "counts", "similar_links"))
	run("the chart", chromedp.Navigate(base+"#/overview"),
		waitText(fmt.Sprintf(`document.querySelector('#chart p')?.textContent.startsWith('%d filed since')`, stored)),
		waitText(fmt.Sprintf(`[...document.querySelectorAll('.stat')].find((e) => e.textContent.startsWith('Similar links'))?.querySelector('b').textContent === '%d'`, links)))

	// The last backup: a palace with drawers and none is warned about; one
	// taken from the button shows, and the warning goes.
	run("the backup warning", chromedp.Navigate(base+"#/overview"),
		waitText(`document.getElementById('backup-warning')?.textContent.startsWith('no backup yet: the palace holds')`),
		// The daemon's commands in backticks are shown as code.
		waitText("!document.getElementById('backup-warning').textContent.includes('`') && document.querySelector('#backup-warning code')?.textContent === 'loci backup'"),
		waitText(`document.getElementById('backup-last')?.textContent === 'No backup yet.'`), shot("backup-warning"),
		click("#backup-now"), waitText(`!!document.querySelector('#backup a[href^="#/jobs?job="]')`))
	eventually(t, 60*time.Second, "the backup from the button", func() bool {
		return get[string](d.do("GET", "/api/backups", nil, auth...).body, "last", "name") != ""
	})
	lastBackup := get[string](d.do("GET", "/api/backups", nil, auth...).body, "last", "name")
	run("the last backup", chromedp.Navigate(base+"#/palace"), chromedp.WaitVisible("#new-wing", chromedp.ByQuery),
		chromedp.Navigate(base+"#/overview"), chromedp.WaitVisible("#backup", chromedp.ByQuery),
		waitText(fmt.Sprintf(`document.getElementById('backup-last')?.textContent.startsWith('Last backup ') && document.querySelector('#backup-last code')?.textContent === %q && !document.getElementById('backup-warning')`, lastBackup)),
		shot("backup"))

	// A wing's page offers its export: the button asks the daemon for
	// GET /api/export?wing=<name> with the session's token and saves the
	// file it answers.
	run("export a wing", chromedp.Navigate(base+"#/palace/work"), chromedp.WaitVisible("#export-wing", chromedp.ByQuery),
		chromedp.Evaluate(`window.lociFetched = []; window.lociFetch = window.fetch; window.fetch = (u, i) => { window.lociFetched.push([String(u), (i && i.headers && i.headers.Authorization) || '']); return window.lociFetch(u, i); }`, nil),
		click("#export-wing"),
		waitText(`window.lociFetched.some(([u, a]) => u === '/api/export?wing=work' && a.startsWith('Bearer loci_'))`),
		waitText(`document.querySelector('#export .ok')?.textContent.startsWith('Exported ')`), shot("export"))

	// Mining: a miner and a schedule set over REST, then enabled, run,
	// fired and disabled from their buttons.
	docs := t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "lighthouse.md"), []byte("# Lighthouse\n\nThe keeper lights the lamp at dusk.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := d.do("PUT", "/api/miners/docs", map[string]any{"locator": docs, "wing": "docs"}, auth...); r.status != 201 {
		t.Fatalf("miner: %d %s", r.status, r.raw)
	}
	if r := d.do("PUT", "/api/triggers/hourly", map[string]any{"miner": "docs", "type": "schedule", "settings": map[string]any{"every": "1h"}}, auth...); r.status != 201 {
		t.Fatalf("trigger: %d %s", r.status, r.raw)
	}
	mineJobs := func() []any {
		return get[[]any](d.do("GET", "/api/jobs?kind=mine&limit=200", nil, auth...).body, "jobs")
	}
	before := len(mineJobs())
	miner, trigger := `tr[data-miner="docs"]`, `tr[data-trigger="hourly"]`
	run("enable the miner", chromedp.Navigate(base+"#/mining"), waitText(fmt.Sprintf(`!!document.querySelector('%s button[data-act="enable"]')`, miner)),
		click(miner+` button[data-act="enable"]`),
		waitText(fmt.Sprintf(`document.querySelector('%s .state')?.textContent.startsWith('ready')`, miner)))
	if r := d.do("GET", "/api/miners/docs", nil, auth...); !get[bool](r.body, "enabled") {
		t.Fatalf("the miner after Enable: %s", r.raw)
	}
	run("run the miner", click(miner+` button[data-act="run"]`))
	eventually(t, 20*time.Second, "the miner's run completes", func() bool {
		jobs := mineJobs()
		return len(jobs) == before+1 && jobs[0].(map[string]any)["status"] == "completed"
	})
	run("enable and fire the trigger", click(trigger+` button[data-act="enable"]`),
		waitText(fmt.Sprintf(`document.querySelector('%s .state')?.textContent.startsWith('active')`, trigger)),
		click(trigger+` button[data-act="fire"]`),
		waitText(fmt.Sprintf(`document.querySelector('%s .counters')?.textContent.startsWith('fired 1,')`, trigger)))
	run("the webhook endpoint", waitText(fmt.Sprintf(`document.getElementById('webhook-url')?.textContent === 'http://127.0.0.1:%d/hooks/<trigger name>'`, hookPort)))
	run("disable the trigger and the miner", click(trigger+` button[data-act="disable"]`),
		waitText(fmt.Sprintf(`document.querySelector('%s .state')?.textContent.startsWith('disabled')`, trigger)),
		click(miner+` button[data-act="disable"]`),
		waitText(fmt.Sprintf(`document.querySelector('%s .state')?.textContent.startsWith('disabled')`, miner)), shot("mining"))
	if r := d.do("GET", "/api/triggers/hourly", nil, auth...); get[string](r.body, "status") != "disabled" || get[float64](r.body, "counters", "fired") != 1 {
		t.Fatalf("the trigger after Fire and Disable: %s", r.raw)
	}

	// The sources the mining view lists: an installed package with its
	// origin, description and permissions in words, one whose module changed on disk
	// with why it cannot run, a built-in one.
	notes, arc := notesPackage(t, "notes", "1.0.0", notesPerms, guestModule(t))
	if r := install(d, arc, "?consent="+pack.ConsentDigest("notes", notes.Manifest.Permissions), auth...); r.status != 201 {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	_, arc = notesPackage(t, "tampered", "1.0.0", "", guestModule(t))
	if r := install(d, arc, "", auth...); r.status != 201 {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	if err := os.WriteFile(filepath.Join(palace, "sources", "tampered", "notes.wasm"), append(guestModule(t), 0), 0o600); err != nil {
		t.Fatal(err)
	}
	run("the sources", chromedp.Navigate(base+"#/overview"), chromedp.Navigate(base+"#/mining"),
		waitText(`document.querySelector('tr[data-source="notes"] .origin')?.textContent === 'local'`),
		waitText(`document.querySelector('tr[data-source="notes"] .permissions')?.textContent.includes('read the environment variable NOTES_TOKEN')`),
		waitText(`document.querySelector('tr[data-source="tampered"] .state')?.textContent.startsWith('unavailable')`),
		waitText(`document.querySelector('tr[data-source="tampered"] .reason')?.textContent.startsWith('the module changed on disk since it was installed')`),
		waitText(`document.querySelector('tr[data-source="directory"] .origin')?.textContent === 'built-in'`),
		// A package's description under its name; commands as code, not
		// between literal backticks; a name on one line beside a reason
		// with two hashes; the permission bullets level with their row.
		waitText(`document.querySelector('tr[data-source="git-history"] .description')?.textContent.startsWith('The commits reachable from HEAD (the checked-out branch)')`),
		waitText("!document.querySelector('main').textContent.includes('`') && document.querySelector('#sources + p code')?.textContent === 'loci source install FILE'"),
		waitText(`['chatgpt-export', 'directory-wasm', 'tampered'].every((n) => {
			const lines = [...(document.querySelector('tr[data-source="' + n + '"] .source-name')?.getClientRects() || [])];
			return lines.length > 0 && lines.every((l) => l.top === lines[0].top);
		})`),
		waitText(`(() => {
			const row = document.querySelector('tr[data-source="notes"]');
			const name = row?.querySelector('.source-name')?.getBoundingClientRect(), bullet = row?.querySelector('.permissions li')?.getBoundingClientRect();
			return !!name && !!bullet && Math.abs(name.top - bullet.top) < 4;
		})()`), shot("sources"))

	// The graph: facts from checkpoints drawn around their entity; a
	// superseded fact's history names the fact that replaced it.
	fact := func(content string, f map[string]any) {
		t.Helper()
		r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{map[string]any{
			"destination": "project", "content": content, "tags": []string{}, "source": map[string]any{"kind": "manual"}, "fact": f}}}}, auth...)
		if r.status != 202 {
			t.Fatalf("checkpoint: %d %s", r.status, r.raw)
		}
		eventually(t, 10*time.Second, "the checkpoint", func() bool {
			return get[string](d.do("GET", "/api/jobs/"+get[string](r.body, "id"), nil, auth...).body, "status") == "completed"
		})
	}
	fact("Caroline joined Acme in March.", map[string]any{"op": "add", "subject": "Caroline", "subject_kind": "person", "predicate": "works_at", "object": "Acme", "object_kind": "organization", "valid_from": "2026-03-01"})
	fact("Caroline lives in Lisbon.", map[string]any{"op": "add", "subject": "Caroline", "subject_kind": "person", "predicate": "lives_in", "object": "Lisbon", "object_kind": "place"})
	ents := d.do("GET", "/api/entities?name=caroline", nil, auth...)
	caroline := get[string](get[[]any](ents.body, "entities")[0].(map[string]any), "id")
	acme := get[string](get[[]any](d.do("GET", "/api/entities/"+caroline+"/relationships", nil, auth...).body, "relationships")[0].(map[string]any), "id")
	fact("Caroline moved to Initech in June.", map[string]any{"op": "supersede", "relationship_id": acme, "object": "Initech", "object_kind": "organization", "valid_from": "2026-06-01", "reason": "she changed jobs"})
	run("the graph", chromedp.Navigate(base+"#/graph?name=caroline&depth=1&expired=1"),
		waitText(`document.querySelectorAll('#graph line').length === 2 && document.getElementById('graph').textContent.includes('Initech')`),
		waitText(`document.querySelectorAll('#facts li').length === 3`),
		click(fmt.Sprintf(`#facts li[data-fact=%q] button`, acme)),
		waitText(`document.getElementById('fact-history')?.textContent.includes('superseded_by (she changed jobs)') && document.getElementById('fact-history').textContent.includes('Initech')`),
		shot("graph"))
	// Opened without a name, the view starts from the entities with the
	// most facts, not from the first name (a date without facts); a name
	// is resolved by the daemon, the exact one first.
	first := d.do("POST", "/api/wings/project/rooms/notes/drawers", map[string]any{"content": "The layout 2006-01-02 is Go's."}, auth...)
	if r := d.do("POST", "/api/drawers/"+get[string](first.body, "drawer", "id")+"/mentions", map[string]any{"name": "2006-01-02", "kind": "date"}, auth...); r.status != 201 {
		t.Fatalf("mention: %s", r.raw)
	}
	fact("Melanie knows Caroline.", map[string]any{"op": "add", "subject": "Melanie", "subject_kind": "person", "predicate": "knows", "object": "Caroline", "object_kind": "person"})
	fact("Caroline knows Melanie, again.", map[string]any{"op": "add", "subject": "Melanie", "subject_kind": "person", "predicate": "knows", "object": "Caroline", "object_kind": "person"})
	run("the graph's overview", chromedp.Navigate(base+"#/graph"),
		waitText(fmt.Sprintf(`document.querySelector('#graph g[data-entity=%q] circle.center') !== null`, caroline)),
		waitText(`document.getElementById('graph-start')?.textContent.includes('most facts') && !document.getElementById('graph').textContent.includes('2006-01-02')`),
		waitText(`document.querySelectorAll('#graph line').length === 3 && [...document.querySelectorAll('#facts li')].some((li) => li.textContent.includes('asserted 2 times'))`),
		shot("graph-overview"))
	run("the graph by name", chromedp.Navigate(base+"#/graph?name=Melanie"),
		waitText(`document.querySelector('#graph circle.center')?.parentElement.textContent.startsWith('Melanie')`))

	// Dark mode follows the system.
	var bg string
	run("dark", emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}),
		chromedp.Navigate(base+"#/overview"), waitText(`document.querySelector('main h1')?.textContent === 'Overview'`),
		chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &bg), shot("overview-dark"),
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}))
	if bg != "rgb(21, 23, 26)" {
		t.Fatalf("the dark background: %q", bg)
	}

	// The keep-alive shows the connection's state: a stream that keeps
	// sending comment lines stays live; one that falls silent is reported
	// and opened again (live.js with a stream the test controls).
	var watch struct {
		During []string `json:"during"`
		After  []string `json:"after"`
		Calls  int      `json:"calls"`
	}
	run("a silent stream", chromedp.Evaluate(`(async () => {
		const src = [...document.querySelectorAll('link[rel=modulepreload]')].find((l) => l.href.endsWith('/js/live.js')).href;
		const { Live } = await import(src);
		const enc = new TextEncoder(), states = [];
		let stream, calls = 0;
		const fetch = async (url, opts) => {
			calls++;
			return new Response(new ReadableStream({ start(c) {
				stream = c;
				opts.signal.addEventListener('abort', () => c.error(new DOMException('aborted', 'AbortError')));
			} }));
		};
		const live = new Live(() => {}, (s) => states.push(s), { silenceMs: 1000, fetch });
		live.start();
		for (let i = 0; i < 10; i++) {
			await new Promise((r) => setTimeout(r, 300));
			stream.enqueue(enc.encode(': keep-alive\n\n'));
		}
		const during = states.slice();
		await new Promise((r) => setTimeout(r, 3500));
		live.stop();
		return { during, after: states.slice(during.length), calls };
	})()`, &watch, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if slices.Contains(watch.During, "stale") || !slices.Contains(watch.During, "live") || !slices.Contains(watch.After, "stale") || watch.Calls < 2 {
		t.Fatalf("the keep-alive watch: %+v", watch)
	}

	run("events", chromedp.Navigate(base+"#/events"), waitText(`document.querySelectorAll('#frames li').length > 0`), shot("events"),
		// One kind only: the job frames.
		chromedp.SetValue("#e-kind", "job", chromedp.ByQuery), chromedp.Evaluate(`document.getElementById('e-kind').dispatchEvent(new Event('change'))`, nil),
		waitText(`(() => { const ls = [...document.querySelectorAll('#frames li')]; return ls.length > 0 && ls.every((l) => l.textContent.includes('"kind":"job"')); })()`))

	// Every control of every view has a label (or an aria-label), and no
	// view writes out a value it did not have (null, undefined, NaN).
	for _, route := range []string{"#/overview", "#/palace", "#/palace/work", "#/palace/work/notes", "#/drawer/work/notes/" + id, "#/drawer/" + id, "#/search?q=kettle", "#/jobs", "#/jobs?job=" + mineID, "#/mining", "#/graph?name=caroline", "#/events"} {
		var missing, junk string
		run("labels on "+route, chromedp.Navigate(base+route), waitText(`!!document.querySelector('main h1') && !document.querySelector('main').textContent.startsWith('Loading')`),
			chromedp.Sleep(300), // the parts drawn after the view (the chart, a job's detail)
			chromedp.Evaluate(`[...document.querySelectorAll('input, select, textarea')].filter((e) => e.type !== 'hidden' && !e.labels?.length && !e.getAttribute('aria-label')).map((e) => e.id || e.name || e.outerHTML.slice(0, 60)).join(', ')`, &missing),
			// Stored text (drawer content, a job's JSON result) may say null; the page around it may not.
			chromedp.Evaluate(`(() => {
				const m = document.querySelector('main').cloneNode(true);
				m.querySelectorAll('.content, textarea').forEach((e) => e.remove());
				return (m.textContent.match(/\b(null|undefined|NaN)\b|\[object Object\]/g) || []).join(', ');
			})()`, &junk))
		if missing != "" {
			t.Errorf("%s: controls without a label: %s", route, missing)
		}
		if junk != "" {
			t.Errorf("%s: the page shows %s", route, junk)
		}
	}

	// A restart: the page says it is reconnecting, then reconnects and
	// reads again what it shows, a drawer filed while it was away included
	// (by another daemon on another port, so no event reached the page).
	run("the room before the restart", chromedp.Navigate(base+"#/palace/work/notes"), waitText(`!!document.getElementById('note')`),
		waitText(`document.getElementById('conn').textContent === 'live'`))
	_, port, _ := strings.Cut(d.addr, ":")
	if r := d.do("POST", "/api/shutdown", nil, auth...); r.status != 202 {
		t.Fatalf("shutdown: %s", r.raw)
	}
	d.wait(30 * time.Second)
	run("reconnecting", waitText(`document.getElementById('conn').textContent === 'reconnecting'`))
	other := start(t, home, palace, "LOCI_CONFIG="+cfg, "LOCI_AUTH_ENABLED=true")
	if r := other.do("POST", "/api/notes", map[string]any{"wing": "work", "room": "notes", "content": "Filed while the page was away."}, auth...); r.status != 201 {
		t.Fatalf("note: %s", r.raw)
	}
	if r := other.do("POST", "/api/shutdown", nil, auth...); r.status != 202 {
		t.Fatalf("shutdown: %s", r.raw)
	}
	other.wait(30 * time.Second)
	d = startOn(t, port, home, palace, "LOCI_CONFIG="+cfg, "LOCI_AUTH_ENABLED=true")
	run("resync after the restart", waitText(`document.getElementById('conn').textContent === 'live'`),
		waitText(`document.body.innerText.includes('Filed while the page was away.')`), shot("resync"))

	// The token is in sessionStorage only: never localStorage, a cookie or
	// a URL the page asked for.
	var leaks string
	run("where the token is", chromedp.Evaluate(fmt.Sprintf(`(() => {
		const t = %q, out = [];
		if (JSON.stringify(localStorage).includes(t)) out.push('localStorage');
		if (document.cookie.includes(t)) out.push('cookie');
		if (location.href.includes(t)) out.push('location');
		for (const e of performance.getEntries()) if (e.name.includes(t)) out.push('url ' + e.name);
		if (sessionStorage.getItem('loci.token') !== t) out.push('not in sessionStorage');
		return out.join(', ');
	})()`, token), &leaks))
	if leaks != "" {
		t.Fatalf("the token leaked: %s", leaks)
	}
	t.Logf("screenshots in %s", shots)
}

package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// The dashboard's overview while the shared store is unreachable says so
// and shows the counts as unknown (not an empty palace with its "No
// drawers yet" hint), and the page still renders although the job list
// cannot be read. Its backup card on a shared store points to pg_dump
// (loci's backups are refused there), with no "Back up now".
func TestDashboardOverviewDuringAnOutage(t *testing.T) {
	// Not parallel: two browsers at once on two cores time out the other
	// dashboard test's steps.
	browser := chromium(t)
	shots := screens(t)
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
	d := start(t, home, palace, append(sharedEnv(s, db), "LOCI_CONFIG="+webConfig(t, home))...)
	if r := d.do("POST", "/api/wings/work/rooms/notes/drawers", map[string]any{"content": "a note filed before the outage"}); r.status != 201 {
		t.Fatalf("file: %d %s", r.status, r.raw)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	tctx, c := context.WithTimeout(ctx, 60*time.Second)
	defer c()
	var page string
	var buf []byte
	err = chromedp.Run(tctx, chromedp.Navigate("http://"+d.addr+"/ui/#/"),
		chromedp.WaitVisible(".grid", chromedp.ByQuery),
		chromedp.Text("main", &page, chromedp.ByQuery),
		chromedp.FullScreenshot(&buf, 100))
	_ = os.WriteFile(filepath.Join(shots, "overview-outage.png"), buf, 0o644)
	if err != nil {
		t.Fatalf("the overview during an outage: %v (screenshot in %s)", err, shots)
	}
	for _, want := range []string{"is unreachable: counts are unknown", "unknown", "back it up with pg_dump -Fc"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the overview does not say %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "No drawers yet") || strings.Contains(page, "Back up now") {
		t.Fatalf("the overview calls an unreachable palace empty:\n%s", page)
	}
}

// webConfig writes a configuration that turns the dashboard on.
func webConfig(t *testing.T, home string) string {
	t.Helper()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[web]\nenable = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

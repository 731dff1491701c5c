package main_test

import (
	"regexp"
	"strings"
	"testing"
)

// With web.enable, GET and HEAD of /ui open without a token and serve
// the embedded dashboard under the strict policy, while every route it
// reads stays guarded; without it, /ui is guarded like any path.
func TestDashboardIsServedOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	const secret = "dashboard-secret-0123456789"
	d, _ := withConfig(t, "[web]\nenable = true\n", "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+secret)
	r := d.do("GET", "/ui/", nil)
	if r.status != 200 || !strings.Contains(r.raw, "<title>loci</title>") {
		t.Fatalf("the page without a token: %d %s", r.status, r.raw)
	}
	asset := regexp.MustCompile(`/ui/v/[0-9a-f]+/js/app\.js`).FindString(r.raw)
	if asset == "" {
		t.Fatalf("no versioned script in the page: %s", r.raw)
	}
	if a := d.do("GET", asset, nil); a.status != 200 || !strings.Contains(a.raw, "hashchange") {
		t.Fatalf("the script: %d", a.status)
	}
	if r := d.do("POST", "/ui/", nil); r.status != 401 {
		t.Fatalf("POST /ui/ must stay guarded: %d", r.status)
	}
	if r := d.do("GET", "/api/status", nil); r.status != 401 {
		t.Fatalf("the API the page reads must stay guarded: %d", r.status)
	}
	if r := d.do("GET", "/api/status", nil, "Authorization", "Bearer "+secret); r.status != 200 {
		t.Fatalf("status with the token: %d %s", r.status, r.raw)
	}
	if log := d.log.String(); !strings.Contains(log, "dashboard=http://"+d.addr+"/ui/") {
		t.Fatalf("the ready line does not say where the dashboard is:\n%s", log)
	}

	off, _ := withConfig(t, "", "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+secret)
	if strings.Contains(off.log.String(), "dashboard=") {
		t.Fatalf("the ready line names a dashboard that is off:\n%s", off.log.String())
	}
	if r := off.do("GET", "/ui/", nil); r.status != 401 {
		t.Fatalf("dashboard off: /ui/ must be guarded: %d %s", r.status, r.raw)
	}
	if r := off.do("GET", "/ui/", nil, "Authorization", "Bearer "+secret); r.status != 404 || !strings.Contains(r.raw, "no route /ui/") || !strings.Contains(r.raw, "the dashboard is off") {
		t.Fatalf("dashboard off, with the token: %d %s", r.status, r.raw)
	}
}

// `loci stats` prints the drawers filed per local day, today last, over
// every room; a bad --days is refused before any request.
func TestStatsCountsFiledDrawers(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for _, room := range []string{"a", "b"} {
		if r := d.do("POST", "/api/notes", map[string]any{"wing": "w", "room": room, "content": "A note filed in room " + room + "."}); r.status != 201 {
			t.Fatalf("note: %s", r.raw)
		}
	}
	out, errOut, code := d.cli("", "stats", "--days", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.Contains(lines[2], "      2  ") || lines[3] != "2 drawers filed in 3 days" {
		t.Fatalf("loci stats --days 3: %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := d.cli("", "stats", "--days", "0"); code == 0 || !strings.Contains(errOut, "loci::input::invalid") {
		t.Fatalf("--days 0: %d %s", code, errOut)
	}
}

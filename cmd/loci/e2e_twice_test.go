package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every job kind, run twice on the same palace, terminates: a second run
// finds its work done (or its names taken) and must still advance. A
// second `loci demo` used to stay at "running 10/12" for ever, writing
// nothing but burning CPU and growing the palace (issue 36, point 18).
func TestEveryJobKindRunTwiceTerminates(t *testing.T) {
	t.Parallel()
	d, _ := withConfig(t, "[extraction]\nprovider = \"heuristic\"\n")
	dir := t.TempDir()
	for name, text := range map[string]string{
		"a.md": "Alice leads the billing project in Berlin.",
		"b.md": "The deploy moved to Thursdays; Bob owns the release train.",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	submissions := []struct {
		kind string
		body map[string]any
	}{
		{"demo", map[string]any{"type": "demo"}},
		{"checkpoint", map[string]any{"type": "checkpoint", "payload": items("twice", 3, 0)}},
		{"mine", map[string]any{"type": "mine", "path": dir}},
		{"mine --full", map[string]any{"type": "mine", "path": dir, "full": true}},
		{"embed", map[string]any{"type": "embed"}},
		{"extract", map[string]any{"type": "extract"}},
		{"audit", map[string]any{"type": "audit"}},
		{"repair", map[string]any{"type": "repair"}},
	}
	for round := 1; round <= 2; round++ {
		for _, s := range submissions {
			r := d.do("POST", "/api/jobs", s.body)
			if r.status != 202 {
				t.Fatalf("round %d, %s: %d %s", round, s.kind, r.status, r.raw)
			}
			j := waitJob(t, d, r.body["id"].(string), 30*time.Second, finished)
			if j["status"] != "completed" {
				t.Fatalf("round %d, %s: %v", round, s.kind, j)
			}
		}
	}
}

// The daemon's own follow-up jobs (an embed job after writes) are
// requested by "daemon"; `loci job list` leaves them out and says how
// many, --all shows them, and REST filters with automatic= (issue 36,
// point 17).
func TestJobListHidesAutomaticJobs(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	if r := d.do("POST", "/api/notes", map[string]any{"wing": "w", "room": "r", "content": "A note that the daemon embeds on its own."}); r.status != 201 {
		t.Fatalf("note: %s", r.raw)
	}
	if r := d.do("POST", "/api/jobs", map[string]any{"type": "audit"}); r.status != 202 {
		t.Fatalf("audit: %s", r.raw)
	}
	var embedID string
	eventually(t, 20*time.Second, "an automatic embed job", func() bool {
		r := d.do("GET", "/api/jobs?kind=embed", nil)
		jobs := get[[]any](r.body, "jobs")
		if len(jobs) == 0 {
			return false
		}
		j := jobs[0].(map[string]any)
		embedID = j["id"].(string)
		return j["requested_by"] == "daemon"
	})
	if r := d.do("GET", "/api/jobs?automatic=false", nil); strings.Contains(r.raw, embedID) || !strings.Contains(r.raw, `"audit"`) {
		t.Fatalf("automatic=false: %s", r.raw)
	}
	if r := d.do("GET", "/api/jobs?automatic=true", nil); !strings.Contains(r.raw, embedID) || strings.Contains(r.raw, `"audit"`) {
		t.Fatalf("automatic=true: %s", r.raw)
	}
	if r := d.do("GET", "/api/jobs?automatic=maybe", nil); r.status != 400 || !strings.Contains(r.raw, "automatic") {
		t.Fatalf("automatic=maybe: %d %s", r.status, r.raw)
	}
	s := mcpSession(t, d)
	if ans, isErr := callTool(t, s, "loci_job_list", map[string]any{"automatic": false}); isErr || strings.Contains(fmt.Sprint(ans), embedID) || !strings.Contains(fmt.Sprint(ans), "audit") {
		t.Fatalf("loci_job_list automatic=false: %v", ans)
	}
	if ans, isErr := callTool(t, s, "loci_job_list", map[string]any{"automatic": true}); isErr || !strings.Contains(fmt.Sprint(ans), embedID) {
		t.Fatalf("loci_job_list automatic=true: %v", ans)
	}
	out, _, code := d.cli("", "job", "list")
	if code != 0 || strings.Contains(out, embedID) || !strings.Contains(out, "audit") || !strings.Contains(out, "automatic jobs hidden") {
		t.Fatalf("loci job list: %d %s", code, out)
	}
	if out, _, code = d.cli("", "job", "list", "--all"); code != 0 || !strings.Contains(out, embedID) || strings.Contains(out, "hidden") {
		t.Fatalf("loci job list --all: %d %s", code, out)
	}
}

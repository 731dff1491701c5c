package main_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Every job kind, run twice on the same palace, terminates: a second run
// finds its work done (or its names taken) and must still advance. A
// second `loci demo` used to stay at "running 10/12" for ever, writing
// nothing but burning CPU and growing the palace (issue 36, point 18).
func TestEveryJobKindRunTwiceTerminates(t *testing.T) {
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

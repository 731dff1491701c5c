package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The retention guard with Claude Code's sessions under the daemon's
// HOME: sessions near the end of cleanupPeriodDays that no wing holds are
// warned of by GET /api/sources and loci status (with the command that
// keeps them); `loci mine --source claude-code` with no locator mines the
// standard location into wing claude-code and the warning goes; a
// cleanupPeriodDays of the user's own moves the bound.
func TestClaudeCodeRetentionGuard(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	projects := filepath.Join(home, ".claude", "projects")
	var sessions []string
	err := filepath.WalkDir(filepath.Join(ccFixture, "projects"), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(ccFixture, "projects"), p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(projects, rel)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		sessions = append(sessions, dst)
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil || len(sessions) < 2 {
		t.Fatalf("the fixture: %v %d", err, len(sessions))
	}
	// The first session is 26 days old (within the last week of 30 days);
	// the rest are fresh.
	old := time.Now().Add(-26 * 24 * time.Hour)
	if err := os.Chtimes(sessions[0], old, old); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace)
	warnings := func() []map[string]any {
		t.Helper()
		r := d.do("GET", "/api/sources", nil)
		if r.status != 200 {
			t.Fatalf("sources: %s", r.raw)
		}
		var out struct{ Warnings []map[string]any }
		json.Unmarshal([]byte(r.raw), &out)
		return out.Warnings
	}
	ws := warnings()
	if len(ws) != 1 || ws[0]["kind"] != "expiring_unmined" || ws[0]["sessions"] != 1.0 || ws[0]["locator"] != projects ||
		!strings.Contains(ws[0]["help"].(string), "loci mine --source claude-code") {
		t.Fatalf("warnings with a 26-day-old unmined session: %v", ws)
	}
	out, _, code := runCLI(home, "", []string{"--addr", d.addr, "status"}, nil)
	if code != 0 || !strings.Contains(out, "warning:") || !strings.Contains(out, "never mined") || !strings.Contains(out, "cleanupPeriodDays") {
		t.Fatalf("status (%d) says nothing of the session about to be deleted:\n%s", code, out)
	}
	// The user keeps sessions 90 days: nothing is near its end.
	os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"cleanupPeriodDays": 90}`), 0o600)
	if ws := warnings(); len(ws) != 0 {
		t.Fatalf("warnings with cleanupPeriodDays 90: %v", ws)
	}
	os.Remove(filepath.Join(home, ".claude", "settings.json"))
	if out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "mine", "--source", "claude-code"}, nil); code != 0 {
		t.Fatalf("loci mine --source claude-code: %d\n%s%s", code, out, errOut)
	}
	w := d.do("GET", "/api/wings/claude-code", nil)
	if w.status != 200 {
		t.Fatalf("the wing of a mine without one: %s", w.raw)
	}
	if ws := warnings(); len(ws) != 0 {
		t.Fatalf("warnings once every session is mined: %v", ws)
	}
	// The standard location spelled out is the same source, filed in the
	// same wing: nothing new, no wing named after the folder.
	if out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "mine", "--source", "claude-code", projects}, nil); code != 0 ||
		!strings.Contains(out, "nothing changed") && !strings.Contains(out, "Up to date") {
		t.Fatalf("loci mine --source claude-code %s: %d\n%s%s", projects, code, out, errOut)
	}
	if w := d.do("GET", "/api/wings/projects", nil); w.status != 404 {
		t.Fatalf("a wing named after the sessions' folder: %s", w.raw)
	}
}

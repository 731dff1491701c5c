package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources"
)

// codexDrawers are the current drawers of wing w's codex room: id ->
// content.
func codexDrawers(t *testing.T, d *daemon) map[string]string {
	t.Helper()
	r := d.do("GET", "/api/wings/w/rooms/codex/drawers?limit=200", nil)
	if r.status != 200 {
		t.Fatalf("the codex room: %s", r.raw)
	}
	out := map[string]string{}
	for _, p := range get[[]any](r.body, "drawers") {
		id := p.(map[string]any)["id"].(string)
		h := d.do("GET", "/api/drawers/"+id+"/history", nil)
		if h.status != 200 || get[string](h.body, "drawer", "source", "kind") != "transcript" {
			t.Fatalf("drawer %s: %s", id, h.raw)
		}
		out[id] = get[string](h.body, "drawer", "content")
	}
	return out
}

// turnUnits splits a transcript drawer's content into its turns (each
// starts at a turn header line).
func turnUnits(content string) []string {
	var out []string
	for _, line := range strings.SplitAfter(content, "\n") {
		if _, _, ok := sources.ParseTurnHeader(strings.TrimSuffix(line, "\n")); ok || len(out) == 0 {
			out = append(out, line)
			continue
		}
		out[len(out)-1] += line
	}
	return out
}

// The codex source through the real daemon, on the rollout the real codex
// CLI wrote, grown in the three steps codex wrote it (exec, resume,
// resume) into the daemon user's ~/.codex/sessions (the default locator):
// each mine files only the new turns, no turn is in two current drawers;
// the reasoning, the tools' output and Codex's injected instructions are
// in no drawer; the secrets in the prompt and in the shell command are
// redacted and reach no log; a turn is found by search; GET /api/sources
// shows the adapter and its format; a hand-made rollout's unknown records
// are counted in unknown_records.
func TestCodexSessionsEndToEnd(t *testing.T) {
	t.Parallel()
	fixture := filepath.Join("..", "..", "sources", "testdata", "transcripts", "codex")
	var steps struct {
		Session string `json:"session"`
		Lines   []int  `json:"lines_after_run"`
	}
	if b, err := os.ReadFile(filepath.Join(fixture, "steps.json")); err != nil || json.Unmarshal(b, &steps) != nil || len(steps.Lines) != 3 {
		t.Fatalf("steps.json: %v", err)
	}
	rel := filepath.FromSlash(steps.Session)
	raw, err := os.ReadFile(filepath.Join(fixture, "sessions", rel))
	if err != nil {
		t.Fatal(err)
	}

	home, palace := newPalace(t)
	cfg := filepath.Join(home, "loci.toml")
	// Small drawers, so the session is several and growth is seen per turn.
	if err := os.WriteFile(cfg, []byte("[mining]\nchunk_chars = 400\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)

	src := d.do("GET", "/api/sources", nil)
	var codex map[string]any
	for _, a := range get[[]any](src.body, "adapters") {
		if a.(map[string]any)["name"] == "codex" {
			codex = a.(map[string]any)
		}
	}
	if codex == nil || codex["format"] != sources.CodexFormat || codex["default_locator"] != "~/.codex/sessions" {
		t.Fatalf("GET /api/sources: %s", src.raw)
	}

	file := filepath.Join(home, ".codex", "sessions", rel)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	mine := func(body map[string]any) map[string]any {
		t.Helper()
		r := d.do("POST", "/api/jobs", body)
		if r.status != 202 {
			t.Fatalf("mine: %s", r.raw)
		}
		j := waitJob(t, d, r.body["id"].(string), 30*time.Second, finished)
		if j["status"] != "completed" {
			t.Fatalf("the mine job: %v", j)
		}
		return j
	}
	var before map[string]string
	redacted := 0.0
	for i, n := range steps.Lines {
		if err := os.WriteFile(file, bytes.Join(lines[:n], nil), 0o600); err != nil {
			t.Fatal(err)
		}
		j := mine(map[string]any{"type": "mine", "source": "codex", "wing": "w"})
		if get[float64](j, "result", "ingested") != 1 {
			t.Fatalf("run %d: %v", i+1, j["result"])
		}
		redacted += get[float64](j, "result", "redacted")
		now := codexDrawers(t, d)
		// Only the new turns were filed: every turn is in one current
		// drawer, and they are the turns of the runs so far.
		seen := map[string]string{}
		for id, content := range now {
			for _, u := range turnUnits(content) {
				if other, dup := seen[u]; dup {
					t.Fatalf("run %d: a turn in two current drawers (%s, %s): %q", i+1, other, id, u)
				}
				seen[u] = id
			}
		}
		if len(seen) != 2*(i+1) {
			t.Fatalf("run %d: %d turns current, want %d: %v", i+1, len(seen), 2*(i+1), now)
		}
		// The drawers filed before stay current, but for the last one,
		// which the new turns may join.
		kept := 0
		for id := range before {
			if _, ok := now[id]; ok {
				kept++
			}
		}
		if len(before) > 0 && kept < len(before)-1 {
			t.Fatalf("run %d: %d of %d earlier drawers kept: %v then %v", i+1, kept, len(before), before, now)
		}
		before = now
	}
	t.Logf("the session in %d drawers", len(before))
	if len(before) < 3 {
		t.Fatalf("the session is in %d drawers: the growth check saw too few", len(before))
	}
	all := strings.Join(func() []string {
		var out []string
		for _, c := range before {
			out = append(out, c)
		}
		return out
	}(), "\n")
	for _, absent := range []string{"REASONING-SENTINEL", "gAAAAAB", "TOOL-OUTPUT-SENTINEL", "No such file", "PATCH-BODY-SENTINEL",
		"AGENTS-MD-SENTINEL", "environment_context", "skills_instructions", "AKIA", "ghp_"} {
		if !bytes.Contains(raw, []byte(absent)) {
			t.Fatalf("the fixture has no %q: the check could not fail", absent)
		}
		if strings.Contains(all, absent) {
			t.Fatalf("%q is in a drawer:\n%s", absent, all)
		}
		if strings.Contains(d.log.String(), absent) {
			t.Fatalf("%q reached the daemon's log", absent)
		}
	}
	for _, present := range []string{"[REDACTED:github_token]", "[tool exec_command: AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id] git status --short]",
		"[tool apply_patch: add NOTES.md]", "[tool result: 44 B, error]", "[image]", "[user · 2026-", "rotate the copper kettles"} {
		if !strings.Contains(all, present) {
			t.Fatalf("%q is in no drawer:\n%s", present, all)
		}
	}
	if redacted < 2 {
		t.Fatalf("%v secrets redacted, want the token and the key", redacted)
	}

	// Nothing new: the next mine is up to date.
	if j := mine(map[string]any{"type": "mine", "source": "codex", "wing": "w"}); get[string](j, "result", "outcome") != "up_to_date" {
		t.Fatalf("mining the unchanged session: %v", j["result"])
	}
	s := d.do("POST", "/api/search", map[string]any{"text": "rotate the copper kettles nightly", "filter": map[string]any{"wing": "w"}})
	if s.status != 200 || len(get[[]any](s.body, "hits")) == 0 || !strings.Contains(s.raw, "transcript") || !strings.Contains(s.raw, "copper kettles") {
		t.Fatalf("search of a turn: %s", s.raw)
	}

	// The hand-made rollout: unknown records counted, never an error.
	handmade, _ := filepath.Abs(filepath.Join(fixture, "handmade"))
	j := mine(map[string]any{"type": "mine", "source": "codex", "locator": handmade, "wing": "old"})
	if get[float64](j, "result", "ingested") != 1 || get[float64](j, "result", "unknown_records") != 3 {
		t.Fatalf("the hand-made rollout: %v", j["result"])
	}
}

package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources"
)

// ccFixture is the session files the real Claude Code CLI wrote
// (sources/testdata/transcripts/claude-code).
const ccFixture = "../../sources/testdata/transcripts/claude-code"

// adapterInfo is the adapter of GET /api/sources' adapters named name, nil
// when there is none.
func adapterInfo(adapters []any, name string) map[string]any {
	for _, a := range adapters {
		if m, _ := a.(map[string]any); m != nil && m["name"] == name {
			return m
		}
	}
	return nil
}

// ccDrawers is the current drawers of a wing's claude-code room, by id,
// with their content.
func ccDrawers(t *testing.T, d *daemon, wing string) map[string]string {
	t.Helper()
	list := d.do("GET", "/api/wings/"+wing+"/rooms/claude-code/drawers?limit=200", nil)
	if list.status != 200 {
		t.Fatalf("drawers: %s", list.raw)
	}
	out := map[string]string{}
	for _, x := range get[[]any](list.body, "drawers") {
		id := get[string](x.(map[string]any), "id")
		r := d.do("GET", "/api/wings/"+wing+"/rooms/claude-code/drawers/"+id, nil)
		if r.status != 200 {
			t.Fatalf("drawer %s: %s", id, r.raw)
		}
		out[id] = get[string](r.body, "content")
	}
	return out
}

// turnUnits splits a transcript drawer's content into its turns (each from
// its header line).
func claudeTurnUnits(content string) []string {
	var out []string
	for _, para := range strings.Split(content, "\n\n") {
		first, _, _ := strings.Cut(para, "\n")
		if _, _, ok := sources.ParseTurnHeader(first); ok {
			out = append(out, strings.TrimSpace(para))
		} else if n := len(out); n > 0 && strings.TrimSpace(para) != "" {
			out[n-1] += "\n\n" + strings.TrimSpace(para)
		}
	}
	return out
}

// Claude Code's sessions mined through the real daemon from the files the
// real CLI wrote: a session growing in three steps files only its new
// turns and never duplicates one; the turns are searchable and say who
// spoke and when; the model's reasoning and the tools' output are in no
// drawer; the secrets in the prompt and in a Bash command are redacted;
// unknown records are counted; the project option narrows; a session file
// the agent deleted after mining stays searchable.
func TestClaudeCodeSessionsEndToEnd(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	// Small drawers: a session is several, so a grown one shows which it
	// files again.
	if err := os.WriteFile(cfg, []byte("[mining]\nchunk_chars = 300\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)

	// The fixture's sessions, the one with the tool calls held back to
	// grow in three steps.
	root := filepath.Join(t.TempDir(), "projects")
	var grow string
	var growLines []string
	err := filepath.WalkDir(filepath.Join(ccFixture, "projects"), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(ccFixture, "projects"), p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if strings.Contains(string(b), "Check the repository and read notes.txt") && strings.HasSuffix(p, ".jsonl") {
			grow = dst
			growLines = strings.SplitAfter(string(b), "\n")
			return nil
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil || grow == "" {
		t.Fatalf("the fixture: %v %q", err, grow)
	}
	mineAt := func(locator, wing string, opts map[string]string) map[string]any {
		t.Helper()
		r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": "claude-code", "locator": locator, "wing": wing, "options": opts})
		if r.status != 202 {
			t.Fatalf("mine: %s", r.raw)
		}
		j := waitJob(t, d, r.body["id"].(string), 60*time.Second, finished)
		if j["status"] != "completed" {
			t.Fatalf("mine: %v", j)
		}
		return j
	}
	mine := func(wing string, opts map[string]string) map[string]any { return mineAt(root, wing, opts) }
	appendLines := func(lines []string) {
		t.Helper()
		f, err := os.OpenFile(grow, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// checkDrawers: no turn in two current drawers; nothing of the
	// reasoning, the tools' output or the secrets in any.
	checkDrawers := func(drawers map[string]string) {
		t.Helper()
		seen := map[string]string{}
		for id, c := range drawers {
			for _, u := range claudeTurnUnits(c) {
				if other, ok := seen[u]; ok && other != id {
					t.Fatalf("a turn in two current drawers %s and %s:\n%s", other, id, u)
				}
				seen[u] = id
			}
			for _, never := range []string{"reasoning-pelican-5521", "toolout-zebra-7781", "filebody-walrus-3390", "subagent-heron-4410",
				"Exit code 3", "system-reminder", "task-notification", "ghp_aBcDeF", "AKIAIOSFODNN7EXAMPLF", "iVBORw0KGgo",
				"continued from a previous conversation", "Estimated cost", "Prompt is too long"} {
				if strings.Contains(c, never) {
					t.Fatalf("drawer %s holds %q:\n%s", id, never, c)
				}
			}
		}
	}

	// Step 1: the prompt only.
	third := len(growLines) / 3
	appendLines(growLines[:third])
	j := mine("w", nil)
	if get[float64](j, "result", "filtered") != 0 || get[float64](j, "result", "ingested") != 5 || get[float64](j, "result", "redacted") < 1 {
		t.Fatalf("the first mine: %v", j["result"])
	}
	step1 := ccDrawers(t, d, "w")
	checkDrawers(step1)
	// Steps 2 and 3: the session grows; what was filed stays but for the
	// last drawer, which a grown turn may supersede.
	prev := step1
	for _, part := range [][]string{growLines[third : 2*third], growLines[2*third:]} {
		appendLines(part)
		j = mine("w", nil)
		if get[float64](j, "result", "ingested") != 1 || get[float64](j, "result", "created") < 1 || get[float64](j, "result", "superseded") > 1 {
			t.Fatalf("mining the grown session: %v", j["result"])
		}
		now := ccDrawers(t, d, "w")
		checkDrawers(now)
		gone := 0
		for id := range prev {
			if _, ok := now[id]; !ok {
				gone++
			}
		}
		if gone > 1 || len(now) <= len(prev) {
			t.Fatalf("the grown session: %d drawers were %d, %d of them no longer current", len(now), len(prev), gone)
		}
		prev = now
	}
	// The whole session is there once: its prompt and tool calls, redacted.
	all := ""
	for _, c := range prev {
		all += c + "\n"
	}
	for _, want := range []string{"My GitHub token is [REDACTED:", "[tool Bash: echo toolout-zebra-$((7000+781)) && AWS_ACCESS_KEY_ID=[REDACTED:",
		"[tool Read: /tmp/loci-cc-fixture/project-app/notes.txt]", "[tool result: 75 B]", "Summary for the resumed session",
		"[user (sub-agent) · ", "[tool result: 31 B, error]", "What is in this picture?\n[image]", "[command /compact]"} {
		if strings.Count(all, want) != 1 {
			t.Fatalf("%q is in the drawers %d times:\n%s", want, strings.Count(all, want), all)
		}
	}

	// Search finds a turn and says who said it and when.
	s := d.do("POST", "/api/search", map[string]any{"text": "flamingo migration plan summary"})
	if s.status != 200 || len(get[[]any](s.body, "hits")) == 0 || !strings.Contains(s.raw, "[assistant · 2026-") {
		t.Fatalf("search: %s", s.raw)
	}
	hit := get[[]any](s.body, "hits")[0].(map[string]any)
	if get[string](hit, "source", "kind") != "transcript" {
		t.Fatalf("the hit: %v", hit)
	}

	// An unknown record type and a corrupt line are counted, never an error.
	hand, err := os.ReadFile(filepath.Join(ccFixture, "handmade", "unknown-records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "-work-app"), 0o755)
	os.WriteFile(filepath.Join(root, "-work-app", "0d6c2c7e-0000-4000-8000-00000000cafe.jsonl"), hand, 0o644)
	if j = mine("w", nil); get[float64](j, "result", "unknown_records") != 3 || get[float64](j, "result", "ingested") != 1 {
		t.Fatalf("the hand-made session: %v", j["result"])
	}

	// The project option: only the sessions run in that project.
	j = mine("other", map[string]string{"project": "/tmp/loci-cc-fixture/project-other"})
	if get[float64](j, "result", "ingested") != 3 || get[float64](j, "result", "filtered") != 3 {
		t.Fatalf("the project option: %v", j["result"])
	}
	for _, c := range ccDrawers(t, d, "other") {
		if strings.Contains(c, "flamingo") {
			t.Fatalf("a session of another project: %s", c)
		}
	}

	// GET /api/sources shows the adapter and the format it follows.
	src := d.do("GET", "/api/sources", nil)
	cc := adapterInfo(get[[]any](src.body, "adapters"), "claude-code")
	if cc == nil || cc["format"] != sources.ClaudeCodeFormat || cc["default_locator"] != "~/.claude/projects" {
		t.Fatalf("sources: %s", src.raw)
	}

	// The agent deletes a session after it was mined: it stays in loci.
	err = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "What is in this picture?") {
				return os.Remove(p)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mine("w", nil)
	if s := d.do("POST", "/api/search", map[string]any{"text": "single red pixel transparent ground"}); !strings.Contains(s.raw, "A single red pixel") {
		t.Fatalf("the deleted session is no longer found: %s", s.raw)
	}
	// No locator: the agent's standard location under the daemon user's
	// home.
	std := filepath.Join(home, ".claude", "projects", "-work-app")
	if err := os.MkdirAll(std, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(std, "0d6c2c7e-0000-4000-8000-00000000cafe.jsonl"), hand, 0o600)
	if j = mineAt("", "home", nil); get[float64](j, "result", "ingested") != 1 {
		t.Fatalf("the standard location: %v", j["result"])
	}
	if s := d.do("POST", "/api/search", map[string]any{"text": "staging proxy port", "filter": map[string]any{"wing": "home"}}); !strings.Contains(s.raw, "8443") {
		t.Fatalf("the session at the standard location: %s", s.raw)
	}
	for _, secret := range []string{"ghp_aBcDeF", "AKIAIOSFODNN7EXAMPLF", "reasoning-pelican"} {
		if strings.Contains(d.log.String(), secret) {
			t.Fatalf("%q reached the daemon's log", secret)
		}
	}
}

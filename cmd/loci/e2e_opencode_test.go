package main_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// ocFixture puts one of the databases the real OpenCode wrote
// (sources/testdata/transcripts/opencode) in place of dir's opencode.db,
// as OpenCode's own file would change between mines.
func ocFixture(t *testing.T, dir, name string) {
	t.Helper()
	src, err := os.Open(filepath.Join("..", "..", "sources", "testdata", "transcripts", "opencode", name))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tmp := filepath.Join(dir, ".new.db")
	dst, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	if err := os.Rename(tmp, filepath.Join(dir, "opencode.db")); err != nil {
		t.Fatal(err)
	}
}

// ocDrawers is the text of the current drawers of a wing's opencode room.
func ocDrawers(t *testing.T, d *daemon, wing string) []string {
	t.Helper()
	list := d.do("GET", "/api/wings/"+wing+"/rooms/opencode/drawers?limit=100", nil)
	if list.status != 200 {
		t.Fatalf("drawers: %s", list.raw)
	}
	var out []string
	for _, p := range get[[]any](list.body, "drawers") {
		id := get[string](p.(map[string]any), "id")
		r := d.do("GET", "/api/wings/"+wing+"/rooms/opencode/drawers/"+id, nil)
		if r.status != 200 || get[string](r.body, "source", "kind") != "transcript" {
			t.Fatalf("drawer %s: %s", id, r.raw)
		}
		out = append(out, get[string](r.body, "content"))
	}
	return out
}

// ocTurns checks no turn is in two current drawers and returns how many
// turns the drawers hold.
func ocTurns(t *testing.T, drawers []string) int {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range drawers {
		for _, turn := range strings.Split(strings.TrimSpace(c), "\n\n") {
			if seen[turn] {
				t.Fatalf("a turn is in two current drawers: %q", turn)
			}
			seen[turn] = true
		}
	}
	return len(seen)
}

// OpenCode's stored sessions mined through the real daemon: the adapter
// and its format in GET /api/sources, a session that grew over three runs
// of OpenCode mined three times filing only its new turns, secrets
// redacted in text and in tool arguments, reasoning and tool output in no
// drawer, unknown records counted, and the project option.
func TestOpenCodeMineEndToEnd(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	// Drawers small enough that each turn is its own: a mine that files
	// only the new turns creates only their drawers.
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[mining]\nchunk_chars = 300\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	data := t.TempDir()

	src := d.do("GET", "/api/sources", nil)
	var adapter map[string]any
	for _, a := range get[[]any](src.body, "adapters") {
		if get[string](a.(map[string]any), "name") == "opencode" {
			adapter = a.(map[string]any)
		}
	}
	if adapter == nil || adapter["format"] != "sqlite-1" || adapter["default_locator"] != "~/.local/share/opencode" {
		t.Fatalf("GET /api/sources: %s", src.raw)
	}

	mine := func(wing string, opts map[string]string) map[string]any {
		t.Helper()
		body := map[string]any{"type": "mine", "source": "opencode", "locator": data, "wing": wing}
		if opts != nil {
			body["options"] = opts
		}
		r := d.do("POST", "/api/jobs", body)
		if r.status != 202 {
			t.Fatalf("mine: %s", r.raw)
		}
		j := waitJob(t, d, get[string](r.body, "id"), 60*time.Second, finished)
		if j["status"] != "completed" {
			t.Fatalf("mine job: %v", j)
		}
		t.Logf("mine into %s: %v", wing, j["result"])
		return j
	}

	// Run 1 of OpenCode: one exchange.
	ocFixture(t, data, "grow-1.db")
	j := mine("w", nil)
	first := ocDrawers(t, d, "w")
	if get[float64](j, "result", "created") == 0 || ocTurns(t, first) != 2 {
		t.Fatalf("first mine: %v\n%q", j["result"], first)
	}
	// Run 2 (--continue): the session gained an exchange.
	ocFixture(t, data, "grow-2.db")
	j = mine("w", nil)
	second := ocDrawers(t, d, "w")
	// Only the new exchange's drawers are filed; none is superseded.
	if get[float64](j, "result", "ingested") != 1 || get[float64](j, "result", "created") != 2 || get[float64](j, "result", "superseded") != 0 ||
		len(second) != len(first)+2 || ocTurns(t, second) != 4 {
		t.Fatalf("second mine: %v\n%q", j["result"], second)
	}
	// Run 3, and another session with a sub-agent; a record of a type
	// OpenCode may add later (hand-made) is counted.
	ocFixture(t, data, "opencode.db")
	w, err := sqlite3.Open(filepath.Join(data, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Exec(`INSERT INTO part VALUES ('prt_handmade_1', 'msg_215fedb15001s13QATAxCzu6Lz', 'ses_dea025559ffeuFZM6n0pSo7zXl', 1795665360000, 1795665360000, '{"type":"hologram","text":"HOLOGRAM"}')`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	j = mine("w", nil)
	third := ocDrawers(t, d, "w")
	if get[float64](j, "result", "ingested") != 3 || get[float64](j, "result", "unknown_records") != 1 || get[float64](j, "result", "superseded") != 0 ||
		ocTurns(t, third) != 6+2+2 {
		t.Fatalf("third mine: %v\n%q", j["result"], third)
	}
	// Nothing changed: nothing filed.
	if j = mine("w", nil); get[float64](j, "result", "created") != 0 || get[float64](j, "result", "ingested") != 0 {
		t.Fatalf("an unchanged database: %v", j["result"])
	}

	all := strings.Join(third, "\n")
	for _, s := range []string{"ghp_Zq3X", "AKIAZ7QX", "REASONING-ALPHA", "REASONING-BETA", "README-CONTENT-MARKER", "?? notes.txt",
		"task_result", "Image read successfully", "HOLOGRAM"} {
		if strings.Contains(all, s) {
			t.Errorf("%q reached a drawer", s)
		}
	}
	for _, s := range []string{"My GitHub token is [REDACTED:", "[tool bash: git status --short && echo deploy-key=[REDACTED:",
		"[tool read: ", "[tool result: 238 B]", "[image]", "[assistant (sub-agent) · ", "[tool task: Find the deploy checklist]",
		"The screenshot shows the build passing"} {
		if !strings.Contains(all, s) {
			t.Errorf("%q is in no drawer", s)
		}
	}
	for _, s := range []string{"ghp_Zq3X", "AKIAZ7QX", "REASONING", "Please run git status"} {
		if strings.Contains(d.log.String(), s) {
			t.Errorf("%q reached the daemon's log", s)
		}
	}

	// The project option: only the deploys project's sessions.
	j = mine("p", map[string]string{"project": "/tmp/opencode-fixture/work/deploys"})
	proj := ocDrawers(t, d, "p")
	if get[float64](j, "result", "filtered") != 1 || ocTurns(t, proj) != 2+2 || strings.Contains(strings.Join(proj, ""), "git status") {
		t.Fatalf("the project option: %v\n%q", j["result"], proj)
	}

	// OpenCode deletes a session: its drawers stay current and searchable
	// (a mine without prune closes nothing).
	w, err = sqlite3.Open(filepath.Join(data, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Exec(`PRAGMA foreign_keys = ON; DELETE FROM session WHERE parent_id IS NOT NULL OR directory LIKE '%/deploys'`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if j = mine("w", nil); get[float64](j, "result", "retired") != 0 {
		t.Fatalf("a mine after OpenCode deleted sessions: %v", j["result"])
	}
	if s := d.do("POST", "/api/search", map[string]any{"query": "deploy checklist tests green changelog tag pushed", "filter": map[string]any{"wing": "w"}}); s.status != 200 ||
		!strings.Contains(s.raw, "changelog updated, tag pushed") {
		t.Fatalf("a deleted session's turns are not found: %s", s.raw)
	}
}

package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources"
)

// The end-to-end tests of issue 27 that no one adapter owns, on the codex
// source and the real codex fixture: a kill -9 during a transcript mine,
// the watch trigger `loci integration install --mine-sessions` makes, and
// the retention guard's deleted_by_agent warning.

// codexFixture is the codex source's test data (real rollouts).
var codexFixture = filepath.Join("..", "..", "sources", "testdata", "transcripts", "codex")

// codexSteps is the fixture's steps.json: the main session and the lines
// it had after each of codex's three runs, and the other sessions.
type codexSteps struct {
	Session string   `json:"session"`
	Lines   []int    `json:"lines_after_run"`
	Others  []string `json:"other_sessions"`
}

func readCodexSteps(t *testing.T) codexSteps {
	t.Helper()
	var s codexSteps
	b, err := os.ReadFile(filepath.Join(codexFixture, "steps.json"))
	if err != nil || json.Unmarshal(b, &s) != nil || len(s.Lines) != 3 || len(s.Others) == 0 {
		t.Fatalf("steps.json: %v", err)
	}
	return s
}

// codexCopies writes copies of every fixture session under root (a
// ~/.codex/sessions): copy i moves to its own day (2024-01-01 plus i days,
// in the file's times, its name and its YYYY/MM/DD directory) and its own
// ids, so no two copies share a turn. It returns how many files it wrote.
func codexCopies(t *testing.T, root string, copies int) int {
	t.Helper()
	src := filepath.Join(codexFixture, "sessions")
	var rels []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			rels = append(rels, p)
		}
		return err
	})
	if err != nil || len(rels) == 0 {
		t.Fatalf("the fixture's sessions: %v", err)
	}
	raws := make([][]byte, len(rels))
	for i, p := range rels {
		if raws[i], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for i := range copies {
		day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i)
		stamp, id := day.Format("2006-01-02")+"T", fmt.Sprintf("%08x", 0x10000000+i)
		dir := filepath.Join(root, day.Format("2006/01/02"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for j, p := range rels {
			b := bytes.ReplaceAll(bytes.ReplaceAll(raws[j], []byte("2026-11-26T"), []byte(stamp)), []byte("01a215fe"), []byte(id))
			name := strings.ReplaceAll(strings.ReplaceAll(filepath.Base(p), "2026-11-26T", stamp), "01a215fe", id)
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

// filedDrawer is a current transcript drawer: its content and the session
// file (source.uri) it came from.
type filedDrawer struct{ id, content, uri string }

// roomDrawers lists every current drawer of a wing's room with its content
// and source (all pages).
func roomDrawers(t *testing.T, d *daemon, wing, room string) []filedDrawer {
	t.Helper()
	var out []filedDrawer
	cursor := ""
	for {
		r := d.do("GET", "/api/wings/"+wing+"/rooms/"+room+"/drawers?limit=200&cursor="+url.QueryEscape(cursor), nil)
		if r.status != 200 {
			t.Fatalf("the drawers of %s/%s: %s", wing, room, r.raw)
		}
		for _, p := range get[[]any](r.body, "drawers") {
			id := p.(map[string]any)["id"].(string)
			h := d.do("GET", "/api/drawers/"+id+"/history", nil)
			if h.status != 200 || get[string](h.body, "drawer", "source", "kind") != "transcript" {
				t.Fatalf("drawer %s: %s", id, h.raw)
			}
			out = append(out, filedDrawer{id: id, content: get[string](h.body, "drawer", "content"), uri: get[string](h.body, "drawer", "source", "uri")})
		}
		cursor, _ = r.body["next_cursor"].(string)
		if cursor == "" {
			return out
		}
	}
}

// sessionsFiled checks that no turn of a session is in two of its current
// drawers and returns each session's drawer contents, sorted, and how many
// turns (turn headers) they hold in all.
func sessionsFiled(t *testing.T, what string, drawers []filedDrawer) (map[string][]string, int) {
	t.Helper()
	bySession := map[string][]string{}
	for _, dr := range drawers {
		if dr.uri == "" {
			t.Fatalf("%s: drawer %s has no source.uri", what, dr.id)
		}
		bySession[dr.uri] = append(bySession[dr.uri], dr.content)
	}
	turns := 0
	for uri, contents := range bySession {
		seen := map[string]bool{}
		for _, c := range contents {
			for _, u := range turnUnits(c) {
				if seen[u] {
					t.Fatalf("%s: a turn of %s in two current drawers: %q", what, uri, u)
				}
				seen[u] = true
				if _, _, ok := sources.ParseTurnHeader(strings.SplitN(u, "\n", 2)[0]); ok {
					turns++
				}
			}
		}
		slices.Sort(contents)
	}
	return bySession, turns
}

// kill -9 during a transcript mine of many codex sessions, then a
// restart: the job resumes and ends with every turn in exactly one current
// drawer, the same drawers a clean mine of the same tree files into
// another wing, and nothing stored twice.
func TestKill9DuringTranscriptMine(t *testing.T) {
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "loci.toml")
	if err := os.WriteFile(cfg, []byte("[mining]\nchunk_chars = 400\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const copies = 60
	files := codexCopies(t, filepath.Join(home, ".codex", "sessions"), copies)
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": "codex", "wing": "codex"})
	if r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, r.raw)
	}
	id := r.body["id"].(string)
	// Kill once some sessions are filed (a batch committed), the job still
	// running.
	var filed float64
	at := waitJob(t, d, id, 60*time.Second, func(j map[string]any) bool {
		filed = get[float64](d.do("GET", "/api/wings/codex/rooms/codex", nil).body, "drawers")
		return filed > 0 || finished(j)
	})
	d.cmd.Process.Kill()
	<-d.exited
	if finished(at) {
		t.Fatalf("the mine ended before the kill: %v (more sessions are needed)", at)
	}
	t.Logf("killed with the job at %v of %d sessions, %v drawers filed", get[float64](at, "progress", "current"), files, filed)
	d = start(t, home, palace, "LOCI_CONFIG="+cfg)
	j := waitJob(t, d, id, 120*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "result", "discovered") != float64(files) || get[float64](j, "result", "documents") != float64(files) {
		t.Fatalf("the mine after a kill -9: %v", j)
	}

	// A clean mine of the same tree into another wing.
	r = d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": "codex", "wing": "clean"})
	if r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, r.raw)
	}
	c := waitJob(t, d, r.body["id"].(string), 120*time.Second, finished)
	if c["status"] != "completed" || get[float64](c, "result", "documents") != float64(files) {
		t.Fatalf("the clean mine: %v", c)
	}
	for _, k := range []string{"created", "units", "redacted"} {
		if get[float64](j, "result", k) != get[float64](c, "result", k) {
			t.Errorf("%s: %v after the kill, %v clean", k, j["result"], c["result"])
		}
	}
	resumed, clean := d.do("GET", "/api/wings/codex/rooms/codex", nil), d.do("GET", "/api/wings/clean/rooms/codex", nil)
	n := get[float64](clean.body, "drawers")
	if n == 0 || get[float64](resumed.body, "drawers") != n || get[float64](resumed.body, "drawers_stored") != n || get[float64](clean.body, "drawers_stored") != n {
		t.Fatalf("drawers after the kill %s, clean %s", resumed.raw, clean.raw)
	}
	got, gotTurns := sessionsFiled(t, "after the kill", roomDrawers(t, d, "codex", "codex"))
	want, wantTurns := sessionsFiled(t, "clean", roomDrawers(t, d, "clean", "codex"))
	if len(want) != files {
		t.Fatalf("%d sessions filed clean, want %d", len(want), files)
	}
	if len(got) != len(want) || gotTurns != wantTurns || wantTurns < 8*copies {
		t.Fatalf("%d sessions (%d turns) filed after the kill, %d (%d) clean", len(got), gotTurns, len(want), wantTurns)
	}
	for path, contents := range want {
		if !slices.Equal(got[path], contents) {
			t.Fatalf("%s differs after the kill:\n%q\nclean:\n%q", path, got[path], contents)
		}
	}
	t.Logf("%d sessions, %d turns in %v drawers, the same after a kill -9 as clean", len(want), wantTurns, n)
}

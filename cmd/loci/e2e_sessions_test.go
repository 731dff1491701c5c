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
	"github.com/loci-dev/loci/triggers"
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
	t.Parallel()
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

// `loci integration install codex --mine-sessions` against a running
// daemon (both with the person's HOME), Codex installed but no session
// written yet: the miner codex-sessions and its watch trigger are made
// (the session directory with them), once however often install runs; a
// session Codex starts, a turn it appends to it, and a session it starts
// in a new day's directory are each searchable within the watch's
// debounce plus a second of the write. Without --mine-sessions install
// only offers them.
func TestInstallMineSessionsWatch(t *testing.T) {
	// Not parallel: a write must be searchable within the debounce and 1 s.
	agentsBin(t, "codex")
	steps := readCodexSteps(t)
	home, palace := newPalace(t)
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(home, ".codex", "sessions")
	d := start(t, home, palace)

	// Without --mine-sessions: the offer, nothing made.
	_, errOut, code := integ(t, home, home, nil, "--addr", d.addr, "install", "codex")
	if code != 0 || !strings.Contains(errOut, "--mine-sessions") || !strings.Contains(errOut, "codex-sessions") {
		t.Fatalf("install without --mine-sessions: exit %d, stderr %q", code, errOut)
	}
	if r := d.do("GET", "/api/miners/codex-sessions", nil); r.status != 404 {
		t.Fatalf("install without --mine-sessions made the miner: %d %s", r.status, r.raw)
	}
	if _, err := os.Stat(sessions); !os.IsNotExist(err) {
		t.Fatalf("install without --mine-sessions made %s: %v", sessions, err)
	}

	_, errOut, code = integ(t, home, home, nil, "--addr", d.addr, "install", "codex", "--mine-sessions")
	_, job, _ := strings.Cut(errOut, "mining the sessions there now: job ")
	job, _, _ = strings.Cut(job, "\n")
	if code != 0 || !strings.Contains(errOut, "made the miner codex-sessions") || job == "" {
		t.Fatalf("install --mine-sessions: exit %d, stderr %q", code, errOut)
	}
	if j := waitJob(t, d, job, 30*time.Second, finished); j["status"] != "completed" {
		t.Fatalf("install's first run: %v", j)
	}
	if fi, err := os.Stat(sessions); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the session directory: %v %v", fi, err)
	}
	m := d.do("GET", "/api/miners/codex-sessions", nil)
	if m.status != 200 || m.body["source"] != "codex" || m.body["locator"] != sessions || m.body["wing"] != "codex" || m.body["state"] != "ready" {
		t.Fatalf("the miner: %d %s", m.status, m.raw)
	}
	tr := d.do("GET", "/api/triggers/codex-sessions", nil)
	if tr.status != 200 || tr.body["miner"] != "codex-sessions" || tr.body["type"] != "watch" || get[string](tr.body, "settings", "path") != sessions {
		t.Fatalf("the trigger: %d %s", tr.status, tr.raw)
	}
	debounce := triggers.DefaultDebounce
	if v, ok := get[map[string]any](tr.body, "settings")["debounce"].(string); ok {
		if debounce, ok = triggers.ParseDuration(v); !ok {
			t.Fatalf("the trigger's debounce: %s", tr.raw)
		}
	}
	eventually(t, 10*time.Second, "the watch running", func() bool {
		return get[bool](d.do("GET", "/api/triggers/codex-sessions", nil).body, "running")
	})

	// Twice: nothing more, not even a run.
	eventually(t, 10*time.Second, "the runs done", func() bool {
		for _, j := range mineJobs(t, d) {
			if !finished(j) {
				return false
			}
		}
		return true
	})
	runs := len(mineJobs(t, d))
	_, errOut, code = integ(t, home, home, nil, "--addr", d.addr, "install", "codex", "--mine-sessions")
	if code != 0 || !strings.Contains(errOut, "the miner codex-sessions already mines "+sessions) {
		t.Fatalf("install --mine-sessions again: exit %d, stderr %q", code, errOut)
	}
	miners, trigs := d.do("GET", "/api/miners", nil), d.do("GET", "/api/triggers", nil)
	if len(get[[]any](miners.body, "miners")) != 1 || len(get[[]any](trigs.body, "triggers")) != 1 || len(mineJobs(t, d)) != runs {
		t.Fatalf("after installing twice: %s\n%s\n%v", miners.raw, trigs.raw, mineJobs(t, d))
	}

	// A miner whose trigger is gone (deleted, or its making failed): a
	// run of install makes the trigger again.
	if r := d.do("DELETE", "/api/triggers/codex-sessions", nil); r.status != 200 {
		t.Fatalf("deleting the trigger: %d %s", r.status, r.raw)
	}
	_, errOut, code = integ(t, home, home, nil, "--addr", d.addr, "install", "codex", "--mine-sessions")
	if tr := d.do("GET", "/api/triggers/codex-sessions", nil); code != 0 || tr.status != 200 || get[string](tr.body, "settings", "path") != sessions ||
		!strings.Contains(errOut, "made the watch trigger codex-sessions") {
		t.Fatalf("install --mine-sessions without the trigger: exit %d, stderr %q, the trigger %s", code, errOut, tr.raw)
	}
	eventually(t, 10*time.Second, "the watch running again", func() bool {
		return get[bool](d.do("GET", "/api/triggers/codex-sessions", nil).body, "running")
	})

	// within is the bound: the debounce plus a second.
	within := debounce + time.Second
	found := func(query, text string) bool {
		r := d.do("POST", "/api/search", map[string]any{"query": query, "filter": map[string]any{"wing": "codex"}})
		return strings.Contains(r.raw, text)
	}
	// write writes (or appends) a session file, then waits for a search
	// to find text in it.
	write := func(what, path string, data []byte, query, text string) {
		t.Helper()
		if found(query, text) {
			t.Fatalf("%s: found before it is written", what)
		}
		written := time.Now()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for !found(query, text) {
			if time.Since(written) > within {
				t.Fatalf("%s: not searchable within %s of the write", what, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("%s: searchable %s after the write (debounce %s)", what, time.Since(written).Round(time.Millisecond), debounce)
	}
	raw, err := os.ReadFile(filepath.Join(codexFixture, "sessions", filepath.FromSlash(steps.Session)))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	session := filepath.Join(sessions, filepath.FromSlash(steps.Session))
	write("a first session", session, bytes.Join(lines[:steps.Lines[0]], nil), "check the repo status before the deploy", "Check the repo status")
	write("a turn appended", session, bytes.Join(lines[steps.Lines[0]:steps.Lines[1]], nil), "copper kettles", "should rotate the copper kettles")
	other, err := os.ReadFile(filepath.Join(codexFixture, "sessions", filepath.FromSlash(steps.Others[0])))
	if err != nil {
		t.Fatal(err)
	}
	write("a session in a new day's directory", filepath.Join(sessions, "2026", "11", "27", filepath.Base(steps.Others[0])), other,
		"helper counted lamps", "The helper counted three lamps")
}

// `loci mine --source codex` with no locator mines the daemon user's
// ~/.codex/sessions into wing codex (so does the locator
// '~/.codex/sessions'); a session Codex deletes afterwards
// stays searchable, mined again or not, and GET /api/sources, loci status
// and loci status --json warn (deleted_by_agent) naming the wing.
func TestSessionDeletedAfterMining(t *testing.T) {
	t.Parallel()
	steps := readCodexSteps(t)
	home, palace := newPalace(t)
	sessions := filepath.Join(home, ".codex", "sessions")
	for _, rel := range append([]string{steps.Session}, steps.Others...) {
		b, err := os.ReadFile(filepath.Join(codexFixture, "sessions", filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(sessions, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := start(t, home, palace)
	mine := func() {
		t.Helper()
		out, errOut, code := d.cli("", "mine", "--source", "codex")
		if code != 0 {
			t.Fatalf("loci mine --source codex: %d\n%s\n%s", code, out, errOut)
		}
	}
	mine()
	room := d.do("GET", "/api/wings/codex/rooms/codex", nil)
	if room.status != 200 || get[float64](room.body, "drawers") < 3 {
		t.Fatalf("wing codex after loci mine --source codex: %s", room.raw)
	}
	// The same place named under the daemon user's home (quoted, so the
	// daemon resolves it): nothing new.
	if out, errOut, code := d.cli("", "mine", "--source", "codex", "~/.codex/sessions", "--wing", "codex"); code != 0 || !strings.Contains(out, "Up to date") {
		t.Fatalf("loci mine --source codex '~/.codex/sessions': %d\n%s\n%s", code, out, errOut)
	}
	warnings := func() (response, []map[string]any) {
		r := d.do("GET", "/api/sources", nil)
		ws, ok := r.body["warnings"].([]any)
		if r.status != 200 || !ok {
			t.Fatalf("GET /api/sources: %s", r.raw)
		}
		var out []map[string]any
		for _, w := range ws {
			out = append(out, w.(map[string]any))
		}
		return r, out
	}
	src, ws := warnings()
	if len(ws) != 0 || !strings.Contains(src.raw, `"locator": "`+sessions+`"`) {
		t.Fatalf("GET /api/sources after the mine: %s", src.raw)
	}

	if out, _, code := d.cli("", "--json", "status"); code != 0 || !strings.Contains(out, `"source_warnings": []`) {
		t.Fatalf("loci status --json with nothing to warn of (%d): %s", code, out)
	}

	// Codex deletes the session.
	if err := os.Remove(filepath.Join(sessions, filepath.FromSlash(steps.Session))); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		found := d.do("POST", "/api/search", map[string]any{"query": "copper kettles", "filter": map[string]any{"wing": "codex"}})
		if !strings.Contains(found.raw, "should rotate the copper kettles") {
			t.Fatalf("round %d: the deleted session is not found: %s", round, found.raw)
		}
		src, ws = warnings()
		if len(ws) != 1 || ws[0]["kind"] != "deleted_by_agent" || ws[0]["adapter"] != "codex" || ws[0]["wing"] != "codex" ||
			ws[0]["sessions"] != 1.0 || ws[0]["locator"] != sessions || !strings.Contains(ws[0]["message"].(string), `wing "codex"`) {
			t.Fatalf("round %d: the warnings: %s", round, src.raw)
		}
		msg := ws[0]["message"].(string)
		out, errOut, code := d.cli("", "status")
		if code != 0 || !strings.Contains(out+errOut, msg) {
			t.Fatalf("round %d: loci status does not warn (%d):\n%s\n%s", round, code, out, errOut)
		}
		out, _, code = d.cli("", "--json", "status")
		var st struct {
			Warnings []map[string]any `json:"source_warnings"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Warnings) != 1 || st.Warnings[0]["kind"] != "deleted_by_agent" ||
			st.Warnings[0]["wing"] != "codex" || st.Warnings[0]["message"] != msg {
			t.Fatalf("round %d: loci status --json (%d): %s", round, code, out)
		}
		// Mined again (as the watch trigger does when Codex deletes): the
		// session stays current and the warning stays.
		mine()
	}
	if after := d.do("GET", "/api/wings/codex/rooms/codex", nil); get[float64](after.body, "drawers") != get[float64](room.body, "drawers") {
		t.Fatalf("the drawers after the deletion: %s, before %s", after.raw, room.raw)
	}
}

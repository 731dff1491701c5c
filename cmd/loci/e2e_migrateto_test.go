package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loci-dev/loci/cli"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// movablePalace is a palace filled as a user fills one (the demo: drawers,
// a diary, checkpoints with facts, a graph; a mine of a folder: mining's
// state; a miner and a trigger; the jobs of all that), its daemon stopped.
func movablePalace(t *testing.T) (home, palace string) {
	t.Helper()
	home, palace = newPalace(t)
	d := start(t, home, palace)
	if out, errOut, code := d.cli("", "demo"); code != 0 {
		t.Fatalf("loci demo: %d %s %s", code, out, errOut)
	}
	// A graph: a mention, facts from checkpoints, one superseding the other.
	w := d.do("POST", "/api/wings/projects/rooms/notes/drawers", map[string]any{"content": "Caroline moved the queue to PostgreSQL."})
	if r := d.do("POST", "/api/drawers/"+get[string](w.body, "drawer", "id")+"/mentions", map[string]any{"name": "PostgreSQL", "kind": "tool"}); r.status != 201 {
		t.Fatalf("a mention: %d %s", r.status, r.raw)
	}
	checkpointFact(t, d, "Caroline joined Acme in March.", map[string]any{"op": "add", "subject": "Caroline", "subject_kind": "person",
		"predicate": "works_at", "object": "Acme", "object_kind": "organization", "valid_from": "2026-03-01", "confidence": 0.9})
	ents := d.do("GET", "/api/entities?name=caroline", nil)
	caroline := get[string](get[[]any](ents.body, "entities")[0].(map[string]any), "id")
	rels := d.do("GET", "/api/entities/"+caroline+"/relationships", nil)
	checkpointFact(t, d, "Caroline moved to Initech in June.", map[string]any{"op": "supersede",
		"relationship_id": get[string](get[[]any](rels.body, "relationships")[0].(map[string]any), "id"),
		"object":          "Initech", "object_kind": "organization", "valid_from": "2026-06-01", "reason": "she changed jobs"})
	root := mineTree(t)
	if out, errOut, code := d.cli("", "mine", root); code != 0 {
		t.Fatalf("loci mine: %d %s %s", code, out, errOut)
	}
	if r := d.do("PUT", "/api/miners/docs", map[string]any{"locator": root, "wing": "docs"}); r.status != 201 {
		t.Fatalf("put a miner: %d %s", r.status, r.raw)
	}
	if r := d.do("PUT", "/api/triggers/hourly", map[string]any{"miner": "docs", "type": "schedule", "settings": map[string]any{"every": "1h"}}); r.status != 201 {
		t.Fatalf("put a trigger: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/miners/docs/enable", nil); r.status >= 300 {
		t.Fatalf("enabling the miner: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/triggers/hourly/enable", nil); r.status >= 300 {
		t.Fatalf("enabling the trigger: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/triggers/hourly/fire", nil); r.status >= 300 {
		t.Fatalf("firing the trigger: %d %s", r.status, r.raw)
	}
	eventually(t, 10*time.Second, "the jobs to finish", func() bool {
		r := d.do("GET", "/api/jobs?status=queued", nil)
		q := d.do("GET", "/api/jobs?status=running", nil)
		return len(get[[]any](r.body, "jobs")) == 0 && len(get[[]any](q.body, "jobs")) == 0
	})
	if r := d.do("POST", "/api/shutdown", nil); r.status >= 300 {
		t.Fatalf("shutdown: %d %s", r.status, r.raw)
	}
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	return home, palace
}

// migrateTo runs `loci migrate --to` on a palace and decodes its report.
func migrateTo(t *testing.T, home, palace, to string, extraEnv ...string) (cli.MigrateToReport, string, int) {
	t.Helper()
	args := []string{"--json", "migrate", "--palace", palace, "--to", to}
	out, errOut, code := runCLI(home, "", args, extraEnv)
	var rep cli.MigrateToReport
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("migrate report: %v\n%s", err, out)
		}
	}
	return rep, errOut, code
}

func familyMap(rep cli.MigrateToReport) map[string]cli.MigrateFamily {
	m := map[string]cli.MigrateFamily{}
	for _, f := range rep.Families {
		m[f.Family] = f
	}
	return m
}

func sameFamilies(t *testing.T, what string, a, b cli.MigrateToReport) {
	t.Helper()
	if len(a.Families) == 0 || len(a.Families) != len(b.Families) {
		t.Fatalf("%s: %d families against %d", what, len(a.Families), len(b.Families))
	}
	for i := range a.Families {
		if a.Families[i] != b.Families[i] {
			t.Errorf("%s: family %+v against %+v", what, a.Families[i], b.Families[i])
		}
	}
}

// Moving an embedded palace into an empty directory: every family copied
// and verified (the report's counts and digests), the copy moved again
// gives the same digests, a daemon serves the copy (its indexes rebuilt
// from it: search finds what the palace held), and a target that holds
// anything is refused, unchanged.
func TestMigrateToDirectory(t *testing.T) {
	t.Parallel()
	home, palace := movablePalace(t)
	dst := filepath.Join(t.TempDir(), "moved")
	rep, errOut, code := migrateTo(t, home, palace, dst)
	if code != 0 {
		t.Fatalf("migrate --to %s: %d %s", dst, code, errOut)
	}
	fams := familyMap(rep)
	for _, f := range []string{"wings", "rooms", "drawers", "dedup", "jobs", "sources", "source_documents", "chunk_owners", "entities", "mentions", "relationships", "job_facts", "trigger_states", "embeddings", "changes", "meta"} {
		if fams[f].Count == 0 {
			t.Errorf("no %s copied: %+v", f, rep.Families)
		}
	}
	if rep.Resumed || rep.Batches == 0 || rep.Drawers == 0 || !strings.HasSuffix(rep.To, filepath.Join("moved", "store")) {
		t.Errorf("report: %+v", rep)
	}
	// The human output names every family with its count and digest.
	out, errOut, code := runCLI(home, "", []string{"migrate", "--palace", palace, "--to", dst}, nil)
	if code != 0 || !strings.Contains(out, "already copied") || !strings.Contains(out, "verified") || !strings.Contains(out, fams["drawers"].Digest) {
		t.Fatalf("migrate again (already copied): %d\n%s\n%s", code, out, errOut)
	}

	// Moved again, from the copy: the same records.
	dst2 := filepath.Join(t.TempDir(), "again")
	rep2, errOut, code := migrateTo(t, home, dst, dst2)
	if code != 0 {
		t.Fatalf("migrate the copy: %d %s", code, errOut)
	}
	sameFamilies(t, "copy of the copy", rep, rep2)

	// A copy of another palace (dst2 is dst's) is refused too.
	_, errOut, code = migrateTo(t, home, palace, dst2)
	if code == 0 || !strings.Contains(errOut, "loci::migrate::failed") || !strings.Contains(errOut, "another palace") {
		t.Fatalf("migrate into another palace's store: %d %s", code, errOut)
	}
	// A daemon serves the copy: its counts and searches.
	d := start(t, home, dst2)
	st := d.do("GET", "/api/status", nil)
	if got := get[float64](st.body, "counts", "drawers"); int(got) != rep.Drawers {
		t.Fatalf("the moved palace's status: %s (want %d drawers)", st.raw, rep.Drawers)
	}
	s := d.do("POST", "/api/search", map[string]any{"text": "copper kettles heat"})
	if s.status != 200 || !strings.Contains(s.raw, "kettle-note.md") {
		t.Fatalf("search on the moved palace: %s", s.raw)
	}
	d.do("POST", "/api/shutdown", nil)
	_ = d.wait(30 * time.Second)

	// A target that holds anything is refused and left as it was.
	_, otherPalace := newPalace(t)
	od := start(t, home, otherPalace)
	if _, _, code := od.cli("", "note", "add", "--wing", "w", "--room", "r", "a note of another palace"); code != 0 {
		t.Fatal("filing a note")
	}
	od.do("POST", "/api/shutdown", nil)
	_ = od.wait(30 * time.Second)
	before := dirSnapshot(t, otherPalace)
	_, errOut, code = migrateTo(t, home, palace, otherPalace)
	if code == 0 || !strings.Contains(errOut, "loci::migrate::failed") || !strings.Contains(errOut, "not empty") {
		t.Fatalf("migrate into a palace directory: %d %s", code, errOut)
	}
	if after := dirSnapshot(t, otherPalace); after != before {
		t.Fatalf("the refused target changed:\n%s\n%s", before, after)
	}
	// A password on the command line is refused.
	_, errOut, code = migrateTo(t, home, palace, "postgres://loci:secret@127.0.0.1:1/x")
	if code == 0 || !strings.Contains(errOut, "loci::input::invalid") || strings.Contains(errOut, "secret") {
		t.Fatalf("a URL with a password: %d %s", code, errOut)
	}
}

// dirSnapshot names every file of a directory with its size and time.
func dirSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			fmt.Fprintf(&b, "%s %s %d\n", p, info.ModTime(), info.Size())
		}
		return nil
	})
	return b.String()
}

// Moving an embedded palace into PostgreSQL and back: `loci migrate --to
// postgres://...` (the password from LOCI_DATASTORE_PASSWORD) is killed
// with SIGKILL part way; meanwhile another `loci migrate --to` the same
// database answers loci::migrate::locked; the killed one's lock is
// released, so the same command run again continues where it stopped and
// verifies. The database is then moved to a new directory (the configured
// palace being the shared one: LOCI_DATASTORE_URL): the same counts and
// digests, family by family, across the three. A database holding a palace
// is refused, unchanged.
func TestMigrateToPostgresKilledLockedResumedAndBack(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	name, err := srv.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL(name)
	pw := "LOCI_DATASTORE_PASSWORD=" + pgtest.Password
	home, palace := movablePalace(t)

	// The first run stops after two batches (a test hook) and is killed.
	cmd := exec.Command(bin, "migrate", "--palace", palace, "--to", url)
	cmd.Env = env(home, pw, "LOCI_TEST_MIGRATE_BATCH=20", "LOCI_TEST_MIGRATE_PAUSE_AFTER=2")
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	eventually(t, 30*time.Second, "the copy to pause", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the copy ended before its pause: %v\n%s", err, stderr.String())
		default:
		}
		return strings.Contains(stderr.String(), "paused after 2 batches")
	})
	// Another `loci migrate --to` the same database, meanwhile: locked.
	otherHome, otherPalace := newPalace(t)
	_, errOut, code := migrateTo(t, otherHome, otherPalace, url, pw)
	if code == 0 || !strings.Contains(errOut, "loci::migrate::locked") {
		t.Fatalf("a second migrate while the first holds the lock: %d %s", code, errOut)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	if strings.Contains(stderr.String(), pgtest.Password) {
		t.Fatal("the password reached the output")
	}

	// Run again: the lock is free, the copy continues and verifies.
	rep, errOut, code := migrateTo(t, home, palace, url, pw, "LOCI_TEST_MIGRATE_BATCH=20")
	if code != 0 {
		t.Fatalf("the copy run again: %d %s", code, errOut)
	}
	if !rep.Resumed || rep.Batches == 0 || strings.Contains(rep.To, pgtest.Password) || !strings.HasPrefix(rep.To, "postgres://") {
		t.Fatalf("the resumed copy's report: %+v", rep)
	}
	total := 0
	for _, f := range rep.Families {
		total += f.Count
	}
	if want := (total + 19) / 20; rep.Batches >= want {
		t.Errorf("the resumed run committed %d batches of 20 for %d records: it did not continue where the first stopped", rep.Batches, total)
	}
	// A fresh copy of the same palace, uninterrupted, has the same
	// digests as the resumed one.
	name2, err := srv.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	// (its password from --password-file)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(pgtest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(home, "", []string{"--json", "migrate", "--palace", palace, "--to", srv.URL(name2), "--password-file", pwFile}, nil)
	var straight cli.MigrateToReport
	if code != 0 || json.Unmarshal([]byte(out), &straight) != nil {
		t.Fatalf("an uninterrupted copy: %d %s %s", code, out, errOut)
	}
	sameFamilies(t, "resumed against uninterrupted", rep, straight)

	// Back from the database into a new directory: the configured palace
	// is the shared one.
	back := filepath.Join(t.TempDir(), "back")
	local := filepath.Join(t.TempDir(), "local")
	rep2, errOut, code := migrateTo(t, home, local, back, pw, "LOCI_DATASTORE_URL="+url)
	if code != 0 {
		t.Fatalf("migrate from the database to a directory: %d %s", code, errOut)
	}
	sameFamilies(t, "database to directory", rep, rep2)
	rep3, errOut, code := migrateTo(t, home, back, filepath.Join(t.TempDir(), "third"))
	if code != 0 {
		t.Fatalf("migrate the directory copy: %d %s", code, errOut)
	}
	sameFamilies(t, "directory copy", rep, rep3)

	// A database holding a palace is refused, unchanged.
	_, errOut, code = migrateTo(t, otherHome, otherPalace, url, pw)
	if code == 0 || !strings.Contains(errOut, "loci::migrate::failed") {
		t.Fatalf("migrate into a database holding a palace: %d %s", code, errOut)
	}
	again, errOut, code := migrateTo(t, home, palace, url, pw)
	if code != 0 || !again.Resumed || again.Batches != 0 {
		t.Fatalf("the database after the refusal: %d %s %+v", code, errOut, again)
	}
	sameFamilies(t, "after the refusal", rep, again)
	// Without the password: refused by the database, the password not
	// named anywhere.
	_, errOut, code = migrateTo(t, home, palace, srv.URL(name2))
	if code == 0 || !strings.Contains(errOut, "loci::store::backend_failed") {
		t.Fatalf("no password: %d %s", code, errOut)
	}
}

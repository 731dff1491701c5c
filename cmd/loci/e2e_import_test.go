package main_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// exportStore writes an export of a stopped daemon's palace (the export
// package over its store, as loci export does).
func exportStore(t *testing.T, palace string, o export.Options) []byte {
	t.Helper()
	db, err := badgerdb.Open(filepath.Join(palace, "store"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var buf bytes.Buffer
	if o.Now.IsZero() {
		o.Now = time.Unix(0, 0)
	}
	if _, err := export.Write(context.Background(), db, &buf, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// exportBody is a stopped daemon's palace as an export's records, without
// the header and end (which name the palace and its digest).
func exportBody(t *testing.T, palace string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(exportStore(t, palace, export.Options{}))), "\n")
	return strings.Join(lines[1:len(lines)-1], "\n")
}

func stop(t *testing.T, d *daemon) {
	t.Helper()
	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %d %s", r.status, r.raw)
	}
	_ = d.wait(30 * time.Second)
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// searchIDs is the ids of a search's hits, in order.
// settled waits until every derived index has applied the whole change
// log and no job is queued or running (a search's statistics are then
// the palace's).
func settled(t *testing.T, d *daemon) {
	t.Helper()
	eventually(t, 60*time.Second, "the indexes to catch up", func() bool {
		st := d.do("GET", "/api/status", nil).body
		last := get[float64](st, "indexes", "last_seq")
		if get[float64](st, "indexes", "lexical", "seq") < last {
			return false
		}
		for _, v := range get[map[string]any](st, "indexes", "vectors") {
			// Every drawer embedded, too.
			if x := v.(map[string]any); get[float64](x, "seq") < last || get[float64](x, "drawers") < get[float64](st, "indexes", "lexical", "drawers") {
				return false
			}
		}
		for _, s := range []string{"queued", "running"} {
			if r := d.do("GET", "/api/jobs?status="+s, nil); len(get[[]any](r.body, "jobs")) > 0 {
				return false
			}
		}
		return true
	})
}

// spoolLeft lists what is left in the daemon's import folder.
func spoolLeft(palace string) []string {
	entries, _ := os.ReadDir(filepath.Join(palace, "imports"))
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A palace exported and imported into a fresh one answers the same
// searches with the same ids in the same order; importing the file again
// changes nothing; a dry run changes nothing and says so.
func TestImportRoundTripAnswersTheSameSearches(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	cfg := withHashProfile(t, home)
	a := start(t, home, palace, cfg)
	texts := []struct{ wing, room, content string }{
		{"projects", "web", "The web app deploys every Thursday morning after the review."},
		{"projects", "web", "Deploys on Fridays are frozen since the outage of March."},
		{"projects", "queue", "The job queue moved from Redis to PostgreSQL for durability."},
		{"projects", "queue", "Queue workers retry three times with exponential backoff."},
		{"people", "team", "Alice leads the billing project and reviews every deploy."},
		{"people", "team", "Bob owns the queue workers and the on-call rota."},
		{"notes", "misc", "Lunch is at noon in the big kitchen on Tuesdays."},
	}
	var first string
	for i, x := range texts {
		r := a.do("POST", "/api/wings/"+x.wing+"/rooms/"+x.room+"/drawers", map[string]any{"content": x.content})
		if r.status != 201 {
			t.Fatalf("write: %d %s", r.status, r.raw)
		}
		if i == 0 {
			first = get[string](r.body, "drawer", "id")
		}
	}
	if r := a.do("POST", "/api/drawers/"+first+"/supersede", map[string]any{"content": "The web app deploys every Thursday afternoon after the review."}); r.status != 200 {
		t.Fatalf("supersede: %d %s", r.status, r.raw)
	}
	if r := a.do("POST", "/api/drawers/"+first+"/mentions", map[string]any{"name": "Alice", "kind": "person"}); r.status != 201 {
		t.Fatalf("mention: %d %s", r.status, r.raw)
	}
	settled(t, a) // every drawer embedded: the export carries the vectors
	// The source's answers are read from indexes built from its store
	// (they are derived: an index that saw a drawer written, then closed,
	// keeps statistics of both until it merges, which a fresh one never
	// saw), as the importing palace builds its own.
	stop(t, a)
	if err := os.RemoveAll(filepath.Join(palace, "index")); err != nil {
		t.Fatal(err)
	}
	a = start(t, home, palace, cfg)
	settled(t, a)
	queries := []string{"deploy", "queue workers", "Thursday review", "billing Alice", "PostgreSQL durability", "lunch kitchen", "on-call"}
	want := map[string][]string{}
	for _, q := range queries {
		want[q] = searchIDs(t, a, q, 20)
		if len(want[q]) == 0 {
			t.Fatalf("search %q found nothing in the source palace", q)
		}
	}
	file := filepath.Join(home, "palace.jsonl")
	if out, errOut, code := a.cli("", "export", "--vectors", "--out", file); code != 0 {
		t.Fatalf("loci export: %d %s %s", code, out, errOut)
	}
	stop(t, a)

	home2, palace2 := newPalace(t)
	b := start(t, home2, palace2, withHashProfile(t, home2))
	out, errOut, code := b.cli("", "import", file)
	if code != 0 {
		t.Fatalf("loci import: %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "imported") {
		t.Fatalf("no report printed:\n%s", out)
	}
	settled(t, b)
	for _, q := range queries {
		if got := searchIDs(t, b, q, 20); !slices.Equal(got, want[q]) {
			t.Fatalf("search %q: %v after the import, %v before", q, got, want[q])
		}
	}
	before := counts(b)
	for _, args := range [][]string{{"import", file}, {"import", "--dry-run", file}} {
		out, errOut, code = b.cli("", append([]string{"--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, errOut)
		}
		if !strings.Contains(out, `"created": 0`) || !strings.Contains(out, `"conflicts": 0`) || !strings.Contains(out, `"updated": 0`) {
			t.Fatalf("%v changed something:\n%s", args, out)
		}
		if c := counts(b); c != before {
			t.Fatalf("%v: counts %s, were %s", args, c, before)
		}
	}
	if left := spoolLeft(palace2); len(left) != 0 {
		t.Fatalf("spooled files left: %v", left)
	}
	stop(t, b)
	if got, want := exportBody(t, palace2), exportBody(t, palace); got != want {
		t.Fatalf("the imported palace's records differ from the source's:\n%s\n----\n%s", got, want)
	}
}

// bigExport is an export of a palace of n drawers of realistic text in a
// few rooms, written in process.
func bigExport(t *testing.T, n int) []byte {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	text, rng := markov.NewText(), rand.New(rand.NewPCG(7, 7))
	dd := store.Dedup{} // every sentence is unique: the source needs no judging
	for start := 0; start < n; start += 500 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for i := start; i < min(start+500, n); i++ {
				_, err := store.CreateDrawer(tx, store.NewDrawer{Wing: fmt.Sprintf("w%d", i%3), Room: fmt.Sprintf("r%d", i%7),
					Content: text.Sentence(rng) + " " + text.Sentence(rng), Source: store.Source{Kind: store.KindNote},
					Provenance: store.Provenance{RequestedBy: store.ByHTTP}}, dd)
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := export.Write(context.Background(), db, &buf, export.Options{Now: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An import killed with SIGKILL half-way resumes after the restart and
// leaves the palace exactly as a clean import does: no record twice, none
// lost; its spooled file is removed when it completes.
func TestImportKill9Resumes(t *testing.T) {
	t.Parallel()
	// Big enough that the import is still running when the first batch's
	// progress is seen (batches of 1,024 records).
	const n = 15000
	file := bigExport(t, n)
	importOnce := func(kill bool) string {
		home, palace := newPalace(t)
		d := start(t, home, palace)
		r := d.do("POST", "/api/imports", string(file))
		if r.status != 202 {
			t.Fatalf("POST /api/imports: %d %s", r.status, r.raw)
		}
		id := get[string](r.body, "id")
		if kill {
			j := waitJob(t, d, id, 60*time.Second, func(j map[string]any) bool {
				return get[float64](j, "progress", "current") > 0 || finished(j)
			})
			if finished(j) {
				t.Fatalf("the import finished before the kill: %v", j)
			}
			d.cmd.Process.Kill()
			<-d.exited
			d = start(t, home, palace)
		}
		j := waitJob(t, d, id, 120*time.Second, finished)
		if j["status"] != "completed" || get[float64](j, "result", "types", "drawer", "created") != n {
			t.Fatalf("import job after kill=%v: %v", kill, j)
		}
		if kill && get[float64](j, "recovery_attempts") < 1 {
			t.Fatalf("the job was not recovered: %v", j)
		}
		if left := spoolLeft(palace); len(left) != 0 {
			t.Fatalf("spooled files left: %v", left)
		}
		stop(t, d)
		return exportBody(t, palace)
	}
	clean, killed := importOnce(false), importOnce(true)
	if clean != killed {
		t.Fatal("the palace after a killed and resumed import differs from a clean import's")
	}
}

// --wing-map imports a wing under another name; --dry-run changes
// nothing.
func TestImportWingMapAndDryRun(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	a := start(t, home, palace)
	for _, p := range []string{"/api/wings/alpha/rooms/r/drawers", "/api/wings/beta/rooms/r/drawers"} {
		if r := a.do("POST", p, map[string]any{"content": "A memory filed under " + p}); r.status != 201 {
			t.Fatalf("write: %s", r.raw)
		}
	}
	stop(t, a)
	file := writeFile(t, home, "x.jsonl", exportStore(t, palace, export.Options{}))

	home2, palace2 := newPalace(t)
	b := start(t, home2, palace2)
	out, errOut, code := b.cli("", "import", "--dry-run", "--wing-map", "alpha=team", file)
	if code != 0 || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run: %d %s %s", code, out, errOut)
	}
	if c := get[float64](b.do("GET", "/api/status", nil).body, "counts", "drawers"); c != 0 {
		t.Fatalf("the dry run stored %v drawers", c)
	}
	if _, _, code := b.cli("", "import", "--wing-map", "alpha=team", file); code != 0 {
		t.Fatal("import with --wing-map failed")
	}
	if r := b.do("GET", "/api/wings/team", nil); r.status != 200 || get[float64](r.body, "drawers") != 1 {
		t.Fatalf("wing team: %d %s", r.status, r.raw)
	}
	if r := b.do("GET", "/api/wings/alpha", nil); r.status != 404 {
		t.Fatalf("wing alpha exists: %s", r.raw)
	}
	if r := b.do("GET", "/api/wings/beta", nil); r.status != 200 {
		t.Fatalf("wing beta: %s", r.raw)
	}
	for _, bad := range []string{"alpha", "alpha=", "a/b=c"} {
		if _, errOut, code := b.cli("", "import", "--wing-map", bad, file); code == 0 || !strings.Contains(errOut, "wing") {
			t.Fatalf("--wing-map %s: %d %s", bad, code, errOut)
		}
	}
}

// An export encrypted to an age recipient imports with --identity; without
// it, or altered, it is refused and nothing changes.
func TestImportEncryptedWithIdentity(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	a := start(t, home, palace)
	if r := a.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "A secret memory, shared encrypted."}); r.status != 201 {
		t.Fatalf("write: %s", r.raw)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(home, "x.jsonl.age")
	if out, errOut, code := a.cli("", "export", "--encrypt-to", id.Recipient().String(), "--out", file); code != 0 {
		t.Fatalf("loci export --encrypt-to: %d %s %s", code, out, errOut)
	}
	pfile := filepath.Join(home, "p.age")
	if out, errOut, code := runCLI(home, "", []string{"--addr", a.addr, "export", "--passphrase", "--out", pfile},
		[]string{"LOCI_EXPORT_PASSPHRASE=correct horse battery staple"}); code != 0 {
		t.Fatalf("loci export --passphrase: %d %s %s", code, out, errOut)
	}
	enc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	keys := writeFile(t, home, "key.txt", []byte(id.String()+"\n"))
	tampered := bytes.Clone(enc)
	tampered[len(tampered)-20] ^= 1
	bad := writeFile(t, home, "bad.age", tampered)

	home2, palace2 := newPalace(t)
	b := start(t, home2, palace2)
	for _, c := range []struct {
		args []string
		code string
	}{
		{[]string{"import", file}, "loci::export::encrypted"},
		{[]string{"import", "--identity", keys, bad}, "loci::export::decrypt_failed"},
	} {
		out, errOut, code := b.cli("", c.args...)
		if code == 0 || !strings.Contains(errOut, c.code) {
			t.Fatalf("%v: %d %s %s, want %s", c.args, code, out, errOut, c.code)
		}
	}
	if n := get[float64](b.do("GET", "/api/status", nil).body, "counts", "drawers"); n != 0 {
		t.Fatalf("a refused file stored %v drawers", n)
	}
	if left := spoolLeft(palace2); len(left) != 0 {
		t.Fatalf("spooled files left: %v", left)
	}
	if out, errOut, code := b.cli("", "import", "--identity", keys, file); code != 0 {
		t.Fatalf("import --identity: %d %s %s", code, out, errOut)
	}
	if n := get[float64](b.do("GET", "/api/status", nil).body, "counts", "drawers"); n != 1 {
		t.Fatalf("%v drawers after the encrypted import", n)
	}

	// A passphrase: from LOCI_EXPORT_PASSPHRASE (never a flag), into a
	// third palace; a wrong one is refused.
	home3, palace3 := newPalace(t)
	c := start(t, home3, palace3)
	if _, errOut, code := runCLI(home3, "", []string{"--addr", c.addr, "import", pfile}, []string{"LOCI_EXPORT_PASSPHRASE=wrong"}); code == 0 || !strings.Contains(errOut, "loci::export::decrypt_failed") {
		t.Fatalf("a wrong passphrase: %d %s", code, errOut)
	}
	if out, errOut, code := runCLI(home3, "", []string{"--addr", c.addr, "import", pfile}, []string{"LOCI_EXPORT_PASSPHRASE=correct horse battery staple"}); code != 0 {
		t.Fatalf("import with a passphrase: %d %s %s", code, out, errOut)
	}
	if n := get[float64](c.do("GET", "/api/status", nil).body, "counts", "drawers"); n != 1 {
		t.Fatalf("%v drawers after the passphrase import", n)
	}
}

// Every bad file of the list is refused by POST /api/imports with
// {error, code, help} naming the line, before anything changes: the
// palace and the import folder are as they were.
func TestImportRefusesBadFilesAndChangesNothing(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	a := start(t, home, palace)
	if r := a.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "A memory in wing w."}); r.status != 201 {
		t.Fatalf("write: %s", r.raw)
	}
	if r := a.do("POST", "/api/wings/v/rooms/r/drawers", map[string]any{"content": "A memory in wing v."}); r.status != 201 {
		t.Fatalf("write: %s", r.raw)
	}
	stop(t, a)
	good := string(exportStore(t, palace, export.Options{}))
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")

	home2, palace2 := newPalace(t)
	d := start(t, home2, palace2)
	if r := d.do("POST", "/api/wings/mine/rooms/r/drawers", map[string]any{"content": "The importing palace's own memory."}); r.status != 201 {
		t.Fatalf("write: %s", r.raw)
	}
	before := counts(d)
	join := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	replace := func(i int, from, to string) string {
		ls := slices.Clone(lines)
		ls[i] = strings.Replace(ls[i], from, to, 1)
		return join(ls...)
	}
	var wingLine int
	for i, l := range lines {
		if strings.Contains(l, `"type":"wing"`) && wingLine == 0 {
			wingLine = i
		}
	}
	manyWings := []string{lines[0]}
	for i := range 20_000 {
		manyWings = append(manyWings, fmt.Sprintf(`{"type":"wing","id":"%s","name":"w%d","created_at":"2026-01-01T00:00:00Z"}`, store.NewID(), i))
	}
	for _, c := range []struct {
		name, body, query string
		status            int
		code              string
	}{
		{"empty", "", "", 400, ""},
		{"truncated", join(lines[:len(lines)-1]...), "", 400, "loci::export::truncated"},
		{"cut inside a line", good[:len(good)-10], "", 400, "loci::export::truncated"},
		{"future version", replace(0, `"version":1`, `"version":99`), "", 400, "loci::export::version"},
		{"unknown record type", join(append([]string{lines[0], `{"type":"hologram","id":"x"}`}, lines[1:]...)...), "", 400, "loci::export::unknown_record"},
		{"line over the limit", join(lines[0], `{"type":"wing","name":"`+strings.Repeat("x", 8<<20)+`"}`), "", 413, "loci::export::too_large"},
		{"a name that breaks the rules", replace(wingLine, `"name":"`, `"name":"a/`), "", 400, "loci::export::invalid"},
		{"a million tiny wings", join(manyWings...), "", 413, "loci::export::limit"},
		{"a bad wing map", good, "?wing_map=w", 400, "loci::input::invalid"},
		{"a wing map to a bad name", good, "?wing_map=w=a%2Fb", 400, "loci::palace::path_invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := d.do("POST", "/api/imports"+c.query, c.body)
			if r.status != c.status || (c.code != "" && r.code() != c.code) || get[string](r.body, "error") == "" || get[string](r.body, "help") == "" {
				t.Fatalf("%d %s, want %d %s", r.status, fault(r.raw), c.status, c.code)
			}
			if c.code != "" && strings.HasPrefix(c.code, "loci::export::") && !strings.Contains(get[string](r.body, "error"), "line") {
				t.Fatalf("the error names no line: %s", r.raw)
			}
			if got := counts(d); got != before {
				t.Fatalf("counts %s, were %s", got, before)
			}
			if left := spoolLeft(palace2); len(left) != 0 {
				t.Fatalf("spooled files left: %v", left)
			}
		})
	}
	// A drawer claiming to supersede one in another wing: refused by the
	// Reader when the file holds it.
	var vDrawer string
	for _, l := range lines {
		if strings.Contains(l, `"type":"drawer"`) && strings.Contains(l, "wing v") {
			vDrawer = l[strings.Index(l, `"id":"`)+6:][:36]
		}
	}
	ls := slices.Clone(lines)
	for i, l := range ls {
		if strings.Contains(l, `"type":"drawer"`) && strings.Contains(l, "wing w") {
			ls[i] = strings.Replace(l, `"type":"drawer",`, `"type":"drawer","supersedes":"`+vDrawer+`",`, 1)
		}
	}
	if r := d.do("POST", "/api/imports", join(ls...)); r.status != 400 || !strings.HasPrefix(r.code(), "loci::export::") {
		t.Fatalf("a drawer superseding one of another wing: %d %s", r.status, r.raw)
	}
	// An unknown record is skipped when asked.
	withUnknown := reseal(t, append([]string{lines[0], `{"type":"hologram","id":"x"}`}, lines[1:]...))
	if r := d.do("POST", "/api/imports?dry_run=true&skip_unknown=true", withUnknown); r.status != 200 || !get[bool](r.body, "dry_run") {
		t.Fatalf("skip_unknown: %d %s", r.status, fault(r.raw))
	}
	if got := counts(d); got != before {
		t.Fatalf("a dry run changed the counts: %s, were %s", got, before)
	}
}

// reseal gives an altered export's lines the end record their count and
// digest make.
func reseal(t *testing.T, lines []string) string {
	t.Helper()
	n := len(lines) - 1
	body := strings.Join(lines[:n], "\n") + "\n"
	var end map[string]any
	if err := json.Unmarshal([]byte(lines[n]), &end); err != nil || end["type"] != "end" {
		t.Fatalf("the last line is not the end record: %s", lines[n])
	}
	sum := sha256.Sum256([]byte(body))
	end["records"], end["digest"] = n, "sha256:"+hex.EncodeToString(sum[:])
	b, _ := json.Marshal(end)
	return body + string(b) + "\n"
}

// fault clips an answer for a failure message.
func fault(raw string) string {
	if len(raw) > 400 {
		return raw[:400] + "…"
	}
	return raw
}

// An import is refused on a disk below the palace's reserve before
// anything is spooled.
func TestImportRespectsTheFreeSpaceGuard(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace, "LOCI_STORE_MIN_FREE_BYTES=1000000000000000")
	file := bigExport(t, 10)
	r := d.do("POST", "/api/imports", string(file))
	if r.code() != "loci::store::disk_full" || get[string](r.body, "help") == "" {
		t.Fatalf("an import on a full disk: %d %s", r.status, r.raw)
	}
	if left := spoolLeft(palace); len(left) != 0 {
		t.Fatalf("spooled files left: %v", left)
	}
}

// Vectors made by another embedder (another dimension here) are not kept:
// the import reports them skipped, and the embed job that follows fills
// the drawers' vectors with this palace's profile.
func TestImportReembedsVectorsOfAnotherProfile(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	a := start(t, home, palace, withHashProfile(t, home))
	for _, c := range []string{"The web app deploys every Thursday.", "Lunch is at noon in the big kitchen."} {
		if r := a.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": c}); r.status != 201 {
			t.Fatalf("write: %s", r.raw)
		}
	}
	settled(t, a)
	file := filepath.Join(home, "v.jsonl")
	if out, errOut, code := a.cli("", "export", "--vectors", "--out", file); code != 0 {
		t.Fatalf("loci export: %d %s %s", code, out, errOut)
	}
	home2, palace2 := newPalace(t)
	cfg := filepath.Join(home2, "loci.toml")
	if err := os.WriteFile(cfg, []byte("[embedding]\ndefault = \"small\"\n[embedding.profiles.small]\nprovider = \"hash\"\ndimension = 32\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := start(t, home2, palace2, "LOCI_CONFIG="+cfg)
	out, errOut, code := b.cli("", "--json", "import", file)
	if code != 0 {
		t.Fatalf("loci import: %d %s %s", code, out, errOut)
	}
	var job map[string]any
	if err := json.Unmarshal([]byte(out), &job); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if v := get[map[string]any](job, "result", "types", "vector"); get[float64](v, "skipped") != 2 || get[float64](v, "created") != 0 {
		t.Fatalf("vectors of another profile: %v", v)
	}
	settled(t, b) // every drawer gets a vector of this palace's profile
	if n := get[float64](b.do("GET", "/api/status", nil).body, "indexes", "vectors", "small", "drawers"); n != 2 {
		t.Fatalf("%v drawers embedded", n)
	}
}

// A spooled file no import job reads (its upload cut by a crash before
// the job was queued) is removed at the next start; other files are not
// the daemon's to remove.
func TestImportSweepsStraySpools(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	dir := filepath.Join(palace, "imports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stray := writeFile(t, dir, "import-"+store.NewID()+".jsonl", []byte(`{"type":"header"}`+"\n"))
	other := writeFile(t, dir, "notes.txt", []byte("mine"))
	start(t, home, palace)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the stray spool is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a file not the daemon's was removed: %v", err)
	}
}

package sources

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/loci-dev/loci/names"
)

// The fixtures are databases the real OpenCode 1.18.33 wrote (see
// testdata/transcripts/opencode/README.md): the widget session grew over
// three runs (grow-1.db, grow-2.db, then opencode.db, which also holds a
// deploy session and its sub-agent's session).
const (
	ocWidget   = "ses_dea025559ffeuFZM6n0pSo7zXl"
	ocDeploy   = "ses_dea00cffdffeJe2o2FIvMnBLEf"
	ocSubagent = "ses_dea0098eeffeKVTm2PqFtG5gXR"
	ocTmp      = "/tmp/opencode-fixture"
)

// ocNever are strings of the fixture's reasoning and tool output: they
// never reach a document.
var ocNever = []string{"REASONING-ALPHA", "REASONING-BETA", "README-CONTENT-MARKER", "?? notes.txt", "task_result",
	"Image read successfully", "Called the Read tool", "iVBORw0KGgo"}

// ocCopy copies a fixture database into a fresh data directory as
// opencode.db and returns the directory.
func ocCopy(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	ocSwap(t, dir, name)
	return dir
}

// ocSwap puts a fixture database in place of dir's opencode.db.
func ocSwap(t *testing.T, dir, name string) {
	t.Helper()
	src, err := os.Open(filepath.Join("testdata/transcripts/opencode", name))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tmp := filepath.Join(dir, ".opencode.db.new")
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

func ocRead(t *testing.T, src OpenCode, dir, session string, opts map[string]string) (*Document, error) {
	t.Helper()
	id, err := src.Resolve(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return src.Read(context.Background(), Run{ID: id}, Ref{ID: session})
}

func TestOpenCodeTurnsAndMarkers(t *testing.T) {
	dir := ocCopy(t, "opencode.db")
	doc, err := ocRead(t, OpenCode{}, dir, ocWidget, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"[user · 2026-11-26 03:54:36 UTC]\nPlease run git status and tell me what changed. My GitHub token is ghp_Zq3Xv8Lm2Np5Rt7Wy9Bc4Df6Gh1Jk0Ms8QuE if you need it.\n\n",
		"[assistant · 2026-11-26 03:54:43 UTC]\nI'll check the repository status first.\n" +
			"[tool bash: git status --short && echo deploy-key=AKIAZ7QX3MPLR2W4N6TB]\n[tool result: 71 B]\n" +
			"The working tree is clean apart from the untracked notes.txt; the deploy key check printed its line.\n\n",
		"[user · 2026-11-26 03:55:15 UTC]\nNow read README.md and summarise it.\n\n",
		"[assistant · 2026-11-26 03:55:22 UTC]\nLet me read the README.\n[tool read: " + ocTmp + "/work/widget/README.md]\n[tool result: 238 B]\n" +
			"The README says this is the widget service; it runs on port 8080 and is built with make.\n\n",
		"[user · 2026-11-26 03:55:47 UTC]\n[image]\nThanks, anything else to do? Here is a screenshot of the build.\n\n",
		"[assistant · 2026-11-26 03:55:53 UTC]\nThe screenshot shows the build passing; nothing else to do.\n\n",
	}
	if len(doc.Units) != len(want) {
		t.Fatalf("%d units, want %d: %q", len(doc.Units), len(want), doc.Units)
	}
	for i := range want {
		if doc.Units[i] != want[i] {
			t.Errorf("unit %d:\n got %q\nwant %q", i, doc.Units[i], want[i])
		}
	}
	// Both secrets are whole in the units (in the text, in the tool
	// marker), so the mining secret policy finds them.
	kinds := map[string]bool{}
	for _, f := range Scan(doc.Text()) {
		kinds[f.Kind] = true
	}
	if len(kinds) < 2 {
		t.Fatalf("the fixture's two secrets are not both found in the units: %v", kinds)
	}
	for _, s := range ocNever {
		if strings.Contains(doc.Text(), s) {
			t.Errorf("%q (reasoning or tool output) reached the document", s)
		}
	}
	if doc.Skipped != 0 || doc.Kind != "transcript" || doc.Room != OpenCodeName || doc.Name != "Checking the repository status" {
		t.Fatalf("document %+v", doc)
	}
	var origin map[string]any
	json.Unmarshal(doc.Origin, &origin)
	if origin["session_id"] != ocWidget || origin["agent"] != "opencode" || origin["agent_version"] != "1.18.33" ||
		origin["format"] != "opencode/"+OpenCodeFormat || origin["project"] != ocTmp+"/work/widget" ||
		origin["first"] != "2026-11-26T03:54:36Z" || origin["last"] != "2026-11-26T03:55:53Z" || origin["turns"] != 6.0 {
		t.Fatalf("origin %s", doc.Origin)
	}
}

func TestOpenCodeSubagentSession(t *testing.T) {
	dir := ocCopy(t, "opencode.db")
	parent, err := ocRead(t, OpenCode{}, dir, ocDeploy, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(parent.Text(), "[tool task: Find the deploy checklist]\n[tool result: ") ||
		strings.Contains(parent.Text(), "SUBAGENT-FINDING") || strings.Contains(parent.Text(), "(sub-agent)") {
		t.Fatalf("the parent session: %q", parent.Units)
	}
	child, err := ocRead(t, OpenCode{}, dir, ocSubagent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(child.Units) != 2 || !strings.HasPrefix(child.Units[0], "[user (sub-agent) · ") ||
		!strings.HasPrefix(child.Units[1], "[assistant (sub-agent) · ") || !strings.Contains(child.Units[1], "SUBAGENT-FINDING") {
		t.Fatalf("the sub-agent's session: %q", child.Units)
	}
}

func TestOpenCodeResolve(t *testing.T) {
	home := t.TempDir()
	data := filepath.Join(home, ".local/share/opencode")
	os.MkdirAll(data, 0o755)
	src := OpenCode{Home: home}
	if _, err := src.Resolve("", nil); err == nil || !strings.Contains(err.Error(), "holds no OpenCode database") {
		t.Fatalf("no database yet: %v", err)
	}
	ocSwap(t, data, "opencode.db")
	db := filepath.Join(data, "opencode.db")
	for _, loc := range []string{"", "~", "~/.local/share/opencode", data, data + "/", db, "~/.local/share/opencode/opencode.db"} {
		id, err := src.Resolve(loc, nil)
		if err != nil || id.Adapter != OpenCodeName || id.Locator != db {
			t.Fatalf("%q: %+v %v", loc, id, err)
		}
	}
	for loc, opts := range map[string]map[string]string{
		"relative/dir": nil, filepath.Join(home, "missing"): nil,
		data + "#1": nil, data + "#2": {OptionProject: "rel/path"}, data + "#3": {"since": "yesterday"}, data + "#4": {OptionPrune: "yes"},
	} {
		if _, err := src.Resolve(strings.Split(loc, "#")[0], opts); err == nil && (opts != nil || !strings.HasPrefix(loc, data)) {
			t.Fatalf("%q %v resolved", loc, opts)
		}
	}
	pid, err := src.Resolve(data, map[string]string{OptionProject: ocTmp + "/work/deploys/"})
	if err != nil || pid.Locator != db+"#project="+ocTmp+"/work/deploys" {
		t.Fatalf("the project option's identity %+v %v", pid, err)
	}
	if err := src.ParseCursor(json.RawMessage(`{"mtime_ns":1}`)); err == nil {
		t.Fatal("a foreign cursor was accepted")
	}
}

func TestOpenCodeDiscoverCursorAndProject(t *testing.T) {
	dir := ocCopy(t, "opencode.db")
	src := OpenCode{}
	id, _ := src.Resolve(dir, nil)
	ctx := context.Background()
	refs, err := src.Discover(ctx, Run{ID: id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(refs []Ref) string {
		var s []string
		for _, r := range refs {
			s = append(s, r.ID+":"+r.Filtered)
		}
		return strings.Join(s, " ")
	}
	// Oldest change first: the widget session, the sub-agent's, the deploy session.
	if got := ids(refs); got != ocWidget+": "+ocSubagent+": "+ocDeploy+":" {
		t.Fatalf("refs %s", got)
	}
	if refs, _ = src.Discover(ctx, Run{ID: id}, refs[0].Cursor); ids(refs) != ocSubagent+": "+ocDeploy+":" {
		t.Fatalf("past the first cursor: %s", ids(refs))
	}
	if refs, _ = src.Discover(ctx, Run{ID: id}, refs[1].Cursor); len(refs) != 0 {
		t.Fatalf("past the last cursor: %s", ids(refs))
	}
	if refs, _ = src.Discover(ctx, Run{ID: id, Options: map[string]string{"since": "2027-01-01"}}, nil); len(refs) != 0 {
		t.Fatalf("since: %s", ids(refs))
	}
	// The project option: the other project's sessions are listed filtered, and not read.
	opts := map[string]string{OptionProject: ocTmp + "/work/deploys"}
	pid, _ := src.Resolve(dir, opts)
	refs, _ = src.Discover(ctx, Run{ID: pid, Options: opts}, nil)
	if got := ids(refs); got != ocWidget+":other_project "+ocSubagent+": "+ocDeploy+":" {
		t.Fatalf("project refs %s", got)
	}
	if _, err := src.Read(ctx, Run{ID: pid}, Ref{ID: ocWidget}); err == nil {
		t.Fatal("another project's session was read")
	} else if r, ok := IsFiltered(err); !ok || r != "other_project" {
		t.Fatalf("another project's session: %v", err)
	}
	all, complete, err := src.List(ctx, Run{ID: id, Options: map[string]string{"since": "2027-01-01"}})
	if err != nil || !complete || len(all) != 3 {
		t.Fatalf("list %s %v %v", ids(all), complete, err)
	}
	if _, err := src.Read(ctx, Run{ID: id}, Ref{ID: "ses_gone"}); err == nil {
		t.Fatal("a vanished session was read")
	}
}

// A session changed within the settling window keeps a cursor before it:
// the next discovery lists it again (reading it again files nothing new).
func TestOpenCodeRecentSessionsListedAgain(t *testing.T) {
	list := []openCodeSession{{id: "a", updated: 1000}, {id: "b", updated: 5000}}
	refs := OpenCode{}.refs(list, "", time.UnixMilli(6000))
	var c0, c1 openCodeCursor
	json.Unmarshal(refs[0].Cursor, &c0)
	json.Unmarshal(refs[1].Cursor, &c1)
	if c0 != (openCodeCursor{Updated: 1000, ID: "a"}) || c1 != (openCodeCursor{Updated: 4000}) {
		t.Fatalf("cursors %+v %+v", c0, c1)
	}
}

// ocExec runs SQL on a fixture copy (a writer, as OpenCode is).
func ocExec(t *testing.T, dir string, sql ...string) {
	t.Helper()
	c, err := sqlite3.Open(filepath.Join(dir, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range sql {
		if err := c.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// Hand-made records a scripted session cannot produce: a part of a type
// OpenCode may add later, a message of an unknown role, a part that is
// not JSON. They are counted, never an error.
func TestOpenCodeUnknownRecordsCounted(t *testing.T) {
	dir := ocCopy(t, "opencode.db")
	ocExec(t, dir,
		`INSERT INTO part VALUES ('prt_handmade_1', 'msg_215fe072f001aaVNWXi1CuTsYK', '`+ocWidget+`', 1795665299500, 1795665299500, '{"type":"hologram","text":"HOLOGRAM-TEXT"}')`,
		`INSERT INTO part VALUES ('prt_handmade_2', 'msg_215fe072f001aaVNWXi1CuTsYK', '`+ocWidget+`', 1795665299500, 1795665299500, 'not json')`,
		`INSERT INTO message VALUES ('msg_handmade_1', '`+ocWidget+`', 1795665300000, 1795665300000, '{"role":"narrator","time":{"created":1795665300000}}')`,
		`INSERT INTO part VALUES ('prt_handmade_3', 'msg_handmade_1', '`+ocWidget+`', 1795665300000, 1795665300000, '{"type":"text","text":"NARRATOR-TEXT"}')`)
	doc, err := ocRead(t, OpenCode{}, dir, ocWidget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Skipped != 3 || len(doc.Units) != 6 || strings.Contains(doc.Text(), "HOLOGRAM") || strings.Contains(doc.Text(), "NARRATOR") {
		t.Fatalf("skipped %d, units %q", doc.Skipped, doc.Units)
	}
}

// An answer OpenCode is still writing (its last assistant message not
// completed) waits for the next run; one completed with an error is kept.
func TestOpenCodeAnswerInProgressWaits(t *testing.T) {
	dir := ocCopy(t, "opencode.db")
	ocExec(t, dir,
		`INSERT INTO message VALUES ('msg_zzz_user', '`+ocWidget+`', 1795665400000, 1795665400000, '{"role":"user","time":{"created":1795665400000}}')`,
		`INSERT INTO part VALUES ('prt_zzz_1', 'msg_zzz_user', '`+ocWidget+`', 1795665400000, 1795665400000, '{"type":"text","text":"One more question?"}')`,
		`INSERT INTO message VALUES ('msg_zzz_asst', '`+ocWidget+`', 1795665401000, 1795665401000, '{"role":"assistant","time":{"created":1795665401000}}')`,
		`INSERT INTO part VALUES ('prt_zzz_2', 'msg_zzz_asst', '`+ocWidget+`', 1795665401000, 1795665401000, '{"type":"text","text":"HALF-WRITTEN answ"}')`)
	doc, err := ocRead(t, OpenCode{}, dir, ocWidget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Units) != 7 || strings.Contains(doc.Text(), "HALF-WRITTEN") || !strings.Contains(doc.Units[6], "One more question?") {
		t.Fatalf("units %q", doc.Units)
	}
	ocExec(t, dir, `UPDATE message SET data = '{"role":"assistant","time":{"created":1795665401000},"error":{"name":"MessageAbortedError"}}' WHERE id = 'msg_zzz_asst'`)
	if doc, _ = ocRead(t, OpenCode{}, dir, ocWidget, nil); len(doc.Units) != 8 || !strings.Contains(doc.Units[7], "HALF-WRITTEN answ") {
		t.Fatalf("after the answer was aborted: %q", doc.Units)
	}
}

// A running OpenCode holds the database open in WAL mode and writes while
// the source reads: the reader sees committed rows only, and never writes.
func TestOpenCodeReadsWhileOpenCodeWrites(t *testing.T) {
	dir := ocCopy(t, "opencode.db")
	db := filepath.Join(dir, "opencode.db")
	w, err := sqlite3.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Exec(`PRAGMA journal_mode=WAL`); err != nil {
		t.Fatal(err)
	}
	if err := w.Exec(`BEGIN IMMEDIATE; INSERT INTO message VALUES ('msg_zzz_user', '` + ocWidget + `', 1795665400000, 1795665400000, '{"role":"user","time":{"created":1795665400000}}');
		INSERT INTO part VALUES ('prt_zzz_1', 'msg_zzz_user', '` + ocWidget + `', 1795665400000, 1795665400000, '{"type":"text","text":"UNCOMMITTED question"}')`); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(db)
	doc, err := ocRead(t, OpenCode{}, dir, ocWidget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Units) != 6 || strings.Contains(doc.Text(), "UNCOMMITTED") {
		t.Fatalf("an uncommitted write was read: %q", doc.Units)
	}
	if err := w.Exec(`COMMIT`); err != nil {
		t.Fatal(err)
	}
	if doc, err = ocRead(t, OpenCode{}, dir, ocWidget, nil); err != nil || len(doc.Units) != 7 {
		t.Fatalf("the committed write (in the WAL) was not read: %v %q", err, doc.Units)
	}
	if after, _ := os.ReadFile(db); string(after) != string(before) {
		t.Fatal("reading changed the database file")
	}
}

// A session whose stored JSON passes the bound is filtered, not read.
func TestOpenCodeTooLarge(t *testing.T) {
	dir := ocCopy(t, "opencode.db")
	if _, err := ocRead(t, OpenCode{MaxBytes: 2000}, dir, ocWidget, nil); err == nil {
		t.Fatal("an over-size session was read")
	} else if r, _ := IsFiltered(err); r != "too_large" {
		t.Fatalf("an over-size session: %v", err)
	}
	if _, err := ocRead(t, OpenCode{MaxBytes: 20000}, dir, ocWidget, nil); err != nil {
		t.Fatalf("a session under the bound: %v", err)
	}
}

// A title that cannot name a drawer (OpenCode's titles are the model's
// words: a "//", a trailing space, a name too long) leaves the document
// named by its session id, so filing it cannot fail on the name.
func TestOpenCodeUnnameableTitle(t *testing.T) {
	dir := ocCopy(t, "opencode.db")
	for _, title := range []string{"Fix src//main.go", "Trailing space ", "a/../b", strings.Repeat("long ", 200)} {
		ocExec(t, dir, `UPDATE session SET title = '`+title+`' WHERE id = '`+ocWidget+`'`)
		doc, err := ocRead(t, OpenCode{}, dir, ocWidget, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p := names.Drawer(doc.Name); p != "" || doc.Name != ocWidget {
			t.Errorf("title %q: the document's name %q %s", title, doc.Name, p)
		}
		var origin map[string]any
		json.Unmarshal(doc.Origin, &origin)
		if origin["title"] != title {
			t.Errorf("the origin's title %v", origin["title"])
		}
	}
}

// OpenCode creates its database, then its tables: a database without them
// holds no session yet (seen while the real OpenCode first started); one
// with some of them is a schema this source does not know, an error.
func TestOpenCodeDatabaseBeingCreated(t *testing.T) {
	dir := t.TempDir()
	ocExec(t, dir, `CREATE TABLE migration (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL)`)
	src := OpenCode{}
	id, err := src.Resolve(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if refs, err := src.Discover(context.Background(), Run{ID: id}, nil); err != nil || len(refs) != 0 {
		t.Fatalf("a database OpenCode is creating: %v %v", refs, err)
	}
	if refs, complete, err := src.List(context.Background(), Run{ID: id}); err != nil || len(refs) != 0 || !complete {
		t.Fatalf("listing a database OpenCode is creating: %v %v %v", refs, complete, err)
	}
	ocExec(t, dir, `CREATE TABLE message (id TEXT PRIMARY KEY)`)
	if _, err := src.Discover(context.Background(), Run{ID: id}, nil); err == nil || !strings.Contains(err.Error(), "does not know") {
		t.Fatalf("an unknown schema: %v", err)
	}
}

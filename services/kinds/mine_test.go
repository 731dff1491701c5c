package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/extract"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/secret"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// mineRuntime is a runtime whose mining chunks at 200 characters and
// stops a job after limit documents (0: unlimited).
func mineRuntime(t *testing.T, limit int, sizes ...int) *kindsRuntime {
	t.Helper()
	return runtimeWith(t, nil, limit, sizes...)
}

// kindsRuntime is the job runtime with the kinds registered, and the palace
// service beside it that tests write and read through.
type kindsRuntime struct {
	*actors.Jobs
	Palace *Palace
}

// runtimeWith is mineRuntime with an extraction provider (nil: none).
func runtimeWith(t *testing.T, x extract.Extractor, limit int, sizes ...int) *kindsRuntime {
	t.Helper()
	return runtimeDedup(t, store.Dedup{Enabled: true, Threshold: 0.9}, x, limit, sizes...)
}

// runtimeDedup is runtimeWith with the palace's duplicate rules dd.
func runtimeDedup(t *testing.T, dd store.Dedup, x extract.Extractor, limit int, sizes ...int) *kindsRuntime {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sys := actors.Start(db, slog.New(slog.DiscardHandler), slog.LevelInfo)
	pal := &Palace{DB: db, Sys: sys, Dedup: dd}
	j := actors.NewJobs(db, sys, slog.New(slog.DiscardHandler),
		actors.JobConfig{MaxConcurrency: 1, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second})
	chunk, maxFile := 200, int64(4096)
	if len(sizes) == 2 {
		chunk, maxFile = sizes[0], int64(sizes[1])
	}
	all := All(j, Settings{Dedup: pal.Dedup, Mining: Mining{Sources: sources.NewRegistry(sources.Directory{MaxFileBytes: maxFile}), ChunkChars: chunk,
		MaxDocuments: limit, Secrets: secret.Redact}, Extractor: x})
	for i := range all {
		if all[i].Name == KindExtract {
			// These tests run extract jobs when they ask, and read each
			// one's result: none queued after a mine on its own (the
			// daemon's chain, which cmd/loci's TestExtractAfterMine runs).
			all[i].Follow = nil
		}
	}
	j.Register(all...)
	t.Cleanup(func() {
		j.Stop(context.Background())
		_ = sys.Stop(context.Background())
		db.Close()
	})
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &kindsRuntime{Jobs: j, Palace: pal}
}

// write puts a file with a modification time step seconds after a fixed
// instant, so that discovery order and touches are known.
func write(t *testing.T, root, rel, content string, step int) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	touch(t, root, rel, step)
}

func touch(t *testing.T, root, rel string, step int) {
	t.Helper()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(step) * time.Second)
	if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(rel)), at, at); err != nil {
		t.Fatal(err)
	}
}

func mineOnce(t *testing.T, j *kindsRuntime, params string) api.MineResult {
	t.Helper()
	job, err := submit(t, j, "mine", params)
	if err != nil {
		t.Fatal(err)
	}
	done := waitDone(t, j, job.ID)
	if done.Status != store.JobCompleted {
		t.Fatalf("mine %s: %s %s", params, done.Status, done.Error)
	}
	var res api.MineResult
	if err := json.Unmarshal(done.Result, &res); err != nil {
		t.Fatal(err)
	}
	res.Bytes = 0
	return res
}

// files is the current drawers of a wing's room files, by drawer name
// ("" for unnamed chunks, in order).
func files(t *testing.T, j *kindsRuntime, wing string) []store.Drawer {
	t.Helper()
	var out []store.Drawer
	err := j.DB.View(context.Background(), func(r store.Reader) error {
		w, err := store.FindWing(r, wing)
		if err != nil {
			return err
		}
		rm, err := store.FindRoom(r, w, sources.FilesRoom)
		if err != nil {
			return err
		}
		return r.Drawers(rm.ID, true, func(d *store.Drawer) bool { out = append(out, *d); return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func paragraph(tag string) string {
	return strings.Repeat(tag+" words ", 40)[:150]
}

// A tree mined, then touched, edited, shortened, changed in metadata only
// and mined again in full: every counter of each result, and the drawers.
func TestMineDirectoryLifecycle(t *testing.T) {
	j := mineRuntime(t, 0)
	root := t.TempDir()
	long := paragraph("first") + "\n\n" + paragraph("second") + "\n\n" + paragraph("third") + "\n\n" + paragraph("fourth") + "\n"
	write(t, root, "a.md", "# Notes\nremember the lamp\n", 1)
	write(t, root, "long.txt", long, 2)
	write(t, root, "sub/b.go", "package b\n\nfunc B() {}\n", 3)
	write(t, root, ".git/config", "[core]\n", 4)
	write(t, root, "node_modules/x/index.js", "x\n", 4)
	write(t, root, "empty.txt", "", 5)
	write(t, root, "bin.dat", "a\x00b", 6)
	write(t, root, "latin1.txt", "caf\xe9", 7)
	write(t, root, "big.txt", strings.Repeat("x", 5000), 8)
	write(t, root, ".env", "AWS_KEY=AKIAIOSFODNN7EXAMPLF\nDB_PASSWORD=hunter2goes\nPORT=8080\n", 9)
	if err := os.Symlink(filepath.Join(root, "a.md"), filepath.Join(root, "link.md")); err != nil {
		t.Fatal(err)
	}
	params := `{"path":"` + root + `","wing":"proj"}`
	check := func(what string, got, want api.MineResult) {
		t.Helper()
		want.Wing = "proj"
		if got.Note == "" {
			t.Fatalf("%s: no note", what)
		}
		got.Note = ""
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
		}
	}
	check("first mine", mineOnce(t, j, params), api.MineResult{Documents: 8, Discovered: 8, Filtered: 4, Ingested: 4, Created: 7, Redacted: 2,
		Mode: api.MineFirst, Tracked: 4, Outcome: api.MineChanged})
	ds := files(t, j, "proj")
	byName := map[string]store.Drawer{}
	for _, d := range ds {
		byName[d.Name] = d
	}
	if len(ds) != 7 || byName["a.md"].Content != "# Notes\nremember the lamp\n" || byName["sub/b.go"].Source.URI != filepath.Join(root, "sub", "b.go") ||
		byName["long.txt"].Content != paragraph("first")+"\n\n" {
		t.Fatalf("drawers after the first mine: %+v", ds)
	}
	env := byName[".env"]
	if strings.Contains(env.Content, "AKIA") || strings.Contains(env.Content, "hunter2") ||
		env.Content != "AWS_KEY=[REDACTED:aws_access_key_id]\nDB_PASSWORD=[REDACTED:assignment]\nPORT=8080\n" ||
		!strings.Contains(string(env.Source.Origin), `"redacted":[{"kind":"aws_access_key_id","line":1},{"kind":"assignment","line":2}]`) {
		t.Fatalf(".env filed as %q, origin %s", env.Content, env.Source.Origin)
	}

	check("nothing changed", mineOnce(t, j, params), api.MineResult{Mode: api.MineIncremental, Tracked: 4, Outcome: api.MineUpToDate})
	touch(t, root, "a.md", 20)
	check("a.md touched", mineOnce(t, j, params), api.MineResult{Documents: 1, Discovered: 1, Unchanged: 1,
		Mode: api.MineIncremental, Tracked: 4, Outcome: api.MineUpToDate})

	edited := paragraph("first") + "\n\n" + paragraph("second") + "\n\n" + paragraph("third") + "\n\n" + paragraph("FOURTH") + "\n"
	write(t, root, "long.txt", edited, 21)
	check("long.txt's last paragraph edited", mineOnce(t, j, params), api.MineResult{Documents: 1, Discovered: 1, Ingested: 1, Superseded: 1,
		Mode: api.MineIncremental, Tracked: 4, Outcome: api.MineChanged})
	write(t, root, "long.txt", paragraph("first")+"\n\n"+paragraph("second")+"\n\n", 22)
	check("long.txt shortened", mineOnce(t, j, params), api.MineResult{Documents: 1, Discovered: 1, Ingested: 1, Retired: 2,
		Mode: api.MineIncremental, Tracked: 4, Outcome: api.MineChanged})
	if err := os.Chmod(filepath.Join(root, "sub", "b.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	touch(t, root, "sub/b.go", 23)
	check("b.go's mode changed", mineOnce(t, j, params), api.MineResult{Documents: 1, Discovered: 1, Ingested: 1, Superseded: 1,
		Mode: api.MineIncremental, Tracked: 4, Outcome: api.MineChanged})
	ds = files(t, j, "proj")
	if len(ds) != 5 {
		t.Fatalf("%d current drawers, want 5: %+v", len(ds), ds)
	}
	check("full", mineOnce(t, j, `{"path":"`+root+`","wing":"proj","full":true}`),
		api.MineResult{Documents: 8, Discovered: 8, Filtered: 4, Unchanged: 4, Mode: api.MineFull, Tracked: 4, Outcome: api.MineUnchanged})
	if n := len(files(t, j, "proj")); n != 5 {
		t.Fatalf("a full mine left %d current drawers, want 5", n)
	}
}

// With max_documents, a job stops with truncated set and the next one
// goes on from where it stopped; the limit is in the result.
func TestMineTruncatesAndContinues(t *testing.T) {
	j := mineRuntime(t, 2)
	root := t.TempDir()
	for i, name := range []string{"1.txt", "2.txt", "3.txt", "4.txt", "5.txt"} {
		write(t, root, name, []string{"alpha beta gamma", "lamp kettle copper", "river stone bridge", "orchard apple wind", "violin cello drum"}[i]+"\n", i+1)
	}
	params := `{"path":"` + root + `"}`
	two := 2
	for i, want := range []api.MineResult{
		{Documents: 2, Discovered: 5, Ingested: 2, Created: 2, Truncated: true, Limit: &two, Mode: api.MineFirst, Tracked: 2, Outcome: api.MineChanged},
		{Documents: 2, Discovered: 3, Ingested: 2, Created: 2, Truncated: true, Limit: &two, Mode: api.MineIncremental, Tracked: 4, Outcome: api.MineChanged},
		{Documents: 1, Discovered: 1, Ingested: 1, Created: 1, Limit: &two, Mode: api.MineIncremental, Tracked: 5, Outcome: api.MineChanged},
		{Limit: &two, Mode: api.MineIncremental, Tracked: 5, Outcome: api.MineUpToDate},
	} {
		want.Wing = filepath.Base(root)
		got := mineOnce(t, j, params)
		if strings.Contains(got.Note, "Stopped at the limit") != want.Truncated {
			t.Fatalf("job %d's note: %q", i+1, got.Note)
		}
		got.Note = ""
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("job %d: %+v, want %+v", i+1, got, want)
		}
	}
	if n := len(files(t, j, filepath.Base(root))); n != 5 {
		t.Fatalf("%d drawers in the default wing, want 5", n)
	}
}

// A batch too big for one transaction is split; a document too big alone
// is skipped, and the job goes on with the rest.
func TestMineSplitsBatchesTooBigForATransaction(t *testing.T) {
	// The size of a transaction is the point here, not the judging of near copies.
	j := runtimeDedup(t, store.Dedup{Threshold: 0.9}, nil, 0, 6000, 40<<20)
	root := t.TempDir()
	var huge, big strings.Builder
	for i := 0; huge.Len() < 16<<20; i++ {
		fmt.Fprintf(&huge, "paragraph %d of the huge file about lamp %d and kettle %d\n\n", i, i*31, i*7919)
	}
	for i := 0; big.Len() < 1900<<10; i++ {
		fmt.Fprintf(&big, "line %d of a big file, river %d stone %d\n", i, i*17, i*7907)
	}
	write(t, root, "a-big.txt", big.String(), 1)
	write(t, root, "b-big.txt", strings.ReplaceAll(big.String(), "river", "meadow"), 2)
	write(t, root, "c-huge.txt", huge.String(), 3)
	write(t, root, "d-small.txt", "a small file after the huge one\n", 4)
	res := mineOnce(t, j, `{"path":"`+root+`","wing":"w"}`)
	if res.Documents != 4 || res.Skipped != 1 || res.Ingested != 3 || res.Created < 600 {
		t.Fatalf("%+v", res)
	}
}

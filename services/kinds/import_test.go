package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

var importDedup = store.Dedup{Enabled: true, Threshold: 0.9}

// importRuntime is a job runtime on a fresh store with every kind
// registered, its import folder dir.
func importRuntime(t testing.TB) (*actors.Jobs, string) {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sys := actors.Start(db, slog.New(slog.DiscardHandler), slog.LevelInfo)
	j := actors.NewJobs(db, sys, slog.New(slog.DiscardHandler),
		actors.JobConfig{MaxConcurrency: 1, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second})
	dir := t.TempDir()
	j.Register(All(j, Settings{Dedup: importDedup, Imports: dir})...)
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		j.Stop(ctx)
		sys.Stop(ctx)
		db.Close()
	})
	return j, dir
}

// exportOf is an export of the whole palace.
func exportOf(t *testing.T, db store.DB) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := export.Write(context.Background(), db, &buf, export.Options{Now: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// body is an export's records without its header and end: what two
// palaces holding the same records have in common.
func body(t *testing.T, db store.DB) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(exportOf(t, db))), "\n")
	return strings.Join(lines[1:len(lines)-1], "\n")
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// importBase gives a palace what the file will meet: wing w and room r,
// a drawer the file holds a copy of, and the entity Alice, with fixed ids.
func importBase(t *testing.T, db store.DB) {
	t.Helper()
	im := &store.Importer{Dedup: importDedup}
	err := db.Update(context.Background(), func(tx store.Tx) error {
		tg := store.ImportTarget{R: tx, W: tx}
		for _, step := range []func() (store.Imported, error){
			func() (store.Imported, error) {
				return im.Wing(tg, store.Wing{ID: "00000000-0000-4000-8000-000000000001", Name: "w", CreatedAt: t0})
			},
			func() (store.Imported, error) {
				return im.Room(tg, store.Room{ID: "00000000-0000-4000-8000-000000000002", WingID: "00000000-0000-4000-8000-000000000001", Name: "r", CreatedAt: t0})
			},
			func() (store.Imported, error) {
				return im.Drawer(tg, store.Drawer{ID: "00000000-0000-4000-8000-000000000003", WingID: "00000000-0000-4000-8000-000000000001",
					RoomID: "00000000-0000-4000-8000-000000000002", Content: "A drawer both palaces hold, word for word.",
					Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}, ValidFrom: t0, CreatedAt: t0})
			},
			func() (store.Imported, error) {
				return im.Entity(tg, store.Entity{ID: "00000000-0000-4000-8000-000000000004", Name: "Alice", Kind: "person", CreatedAt: t0})
			},
		} {
			if res, err := step(); err != nil || res.Outcome != store.ImportCreated {
				return fmt.Errorf("base: %v %+v", err, res)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importSource is a palace of n drawers in two rooms, one of them a copy
// of the base's drawer, with the entity Alice (another id) and a fact
// about her, which the file writes after every drawer.
func importSource(t *testing.T, n int) store.DB {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	err = db.Update(context.Background(), func(tx store.Tx) error {
		d0, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: "A drawer both palaces hold, word for word.",
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, importDedup)
		if err != nil {
			return err
		}
		for i := range n {
			room := []string{"r", "s"}[i%2]
			if _, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: room, Content: fmt.Sprintf("Memory number %d: the build of module %d needs flag -tags=%d.", i, i*7, i*13),
				Source: store.Source{Kind: store.KindNote}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}, importDedup); err != nil {
				return err
			}
		}
		alice, err := store.ResolveEntity(tx, "Alice", "person", false, "")
		if err != nil {
			return err
		}
		billing, err := store.ResolveEntity(tx, "billing", "project", false, "")
		if err != nil {
			return err
		}
		return tx.PutRelationship(&store.Relationship{ID: store.NewID(), Subject: alice.Entity.ID, Predicate: "works_on", Object: billing.Entity.ID,
			Confidence: 0.9, ValidFrom: t0, RecordedAt: t0, Drawer: d0.Drawer.ID, Extractor: "manual"}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// spoolFile puts an export in the import folder as POST /api/imports
// would.
func spoolFile(t *testing.T, dir string, b []byte) string {
	t.Helper()
	name := ImportSpoolName()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func runImportJob(t *testing.T, j *actors.Jobs, dir string, file []byte, pause bool) (*store.Job, api.ImportReport) {
	t.Helper()
	ctx := context.Background()
	job, err := j.Submit(ctx, actors.Submission{Type: KindImport, Channel: store.ByHTTP, Typed: ImportParams{Spool: spoolFile(t, dir, file)}})
	if err != nil {
		t.Fatal(err)
	}
	if pause {
		for {
			got, err := j.Get(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == store.JobRunning && got.Progress.Current > 0 {
				break
			}
			if got.Status == store.JobCompleted {
				t.Fatal("the import completed before it could be paused")
			}
			time.Sleep(time.Millisecond)
		}
		if _, err := j.Pause(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
		var got *store.Job
		for got == nil || got.Status == store.JobRunning {
			time.Sleep(2 * time.Millisecond)
			if got, err = j.Get(ctx, job.ID); err != nil {
				t.Fatal(err)
			}
		}
		var st importState
		_ = json.Unmarshal(got.Checkpoint, &st)
		if got.Status != store.JobPaused || st.Records == 0 {
			t.Fatalf("the import was not paused half-way: %s, checkpoint %s", got.Status, got.Checkpoint)
		}
		if _, err := j.Resume(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
	}
	done := waitDone(t, j, job.ID)
	if done.Status != store.JobCompleted {
		t.Fatalf("import job %s: %s", done.Status, done.Error)
	}
	var rep api.ImportReport
	if err := json.Unmarshal(done.Result, &rep); err != nil {
		t.Fatal(err)
	}
	return done, rep
}

// An import job stopped half-way and resumed (a replay from its
// checkpoint, as after a crash) leaves the palace exactly as one run
// does: no record twice, none lost, and what the committed part mapped
// (an entity merged into the palace's own, a duplicate drawer) still
// applies to the records after it. The spooled file is removed at the end.
func TestImportJobResumedEqualsOneRun(t *testing.T) {
	defer func(n int) { importBatch = n }(importBatch)
	importBatch = 8
	src := importSource(t, 400)
	file := exportOf(t, src)

	clean, cleanDir := importRuntime(t)
	importBase(t, clean.DB)
	_, want := runImportJob(t, clean, cleanDir, file, false)

	resumed, dir := importRuntime(t)
	importBase(t, resumed.DB)
	_, got := runImportJob(t, resumed, dir, file, true)

	if b1, b2 := body(t, clean.DB), body(t, resumed.DB); b1 != b2 {
		t.Fatalf("a resumed import differs from one run:\n%s\n----\n%s", b2, b1)
	}
	if want.Totals != got.Totals {
		t.Fatalf("reports differ: resumed %+v, one run %+v", got.Totals, want.Totals)
	}
	d := want.Types["drawer"]
	if d.Created != 400 || d.Duplicates != 1 || want.Types["entity"].Merged != 1 || want.Types["fact"].Created != 1 {
		t.Fatalf("report %+v", want.Types)
	}
	// The fact names the palace's Alice, not the file's.
	var facts int
	_ = resumed.DB.View(context.Background(), func(r store.Reader) error {
		return r.EntityRelationships("00000000-0000-4000-8000-000000000004", func(*store.Relationship) bool { facts++; return true })
	})
	if facts != 1 {
		t.Fatalf("the palace's Alice has %d facts, want the imported one", facts)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the spooled file is left: %v", left)
	}
	// Importing the same file again changes nothing.
	var before uint64
	_ = resumed.DB.View(context.Background(), func(r store.Reader) (err error) { before, err = r.LastSeq(); return err })
	_, again := runImportJob(t, resumed, dir, file, false)
	var after uint64
	_ = resumed.DB.View(context.Background(), func(r store.Reader) (err error) { after, err = r.LastSeq(); return err })
	// The job's own records (queued, claimed, progress, completed) are the
	// only changes logged.
	_ = resumed.DB.View(context.Background(), func(r store.Reader) error {
		return r.Changes(before, func(c store.Change) bool {
			if c.Kind != store.ChangeJob {
				t.Errorf("the second import logged %s %s %s", c.Kind, c.Action, c.ID)
			}
			return true
		})
	})
	_ = after
	if again.Totals.Created+again.Totals.Updated+again.Totals.Conflicts != 0 {
		t.Fatalf("a second import changed something: %+v", again.Totals)
	}
	if b := body(t, resumed.DB); b != body(t, clean.DB) {
		t.Fatal("the second import changed the palace")
	}
}

// No REST body or MCP argument makes an import job: only the daemon
// (POST /api/imports, with the file it spooled) does.
func TestImportJobsAreTheDaemonsOnly(t *testing.T) {
	j, dir := importRuntime(t)
	name := spoolFile(t, dir, []byte("{}\n"))
	for _, params := range []string{
		`{"type":"import","spool":"` + name + `"}`,
		`{"type":"import","spool":"../../etc/passwd"}`,
	} {
		if _, err := submit(t, j, KindImport, params); !fault.Is(err, fault.InputInvalid) {
			t.Fatalf("%s: %v, want input::invalid", params, err)
		}
	}
	if _, err := j.Submit(context.Background(), actors.Submission{Type: KindImport, Typed: ImportParams{Spool: "../x"}}); !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("a path for a spool: %v", err)
	}
	jobs, _ := j.List(context.Background(), "", "", 0)
	if len(jobs) != 0 {
		t.Fatalf("%d jobs made", len(jobs))
	}
}

// A job whose every record is in, run again because the daemon stopped
// before its completion was recorded (its spool already removed),
// completes with the report it had: it reads no file.
func TestImportJobDoneBeforeACrashOnlyReports(t *testing.T) {
	j, _ := importRuntime(t)
	ctx := context.Background()
	cp, _ := json.Marshal(importState{Records: 5, Done: true, Report: api.ImportReport{Records: 5,
		Totals: api.ImportCounts{Created: 3}, Types: map[string]api.ImportCounts{"drawer": {Created: 3}}}})
	in, _ := json.Marshal(ImportParams{Spool: ImportSpoolName()}) // no such file any more
	var id string
	_, err := j.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		job, err := store.Apply(store.Job{ID: store.NewID(), Kind: KindImport, RequestedBy: store.ByHTTP, Priority: store.PriorityNormal, Input: in},
			store.JobEvent{Kind: store.EvSubmit, At: tx.Now()})
		if err != nil {
			return nil, err
		}
		job.Checkpoint, id = cp, job.ID
		return nil, tx.PutJob(&job, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Any submission wakes the dispatcher, which claims the oldest job.
	if _, err := submit(t, j, KindDemo, `{"steps":1}`); err != nil {
		t.Fatal(err)
	}
	done := waitFinished(t, j, id)
	var rep api.ImportReport
	_ = json.Unmarshal(done.Result, &rep)
	if done.Status != store.JobCompleted || rep.Totals.Created != 3 || rep.Records != 5 {
		t.Fatalf("%s %s %s", done.Status, done.Error, done.Result)
	}
}

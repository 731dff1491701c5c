package kinds

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// newRuntime is a job runtime on a fresh store with every kind registered
// (mining chunks at 200 characters and reads files up to 1 MiB).
func newRuntime(t *testing.T) *kindsRuntime { return mineRuntime(t, 0, 200, 1<<20) }

func submit(t *testing.T, j interface {
	Submit(context.Context, actors.Submission) (*store.Job, error)
}, kind, params string) (*store.Job, error) {
	t.Helper()
	return j.Submit(context.Background(), actors.Submission{Type: kind, Channel: store.ByHTTP, Params: json.RawMessage(params)})
}

func waitDone(t *testing.T, j interface {
	Get(context.Context, string) (*store.Job, error)
}, id string) *store.Job {
	t.Helper()
	// The wait ends at the signal (the job's status); the bound only ends
	// a wait that failed. It is generous: a mine of 20 MB under -race takes
	// about 5 s alone, and make test runs every package at once on two
	// cores (TestMineSplitsBatchesTooBigForATransaction once passed 10 s).
	var job *store.Job
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var err error
		job, err = j.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if job.Status == store.JobCompleted || job.Status == store.JobFailed {
			return job
		}
	}
	t.Fatalf("job %s did not finish within 2 minutes: %s, progress %+v", id, job.Status, job.Progress)
	return nil
}

func drawer(t *testing.T, j *kindsRuntime, id string) *store.Drawer {
	t.Helper()
	var d *store.Drawer
	if err := j.DB.View(context.Background(), func(r store.Reader) error {
		var err error
		d, err = r.Drawer(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return d
}

// Each kind decodes only its own fields: another is refused naming it, a
// wrong JSON type names the field and the type, and a missing or unknown
// type lists the kinds.
func TestSubmissionsAreCheckedByTheirKind(t *testing.T) {
	j := newRuntime(t)
	for _, c := range []struct {
		kind, params string
		code         fault.Code
		want         string
	}{
		{"audit", `{"type":"audit","steps":3}`, fault.InputInvalid, "steps: is not a field of a audit job"},
		{"demo", `{"steps":"three"}`, fault.InputInvalid, "steps: must be a number, not JSON string"},
		{"demo", `{"steps":99}`, fault.InputInvalid, "steps: must be between 1 and"},
		{"repair", `{"dry_run":"no"}`, fault.InputInvalid, "dry_run: must be true or false"},
		{"repair", `{"based_on_job":"nope"}`, fault.RepairBasedOnJobInvalid, "is not a job id"},
		{"audit", `{"wing":"nowhere"}`, fault.PalaceWingNotFound, "nowhere"},
		{"checkpoint", `{}`, fault.InputInvalid, "payload: is required"},
		{"checkpoint", `{"payload":"{not json"}`, fault.InputInvalid, "payload: is a string that is not valid JSON"},
		{"mine", `{"path":"relative/dir"}`, fault.InputInvalid, "is relative"},
		{"mine", `{"path":"/abs","source":"s"}`, fault.InputInvalid, "exactly one of path (a directory) or source"},
		{"mine", `{"path":"/no/such/dir/here"}`, fault.InputInvalid, "cannot be read on the daemon's machine"},
		{"mine", `{"source":"ftp","locator":"x"}`, fault.SourceNotFound, `no source is named "ftp"`},
		{"mine", `{"path":"/tmp","options":{"depth":"2"}}`, fault.InputInvalid, `"depth" is not an option of the directory source; it accepts: dir, prune, since`},
		{"mine", `{"path":"/tmp","options":{"api_token":"x"}}`, fault.InputInvalid, "reads like a secret"},
		{"mine", `{"path":"/tmp","locator":"/tmp"}`, fault.InputInvalid, "locator: goes with source"},
		{"mine", `{"path":"/"}`, fault.InputInvalid, "wing: is required"},
		{"embed", `{}`, fault.EmbedNotConfigured, "embedding profile"},
		{"extract", `{}`, fault.ExtractNotConfigured, "extraction provider"},
		{"", `{}`, fault.InputInvalid, "type: is required: one of checkpoint, audit, repair, demo, mine, embed, extract"},
		{"dance", `{}`, fault.InputInvalid, `type: "dance" is not one of checkpoint, audit`},
	} {
		t.Run(c.kind+" "+c.params, func(t *testing.T) {
			_, err := submit(t, j, c.kind, c.params)
			e := fault.As(err)
			if err == nil || e.Code != c.code || !strings.Contains(e.Error(), c.want) {
				t.Errorf("%s %s: got %v (%s), want %s containing %q", c.kind, c.params, err, e.Code, c.code, c.want)
			}
		})
	}
	// Nothing was queued by any of them.
	if jobs, _ := j.List(context.Background(), "", "", 0); len(jobs) != 0 {
		t.Fatalf("refused submissions queued %d jobs", len(jobs))
	}
}

// A checkpoint's priority comes from its submission: high, or critical in
// an emergency; a payload may be a JSON string of the object.
func TestCheckpointPriorityAndStringPayload(t *testing.T) {
	j := newRuntime(t)
	payload := `{"items":[{"destination":"general","content":"remember the queue","tags":[],"source":{"kind":"manual"}}]}`
	quoted, _ := json.Marshal(payload)
	normal, err := submit(t, j, "checkpoint", `{"payload":`+string(quoted)+`}`)
	if err != nil {
		t.Fatal(err)
	}
	urgent, err := submit(t, j, "checkpoint", `{"payload":`+payload+`,"emergency":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if normal.Priority != store.PriorityHigh || urgent.Priority != store.PriorityCritical {
		t.Fatalf("priorities %s and %s, want high and critical", normal.Priority, urgent.Priority)
	}
	if got := waitDone(t, j, normal.ID); got.Status != store.JobCompleted {
		t.Fatalf("checkpoint from a string payload: %+v", got)
	}
	for _, kind := range []string{"audit", "repair", "demo"} {
		job, err := submit(t, j, kind, `{}`)
		if err != nil || job.Priority != store.PriorityNormal {
			t.Fatalf("%s: %+v %v, want priority normal", kind, job, err)
		}
	}
	for _, k := range j.Kinds() {
		if want := k.Name == "mine" || k.Name == "embed" || k.Name == "extract" || k.Name == "backup"; k.Background != want {
			t.Errorf("%s: background %v, want %v", k.Name, k.Background, want)
		}
	}
}

// Audit finds a drawer whose room is gone; repair reports it in a dry run
// and removes it only when applying, narrowed by the audit.
func TestAuditAndRepairOrphans(t *testing.T) {
	j := newRuntime(t)
	ctx := context.Background()
	keep, err := j.Palace.CreateDrawer(ctx, store.NewDrawer{Wing: "w", Room: "kept", Content: "a drawer in a room that stays",
		Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}})
	if err != nil {
		t.Fatal(err)
	}
	lost, err := j.Palace.CreateDrawer(ctx, store.NewDrawer{Wing: "w", Room: "lost", Content: "a drawer whose room record vanishes",
		Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI, JobID: "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"}})
	if err != nil {
		t.Fatal(err)
	}
	// Damage: remove the room record alone, as a crash in an older version might have.
	_, err = j.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		rm, err := tx.Room(lost.Drawer.RoomID)
		if err != nil {
			return nil, err
		}
		return nil, tx.DeleteRoom(rm)
	})
	if err != nil {
		t.Fatal(err)
	}
	run := func(kind, params string) *store.Job {
		job, err := submit(t, j, kind, params)
		if err != nil {
			t.Fatal(err)
		}
		return waitDone(t, j, job.ID)
	}
	audit := run("audit", `{}`)
	var ar AuditResult
	if err := json.Unmarshal(audit.Result, &ar); err != nil {
		t.Fatal(err)
	}
	if len(ar.OrphanDrawers) != 1 || ar.OrphanDrawers[0] != lost.Drawer.ID || len(ar.DanglingJobRefs) != 1 || ar.DrawersScanned != 2 {
		t.Fatalf("audit: %+v", ar)
	}
	dry := run("repair", `{"based_on_job":"`+audit.ID+`"}`)
	var rr RepairResult
	_ = json.Unmarshal(dry.Result, &rr)
	if !rr.DryRun || rr.Removed != 0 || len(rr.OrphanDrawers) != 1 {
		t.Fatalf("dry run: %+v", rr)
	}
	if drawer(t, j, lost.Drawer.ID) == nil {
		t.Fatal("a dry run removed the orphan")
	}
	fixed := run("repair", `{"dry_run":false}`)
	_ = json.Unmarshal(fixed.Result, &rr)
	if rr.DryRun || rr.Removed != 1 {
		t.Fatalf("repair: %+v", rr)
	}
	if drawer(t, j, lost.Drawer.ID) != nil {
		t.Fatal("the orphan is still there")
	}
	if drawer(t, j, keep.Drawer.ID) == nil {
		t.Fatal("repair removed a drawer that was not an orphan")
	}
}

package kinds

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// DemoInput is a demo job's input: how many of the sample's steps to run
// (0: all).
type DemoInput struct {
	Steps int `json:"steps,omitempty"`
}

type demoStep struct {
	wing, room, name, content string
	tags                      []string
	agent                     string // a diary entry of this agent
	supersedes                int    // 1-based index of an earlier step whose drawer this corrects
}

// demoSample is a small, realistic palace: two projects, preferences, a
// correction and an agent's diary.
var demoSample = []demoStep{
	{wing: "projects", room: "loci", name: "storage-decision", tags: []string{"decision", "storage"},
		content: "We store the palace in Badger: one process, one writer, synced commits, so an acknowledged write survives kill -9."},
	{wing: "projects", room: "loci", tags: []string{"search"},
		content: "Search combines BM25 over drawer text with vector similarity, fused by reciprocal rank; lexical search works without any embedding provider."},
	{wing: "projects", room: "loci", tags: []string{"jobs"},
		content: "Mining, checkpoints and audits run as durable jobs: they survive restarts, can be paused and resumed, and recover after a crash."},
	{wing: "projects", room: "webapp", name: "deploy", tags: []string{"ops"},
		content: "The web app deploys from main through the staging environment every Tuesday at 14:00 UTC."},
	{wing: "projects", room: "webapp", tags: []string{"bug"},
		content: "Login fails for users whose e-mail contains a plus sign: the address is not URL-encoded before the redirect."},
	{wing: "projects", room: "webapp", tags: []string{"decision"},
		content: "Sessions expire after 30 minutes of inactivity; refresh tokens last 14 days and rotate on use."},
	{wing: "preferences", room: "editor", tags: []string{"style"},
		content: "Prefer small commits with messages that say why; run gofmt and go vet before every push."},
	{wing: "preferences", room: "editor", tags: []string{"testing"},
		content: "Tests use real dependencies (a real database, a real daemon process); no mocks for storage."},
	{wing: "preferences", room: "communication", tags: []string{"style"},
		content: "Answer with the conclusion first, then the evidence; keep status updates under five lines."},
	{wing: "projects", room: "webapp", name: "deploy", tags: []string{"ops"}, supersedes: 4,
		content: "The web app deploys from main through the staging environment every Thursday at 10:00 UTC (moved from Tuesday)."},
	{wing: "projects", room: store.DiaryRoom, agent: "demo-agent",
		content: "Session 1: read the storage decision and the deploy schedule; the login bug with plus signs is still open."},
	{wing: "projects", room: store.DiaryRoom, agent: "demo-agent",
		content: "Session 2: the deploy moved to Thursdays; next, reproduce the plus-sign login bug in a test."},
}

func demoDrawerID(jobID string, step int) string {
	ns, err := uuid.Parse(jobID)
	if err != nil {
		ns = uuid.NameSpaceOID
	}
	return uuid.NewSHA1(ns, []byte(fmt.Sprintf("demo-step/%d", step))).String()
}

// demoParams are a demo submission's fields.
type demoParams struct {
	Steps *int `json:"steps,omitempty" jsonschema:"how many of the sample's steps to write"`
}

// Demo is the demo kind: a small sample palace written step by step,
// to watch a job run (progress, pause, resume, cancel).
func Demo(dd store.Dedup) actors.Kind {
	return actors.Define(KindDemo, actors.Spec[demoParams]{
		Files:  true,
		Writes: always,
		Decode: func(_ context.Context, _ actors.Submission, p demoParams) (actors.Plan, error) {
			in := DemoInput{}
			if p.Steps != nil {
				if *p.Steps < 1 || *p.Steps > len(demoSample) {
					return actors.Plan{}, fault.Invalid("steps", fmt.Sprintf("must be between 1 and %d", len(demoSample)))
				}
				in.Steps = *p.Steps
			}
			return actors.Plan{Input: in, Priority: store.PriorityNormal}, nil
		},
		Run: func(ctx context.Context, r *actors.Run) (any, error) { return demo(ctx, r, dd) },
	})
}

func demo(ctx context.Context, r *actors.Run, dd store.Dedup) (any, error) {
	var in DemoInput
	_ = json.Unmarshal(r.Job.Input, &in)
	steps := len(demoSample)
	if in.Steps > 0 {
		steps = min(in.Steps, steps)
	}
	var st struct {
		NextIndex int `json:"next_index"`
		Drawers   int `json:"drawers"`
	}
	_ = json.Unmarshal(r.Job.Checkpoint, &st)
	total := int64(steps)
	for st.NextIndex < steps {
		if r.Stopping() {
			return nil, actors.ErrStopped
		}
		i := st.NextIndex
		s := demoSample[i]
		next := st
		err := r.Write(ctx, func(tx store.Tx) error {
			next = st
			by := store.Provenance{RequestedBy: r.Job.RequestedBy, JobID: r.Job.ID}
			if s.supersedes > 0 {
				content := s.content
				if d, err := tx.Drawer(demoDrawerID(r.Job.ID, s.supersedes-1)); err != nil {
					return err
				} else if d == nil || !d.Current() {
					// The corrected drawer was not written (its name was
					// taken: not a fresh palace) or is already corrected:
					// nothing to correct, and the step is done.
					next.NextIndex = i + 1
					return nil
				}
				_, err := store.Supersede(tx, store.Supersession{DrawerID: demoDrawerID(r.Job.ID, s.supersedes-1), Content: &content, RequestedBy: by.RequestedBy}, dd)
				if err != nil {
					return err
				}
				next.Drawers++
			} else {
				res, err := store.CreateDrawer(tx, store.NewDrawer{ID: demoDrawerID(r.Job.ID, i), Wing: s.wing, Room: s.room,
					Name: s.name, Content: s.content, Tags: s.tags, Diary: s.agent != "",
					Source:     store.Source{Kind: store.KindManual, Agent: s.agent},
					Provenance: by, Policy: store.ExactStoredLinked}, dd)
				if fault.Is(err, fault.PalaceDrawerNameTaken) {
					// Not a fresh palace: the name holds other content; keep it.
					next.NextIndex = i + 1
					return nil
				}
				if err != nil {
					return err
				}
				if res.Created {
					next.Drawers++
				}
			}
			next.NextIndex = i + 1
			return nil
		}, &next, store.Progress{Current: int64(i + 1), Total: &total, Message: "sample memories written"})
		if err != nil {
			return nil, fault.As(err)
		}
		st = next
	}
	return api.DemoResult{Steps: steps, Drawers: st.Drawers}, nil
}

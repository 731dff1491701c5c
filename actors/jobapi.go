package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/fault"
)

// Submission is a POST /api/jobs body: {type, ...} with the fields of its
// kind.
type Submission struct {
	Type        string          `json:"type"`
	RequestedBy string          `json:"requested_by,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`   // checkpoint
	Emergency   bool            `json:"emergency,omitempty"` // checkpoint
	Wing        string          `json:"wing,omitempty"`      // audit, embed, extract, mine
	DryRun      *bool           `json:"dry_run,omitempty"`   // repair
	BasedOnJob  string          `json:"based_on_job,omitempty"`
	Steps       *int            `json:"steps,omitempty"` // demo
	// mine
	Source  string            `json:"source,omitempty"`
	Path    string            `json:"path,omitempty"`
	Locator string            `json:"locator,omitempty"`
	Options map[string]string `json:"options,omitempty"`
	Full    bool              `json:"full,omitempty"`
	// MCP is set by the MCP interface (narrower source kinds).
	MCP bool `json:"-"`
}

// Submit validates a submission and queues the job.
func (j *Jobs) Submit(ctx context.Context, s Submission, channel string) (*store.Job, error) {
	by, err := store.CheckRequestedBy(s.RequestedBy, channel)
	if err != nil {
		return nil, err
	}
	only := func(allowed ...string) error {
		set := map[string]bool{}
		for _, a := range allowed {
			set[a] = true
		}
		for field, given := range map[string]bool{"payload": s.Payload != nil, "emergency": s.Emergency, "wing": s.Wing != "",
			"dry_run": s.DryRun != nil, "based_on_job": s.BasedOnJob != "", "steps": s.Steps != nil, "source": s.Source != "",
			"path": s.Path != "", "locator": s.Locator != "", "options": s.Options != nil, "full": s.Full} {
			if given && !set[field] {
				return fault.Invalid(field, "is not a field of a "+s.Type+" job")
			}
		}
		return nil
	}
	job := store.Job{ID: uuid.NewString(), Kind: s.Type, RequestedBy: by, Priority: store.DefaultPriority(s.Type, s.Emergency)}
	var input any
	switch s.Type {
	case store.JobCheckpoint:
		if err := only("payload", "emergency"); err != nil {
			return nil, err
		}
		payload := s.Payload
		// Over MCP a payload may be a JSON string of the object.
		var str string
		if json.Unmarshal(payload, &str) == nil {
			if !json.Valid([]byte(str)) {
				return nil, fault.Invalid("payload", "is a string that is not valid JSON")
			}
			payload = json.RawMessage(str)
		}
		if _, err := store.ParseCheckpoint(payload, s.MCP); err != nil {
			return nil, err
		}
		input = CheckpointInput{Payload: payload, Emergency: s.Emergency, MCP: s.MCP}
	case store.JobAudit:
		if err := only("wing"); err != nil {
			return nil, err
		}
		if s.Wing != "" {
			if err := j.DB.View(ctx, func(r store.Reader) error { _, err := optionalWing(r, s.Wing); return err }); err != nil {
				return nil, err
			}
		}
		input = AuditInput{Wing: s.Wing}
	case store.JobRepair:
		if err := only("dry_run", "based_on_job"); err != nil {
			return nil, err
		}
		in := RepairInput{DryRun: true, BasedOnJob: s.BasedOnJob}
		if s.DryRun != nil {
			in.DryRun = *s.DryRun
		}
		if s.BasedOnJob != "" {
			if err := j.checkAudit(ctx, s.BasedOnJob); err != nil {
				return nil, err
			}
			in.BasedOnJob, _ = store.CanonicalUUID(s.BasedOnJob)
		}
		input = in
	case store.JobDemo:
		if err := only("steps"); err != nil {
			return nil, err
		}
		in := DemoInput{}
		if s.Steps != nil {
			if *s.Steps < 1 || *s.Steps > len(demoSample) {
				return nil, fault.Invalid("steps", fmt.Sprintf("must be between 1 and %d", len(demoSample)))
			}
			in.Steps = *s.Steps
		}
		input = in
	case store.JobEmbed:
		if err := only("wing"); err != nil {
			return nil, err
		}
		if j.Vectors == nil || j.Vectors.Default == "" {
			return nil, fault.New(fault.EmbedNotConfigured, "embed jobs need a default embedding profile, and none is configured",
				"add [embedding.profiles.<name>] and embedding.default to the configuration, then restart")
		}
		if s.Wing != "" {
			if err := j.DB.View(ctx, func(r store.Reader) error { _, err := optionalWing(r, s.Wing); return err }); err != nil {
				return nil, err
			}
		}
		input = EmbedInput{Wing: s.Wing, Profile: j.Vectors.Default}
	case store.JobExtract:
		if err := only("wing"); err != nil {
			return nil, err
		}
		return nil, fault.New(fault.ExtractNotConfigured, "extract jobs need an extraction provider, and none is configured",
			"extraction arrives with the knowledge graph")
	case store.JobMine:
		if err := only("source", "path", "locator", "options", "full", "wing"); err != nil {
			return nil, err
		}
		if (s.Source == "") == (s.Path == "") {
			return nil, fault.Invalid("path", "give exactly one of path or source")
		}
		if s.Path != "" && !filepath.IsAbs(s.Path) {
			return nil, fault.Invalid("path", "must be absolute")
		}
		return nil, fault.New(fault.InputInvalid, "mining is not available in this version of loci",
			"mine jobs arrive with the mining issue; use a checkpoint job or POST /api/wings/{wing}/rooms/{room}/drawers meanwhile")
	case "":
		return nil, fault.Invalid("type", "is required: one of checkpoint, audit, repair, demo, mine, embed, extract")
	default:
		return nil, fault.Invalid("type", fmt.Sprintf("%q is not one of checkpoint, audit, repair, demo, mine, embed, extract", s.Type))
	}
	b, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	job.Input = b
	v, err := j.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		next, err := store.Apply(job, store.JobEvent{Kind: store.EvSubmit, At: tx.Now()})
		if err != nil {
			return nil, err
		}
		if err := tx.PutJob(&next, nil); err != nil {
			return nil, err
		}
		return &next, tx.Log(store.ChangeJob, store.ActionCreated, next.ID)
	})
	if err != nil {
		return nil, err
	}
	j.kick()
	return v.(*store.Job), nil
}

func (j *Jobs) checkAudit(ctx context.Context, id string) error {
	bad := func(why string) error {
		return fault.Newf(fault.RepairBasedOnJobInvalid, "name a completed audit job (GET /api/jobs?kind=audit)", "based_on_job %q %s", id, why)
	}
	cid, ok := store.CanonicalUUID(id)
	if !ok {
		return bad("is not a job id")
	}
	var job *store.Job
	if err := j.DB.View(ctx, func(r store.Reader) error { var err error; job, err = r.Job(cid); return err }); err != nil {
		return err
	}
	switch {
	case job == nil:
		return bad("does not exist")
	case job.Kind != store.JobAudit:
		return bad("is a " + job.Kind + " job, not an audit")
	case job.Status != store.JobCompleted:
		return bad("is " + job.Status + ", not finished")
	}
	return nil
}

// Get reads one job.
func (j *Jobs) Get(ctx context.Context, id string) (*store.Job, error) {
	cid, err := store.CheckJobID(id)
	if err != nil {
		return nil, err
	}
	var job *store.Job
	err = j.DB.View(ctx, func(r store.Reader) error {
		job, err = r.Job(cid)
		return err
	})
	if err == nil && job == nil {
		err = jobNotFound(cid, nil)
	}
	return job, err
}

// List lists jobs newest first, filtered by status and kind; limit 0 means
// every job.
func (j *Jobs) List(ctx context.Context, status, kind string, limit int) ([]store.Job, error) {
	if status != "" {
		if err := store.CheckJobStatus(status); err != nil {
			return nil, err
		}
	}
	if kind != "" {
		if err := store.CheckJobKind(kind); err != nil {
			return nil, err
		}
	}
	out := []store.Job{}
	match := func(job *store.Job) bool {
		return (status == "" || job.Status == status) && (kind == "" || job.Kind == kind)
	}
	err := j.DB.View(ctx, func(r store.Reader) error {
		if status == store.JobQueued || status == store.JobRunning || status == store.JobPaused {
			// The few active jobs, not every job ever run: oldest first,
			// so turned around.
			err := r.ActiveJobs(func(job *store.Job) bool {
				if match(job) {
					out = append(out, *job)
				}
				return true
			})
			slices.Reverse(out)
			if limit > 0 && len(out) > limit {
				out = out[:limit]
			}
			return err
		}
		return r.Jobs(func(job *store.Job) bool {
			if match(job) {
				out = append(out, *job)
			}
			return limit == 0 || len(out) < limit
		})
	})
	return out, err
}

// control applies a user's action to a job in one write: event for a
// queued, paused or failed job, request for a running one.
func (j *Jobs) control(ctx context.Context, id string, ev, request store.JobEventKind, reason int32) (*store.Job, error) {
	cid, err := store.CheckJobID(id)
	if err != nil {
		return nil, err
	}
	j.awaitRun(ctx, cid)
	v, err := j.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		job, err := tx.Job(cid)
		if err != nil || job == nil {
			return nil, jobNotFound(cid, err)
		}
		kind := ev
		if job.Status == store.JobRunning && request != "" {
			if job.LeaseOwner == j.Owner && !j.local(cid) {
				return nil, fault.Newf(fault.JobsOrphaned, "restart the daemon: recovery re-queues it",
					"job %s is recorded running but no worker runs it", cid)
			}
			kind = request
		}
		next, err := store.Apply(*job, store.JobEvent{Kind: kind, At: tx.Now()})
		if err != nil {
			return nil, err
		}
		if err := tx.PutJob(&next, job); err != nil {
			return nil, err
		}
		return &next, tx.Log(store.ChangeJob, string(kind), next.ID)
	})
	if err != nil {
		return nil, err
	}
	job := v.(*store.Job)
	if job.Status == store.JobRunning && reason != stopNone {
		j.mu.Lock()
		if r := j.runs[cid]; r != nil {
			r.request(reason)
		}
		j.mu.Unlock()
	}
	if job.Status == store.JobQueued {
		j.kick()
	}
	return job, nil
}

// awaitRun waits (up to a second) for the worker of a job this daemon has
// just claimed: the claim commits before the worker is registered.
func (j *Jobs) awaitRun(ctx context.Context, id string) {
	var job *store.Job
	_ = j.DB.View(ctx, func(r store.Reader) error { job, _ = r.Job(id); return nil })
	if job == nil || job.Status != store.JobRunning || job.LeaseOwner != j.Owner {
		return
	}
	for deadline := time.Now().Add(time.Second); !j.local(id) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

func (j *Jobs) local(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.runs[id]
	return ok
}

// Pause asks a running job to pause at its next unit boundary.
func (j *Jobs) Pause(ctx context.Context, id string) (*store.Job, error) {
	return j.control(ctx, id, store.EvPause, store.EvRequestPause, stopPause)
}

// Resume queues a paused job again.
func (j *Jobs) Resume(ctx context.Context, id string) (*store.Job, error) {
	return j.control(ctx, id, store.EvResume, "", stopNone)
}

// Retry queues a failed job again.
func (j *Jobs) Retry(ctx context.Context, id string) (*store.Job, error) {
	return j.control(ctx, id, store.EvRetry, "", stopNone)
}

// Cancel cancels a queued or paused job, or asks a running one to stop.
func (j *Jobs) Cancel(ctx context.Context, id string) (*store.Job, error) {
	return j.control(ctx, id, store.EvCancel, store.EvRequestCancel, stopCancel)
}

// ForceCancelResult is the answer of a force-cancel.
type ForceCancelResult struct {
	Status string     `json:"status"`
	Job    *store.Job `json:"job"`
}

// ForceCancel aborts a locally owned running mine job: the cancel request
// is recorded, the worker aborted, and the answer given only after it
// stopped.
func (j *Jobs) ForceCancel(ctx context.Context, id string) (*ForceCancelResult, error) {
	job, err := j.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if job.Kind != store.JobMine || job.Status != store.JobRunning {
		return nil, fault.Newf(fault.JobsTransitionInvalid, "force-cancel applies to a running mine job; use POST /api/jobs/{id}/cancel",
			"cannot force-cancel a %s %s job", job.Status, job.Kind)
	}
	if job.LeaseOwner != j.Owner {
		return nil, fault.Newf(fault.JobsTransitionInvalid, "force-cancel it on the daemon that runs it",
			"job %s is run by %s, not this daemon", job.ID, job.LeaseOwner)
	}
	j.awaitRun(ctx, job.ID)
	j.mu.Lock()
	r := j.runs[job.ID]
	j.mu.Unlock()
	if r == nil {
		return nil, fault.Newf(fault.JobsOrphaned, "restart the daemon: recovery re-queues it", "job %s has no worker", job.ID)
	}
	if _, err := j.Cancel(ctx, job.ID); err != nil {
		return nil, err
	}
	r.abort()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(j.Config.DrainTimeout + 5*time.Second):
		return nil, fault.Newf(fault.ServerFailed, "see the daemon log", "the worker of job %s did not stop", job.ID)
	}
	job, err = j.Get(ctx, job.ID)
	if err != nil {
		return nil, err
	}
	return &ForceCancelResult{Status: "force_cancelled", Job: job}, nil
}

// Busy is the palace::busy guard: deletes of wings and rooms wait while a
// mine, checkpoint or applying repair job is queued, running or paused.
func (j *Jobs) Busy(ctx context.Context, wingID, roomID string) error {
	var blocker *store.Job
	err := j.DB.View(ctx, func(r store.Reader) error {
		return r.ActiveJobs(func(job *store.Job) bool {
			if job.Status != store.JobQueued && job.Status != store.JobRunning && job.Status != store.JobPaused {
				return true
			}
			writing := job.Kind == store.JobMine || job.Kind == store.JobCheckpoint
			if job.Kind == store.JobRepair {
				var in RepairInput
				raw, _ := r.JobInput(job.ID)
				_ = json.Unmarshal(raw, &in)
				writing = !in.DryRun
			}
			if writing {
				blocker = job
				return false
			}
			return true
		})
	})
	if err != nil {
		return err
	}
	if blocker != nil {
		return fault.Newf(fault.PalaceBusy, "wait for job "+blocker.ID+" to finish, or cancel it, then delete again",
			"a %s job (%s) that writes drawers is %s; nothing was deleted", blocker.Kind, blocker.ID, blocker.Status)
	}
	return nil
}

// optionalWing resolves a job's optional wing to its id ("" when none is
// given); an unknown wing is palace::wing_not_found.
func optionalWing(r store.Reader, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	w, err := store.FindWing(r, ref)
	if err != nil {
		return "", err
	}
	return w.ID, nil
}

package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Submit validates a submission through its kind and queues the job.
func (j *Jobs) Submit(ctx context.Context, s Submission) (*store.Job, error) {
	job, _, err := j.submit(ctx, s, false)
	return job, err
}

// Join submits s unless a queued job of the same kind, lane and input is
// waiting: then that job is returned and coalesced is true. A running job
// does not count, so a request made while one runs queues one follow-up
// (and further requests join it). Triggers ask this way.
func (j *Jobs) Join(ctx context.Context, s Submission) (job *store.Job, coalesced bool, err error) {
	return j.submit(ctx, s, true)
}

func (j *Jobs) submit(ctx context.Context, s Submission, join bool) (*store.Job, bool, error) {
	if s.Channel == "" {
		s.Channel = store.ByUnknown
	}
	by, err := store.CheckRequestedBy(s.RequestedBy, s.Channel)
	if err != nil {
		return nil, false, err
	}
	if s.Automatic {
		by = store.ByDaemon
	}
	k, err := j.kind(s.Type, "type")
	if err != nil {
		return nil, false, err
	}
	plan, err := k.decode(ctx, s)
	if err != nil {
		return nil, false, err
	}
	job := store.Job{ID: uuid.NewString(), Kind: k.Name, RequestedBy: by, Priority: plan.Priority, Lane: plan.Lane, Node: j.node(plan.Local)}
	b, err := json.Marshal(plan.Input)
	if err != nil {
		return nil, false, err
	}
	job.Input = b
	type joined struct{ job *store.Job }
	v, err := j.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		if join {
			var same *store.Job
			err := tx.QueuedJobs(func(q *store.Job) bool {
				if q.Kind != job.Kind || q.Lane != job.Lane {
					return true
				}
				in, err := tx.JobInput(q.ID)
				if err == nil && bytes.Equal(in, job.Input) {
					same = q
					return false
				}
				return true
			})
			if err != nil {
				return nil, err
			}
			if same != nil {
				return joined{same}, nil
			}
		}
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
		return nil, false, err
	}
	if w, ok := v.(joined); ok {
		return w.job, true, nil
	}
	j.kick()
	return v.(*store.Job), false, nil
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
	return j.ListFiltered(ctx, JobFilter{Status: status, Kind: kind, Limit: limit})
}

// JobFilter narrows a job list: a status, a kind, whether the daemon
// queued the job on its own (nil: either), at most Limit (0: every job).
type JobFilter struct {
	Status, Kind string
	Automatic    *bool
	Limit        int
}

// ListFiltered lists the jobs f admits, newest first.
func (j *Jobs) ListFiltered(ctx context.Context, f JobFilter) ([]store.Job, error) {
	status, kind, limit := f.Status, f.Kind, f.Limit
	if status != "" {
		if err := store.CheckJobStatus(status); err != nil {
			return nil, err
		}
	}
	if kind != "" {
		if _, err := j.kind(kind, "kind"); err != nil {
			return nil, err
		}
	}
	out := []store.Job{}
	match := func(job *store.Job) bool {
		return (status == "" || job.Status == status) && (kind == "" || job.Kind == kind) &&
			(f.Automatic == nil || *f.Automatic == (job.RequestedBy == store.ByDaemon))
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
	v, err := j.Sys.Write(Bookkeeping(ctx), func(tx store.Tx) (any, error) {
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
	Status string
	Job    *store.Job
}

// ForceCancel aborts a locally owned running job of an abortable kind
// (Kind.Abortable: the spec's mine job): the cancel request
// is recorded, the worker aborted, and the answer given only after it
// stopped.
func (j *Jobs) ForceCancel(ctx context.Context, id string) (*ForceCancelResult, error) {
	job, err := j.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if k, ok := j.kinds[job.Kind]; !ok || !k.Abortable || job.Status != store.JobRunning {
		return nil, fault.Newf(fault.JobsTransitionInvalid, "force-cancel applies to a running job of a kind that can be aborted ("+j.abortable()+"); cancel others instead",
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

// abortable names the kinds whose running jobs may be force-cancelled.
func (j *Jobs) abortable() string {
	var out []string
	for _, n := range j.order {
		if j.kinds[n].Abortable {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none registered"
	}
	return strings.Join(out, ", ")
}

// Busy is the palace::busy guard: deletes of wings and rooms wait while a
// job of a kind that writes drawers (Kind.Writes: mine, checkpoint, an
// applying repair) is queued, running or paused.
func (j *Jobs) Busy(ctx context.Context, wingID, roomID string) error {
	var blocker *store.Job
	err := j.DB.View(ctx, func(r store.Reader) error {
		return r.ActiveJobs(func(job *store.Job) bool {
			if job.Status != store.JobQueued && job.Status != store.JobRunning && job.Status != store.JobPaused {
				return true
			}
			k, ok := j.kinds[job.Kind]
			writing := ok && k.Writes != nil && k.Writes(func() json.RawMessage {
				raw, _ := r.JobInput(job.ID)
				return raw
			})
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

package kinds

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// AuditInput is an audit (or extract) job's input.
type AuditInput struct {
	Wing string `json:"wing,omitempty"`
}

// RepairInput is a repair job's input.
type RepairInput struct {
	DryRun     bool   `json:"dry_run"`
	BasedOnJob string `json:"based_on_job,omitempty"`
}

// auditParams are an audit submission's fields.
type auditParams struct {
	Wing string `json:"wing,omitempty" jsonschema:"only this wing (name or UUID)"`
}

// repairParams are a repair submission's fields.
type repairParams struct {
	DryRun     *bool  `json:"dry_run,omitempty" jsonschema:"true (the default): only report the orphan drawers a repair would remove; false: remove them"`
	BasedOnJob string `json:"based_on_job,omitempty" jsonschema:"the id (a UUID) of a completed audit job: the repair looks only at the orphans it found (checked again live)"`
}

// Audit is the audit kind: an integrity report of the palace (orphan
// drawers, dangling job references, exhausted jobs, missing vectors).
func Audit(db store.DB, v *actors.Vectors) actors.Kind {
	return actors.Define(KindAudit, actors.Spec[auditParams]{
		Tool: &actors.Tool{Name: "loci_audit", Description: "Submit an audit job (integrity report); returns the job at once."},
		Decode: func(ctx context.Context, _ actors.Submission, p auditParams) (actors.Plan, error) {
			if err := checkWing(ctx, db, p.Wing); err != nil {
				return actors.Plan{}, err
			}
			return actors.Plan{Input: AuditInput{Wing: p.Wing}, Priority: store.PriorityNormal}, nil
		},
		Run: func(ctx context.Context, r *actors.Run) (any, error) { return audit(ctx, r, v) },
	})
}

// Repair is the repair kind: remove orphan drawers (a dry run unless
// dry_run is false), optionally only those a completed audit found.
func Repair(db store.DB) actors.Kind {
	return actors.Define(KindRepair, actors.Spec[repairParams]{
		Writes: func(input func() json.RawMessage) bool {
			var in RepairInput
			_ = json.Unmarshal(input(), &in)
			return !in.DryRun
		},
		Tool: &actors.Tool{Name: "loci_repair", Description: "Submit a repair job (a dry run unless dry_run is false); returns the job at once.",
			Destructive: true, Defaults: map[string]any{"dry_run": true}},
		Decode: func(ctx context.Context, _ actors.Submission, p repairParams) (actors.Plan, error) {
			in := RepairInput{DryRun: true}
			if p.DryRun != nil {
				in.DryRun = *p.DryRun
			}
			if p.BasedOnJob != "" {
				if err := checkAudit(ctx, db, p.BasedOnJob); err != nil {
					return actors.Plan{}, err
				}
				in.BasedOnJob, _ = store.CanonicalUUID(p.BasedOnJob)
			}
			return actors.Plan{Input: in, Priority: store.PriorityNormal}, nil
		},
		Run: repair,
	})
}

// checkAudit checks that id names a completed audit job (a repair's
// based_on_job).
func checkAudit(ctx context.Context, db store.DB, id string) error {
	bad := func(why string) error {
		return fault.Newf(fault.RepairBasedOnJobInvalid, "name a completed audit job (list the jobs of kind audit)", "based_on_job %q %s", id, why)
	}
	cid, ok := store.CanonicalUUID(id)
	if !ok {
		return bad("is not a job id")
	}
	var job *store.Job
	if err := db.View(ctx, func(r store.Reader) error { var err error; job, err = r.Job(cid); return err }); err != nil {
		return err
	}
	switch {
	case job == nil:
		return bad("does not exist")
	case job.Kind != KindAudit:
		return bad("is a " + job.Kind + " job, not an audit")
	case job.Status != store.JobCompleted:
		return bad("is " + job.Status + ", not finished")
	}
	return nil
}

// AuditResult is an audit job's report.
type AuditResult struct {
	Wing                    string        `json:"wing,omitempty"`
	DrawersScanned          int           `json:"drawers_scanned"`
	OrphanDrawers           []string      `json:"orphan_drawers"`
	DanglingJobRefs         []DanglingRef `json:"dangling_job_refs"`
	ExhaustedJobs           []string      `json:"exhausted_jobs"`
	RunningJobs             int           `json:"running_jobs"`
	DrawersWithoutEmbedding int           `json:"drawers_without_embedding"`
}

// DanglingRef is a drawer whose provenance names a job that does not exist.
type DanglingRef struct {
	Drawer string `json:"drawer"`
	JobID  string `json:"job_id"`
}

// RepairResult is a repair job's report.
type RepairResult struct {
	DryRun        bool     `json:"dry_run"`
	BasedOnJob    string   `json:"based_on_job,omitempty"`
	OrphanDrawers []string `json:"orphan_drawers"`
	Removed       int      `json:"removed"`
}

// auditEvery is how many drawers an audit scans between stop checks.
const auditEvery = 512

// orphans scans the palace for drawers whose room or wing is gone.
func orphans(r store.Reader, wingID string, stopping func() bool, visit func(d *store.Drawer, orphan bool)) error {
	rooms := map[string]*store.Room{}
	wings := map[string]bool{}
	n := 0
	var stopped bool
	err := r.EachDrawer(func(d *store.Drawer) bool {
		if n++; n%auditEvery == 0 && stopping() {
			stopped = true
			return false
		}
		if wingID != "" && d.WingID != wingID {
			return true
		}
		rm, seen := rooms[d.RoomID]
		if !seen {
			rm, _ = r.Room(d.RoomID)
			rooms[d.RoomID] = rm
		}
		orphan := rm == nil
		if !orphan {
			ok, seen := wings[rm.WingID]
			if !seen {
				w, _ := r.Wing(rm.WingID)
				ok = w != nil
				wings[rm.WingID] = ok
			}
			orphan = !ok
		}
		visit(d, orphan)
		return true
	})
	if stopped {
		return actors.ErrStopped
	}
	return err
}

func audit(ctx context.Context, r *actors.Run, v *actors.Vectors) (any, error) {
	var in AuditInput
	_ = json.Unmarshal(r.Job.Input, &in)
	res := AuditResult{Wing: in.Wing, OrphanDrawers: []string{}, DanglingJobRefs: []DanglingRef{}, ExhaustedJobs: []string{}}
	err := r.DB().View(ctx, func(rd store.Reader) error {
		wingID, err := optionalWing(rd, in.Wing)
		if err != nil {
			return err
		}
		jobs := map[string]bool{}
		err = rd.Jobs(func(j *store.Job) bool {
			jobs[j.ID] = true
			if j.Status == store.JobRunning {
				res.RunningJobs++
			}
			if j.Status == store.JobFailed && j.RecoveryAttempts >= store.MaxRecoveryAttempts {
				res.ExhaustedJobs = append(res.ExhaustedJobs, j.ID)
			}
			return true
		})
		if err != nil {
			return err
		}
		return orphans(rd, wingID, r.Stopping, func(d *store.Drawer, orphan bool) {
			res.DrawersScanned++
			if orphan {
				res.OrphanDrawers = append(res.OrphanDrawers, d.ID)
			}
			if id := d.Provenance.JobID; id != "" && !jobs[id] {
				res.DanglingJobRefs = append(res.DanglingJobRefs, DanglingRef{Drawer: d.ID, JobID: id})
			}
			if d.Current() && !hasVector(rd, v, d.ID) {
				res.DrawersWithoutEmbedding++ // informational
			}
		})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func repair(ctx context.Context, r *actors.Run) (any, error) {
	var in RepairInput
	_ = json.Unmarshal(r.Job.Input, &in)
	res := RepairResult{DryRun: in.DryRun, BasedOnJob: in.BasedOnJob, OrphanDrawers: []string{}}
	var narrow map[string]bool
	if in.BasedOnJob != "" {
		var audit AuditResult
		err := r.DB().View(ctx, func(rd store.Reader) error {
			j, err := rd.Job(in.BasedOnJob)
			if err != nil || j == nil {
				return err
			}
			return json.Unmarshal(j.Result, &audit)
		})
		if err != nil {
			return nil, err
		}
		narrow = map[string]bool{}
		for _, id := range audit.OrphanDrawers {
			narrow[id] = true
		}
	}
	// Always a live scan: the audit only narrows it.
	err := r.DB().View(ctx, func(rd store.Reader) error {
		return orphans(rd, "", r.Stopping, func(d *store.Drawer, orphan bool) {
			if orphan && (narrow == nil || narrow[d.ID]) {
				res.OrphanDrawers = append(res.OrphanDrawers, d.ID)
			}
		})
	})
	if err != nil {
		return nil, err
	}
	if in.DryRun {
		return res, nil
	}
	for ids := range slices.Chunk(res.OrphanDrawers, 256) {
		if r.Stopping() {
			return nil, actors.ErrStopped
		}
		n := 0
		err := r.Write(ctx, func(tx store.Tx) error {
			n = 0
			for _, id := range ids {
				d, err := tx.Drawer(id)
				if err != nil {
					return err
				}
				if d == nil {
					continue
				}
				if rm, err := tx.Room(d.RoomID); err != nil {
					return err
				} else if rm != nil {
					if w, err := tx.Wing(rm.WingID); err != nil || w != nil {
						continue // no longer an orphan
					}
				}
				if err := store.DeleteDrawer(tx, d); err != nil {
					return err
				}
				n++
			}
			return nil
		}, nil, store.Progress{Current: int64(res.Removed), Message: "orphan drawers removed"})
		if err != nil {
			return nil, fault.As(err)
		}
		res.Removed += n
	}
	return res, nil
}

// hasVector reports a drawer's vector in the default profile (none without
// a profile).
func hasVector(r store.Reader, v *actors.Vectors, id string) bool {
	if v == nil || v.Default == "" {
		return false
	}
	return v.Has(r, v.Profiles[v.Default], id)
}

package actors

import (
	"context"
	"time"

	"github.com/loci-dev/loci/store"
)

// embedKind is the kind the runtime queues to fill missing vectors
// (actors/kinds registers it).
const embedKind = "embed"

// EmbedReport is an embed job's result as the runtime reads it: one that
// embedded something is followed by another check for missing vectors.
type EmbedReport interface{ EmbeddedCount() int }

// embedBackoff is how long after a failed embed job no automatic one is
// queued.
const embedBackoff = 5 * time.Minute

// EnsureEmbed queues an embed job for the default profile unless one is
// already queued, running or paused (writes, drawer-writing jobs and the
// start call it).
func (j *Jobs) EnsureEmbed(ctx context.Context) {
	if j.Vectors == nil || j.Vectors.Default == "" || j.draining.Load() {
		return
	}
	// Nothing missing: as many vectors in the profile's index as drawers
	// (the palace's counts, read again only after a change).
	c, err := j.Palace.Counts(ctx)
	if ix := j.Vectors.Index(j.Vectors.Default); err == nil && ix != nil && ix.Len() >= c.DrawersStored {
		return
	}
	pending := false
	var last *store.Job // the newest embed job that failed or completed
	_ = j.DB.View(ctx, func(r store.Reader) error {
		err := r.ActiveJobs(func(job *store.Job) bool {
			pending = job.Kind == embedKind
			return !pending
		})
		if err != nil || pending {
			return err
		}
		// Newest first, and an embed job is queued only when none is
		// pending: the first one found ended last.
		return r.Jobs(func(job *store.Job) bool {
			if job.Kind == embedKind && job.FinishedAt != nil && (job.Status == store.JobFailed || job.Status == store.JobCompleted) {
				last = job
				return false
			}
			return true
		})
	})
	if pending {
		return
	}
	// A provider that is down fails every embed job: wait before the next
	// automatic one rather than fill the job list with failures (a retry
	// or a new submission is never held back).
	if last != nil && last.Status == store.JobFailed && time.Since(*last.FinishedAt) < embedBackoff {
		j.Log.Debug("embed job not queued: the last one failed", "failed_at", *last.FinishedAt)
		return
	}
	if _, err := j.Submit(ctx, Submission{Type: embedKind, Automatic: true}); err != nil {
		j.Log.Warn("queueing an embed job failed", "err", err)
	}
}

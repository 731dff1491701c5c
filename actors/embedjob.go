package actors

import (
	"context"
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/fault"
)

// EmbedInput is an embed job's input.
type EmbedInput struct {
	Wing    string `json:"wing,omitempty"`
	Profile string `json:"profile"`
}

// EmbedResult is an embed job's report.
type EmbedResult struct {
	Profile  string `json:"profile"`
	Missing  int    `json:"missing"`
	Embedded int    `json:"embedded"`
}

// embedHandler fills the vectors a profile lacks (or holds from another
// provider, model or pipeline), in the provider's batches. It keeps no
// checkpoint: a restart finds what is still missing.
func embedHandler(ctx context.Context, r *Run) (any, error) {
	var in EmbedInput
	_ = json.Unmarshal(r.Job.Input, &in)
	v := r.jobs.Vectors
	if v == nil {
		return nil, fault.New(fault.EmbedNotConfigured, "no embedding profile is configured", "configure one and retry the job")
	}
	p, err := v.Profile(in.Profile)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fault.New(fault.EmbedNotConfigured, "no default embedding profile is configured", "set embedding.default")
	}
	var missing []string
	// The drawers are read room by room from the keys alone, and a drawer
	// in the profile's index has a vector of this provider, model and
	// pipeline (the index takes no other): only the others are looked up
	// in the store. Decoding every drawer and every stored vector cost
	// 2.1 s for 100,000 drawers with nothing missing.
	ix := v.Index(p.Name)
	err = r.jobs.DB.View(ctx, func(rd store.Reader) error {
		wingID, err := optionalWing(rd, in.Wing)
		if err != nil {
			return err
		}
		wings, err := rd.Wings()
		if err != nil {
			return err
		}
		for _, w := range wings {
			if wingID != "" && w.ID != wingID {
				continue
			}
			rooms, err := rd.Rooms(w.ID)
			if err != nil {
				return err
			}
			for _, room := range rooms {
				ids, err := rd.DrawerIDs(room.ID)
				if err != nil {
					return err
				}
				for _, id := range ids {
					if ix != nil && ix.Has(id) {
						continue
					}
					if e, err := rd.Embedding(id, p.Name); err == nil && e != nil && matches(p, e) {
						continue
					}
					missing = append(missing, id)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := EmbedResult{Profile: p.Name, Missing: len(missing)}
	total := int64(len(missing))
	for start := 0; start < len(missing); start += p.BatchSize {
		if r.Stopping() {
			return nil, ErrStopped
		}
		ids := missing[start:min(start+p.BatchSize, len(missing))]
		var texts []string
		var live []string
		_ = r.jobs.DB.View(ctx, func(rd store.Reader) error {
			for _, id := range ids {
				if d, _ := rd.Drawer(id); d != nil {
					texts = append(texts, d.Content)
					live = append(live, id)
				}
			}
			return nil
		})
		vecs, err := p.EmbedChecked(ctx, texts)
		if err != nil {
			return nil, err
		}
		n := 0
		err = r.Write(ctx, func(tx store.Tx) error {
			n = 0
			id := p.Identity()
			for i, drawer := range live {
				if d, err := tx.Drawer(drawer); err != nil || d == nil {
					continue // deleted meanwhile
				}
				e := &store.Embedding{DrawerID: drawer, Profile: p.Name, Provider: id.Provider, Model: id.Model,
					Dimension: id.Dimension, Pipeline: id.Pipeline, CreatedAt: tx.Now(), Vector: vecs[i]}
				if err := tx.PutEmbedding(e); err != nil {
					return err
				}
				n++
			}
			return nil
		}, nil, store.Progress{Current: int64(start + len(ids)), Total: &total, Message: "drawers embedded"})
		if err != nil {
			return nil, err
		}
		res.Embedded += n
	}
	v.Kick()
	return res, nil
}

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
			pending = job.Kind == store.JobEmbed
			return !pending
		})
		if err != nil || pending {
			return err
		}
		// Newest first, and an embed job is queued only when none is
		// pending: the first one found ended last.
		return r.Jobs(func(job *store.Job) bool {
			if job.Kind == store.JobEmbed && job.FinishedAt != nil && (job.Status == store.JobFailed || job.Status == store.JobCompleted) {
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
	if _, err := j.Submit(ctx, Submission{Type: store.JobEmbed}, store.ByUnknown); err != nil {
		j.Log.Warn("queueing an embed job failed", "err", err)
	}
}

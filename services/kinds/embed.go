package kinds

import (
	"context"
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/fault"
	embedding "github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/store"
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

// embedParams are an embed submission's fields.
type embedParams struct {
	Wing string `json:"wing,omitempty" jsonschema:"only this wing (name or UUID)"`
}

// Embed is the embed kind: fill the default profile's missing vectors
// (v; nil: no embedding profile). The daemon queues one itself after
// drawers are filed (EnsureEmbed).
func Embed(j *actors.Jobs, v *actors.Vectors) actors.Kind {
	return actors.Define(KindEmbed, actors.Spec[embedParams]{
		Background: true,
		Decode: func(ctx context.Context, s actors.Submission, p embedParams) (actors.Plan, error) {
			if v == nil || v.Default == "" {
				return actors.Plan{}, fault.New(fault.EmbedNotConfigured, "embed jobs need a default embedding profile, and none is configured",
					"add [embedding.profiles.<name>] and embedding.default to the configuration, then restart")
			}
			if err := checkWing(ctx, j.DB, p.Wing); err != nil {
				return actors.Plan{}, err
			}
			return actors.Plan{Input: EmbedInput{Wing: p.Wing, Profile: v.Default}, Priority: store.PriorityBackground}, nil
		},
		Run: func(ctx context.Context, r *actors.Run) (any, error) {
			// During a switch of the default profile, the profile still
			// serving searches gets the new drawers' vectors first.
			if v != nil {
				var in EmbedInput
				_ = json.Unmarshal(r.Job.Input, &in)
				if from, to, ok := v.Switching(); ok && to == in.Profile {
					if _, err := embedProfile(ctx, r, v, from, in.Wing); err != nil {
						return nil, err
					}
				}
			}
			return embed(ctx, r, v)
		},
		Follow: func(ctx context.Context, done actors.Completed) {
			if done.Kind.Files {
				// New drawers: fill their vectors.
				EnsureEmbed(ctx, j, v)
				return
			}
			if res, ok := done.Result.(EmbedResult); ok && res.Embedded > 0 && v != nil {
				// Drawers filed while it ran were not in its list, and the
				// settle that noticed them found it still pending. The
				// index first takes the vectors the job stored (else it
				// looks short of them and an empty job follows).
				var last uint64
				_ = j.DB.View(ctx, func(rd store.Reader) error { last, _ = rd.LastSeq(); return nil })
				v.Sync(ctx, last, 2*time.Second)
				EnsureEmbed(ctx, j, v)
			}
		},
	})
}

// embedBackoff is how long after a failed embed job no automatic one is
// queued.
const embedBackoff = 5 * time.Minute

// EnsureEmbed is the one rule that queues an embed job on the daemon's
// own: for the default profile of v (nil: none), unless its index holds a
// vector for every drawer, an embed job is already queued, running or
// paused, the runtime is stopping, or the last one failed less than
// embedBackoff ago. The embed kind follows the jobs that file drawers and
// its own jobs with it; the vector follower calls it once writes of
// drawers settle and once loaded; the daemon at a start after the disk
// had no space.
func EnsureEmbed(ctx context.Context, j *actors.Jobs, v *actors.Vectors) {
	if v == nil || v.Default == "" || j.Draining() {
		return
	}
	// Nothing missing: as many vectors in the profile's index as drawers.
	var c store.Counts
	err := j.DB.View(ctx, func(r store.Reader) (err error) { c, err = r.Counts(); return err })
	if ix := v.Index(v.Default); err == nil && ix != nil && ix.Len() >= c.DrawersStored {
		return
	}
	pending := false
	var last *store.Job // the newest embed job that failed or completed
	_ = j.DB.View(ctx, func(r store.Reader) error {
		err := r.ActiveJobs(func(job *store.Job) bool {
			pending = job.Kind == KindEmbed
			return !pending
		})
		if err != nil || pending {
			return err
		}
		// Newest first, and an embed job is queued only when none is
		// pending: the first one found ended last.
		return r.Jobs(func(job *store.Job) bool {
			if job.Kind == KindEmbed && job.FinishedAt != nil && (job.Status == store.JobFailed || job.Status == store.JobCompleted) {
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
	if _, err := j.Submit(ctx, actors.Submission{Type: KindEmbed, Automatic: true}); err != nil {
		j.Log.Warn("queueing an embed job failed", "err", err)
	}
}

// embed fills the vectors a profile lacks (or holds from another
// provider, model or pipeline), in the provider's batches. It keeps no
// checkpoint: a restart finds what is still missing.
func embed(ctx context.Context, r *actors.Run, v *actors.Vectors) (any, error) {
	var in EmbedInput
	_ = json.Unmarshal(r.Job.Input, &in)
	if v == nil {
		return nil, fault.New(fault.EmbedNotConfigured, "no embedding profile is configured", "configure one and retry the job")
	}
	return embedProfile(ctx, r, v, in.Profile, in.Wing)
}

// embedProfile fills one profile's missing vectors.
func embedProfile(ctx context.Context, r *actors.Run, v *actors.Vectors, profile, wing string) (any, error) {
	in := EmbedInput{Profile: profile, Wing: wing}
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
	err = r.DB().View(ctx, func(rd store.Reader) error {
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
					if !v.Has(rd, p, id) {
						missing = append(missing, id)
					}
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
			return nil, actors.ErrStopped
		}
		ids := missing[start:min(start+p.BatchSize, len(missing))]
		var texts []string
		var live []string
		_ = r.DB().View(ctx, func(rd store.Reader) error {
			for _, id := range ids {
				if d, _ := rd.Drawer(id); d != nil {
					texts = append(texts, d.Content)
					live = append(live, id)
				}
			}
			return nil
		})
		// Stored drawers: weighed once the palace's frequencies include
		// them (embedding.ForStored).
		vecs, err := p.EmbedChecked(embedding.ForStored(ctx), texts)
		if err != nil {
			return nil, err
		}
		n := 0
		err = r.Write(ctx, func(tx store.Tx) error {
			n = 0
			id := p.Identity()
			for i, drawer := range live {
				if ok, err := tx.HasDrawer(drawer); err != nil || !ok {
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
		if v.BatchDelay > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(v.BatchDelay):
			}
		}
	}
	v.Kick()
	return res, nil
}

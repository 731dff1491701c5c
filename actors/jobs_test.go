package actors

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
)

func newJobs(t testing.TB, cfg JobConfig) *Jobs {
	t.Helper()
	sys, db := newSystem(t)
	pal := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	j := NewJobs(db, sys, pal, slog.New(slog.DiscardHandler), cfg)
	pal.Locked = j.Busy
	return j
}

var testCfg = JobConfig{MaxConcurrency: 1, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second}

func waitStatus(t *testing.T, j *Jobs, id string, want ...string) *store.Job {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		job, err := j.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if job.Status == w {
				return job
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want %v", id, job.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A handler that panics fails its job; the runtime goes on.
func TestPanickingHandlerFailsOnlyItsJob(t *testing.T) {
	j := newJobs(t, testCfg)
	j.handlers[store.JobAudit] = func(context.Context, *Run) (any, error) { panic("boom") }
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	bad, err := j.Submit(context.Background(), Submission{Type: store.JobAudit}, store.ByCLI)
	if err != nil {
		t.Fatal(err)
	}
	job := waitStatus(t, j, bad.ID, store.JobFailed)
	if job.Error == "" {
		t.Fatalf("failed without a reason: %+v", job)
	}
	good, _ := j.Submit(context.Background(), Submission{Type: store.JobDemo}, store.ByCLI)
	waitStatus(t, j, good.ID, store.JobCompleted)
}

// Claim order: highest priority first, then oldest.
func TestClaimOrder(t *testing.T) {
	j := newJobs(t, testCfg)
	var mu sync.Mutex
	var order []string
	record := func(_ context.Context, r *Run) (any, error) {
		mu.Lock()
		order = append(order, r.Job.ID)
		mu.Unlock()
		return nil, nil
	}
	j.handlers[store.JobDemo], j.handlers[store.JobAudit] = record, record
	// Queue before the dispatcher starts, so that order is decided by the queue.
	normal1, _ := j.Submit(context.Background(), Submission{Type: store.JobDemo}, store.ByCLI)
	normal2, _ := j.Submit(context.Background(), Submission{Type: store.JobAudit}, store.ByCLI)
	critical, _ := j.Submit(context.Background(), Submission{Type: store.JobCheckpoint, Emergency: true,
		Payload: []byte(`{"items":[{"destination":"general","content":"urgent","tags":[],"source":{"kind":"manual"}}]}`)}, store.ByCLI)
	j.handlers[store.JobCheckpoint] = record
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{normal1.ID, normal2.ID, critical.ID} {
		waitStatus(t, j, id, store.JobCompleted)
	}
	want := []string{critical.ID, normal1.ID, normal2.ID}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("claim order %v, want %v", order, want)
		}
	}
}

// Pause, resume and cancel a running job; the stop request is honoured at
// the handler's next unit boundary, and cancel beats pause.
func TestPauseResumeCancelRunning(t *testing.T) {
	j := newJobs(t, JobConfig{MaxConcurrency: 2, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second})
	started := make(chan string, 4)
	proceed := make(chan struct{}, 4) // the handler looks at requests only once told to
	j.handlers[store.JobAudit] = func(ctx context.Context, r *Run) (any, error) {
		started <- r.Job.ID
		<-proceed
		for !r.Stopping() {
			time.Sleep(time.Millisecond)
		}
		return nil, ErrStopped
	}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	job, _ := j.Submit(context.Background(), Submission{Type: store.JobAudit}, store.ByCLI)
	<-started
	p, err := j.Pause(context.Background(), job.ID)
	if err != nil || !p.PauseRequested {
		t.Fatalf("pause: %+v %v", p, err)
	}
	proceed <- struct{}{}
	waitStatus(t, j, job.ID, store.JobPaused)
	if _, err := j.Resume(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := j.Pause(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
	c, err := j.Cancel(context.Background(), job.ID)
	if err != nil || !c.CancelRequested || !c.PauseRequested || c.Status != store.JobRunning {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	proceed <- struct{}{}
	done := waitStatus(t, j, job.ID, store.JobCancelled, store.JobPaused)
	if done.Status != store.JobCancelled {
		t.Fatalf("cancel did not beat pause: %s", done.Status)
	}
	// Drain: a running job goes back to queued.
	job2, _ := j.Submit(context.Background(), Submission{Type: store.JobAudit}, store.ByCLI)
	<-started
	proceed <- struct{}{}
	j.Stop(context.Background())
	if got := waitStatus(t, j, job2.ID, store.JobQueued); got.LeaseOwner != "" {
		t.Fatalf("drained job keeps its lease: %+v", got)
	}
}

// Background kinds never take the last slot.
func TestBackgroundLimits(t *testing.T) {
	d := &dispatcher{jobs: &Jobs{Config: JobConfig{MaxConcurrency: 4, BackgroundConcurrency: 8}}}
	if total, bg := d.limits(); total != 4 || bg != 3 {
		t.Fatalf("limits %d/%d, want 4/3", total, bg)
	}
	d.jobs.Config = JobConfig{MaxConcurrency: 1, BackgroundConcurrency: 2}
	if total, bg := d.limits(); total != 1 || bg != 1 {
		t.Fatalf("limits %d/%d, want 1/1", total, bg)
	}
}

package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// The job runtime on PostgreSQL: two runtimes, each with its own actor
// system on its own handle of one database (two daemons but for their
// processes), share the queue through the database only.

// pgDaemons opens n handles on one fresh database (its schema applied)
// and starts a runtime on each with kinds.
func pgDaemons(t *testing.T, n int, cfg JobConfig, kinds ...Kind) []*Jobs {
	t.Helper()
	return pgDaemonsWith(t, n, cfg, nil, kinds...)
}

// pgDaemonsWith is pgDaemons with setup run on each runtime before it
// starts (its host and folder).
func pgDaemonsWith(t *testing.T, n int, cfg JobConfig, setup func(i int, j *Jobs), kinds ...Kind) []*Jobs {
	t.Helper()
	url := pgtest.Database(t)
	var out []*Jobs
	for i := range n {
		var each func(*Jobs)
		if setup != nil {
			each = func(j *Jobs) { setup(i, j) }
		}
		out = append(out, runtimeOn(t, pgHandle(t, url), cfg, each, kinds...))
	}
	return out
}

// Jobs submitted through two runtimes on PostgreSQL each run once (one
// claim: attempt 1), spread over both; lanes hold across them.
func TestPostgresRuntimesRunEachJobOnceAndHoldLanes(t *testing.T) {
	var lane atOnce
	var mu sync.Mutex
	ran := map[string][]string{}
	type in struct {
		Lane string `json:"lane"`
		N    int    `json:"n"`
	}
	kind := Define("count", Spec[in]{
		Decode: func(_ context.Context, _ Submission, p in) (Plan, error) {
			return Plan{Input: p, Priority: store.PriorityNormal, Lane: p.Lane}, nil
		},
		Run: func(ctx context.Context, r *Run) (any, error) {
			mu.Lock()
			ran[r.Job.ID] = append(ran[r.Job.ID], r.jobs.Owner)
			mu.Unlock()
			if r.Job.Lane != "" {
				lane.enter()
				time.Sleep(20 * time.Millisecond)
				lane.leave()
			}
			return nil, nil
		}})
	cfg := JobConfig{MaxConcurrency: 4, BackgroundConcurrency: 2, LeaseTTL: 3 * time.Second, DrainTimeout: 5 * time.Second}
	ds := pgDaemons(t, 2, cfg, kind)
	var ids []string
	for i := range 60 {
		lane := ""
		if i%4 == 0 {
			lane = "one-source"
		}
		sub, err := ds[i%2].Submit(context.Background(), Submission{Type: "count", Params: json.RawMessage(fmt.Sprintf(`{"lane":%q,"n":%d}`, lane, i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.ID)
	}
	owners := map[string]int{}
	for _, id := range ids {
		got := waitStatus(t, ds[0], id, store.JobCompleted, store.JobFailed)
		mu.Lock()
		on := ran[id]
		mu.Unlock()
		if got.Status != store.JobCompleted || got.Attempt != 1 || got.RecoveryAttempts != 0 || len(on) != 1 {
			t.Fatalf("job %s: %s, attempt %d, recoveries %d, ran on %v; want completed once", id, got.Status, got.Attempt, got.RecoveryAttempts, on)
		}
		owners[on[0]]++
	}
	if len(owners) != 2 {
		t.Fatalf("the jobs ran on %d runtimes: %v", len(owners), owners)
	}
	if lane.most.Load() != 1 {
		t.Fatalf("%d jobs of one lane ran at once on two runtimes", lane.most.Load())
	}
}

// On PostgreSQL, a worker whose lease another runtime took writes
// nothing more (lease_lost at its next save), and a pause asked through
// the other runtime reaches the worker that holds a job.
func TestPostgresLeaseTakenAndRequestsAcrossRuntimes(t *testing.T) {
	var errs sync.Map
	saver := testKind("saver", store.PriorityNormal, func(ctx context.Context, r *Run) (any, error) {
		for i := int64(1); ; i++ {
			if r.Stopping() {
				return nil, ErrStopped
			}
			if err := r.Save(ctx, map[string]int64{"next": i}, store.Progress{Current: i}); err != nil {
				errs.Store(r.Job.ID, err)
				return nil, err
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	cfg := JobConfig{MaxConcurrency: 2, BackgroundConcurrency: 1, LeaseTTL: time.Hour, DrainTimeout: 5 * time.Second}
	ds := pgDaemons(t, 2, cfg, saver)
	a, b := ds[0], ds[1]

	// A pause through the runtime that does not run the job.
	sub, err := a.Submit(context.Background(), Submission{Type: "saver"})
	if err != nil {
		t.Fatal(err)
	}
	cur := waitStatus(t, a, sub.ID, store.JobRunning)
	other := b
	if cur.LeaseOwner == b.Owner {
		other = a
	}
	if _, err := other.Pause(context.Background(), sub.ID); err != nil {
		t.Fatal(err)
	}
	if got := waitStatus(t, a, sub.ID, store.JobPaused); got.LeaseOwner != "" {
		t.Fatalf("paused: %+v", got)
	}

	// A lease taken: the holder's runtime stops writing.
	sub, err = a.Submit(context.Background(), Submission{Type: "saver"})
	if err != nil {
		t.Fatal(err)
	}
	held := waitStatus(t, a, sub.ID, store.JobRunning)
	time.Sleep(200 * time.Millisecond)
	taken := takeOver(t, a, sub.ID, "a-third-daemon")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if e, ok := errs.Load(sub.ID); ok {
			if !fault.Is(e.(error), fault.JobsLeaseLost) {
				t.Fatalf("the worker's save after the takeover: %v, want lease_lost", e)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker of %s (on %s) still saves after its lease was taken", sub.ID, held.LeaseOwner)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	got := waitStatus(t, a, sub.ID, store.JobRunning)
	if got.LeaseOwner != "a-third-daemon" || !got.UpdatedAt.Equal(taken.UpdatedAt) || got.Progress != taken.Progress {
		t.Fatalf("the job changed after its lease was taken: %+v\nwant %+v", got, taken)
	}
}

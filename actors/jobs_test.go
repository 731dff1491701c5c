package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

func newJobs(t testing.TB, cfg JobConfig) *Jobs {
	t.Helper()
	sys, db := newSystem(t)
	j := NewJobs(db, sys, slog.New(slog.DiscardHandler), cfg)
	// Registered after newSystem's cleanup, so it runs first: the runtime
	// stops (its dispatcher, ticker and workers ended) before the system.
	// Stopping a runtime a test stopped already, or never started, does
	// nothing.
	t.Cleanup(func() { j.Stop(context.Background()) })
	return j
}

// testKind is a kind for runtime tests: it takes any submission, queues
// at priority p and runs h.
func testKind(name string, p store.Priority, h Handler) Kind {
	return Define(name, Spec[struct{}]{Abortable: name == "mine", Background: name == "mine",
		Decode: func(context.Context, Submission, struct{}) (Plan, error) {
			return Plan{Input: struct{}{}, Priority: p}, nil
		},
		Run: h})
}

func done(context.Context, *Run) (any, error) { return nil, nil }

var testCfg = JobConfig{MaxConcurrency: 1, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second}

// atOnce counts the jobs running at once and keeps the most there were.
type atOnce struct{ running, most atomic.Int32 }

// enter counts a job that starts running.
func (a *atOnce) enter() {
	n := a.running.Add(1)
	for m := a.most.Load(); n > m && !a.most.CompareAndSwap(m, n); m = a.most.Load() {
	}
}

// leave counts a job that stops running.
func (a *atOnce) leave() { a.running.Add(-1) }

func waitStatus(t *testing.T, j *Jobs, id string, want ...string) *store.Job {
	t.Helper()
	// The wait ends at the signal (the job's status); the bound only ends
	// a wait that failed, and is generous for make test, which runs every
	// package at once on two cores.
	deadline := time.Now().Add(time.Minute)
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
	j.Register(testKind("boom", store.PriorityNormal, func(context.Context, *Run) (any, error) { panic("boom") }),
		testKind("fine", store.PriorityNormal, done))
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	bad, err := j.Submit(context.Background(), Submission{Type: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	job := waitStatus(t, j, bad.ID, store.JobFailed)
	if job.Error == "" {
		t.Fatalf("failed without a reason: %+v", job)
	}
	good, _ := j.Submit(context.Background(), Submission{Type: "fine"})
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
	j.Register(testKind("normal", store.PriorityNormal, record), testKind("other", store.PriorityNormal, record),
		testKind("urgent", store.PriorityCritical, record))
	// Queue before the dispatcher starts, so that order is decided by the queue.
	normal1, _ := j.Submit(context.Background(), Submission{Type: "normal"})
	normal2, _ := j.Submit(context.Background(), Submission{Type: "other"})
	critical, _ := j.Submit(context.Background(), Submission{Type: "urgent"})
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
	// The drain timeout is generous: this test is about what a drain does,
	// not how long it may take; on a loaded machine (make test runs every
	// package at once) a drain of 5 s once ended with the job still running.
	j := newJobs(t, JobConfig{MaxConcurrency: 2, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 30 * time.Second})
	started := make(chan string, 4)
	proceed := make(chan struct{}, 4) // the handler looks at requests only once told to
	j.Register(testKind("slow", store.PriorityNormal, func(ctx context.Context, r *Run) (any, error) {
		started <- r.Job.ID
		<-proceed
		for !r.Stopping() {
			time.Sleep(time.Millisecond)
		}
		return nil, ErrStopped
	}))
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	job, _ := j.Submit(context.Background(), Submission{Type: "slow"})
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
	job2, _ := j.Submit(context.Background(), Submission{Type: "slow"})
	<-started
	proceed <- struct{}{}
	// Stop returns once the drained worker wrote its last event (or at the
	// drain timeout, which leaves the job running): no wait after it.
	j.Stop(context.Background())
	got, err := j.Get(context.Background(), job2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.JobQueued || got.LeaseOwner != "" {
		t.Fatalf("when Stop returned the drained job was %s, lease of %q; want queued, no lease", got.Status, got.LeaseOwner)
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

// Force-cancel aborts a locally run mine job and answers only after the
// worker stopped; a job recorded running without a worker is orphaned.
func TestForceCancelAndOrphaned(t *testing.T) {
	j := newJobs(t, testCfg)
	ctx := context.Background()
	stopped := make(chan struct{})
	j.Register(testKind("mine", store.PriorityBackground, func(ctx context.Context, r *Run) (any, error) {
		<-ctx.Done() // ignores pause and cancel requests: only an abort stops it
		// A worker slow to stop once aborted (the load, not a wait):
		// ForceCancel must answer only after it stopped.
		time.Sleep(50 * time.Millisecond)
		close(stopped)
		return nil, ctx.Err()
	}), testKind("demo", store.PriorityNormal, done), testKind("audit", store.PriorityNormal, done))
	if err := j.Start(ctx); err != nil {
		t.Fatal(err)
	}
	put := func(job store.Job) {
		t.Helper()
		if _, err := j.Sys.Write(ctx, func(tx store.Tx) (any, error) {
			next, err := store.Apply(job, store.JobEvent{Kind: store.EvSubmit, At: tx.Now()})
			if err != nil {
				return nil, err
			}
			return nil, tx.PutJob(&next, nil)
		}); err != nil {
			t.Fatal(err)
		}
	}
	mine := store.Job{ID: "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a", Kind: "mine", Priority: store.PriorityBackground}
	put(mine)
	j.kick()
	waitStatus(t, j, mine.ID, store.JobRunning)
	if _, err := j.ForceCancel(ctx, "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2b"); !fault.Is(err, fault.JobsNotFound) {
		t.Fatalf("force-cancel of an unknown job: %v", err)
	}
	res, err := j.ForceCancel(ctx, mine.ID)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("force-cancel answered before the worker stopped")
	}
	if res.Status != "force_cancelled" || res.Job.Status != store.JobCancelled {
		t.Fatalf("force-cancel: %+v", res)
	}
	// Not a mine job: refused.
	demo, _ := j.Submit(ctx, Submission{Type: "demo"})
	waitStatus(t, j, demo.ID, store.JobCompleted)
	if _, err := j.ForceCancel(ctx, demo.ID); !fault.Is(err, fault.JobsTransitionInvalid) || !strings.Contains(fault.As(err).Help, "can be aborted (mine)") {
		t.Fatalf("force-cancel of a demo job: %v (help: %q)", err, fault.As(err).Help)
	}
	// A job recorded running by this daemon with no worker: orphaned.
	orphan := store.Job{ID: "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2c", Kind: "audit", Priority: store.PriorityNormal}
	if _, err := j.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		next, _ := store.Apply(orphan, store.JobEvent{Kind: store.EvSubmit, At: tx.Now()})
		next, _ = store.Apply(next, store.JobEvent{Kind: store.EvClaim, At: tx.Now(), Owner: j.Owner, TTL: time.Hour})
		return nil, tx.PutJob(&next, nil)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Pause(ctx, orphan.ID); !fault.Is(err, fault.JobsOrphaned) {
		t.Fatalf("pause of an orphaned job: %v", err)
	}
}

// Jobs of one lane never run at once, whatever the free slots; Join joins
// a queued job of the same kind, lane and input, never a running one.
func TestLanesAndJoin(t *testing.T) {
	j := newJobs(t, JobConfig{MaxConcurrency: 4, BackgroundConcurrency: 4, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second})
	release := make(chan struct{})
	var atOnce atOnce
	lane := Define("laned", Spec[struct {
		Lane string `json:"lane"`
		N    int    `json:"n"`
	}]{
		Decode: func(_ context.Context, _ Submission, p struct {
			Lane string `json:"lane"`
			N    int    `json:"n"`
		}) (Plan, error) {
			return Plan{Input: p, Priority: store.PriorityNormal, Lane: p.Lane}, nil
		},
		Run: func(ctx context.Context, r *Run) (any, error) {
			atOnce.enter()
			<-release
			atOnce.leave()
			return nil, nil
		}})
	j.Register(lane)
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.Stop(context.Background())
	sub := func(params string) (*store.Job, bool) {
		job, coalesced, err := j.Join(context.Background(), Submission{Type: "laned", Params: json.RawMessage(params)})
		if err != nil {
			t.Fatal(err)
		}
		return job, coalesced
	}
	first, c1 := sub(`{"lane":"a","n":1}`)
	waitStatus(t, j, first.ID, store.JobRunning)
	// Same input while the first runs: queued, not joined with the running one.
	second, c2 := sub(`{"lane":"a","n":1}`)
	third, c3 := sub(`{"lane":"a","n":1}`)
	other, c4 := sub(`{"lane":"a","n":2}`)
	if c1 || c2 || !c3 || third.ID != second.ID || c4 || other.ID == second.ID {
		t.Fatalf("join: %v %v %v(%s=%s) %v", c1, c2, c3, third.ID, second.ID, c4)
	}
	// Absence has no signal: each submission kicked the dispatcher, whose
	// claim pass (a read and a write of a few jobs) would have started the
	// second job of lane a within 50 ms had the lane not held it; a loaded
	// machine can only make this check pass when it should not, never fail.
	time.Sleep(50 * time.Millisecond)
	if job := waitStatus(t, j, second.ID, store.JobQueued, store.JobRunning); job.Status != store.JobQueued {
		t.Fatalf("second job of lane a is %s while the first runs", job.Status)
	}
	close(release)
	for _, id := range []string{first.ID, second.ID, other.ID} {
		waitStatus(t, j, id, store.JobCompleted)
	}
	if atOnce.most.Load() != 1 {
		t.Fatalf("%d jobs of one lane ran at once", atOnce.most.Load())
	}
	// Submit (not Join) never joins.
	a, _ := j.Submit(context.Background(), Submission{Type: "laned", Params: json.RawMessage(`{"lane":"b"}`)})
	b, _ := j.Submit(context.Background(), Submission{Type: "laned", Params: json.RawMessage(`{"lane":"b"}`)})
	if a.ID == b.ID {
		t.Fatal("Submit joined")
	}
}

// A kind that chains after another declares it in its own Follow: the
// runtime, which names no kind, queues nothing itself, and the kind
// followed is not edited. Here "report" follows every completed "count"
// job whose result counted something, and reads that result.
func TestAKindChainsAfterAnotherByItsOwnFollow(t *testing.T) {
	j := newJobs(t, testCfg)
	type counted struct{ N int }
	count := Define("count", Spec[struct {
		N int `json:"n"`
	}]{
		Files: true,
		Decode: func(_ context.Context, _ Submission, p struct {
			N int `json:"n"`
		}) (Plan, error) {
			return Plan{Input: p, Priority: store.PriorityNormal}, nil
		},
		Run: func(_ context.Context, r *Run) (any, error) {
			var in struct{ N int }
			_ = json.Unmarshal(r.Job.Input, &in)
			return counted{N: in.N}, nil
		},
	})
	var seen []Completed
	var mu sync.Mutex
	report := Define("report", Spec[struct{}]{
		Decode: func(context.Context, Submission, struct{}) (Plan, error) {
			return Plan{Input: struct{}{}, Priority: store.PriorityNormal}, nil
		},
		Run: done,
		Follow: func(ctx context.Context, c Completed) {
			mu.Lock()
			seen = append(seen, c)
			mu.Unlock()
			if res, ok := c.Result.(counted); !ok || c.Job.Kind != "count" || res.N == 0 {
				return
			}
			if _, _, err := j.Join(ctx, Submission{Type: "report", Automatic: true}); err != nil {
				t.Errorf("queuing the report: %v", err)
			}
		},
	})
	j.Register(count, report)
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Stop(context.Background()) })
	ctx := context.Background()
	none, err := j.Submit(ctx, Submission{Type: "count", Params: json.RawMessage(`{"n":0}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, j, none.ID, store.JobCompleted)
	some, err := j.Submit(ctx, Submission{Type: "count", Params: json.RawMessage(`{"n":3}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, j, some.ID, store.JobCompleted)
	var reports []store.Job
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if reports, err = j.List(ctx, store.JobCompleted, "report", 0); err != nil {
			t.Fatal(err)
		}
		if len(reports) > 0 {
			break
		}
	}
	if len(reports) != 1 || reports[0].RequestedBy != store.ByDaemon {
		t.Fatalf("reports after one count that counted: %+v", reports)
	}
	// Told of both counts and of the report itself (once its completion
	// is recorded: wait for the notice), with each one's kind and result;
	// the count that counted nothing queued nothing.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= 3 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	kinds := map[string]int{}
	for _, c := range seen {
		kinds[c.Kind.Name]++
		if c.Job.Status != store.JobCompleted || c.Job.Kind != c.Kind.Name {
			t.Errorf("the completed job: %+v", c.Job)
		}
		if c.Kind.Name == "count" && !c.Kind.Files {
			t.Errorf("the completed job's kind as registered: %+v", c.Kind)
		}
	}
	if kinds["count"] != 2 || kinds["report"] != 1 {
		t.Fatalf("completions seen: %v", kinds)
	}
}

// When Stop returns, the dispatcher's ticker goroutine has left its loop
// (it counts itself out as its last act, and Stop waits for that), and
// the goroutine itself is gone soon after: nothing of the runtime ticks on.
// (Reading the stacks at the very moment Stop returns is not the promise:
// the goroutine may still be returning from its deferred count.)
func TestStopEndsTheDispatchersTicker(t *testing.T) {
	for i := range 20 {
		t.Run(fmt.Sprint("start ", i), func(t *testing.T) {
			j := newJobs(t, JobConfig{MaxConcurrency: 1, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Millisecond, DrainTimeout: time.Second})
			if err := j.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The dispatcher starts its ticker as it starts, just after Start.
			for deadline := time.Now().Add(5 * time.Second); j.tickers.Load() != 1 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			}
			if n := j.tickers.Load(); n != 1 {
				t.Fatalf("tickers running after Start: %d", n)
			}
			j.Stop(context.Background())
			if n := j.tickers.Load(); n != 0 {
				t.Fatalf("the dispatcher's ticker still in its loop after Stop (%d running)", n)
			}
			var stacks string
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				buf := make([]byte, 1<<20)
				stacks = string(buf[:runtime.Stack(buf, true)])
				if !strings.Contains(stacks, "actors.(*dispatcher).Receive.func1") {
					return
				}
			}
			t.Fatalf("the dispatcher's ticker goroutine still exists a second after Stop:\n%s", stacks)
		})
	}
}

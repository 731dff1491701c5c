package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// Several daemons on one shared store, as the job runtime sees them: two
// runtimes of one process on the shared test double (sharedDB), each with
// its own lease owner, workers and dispatcher, talking only through the
// store, as two daemons on one PostgreSQL database do. The multi-process
// cases on PostgreSQL are cmd/loci's e2e_shared_test.go.

// twoDaemons starts runtime a with kinds, then, once a runs the job
// submitted through it (if submit), runtime b on the same store: a job
// claimed before b starts is a's. Both are stopped at the end.
func twoDaemons(t *testing.T, cfg JobConfig, kinds func() []Kind, submit string) (a, b *Jobs, id string) {
	t.Helper()
	sys, db := newSystem(t)
	sdb := sharedDB{db}
	start := func() *Jobs {
		j := NewJobs(sdb, sys, slog.New(slog.DiscardHandler), cfg)
		for _, k := range kinds() {
			j.Register(k)
		}
		if err := j.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return j
	}
	a = start()
	if submit != "" {
		sub, err := a.Submit(context.Background(), Submission{Type: submit})
		if err != nil {
			t.Fatal(err)
		}
		id = sub.ID
		synctest.Wait()
		if got := job(t, a, id); got.Status != store.JobRunning || got.LeaseOwner != a.Owner {
			t.Fatalf("the job does not run on the first daemon: %s, owner %q", got.Status, got.LeaseOwner)
		}
	}
	b = start()
	return a, b, id
}

// stopBoth drains both runtimes and settles the bubble.
func stopBoth(a, b *Jobs) {
	a.Stop(context.Background())
	settle(b)
}

// A pause or a cancel asked through daemon B of a job daemon A runs is
// stored only (B has no worker to tell): A's worker learns of it at its
// next heartbeat, a third of the lease TTL later, and stops as asked. A
// force-cancel through B is refused (A owns the job) and changes nothing.
func TestRequestsThroughAnotherDaemonReachTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		aborted := make(chan bool, 16)
		kinds := func() []Kind { return []Kind{testKind("mine", store.PriorityNormal, patient(aborted))} }
		a, b, id := twoDaemons(t, leaseCfg, kinds, "mine")
		defer stopBoth(a, b)
		ctx := context.Background()

		if _, err := b.ForceCancel(ctx, id); !fault.Is(err, fault.JobsTransitionInvalid) ||
			!strings.Contains(fault.As(err).Msg, a.Owner) || !strings.Contains(fault.As(err).Help, "daemon that runs it") {
			t.Fatalf("force-cancel of another daemon's job: %v, want transition_invalid naming its owner", err)
		}
		if got := job(t, a, id); got.Status != store.JobRunning || got.CancelRequested || got.LeaseOwner != a.Owner {
			t.Fatalf("a refused force-cancel changed the job: %s, cancel requested %v, owner %q", got.Status, got.CancelRequested, got.LeaseOwner)
		}

		if got, err := b.Pause(ctx, id); err != nil || !got.PauseRequested {
			t.Fatalf("pause through B: %v, %+v", err, got)
		}
		time.Sleep(leaseCfg.LeaseTTL/3 + 2*time.Second) // A's next heartbeat, and its worker's next look
		synctest.Wait()
		if got := job(t, a, id); got.Status != store.JobPaused || got.LeaseOwner != "" {
			t.Fatalf("after a pause through B and A's heartbeat: %s, owner %q; want paused", got.Status, got.LeaseOwner)
		}
		if stopped := <-aborted; stopped {
			t.Fatal("the pause aborted the worker instead of asking it to stop")
		}

		if _, err := b.Resume(ctx, id); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := job(t, a, id)
		if got.Status != store.JobRunning {
			t.Fatalf("resumed job is %s, want running", got.Status)
		}
		owner, other := a, b
		if got.LeaseOwner == b.Owner {
			owner, other = b, a
		}
		if _, err := other.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(leaseCfg.LeaseTTL/3 + 2*time.Second)
		synctest.Wait()
		if got := job(t, owner, id); got.Status != store.JobCancelled {
			t.Fatalf("after a cancel through the other daemon: %s, want cancelled", got.Status)
		}
	})
}

// A running job's progress saves read the stored job: a pause asked
// through another daemon stops the worker at its next save, long before
// a heartbeat (here an hour-long lease, heartbeats 20 minutes apart).
func TestAProgressSaveNoticesAStoredRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := leaseCfg
		cfg.LeaseTTL = time.Hour
		saver := func(ctx context.Context, r *Run) (any, error) {
			for i := int64(1); ; i++ {
				if r.Stopping() {
					return nil, ErrStopped
				}
				if err := r.Save(ctx, map[string]int64{"next": i}, store.Progress{Current: i}); err != nil {
					return nil, err
				}
				time.Sleep(time.Second)
			}
		}
		kinds := func() []Kind { return []Kind{testKind("saver", store.PriorityNormal, saver)} }
		a, b, id := twoDaemons(t, cfg, kinds, "saver")
		defer stopBoth(a, b)
		if _, err := b.Pause(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if got := job(t, a, id); got.Status != store.JobPaused {
			t.Fatalf("three saves after a pause through B: %s, want paused", got.Status)
		}
	})
}

// takeOver writes what another daemon's reaper and claim would: the job
// recovered (its recovery counted) and, when owner is set, claimed again
// by owner.
func takeOver(t *testing.T, j *Jobs, id, owner string) *store.Job {
	t.Helper()
	v, err := j.Sys.Write(context.Background(), func(tx store.Tx) (any, error) {
		cur, err := tx.Job(id)
		if err != nil {
			return nil, err
		}
		next, err := store.Apply(*cur, store.JobEvent{Kind: store.EvRecover, At: tx.Now()})
		if err != nil {
			return nil, err
		}
		if owner != "" {
			if next, err = store.Apply(next, store.JobEvent{Kind: store.EvClaim, At: tx.Now(), Owner: owner, TTL: time.Hour}); err != nil {
				return nil, err
			}
		}
		return &next, tx.PutJob(&next, cur)
	})
	if err != nil {
		t.Fatal(err)
	}
	return v.(*store.Job)
}

// counter is a handler saving its progress every second, with a drawer-
// like record (meta written in the same transaction) per step; it reports
// each run's last error.
type counter struct {
	mu    sync.Mutex
	errs  []error
	steps int
	runs  atomic.Int32
}

func (c *counter) run(ctx context.Context, r *Run) (any, error) {
	n := c.runs.Add(1)
	for i := int64(1); i <= int64(c.steps); i++ {
		err := r.Write(ctx, func(tx store.Tx) error {
			return tx.Log(store.ChangeJob, "step", fmt.Sprintf("run %d step %d", n, i))
		}, map[string]int64{"next": i}, store.Progress{Current: i, Message: fmt.Sprintf("run %d", n)})
		if err != nil {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			c.mu.Unlock()
			return nil, err
		}
		time.Sleep(time.Second)
	}
	return map[string]int32{"run": n}, nil
}

// A worker whose lease another daemon took (its heartbeat late: a pause,
// a partition) stops with loci::jobs::lease_lost at its next write and
// writes nothing more: neither that write (the step's records included,
// in the same transaction), nor its end. The job is the new owner's,
// unchanged.
func TestALostLeaseWritesNothingMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counter{steps: 1000}
		j := longJobs(t, true, func(j *Jobs) { j.Register(testKind("count", store.PriorityNormal, c.run)) })
		defer settle(j)
		sub, err := j.Submit(context.Background(), Submission{Type: "count"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		taken := takeOver(t, j, sub.ID, "daemon-b")
		var seq uint64
		_ = j.DB.View(context.Background(), func(r store.Reader) error { seq, _ = r.LastSeq(); return nil })
		time.Sleep(leaseCfg.LeaseTTL) // saves, heartbeats, and whatever the worker does at its end
		synctest.Wait()
		got := job(t, j, sub.ID)
		if got.Status != store.JobRunning || got.LeaseOwner != "daemon-b" || !got.UpdatedAt.Equal(taken.UpdatedAt) ||
			got.Progress != taken.Progress || string(got.Checkpoint) != string(taken.Checkpoint) {
			t.Fatalf("the job changed after its lease was taken: %+v\nwant as taken: %+v", got, taken)
		}
		var after uint64
		_ = j.DB.View(context.Background(), func(r store.Reader) error { after, _ = r.LastSeq(); return nil })
		if after != seq {
			t.Fatalf("the worker wrote %d changes after its lease was taken", after-seq)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.errs) != 1 || !fault.Is(c.errs[0], fault.JobsLeaseLost) {
			t.Fatalf("the worker's write after the takeover: %v, want one loci::jobs::lease_lost", c.errs)
		}
		if j.local(sub.ID) {
			t.Fatal("the worker still runs")
		}
	})
}

// A lease taken and given back to this same daemon (recovered by another
// daemon's reaper, then claimed by this daemon's owner again) is a new
// run: the first worker, still running, cannot write for it (the claim's
// attempt fences it, the owner being the same). The job, left running
// without a worker, is recovered once that lease expired, and completes
// once, by the second run, both recoveries counted.
func TestARunIsFencedByItsAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counter{steps: 5}
		j := longJobs(t, true, func(j *Jobs) { j.Register(testKind("count", store.PriorityNormal, c.run)) })
		defer settle(j)
		sub, err := j.Submit(context.Background(), Submission{Type: "count"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		takeOver(t, j, sub.ID, j.Owner) // recovered and claimed again under this daemon's owner
		time.Sleep(time.Hour + time.Minute)
		synctest.Wait()
		got := job(t, j, sub.ID)
		var res map[string]int32
		_ = json.Unmarshal(got.Result, &res)
		if got.Status != store.JobCompleted || got.RecoveryAttempts != 2 || got.Attempt != 3 || res["run"] != 2 {
			t.Fatalf("after the recovery: %s, recoveries %d, attempt %d, result %s; want completed by the second run",
				got.Status, got.RecoveryAttempts, got.Attempt, got.Result)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.errs) != 1 || !fault.Is(c.errs[0], fault.JobsLeaseLost) {
			t.Fatalf("the first run's write after the recovery: %v, want loci::jobs::lease_lost", c.errs)
		}
	})
}

// flakyDB fails every write while down is set: a database gone away.
type flakyDB struct {
	store.DB
	down *atomic.Bool
}

func (f flakyDB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if f.down.Load() {
		return fault.New(fault.StoreBackendFailed, "the database is unreachable", "try again")
	}
	return f.DB.Update(ctx, fn)
}

func (flakyDB) Shared() bool { return true }

// A worker whose heartbeats fail past its lease's expiry (the database
// away) stops: another daemon may hold the job by now. It writes nothing
// when it ends; once the database is back the expired lease is recovered
// (here by this daemon's own reaper, the worker gone), its recovery
// counted, and the job runs again.
func TestHeartbeatsFailingPastTheLeaseStopTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bdb, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer bdb.Close()
		var down atomic.Bool
		db := flakyDB{DB: bdb, down: &down}
		sys := Start(db, slog.New(slog.DiscardHandler), slog.LevelInfo)
		j := NewJobs(db, sys, slog.New(slog.DiscardHandler), leaseCfg)
		defer settle(j)
		aborted := make(chan bool, 4)
		var runs atomic.Int32
		j.Register(testKind("long", store.PriorityNormal, func(ctx context.Context, r *Run) (any, error) {
			runs.Add(1)
			return patient(aborted)(ctx, r)
		}))
		if err := j.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		sub, err := j.Submit(context.Background(), Submission{Type: "long"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		down.Store(true)
		time.Sleep(leaseCfg.LeaseTTL / 2)
		synctest.Wait()
		if len(aborted) != 0 {
			t.Fatal("the worker stopped while its lease was still valid")
		}
		time.Sleep(leaseCfg.LeaseTTL/2 + leaseCfg.LeaseTTL/3 + 2*time.Second)
		synctest.Wait()
		select {
		case a := <-aborted:
			if !a {
				t.Fatal("the worker was asked to stop instead of aborted")
			}
		default:
			t.Fatal("the worker still runs after its lease expired unrenewed")
		}
		down.Store(false)
		time.Sleep(leaseCfg.LeaseTTL / 2)
		synctest.Wait()
		got := job(t, j, sub.ID)
		if got.Status != store.JobRunning || got.RecoveryAttempts != 1 || got.Attempt != 2 || runs.Load() != 2 {
			t.Fatalf("after the database came back: %s, recoveries %d, attempt %d, runs %d; want recovered once and running again",
				got.Status, got.RecoveryAttempts, got.Attempt, runs.Load())
		}
	})
}

// Lanes hold across daemons: a job of a lane is not claimed by one daemon
// while another runs a job of that lane (the claim reads the running
// jobs in its own write transaction).
func TestLanesHoldAcrossDaemons(t *testing.T) {
	cfg := JobConfig{MaxConcurrency: 4, BackgroundConcurrency: 4, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second}
	var lane atOnce
	type in struct {
		Lane string `json:"lane"`
		N    int    `json:"n"`
	}
	laned := Define("laned", Spec[in]{
		Decode: func(_ context.Context, _ Submission, p in) (Plan, error) {
			return Plan{Input: p, Priority: store.PriorityNormal, Lane: p.Lane}, nil
		},
		Run: func(ctx context.Context, r *Run) (any, error) {
			lane.enter()
			time.Sleep(30 * time.Millisecond)
			lane.leave()
			return nil, nil
		}})
	sys, db := newSystem(t)
	sdb := sharedDB{db}
	var daemons []*Jobs
	for range 2 {
		j := NewJobs(sdb, sys, slog.New(slog.DiscardHandler), cfg)
		t.Cleanup(func() { j.Stop(context.Background()) })
		j.Register(laned)
		if err := j.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		daemons = append(daemons, j)
	}
	var ids []string
	for i := range 8 {
		sub, err := daemons[i%2].Submit(context.Background(), Submission{Type: "laned", Params: json.RawMessage(fmt.Sprintf(`{"lane":"a","n":%d}`, i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.ID)
	}
	for _, id := range ids {
		waitStatus(t, daemons[0], id, store.JobCompleted)
	}
	if lane.most.Load() != 1 {
		t.Fatalf("%d jobs of one lane ran at once on two daemons", lane.most.Load())
	}
}

// A handler that returns after its lease was taken (it wrote nothing
// meanwhile, so nothing told it) completes nothing: its end is refused
// (lease_lost) and what follows a completed job (the kinds' Follow) is not
// told of it; the job stays its new holder's.
func TestAnEndAfterTheLeaseWasTakenIsNotACompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var told atomic.Int32
		quick := testKind("quick", store.PriorityNormal, func(ctx context.Context, r *Run) (any, error) {
			<-release
			return map[string]int{"n": 1}, nil
		})
		watcher := Define("watcher", Spec[struct{}]{
			Decode: func(context.Context, Submission, struct{}) (Plan, error) {
				return Plan{Input: struct{}{}, Priority: store.PriorityNormal}, nil
			},
			Run:    done,
			Follow: func(context.Context, Completed) { told.Add(1) },
		})
		j := longJobs(t, true, func(j *Jobs) { j.Register(quick, watcher) })
		defer settle(j)
		sub, err := j.Submit(context.Background(), Submission{Type: "quick"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		taken := takeOver(t, j, sub.ID, "daemon-b")
		close(release)
		synctest.Wait()
		got := job(t, j, sub.ID)
		if got.Status != store.JobRunning || got.LeaseOwner != "daemon-b" || !got.UpdatedAt.Equal(taken.UpdatedAt) || got.Result != nil {
			t.Fatalf("the end of a run whose lease was taken changed the job: %+v", got)
		}
		if n := told.Load(); n != 0 {
			t.Fatalf("the kinds were told %d times of a completion that was not recorded", n)
		}
	})
}

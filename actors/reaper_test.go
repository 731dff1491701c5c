package actors

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loci-dev/loci/store"
)

// sharedDB is a test double: the Badger store reporting itself shared, as
// a remote database several daemons use would. It is not a shared store
// (no second daemon can open it); the jobs of "other daemons" are written
// into it by the test, which is all the job runtime's recovery reads.
type sharedDB struct{ store.DB }

func (sharedDB) Shared() bool { return true }

// longJobs is a runtime on the Badger store (reported shared when asked)
// with one kind, "long", whose jobs run until asked to stop; before runs
// ahead of Start. Settle it.
func longJobs(t *testing.T, shared bool, before func(j *Jobs)) *Jobs {
	t.Helper()
	sys, db := newSystem(t)
	var sdb store.DB = db
	if shared {
		sdb = sharedDB{db}
	}
	j := NewJobs(sdb, sys, slog.New(slog.DiscardHandler), leaseCfg)
	j.Register(testKind("long", store.PriorityNormal, patient(make(chan bool, 8))))
	if before != nil {
		before(j)
	}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return j
}

// leasedJob stores a job of kind long running under owner's lease, taken
// at claimedAt for ttl.
func leasedJob(t *testing.T, j *Jobs, owner string, claimedAt time.Time, ttl time.Duration) string {
	t.Helper()
	job := leased(t, owner, claimedAt, ttl)
	if _, err := j.Sys.Write(context.Background(), func(tx store.Tx) (any, error) { return nil, tx.PutJob(job, nil) }); err != nil {
		t.Fatal(err)
	}
	return job.ID
}

// leased is a new job of kind long, running under owner's lease taken at
// claimedAt for ttl (as a claim leaves it).
func leased(t *testing.T, owner string, claimedAt time.Time, ttl time.Duration) *store.Job {
	t.Helper()
	next, err := store.Apply(store.Job{ID: store.NewID(), Kind: "long", Priority: store.PriorityNormal, RequestedBy: store.ByCLI},
		store.JobEvent{Kind: store.EvSubmit, At: claimedAt})
	if err == nil {
		next, err = store.Apply(next, store.JobEvent{Kind: store.EvClaim, At: claimedAt, Owner: owner, TTL: ttl})
	}
	if err != nil {
		t.Fatal(err)
	}
	return &next
}

// At a start, the embedded store recovers every running job (the
// previous run's); a shared store only those whose lease expired: a job
// another daemon runs, its lease alive, is left to it.
func TestStartRecoveryAsksWhetherTheStoreIsShared(t *testing.T) {
	for _, c := range []struct {
		name         string
		shared       bool
		liveRecovers bool
	}{
		{"Embedded", false, true},
		{"Shared", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var expired, live string
				j := longJobs(t, c.shared, func(j *Jobs) {
					expired = leasedJob(t, j, "a-daemon-that-died", time.Now().Add(-time.Hour), leaseCfg.LeaseTTL)
					live = leasedJob(t, j, "a-live-daemon", time.Now(), time.Hour)
				})
				defer settle(j)
				synctest.Wait()
				if got := job(t, j, expired); got.RecoveryAttempts != 1 || got.LeaseOwner == "a-daemon-that-died" {
					t.Fatalf("the expired lease was not recovered at the start: %s, owner %q, recoveries %d", got.Status, got.LeaseOwner, got.RecoveryAttempts)
				}
				got := job(t, j, live)
				if recovered := got.RecoveryAttempts == 1 && got.LeaseOwner != "a-live-daemon"; recovered != c.liveRecovers {
					t.Fatalf("the job with a live lease: %s, owner %q, recoveries %d; recovered %v, want %v",
						got.Status, got.LeaseOwner, got.RecoveryAttempts, recovered, c.liveRecovers)
				}
			})
		})
	}
}

// On a shared store the reaper recovers a lease that expires after the
// start (a daemon that died while this one runs), once it expired, and
// leaves a live lease alone; the job is claimed again here.
func TestReaperOnASharedStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := longJobs(t, true, nil)
		defer settle(j)
		if j.reaper == nil {
			t.Fatal("no reaper runs on a shared store")
		}
		dies := leasedJob(t, j, "a-daemon-that-died", time.Now(), leaseCfg.LeaseTTL)
		live := leasedJob(t, j, "a-live-daemon", time.Now(), time.Hour)
		time.Sleep(leaseCfg.LeaseTTL / 2)
		synctest.Wait()
		if got := job(t, j, dies); got.LeaseOwner != "a-daemon-that-died" || got.RecoveryAttempts != 0 {
			t.Fatalf("recovered before its lease expired: %s, owner %q", got.Status, got.LeaseOwner)
		}
		time.Sleep(leaseCfg.LeaseTTL)
		synctest.Wait()
		got := job(t, j, dies)
		if got.RecoveryAttempts != 1 || got.Status != store.JobRunning || got.LeaseOwner != j.Owner {
			t.Fatalf("after its lease expired: %s, owner %q, recoveries %d; want recovered and claimed here",
				got.Status, got.LeaseOwner, got.RecoveryAttempts)
		}
		if got := job(t, j, live); got.Status != store.JobRunning || got.LeaseOwner != "a-live-daemon" || got.RecoveryAttempts != 0 {
			t.Fatalf("the live lease was taken: %s, owner %q, recoveries %d", got.Status, got.LeaseOwner, got.RecoveryAttempts)
		}
	})
}

// The embedded store runs no reaper goroutine: the dispatcher's tick
// reaps there, as before.
func TestNoReaperOnTheEmbeddedStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := longJobs(t, false, nil)
		defer settle(j)
		if j.reaper != nil {
			t.Fatal("a reaper goroutine runs on the embedded store")
		}
	})
}

// Two runtimes on one shared store (two daemons; here two runtimes of one
// process on the test double, sharing its writer) claim from one queue:
// every job runs once, on one of them, and neither's reaper takes a lease
// the other keeps alive, however many lease TTLs the jobs run.
func TestTwoRuntimesShareOneQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, db := newSystem(t)
		sdb := sharedDB{db}
		var mu sync.Mutex
		ranOn := map[string][]string{}
		cfg := leaseCfg
		cfg.MaxConcurrency = 2
		runtime := func() *Jobs {
			j := NewJobs(sdb, sys, slog.New(slog.DiscardHandler), cfg)
			j.Register(testKind("long", store.PriorityNormal, func(ctx context.Context, r *Run) (any, error) {
				mu.Lock()
				ranOn[r.Job.ID] = append(ranOn[r.Job.ID], r.jobs.Owner)
				mu.Unlock()
				for end := time.Now().Add(4 * cfg.LeaseTTL); time.Now().Before(end); time.Sleep(time.Second) {
					if r.Stopping() {
						return nil, ErrStopped
					}
				}
				return nil, nil
			}))
			if err := j.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return j
		}
		a, b := runtime(), runtime()
		defer func() {
			a.Stop(context.Background())
			settle(b)
		}()
		var ids []string
		for i := range 8 {
			via := a
			if i%2 == 1 {
				via = b
			}
			sub, err := via.Submit(context.Background(), Submission{Type: "long"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, sub.ID)
		}
		time.Sleep(20 * cfg.LeaseTTL) // four rounds of two times two jobs, each four TTLs long
		synctest.Wait()
		owners := map[string]int{}
		for _, id := range ids {
			got := job(t, a, id)
			mu.Lock()
			on := ranOn[id]
			mu.Unlock()
			if got.Status != store.JobCompleted || got.RecoveryAttempts != 0 || len(on) != 1 {
				t.Fatalf("job %s: %s, recoveries %d, ran on %v; want completed once, never recovered", id, got.Status, got.RecoveryAttempts, on)
			}
			owners[on[0]]++
		}
		if owners[a.Owner] == 0 || owners[b.Owner] == 0 {
			t.Fatalf("one runtime ran every job: %v", owners)
		}
	})
}

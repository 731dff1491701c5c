package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dgraph-io/badger/v4/y"

	"github.com/loci-dev/loci/store"
)

func init() {
	// Badger makes one Zstandard encoder and decoder for the process, on
	// first use; made inside a synctest bubble, their channels would belong
	// to it, and the next bubble's store could not use them.
	b, _ := y.ZSTDCompress(nil, []byte("loci"), 1)
	_, _ = y.ZSTDDecompress(nil, b)
}

// leaseCfg: a 30 s lease, heartbeats every 10 s.
var leaseCfg = JobConfig{MaxConcurrency: 1, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second}

// patient runs until asked to stop, reporting whether its context was
// cancelled (an abort) rather than a stop requested.
func patient(aborted chan<- bool) Handler {
	return func(ctx context.Context, r *Run) (any, error) {
		for !r.Stopping() {
			time.Sleep(time.Second)
		}
		aborted <- ctx.Err() != nil
		return nil, ErrStopped
	}
}

// startLong is a started runtime with one kind, "long", whose jobs run
// until asked to stop; aborted reports how each stopped. Stop it.
func startLong(t *testing.T) (*Jobs, chan bool) {
	t.Helper()
	j := newJobs(t, leaseCfg)
	aborted := make(chan bool, 1)
	j.Register(testKind("long", store.PriorityNormal, patient(aborted)))
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return j, aborted
}

// settle ends a bubble's runtime: the jobs drained (again is a no-op), the
// actor system stopped, then a minute of the bubble's clock so that the
// timers left behind fire (protoactor starts a one-second throttle timer
// for a message sent to a stopped actor): a goroutine still waiting on
// one when the test function returns is a synctest deadlock.
func settle(j *Jobs) {
	j.Stop(context.Background())
	_ = j.Sys.Stop(context.Background())
	time.Sleep(time.Minute)
}

func job(t *testing.T, j *Jobs, id string) *store.Job {
	t.Helper()
	got, err := j.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A running job's lease is renewed by heartbeats for as long as it runs,
// however long that is, and a drain gives the job back to the queue.
func TestHeartbeatsKeepTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, aborted := startLong(t)
		sub, _ := j.Submit(context.Background(), Submission{Type: "long"})
		for range 30 { // ten minutes, twenty leases long
			time.Sleep(20 * time.Second)
			synctest.Wait()
			got := job(t, j, sub.ID)
			if got.Status != store.JobRunning || got.LeaseOwner != j.Owner || !got.LeaseExpiresAt.After(time.Now()) {
				t.Fatalf("at %s: %s, lease of %q until %v", time.Now().Format(time.TimeOnly), got.Status, got.LeaseOwner, got.LeaseExpiresAt)
			}
		}
		j.Stop(context.Background())
		if <-aborted {
			t.Fatal("a drain aborted the worker instead of asking it to stop")
		}
		if got := job(t, j, sub.ID); got.Status != store.JobQueued || got.LeaseOwner != "" {
			t.Fatalf("after the drain: %s, lease of %q", got.Status, got.LeaseOwner)
		}
		settle(j)
	})
}

// A lease taken over by another daemon stops the local worker at the next
// heartbeat: its context is cancelled.
func TestLostLeaseAbortsTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, aborted := startLong(t)
		defer settle(j)
		sub, _ := j.Submit(context.Background(), Submission{Type: "long"})
		synctest.Wait()
		if _, err := j.Sys.Write(context.Background(), func(tx store.Tx) (any, error) {
			cur, err := tx.Job(sub.ID)
			if err != nil {
				return nil, err
			}
			next := *cur
			next.LeaseOwner = "another-daemon"
			return nil, tx.PutJob(&next, cur)
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(leaseCfg.LeaseTTL/3 + 2*time.Second) // the next heartbeat, and the worker's next look
		synctest.Wait()
		select {
		case a := <-aborted:
			if !a {
				t.Fatal("the worker stopped without its context being cancelled")
			}
		default:
			t.Fatal("the worker still runs after its lease was lost")
		}
	})
}

// A job left running by a daemon that died is recovered by the reaper once
// its lease expired, and claimed again: by this daemon, with its recovery
// counted.
func TestReaperRecoversAnExpiredLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Written after the start: Start itself recovers every job an
		// embedded store left running, so this one is the reaper's.
		j, _ := startLong(t)
		defer settle(j)
		const orphan = "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2e"
		if _, err := j.Sys.Write(context.Background(), func(tx store.Tx) (any, error) {
			next, err := store.Apply(store.Job{ID: orphan, Kind: "long", Priority: store.PriorityNormal},
				store.JobEvent{Kind: store.EvSubmit, At: tx.Now()})
			if err != nil {
				return nil, err
			}
			next, err = store.Apply(next, store.JobEvent{Kind: store.EvClaim, At: tx.Now(), Owner: "a-daemon-that-died", TTL: leaseCfg.LeaseTTL})
			if err != nil {
				return nil, err
			}
			return nil, tx.PutJob(&next, nil)
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(leaseCfg.LeaseTTL / 2)
		synctest.Wait()
		if got := job(t, j, orphan); got.LeaseOwner != "a-daemon-that-died" {
			t.Fatalf("recovered before its lease expired: %+v", got)
		}
		time.Sleep(leaseCfg.LeaseTTL)
		synctest.Wait()
		got := job(t, j, orphan)
		if got.RecoveryAttempts != 1 || (got.Status == store.JobRunning && got.LeaseOwner != j.Owner) {
			t.Fatalf("after the lease expired: %s, owner %q, recoveries %d", got.Status, got.LeaseOwner, got.RecoveryAttempts)
		}
	})
}

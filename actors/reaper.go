package actors

import (
	"context"
	"time"

	"github.com/loci-dev/loci/store"
)

// Job recovery. A job left running by a process that stopped without
// draining is given back to the queue (its crash counted, store.EvRecover).
// On the embedded store one process holds the palace, so at a start every
// running job is its previous run's and all are recovered. On a shared
// store (store.DB.Shared: several daemons on one database) a running job
// may be another daemon's, alive and heartbeating: a start recovers only
// the jobs whose lease expired, and the reaper, a goroutine of its own
// every third of the lease TTL, recovers the leases that expire later
// (a daemon that died), as the spec says.

// reaper is the shared store's periodic recovery of expired leases.
type reaper struct {
	stop chan struct{}
	done chan struct{}
}

// recoverAtStart recovers, before dispatching starts, the jobs a stopped
// process left running: every one on the embedded store, only those whose
// lease expired on a shared store.
func (j *Jobs) recoverAtStart(ctx context.Context) (int, error) {
	if !j.DB.Shared() {
		return j.recover(ctx, func(*store.Job, time.Time) bool { return true })
	}
	return j.reapExpired(ctx)
}

// reapExpired recovers the running jobs whose lease expired before the
// write transaction's time and that no local worker runs.
func (j *Jobs) reapExpired(ctx context.Context) (int, error) {
	return j.recover(ctx, func(job *store.Job, now time.Time) bool {
		j.mu.Lock()
		_, local := j.runs[job.ID]
		j.mu.Unlock()
		return !local && job.LeaseExpiresAt != nil && job.LeaseExpiresAt.Before(now)
	})
}

// startReaper starts the reaper on a shared store; on the embedded store
// the dispatcher's tick reaps (a worker lost here), as it always did.
func (j *Jobs) startReaper() {
	if !j.DB.Shared() {
		return
	}
	r := &reaper{stop: make(chan struct{}), done: make(chan struct{})}
	j.reaper = r
	every := max(j.Config.LeaseTTL/3, 10*time.Millisecond)
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				if j.draining.Load() {
					return // shutting down: the writer refuses writes
				}
				n, err := j.reapExpired(context.Background())
				if err != nil {
					j.Log.Warn("reaping expired leases failed", "err", err)
					continue
				}
				if n > 0 {
					j.Log.Info("recovered jobs whose lease expired", "jobs", n)
					j.kick()
				}
			}
		}
	}()
}

// stopReaper stops the reaper and waits for it; nothing when none runs.
func (j *Jobs) stopReaper() {
	if j.reaper == nil {
		return
	}
	close(j.reaper.stop)
	<-j.reaper.done
}

// reap is the dispatcher tick's recovery of expired leases on the
// embedded store; on a shared store the reaper does it.
func (d *dispatcher) reap() {
	j := d.jobs
	if j.reaper != nil {
		return
	}
	if _, err := j.reapExpired(context.Background()); err != nil {
		j.Log.Warn("reaping expired leases failed", "err", err)
	}
}

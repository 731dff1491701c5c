package actors

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// A full disk (the gate refusing) refuses a write with disk_full and sends
// nothing to the writer, but lets the job runtime's own records through;
// a job whose write is refused waits, saying so in its progress, and goes
// on once the gate opens: its unit is written once, the job completes.
// A pause asked while it waits ends the wait (the job pauses, not fails).
func TestFullDiskJobsWait(t *testing.T) {
	j := newJobs(t, testCfg)
	var full atomic.Bool
	j.Sys.SetGate(func() error {
		if full.Load() {
			return fault.New(fault.StoreDiskFull, "the palace's disk is full", "1.0 MiB free at /p")
		}
		return nil
	})
	wrote := make(chan struct{}, 8)
	j.Register(testKind("writer", store.PriorityNormal, func(ctx context.Context, r *Run) (any, error) {
		full.Store(true)
		err := r.Write(ctx, func(tx store.Tx) error {
			wrote <- struct{}{}
			return tx.Log(store.ChangeJob, "unit", r.Job.ID)
		}, map[string]int{"done": 1}, store.Progress{Current: 1, Message: "one unit"})
		return nil, err
	}))
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	job, err := j.Submit(context.Background(), Submission{Type: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	// Refused while full; nothing reached the writer.
	waitUntil(t, func() bool {
		got, _ := j.Get(context.Background(), job.ID)
		return got.Status == store.JobRunning && strings.Contains(got.Progress.Message, "waiting for disk space: 1.0 MiB free at /p")
	})
	if _, err := j.Sys.Write(context.Background(), func(tx store.Tx) (any, error) { return nil, nil }); !fault.Is(err, fault.StoreDiskFull) {
		t.Fatalf("a write on a full disk: %v", err)
	}
	if _, err := j.Sys.Write(Bookkeeping(context.Background()), func(tx store.Tx) (any, error) { return nil, nil }); err != nil {
		t.Fatalf("a bookkeeping write on a full disk: %v", err)
	}
	if len(wrote) != 0 {
		t.Fatal("the refused unit ran")
	}
	full.Store(false)
	got := waitStatus(t, j, job.ID, store.JobCompleted, store.JobFailed)
	if got.Status != store.JobCompleted || len(wrote) != 1 || got.Progress.Message != "one unit" {
		t.Fatalf("after space came back: %+v, unit written %d times", got, len(wrote))
	}

	// Paused while waiting: paused, not failed, its unit not written.
	job, _ = j.Submit(context.Background(), Submission{Type: "writer"})
	waitUntil(t, func() bool {
		got, _ := j.Get(context.Background(), job.ID)
		return strings.Contains(got.Progress.Message, "waiting for disk space")
	})
	if _, err := j.Pause(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
	if got := waitStatus(t, j, job.ID, store.JobPaused, store.JobFailed); got.Status != store.JobPaused || len(wrote) != 1 {
		t.Fatalf("paused while waiting: %+v, units %d", got, len(wrote))
	}
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("timed out")
}

package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
)

// On a shared store a job that reads more than the store is claimed only
// by a daemon that can read it: one reading this machine's files by a
// daemon of the same host (whatever its folder), one reading a daemon's
// own folder by that daemon; the others leave it queued. A job reading
// the store alone runs anywhere.
func TestPinnedJobsRunWhereTheirFilesAre(t *testing.T) {
	var mu sync.Mutex
	ranOn := map[string]string{}
	type in struct {
		Local Locality `json:"local"`
		N     int      `json:"n"`
	}
	kind := Define("reads", Spec[in]{
		Decode: func(_ context.Context, _ Submission, p in) (Plan, error) {
			return Plan{Input: p, Priority: store.PriorityNormal, Local: p.Local}, nil
		},
		Run: func(_ context.Context, r *Run) (any, error) {
			mu.Lock()
			ranOn[r.Job.ID] = r.jobs.Host + ":" + r.jobs.Folder
			mu.Unlock()
			return nil, nil
		},
	})
	// Daemons 0 and 1 on host a (folders p0, p1), daemon 2 on host b.
	hosts := []string{"a", "a", "b"}
	js := pgDaemonsWith(t, 3, JobConfig{MaxConcurrency: 2, LeaseTTL: 5 * time.Second}, func(i int, j *Jobs) {
		j.Host, j.Folder = hosts[i], fmt.Sprintf("p%d", i)
	}, kind)
	ctx := context.Background()
	submit := func(via int, l Locality, n int) string {
		job, err := js[via].Submit(ctx, Submission{Type: "reads", Channel: store.ByCLI, Typed: in{Local: l, N: n}})
		if err != nil {
			t.Fatal(err)
		}
		return job.ID
	}
	type want struct {
		id    string
		node  string
		where func(string) bool
	}
	var wants []want
	for n := range 8 {
		wants = append(wants,
			want{submit(2, ThisHost, n), "b", func(on string) bool { return on == "b:p2" }},
			want{submit(0, ThisHost, n), "a", func(on string) bool { return on == "a:p0" || on == "a:p1" }},
			want{submit(1, ThisDaemon, n), "a:p1", func(on string) bool { return on == "a:p1" }},
			want{submit(0, Anywhere, n), "", func(string) bool { return true }})
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, w := range wants {
		for {
			job, err := js[0].Get(ctx, w.id)
			if err != nil {
				t.Fatal(err)
			}
			if job.Node != w.node {
				t.Fatalf("job %s: node %q, want %q", w.id, job.Node, w.node)
			}
			if job.Status == store.JobCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s (node %q) still %s", w.id, w.node, job.Status)
			}
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		on := ranOn[w.id]
		mu.Unlock()
		if !w.where(on) {
			t.Fatalf("job %s pinned to %q ran on %s", w.id, w.node, on)
		}
	}
}

package actors

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
)

// BenchmarkSequentialWrite is one durable drawer write at a time through
// the writer actor (no HTTP): the floor of a client's write latency.
func BenchmarkSequentialWrite(b *testing.B) {
	sys, db := newSystem(b)
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	text := markov.NewText()
	r := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		_, err := p.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r",
			Content: text.Sentence(r),
			Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimLatency is the time from a job's submission (its durable
// write included) to its claim by an idle dispatcher (the claim's durable
// write and the worker started); it reports p50 and p99.
func BenchmarkClaimLatency(b *testing.B) {
	j := newJobs(b, JobConfig{MaxConcurrency: 4, BackgroundConcurrency: 2, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second})
	j.Register(testKind("demo", store.PriorityNormal, done))
	j.claimed = make(chan string, 1)
	if err := j.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		job, err := j.Submit(context.Background(), Submission{Type: "demo"})
		if err != nil {
			b.Fatal(err)
		}
		for id := range j.claimed {
			if id == job.ID {
				break
			}
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50-claim")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99-claim")
}

// BenchmarkJobScansWithHistory: the scans that look for active jobs (the
// reaper's, in the writer, every heartbeat; the delete guard's; the
// automatic embed job's) in a palace with 20,000 finished jobs, as a year
// of automatic embed jobs leaves.
func BenchmarkJobScansWithHistory(b *testing.B) {
	j := newJobs(b, testCfg)
	ctx := context.Background()
	now := time.Now().UTC()
	for batch := range 20 {
		_, err := j.Sys.Write(ctx, func(tx store.Tx) (any, error) {
			for i := range 1000 {
				at := now.Add(time.Duration(batch*1000+i) * time.Millisecond)
				job := &store.Job{ID: uuid.Must(uuid.NewV7()).String(), Kind: "embed", Status: store.JobCompleted, RequestedBy: store.ByUnknown,
					CreatedAt: at, UpdatedAt: at, StartedAt: &at, FinishedAt: &at, Result: json.RawMessage(`{"profile":"p","missing":1,"embedded":1}`)}
				if err := tx.PutJob(job, nil); err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("reap", func(b *testing.B) {
		for b.Loop() {
			if _, err := j.recover(ctx, func(*store.Job, time.Time) bool { return false }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("busy", func(b *testing.B) {
		for b.Loop() {
			if err := j.Busy(ctx, "w", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

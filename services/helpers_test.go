package services

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// newSystem is a writer over a fresh store in a temporary directory,
// stopped and closed with the test.
func newSystem(t testing.TB) (*actors.System, store.DB) {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sys := actors.Start(db, slog.New(slog.DiscardHandler), slog.LevelInfo)
	t.Cleanup(func() {
		sys.Stop(context.Background())
		db.Close()
	})
	return sys, db
}

// newJobs is a job runtime over newSystem; register its kinds, then start.
func newJobs(t testing.TB, cfg actors.JobConfig) *actors.Jobs {
	t.Helper()
	sys, db := newSystem(t)
	return actors.NewJobs(db, sys, slog.New(slog.DiscardHandler), cfg)
}

var testCfg = actors.JobConfig{MaxConcurrency: 1, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second}

func done(context.Context, *actors.Run) (any, error) { return nil, nil }

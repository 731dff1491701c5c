package actors

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// The lease and reaper cases on PostgreSQL, in real time: two handles on
// one database are two daemons; the jobs of a daemon that died are written
// through one handle as it left them, and the other's runtime (its own
// writer, its reaper) recovers them.

// pgLeaseCfg: a 3 s lease, heartbeats and reaper rounds every second.
var pgLeaseCfg = JobConfig{MaxConcurrency: 2, BackgroundConcurrency: 1, LeaseTTL: 3 * time.Second, DrainTimeout: 5 * time.Second}

// pgCluster is a cluster of this test's own, removed when it ends (the
// package's TestMain checks goroutines, not clusters: no shared one).
func pgCluster(t *testing.T) *pgtest.Server {
	t.Helper()
	s, err := pgtest.Start()
	if err != nil {
		if os.Getenv("LOCI_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("PostgreSQL is required here (LOCI_REQUIRE_POSTGRES=1) and could not start: %v; %s", err, pgtest.Hint)
		}
		t.Skipf("PostgreSQL could not start: %v; %s", err, pgtest.Hint)
	}
	t.Cleanup(s.Remove)
	return s
}

// pgHandle opens a handle on url with the schema applied, closed when the
// test ends.
func pgHandle(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), store.OpenOptions{Location: url, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrator(nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// pgRuntime is a daemon's job runtime on db (its own actor system and
// writer) with the kind "long", whose jobs run until asked to stop
// (aborted says how each stopped). It is
// stopped when the test ends.
func pgRuntime(t *testing.T, db store.DB, cfg JobConfig, aborted chan bool) *Jobs {
	t.Helper()
	return runtimeOn(t, db, cfg, nil, testKind("long", store.PriorityNormal, patient(aborted)))
}

// runtimeOn is a daemon's job runtime on db (its own actor system and
// writer) with kinds, setup run on it before it starts (nil: none); it is
// stopped when the test ends.
func runtimeOn(t *testing.T, db store.DB, cfg JobConfig, setup func(*Jobs), kinds ...Kind) *Jobs {
	t.Helper()
	sys := Start(db, slog.New(slog.DiscardHandler), slog.LevelInfo)
	j := NewJobs(db, sys, slog.New(slog.DiscardHandler), cfg)
	t.Cleanup(func() {
		j.Stop(context.Background())
		_ = sys.Stop(context.Background())
	})
	for _, k := range kinds {
		j.Register(k)
	}
	if setup != nil {
		setup(j)
	}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return j
}

// leftRunning stores, through db (a daemon that is gone or another one),
// a job of kind long running under owner's lease, taken at claimedAt for
// ttl.
func leftRunning(t *testing.T, db store.DB, owner string, claimedAt time.Time, ttl time.Duration) string {
	t.Helper()
	j := leased(t, owner, claimedAt, ttl)
	if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.PutJob(j, nil) }); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// waitFor polls the job through j until ok holds, failing after limit.
func waitFor(t *testing.T, j *Jobs, id string, limit time.Duration, what string, ok func(*store.Job) bool) *store.Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := job(t, j, id)
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after %s the job is %s, owner %q until %v, recoveries %d", what, limit, got.Status, got.LeaseOwner, got.LeaseExpiresAt, got.RecoveryAttempts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestLeasesOnPostgres(t *testing.T) {
	s := pgCluster(t)
	database := func(t *testing.T) string {
		name, err := s.NewDatabase()
		if err != nil {
			t.Fatal(err)
		}
		return s.URLWithPassword(name)
	}
	ttl := pgLeaseCfg.LeaseTTL

	// A daemon starting on a shared database recovers only the jobs whose
	// lease expired; a job another daemon runs, its lease alive, is left
	// to it.
	t.Run("StartRecoversOnlyExpiredLeases", func(t *testing.T) {
		url := database(t)
		other, here := pgHandle(t, url), pgHandle(t, url)
		expired := leftRunning(t, other, "a-daemon-that-died", time.Now().Add(-time.Hour), ttl)
		live := leftRunning(t, other, "a-live-daemon", time.Now(), time.Hour)
		j := pgRuntime(t, here, pgLeaseCfg, make(chan bool, 8))
		// Recovered at the start (Start returned), then claimed here.
		if g := job(t, j, expired); g.RecoveryAttempts != 1 || g.LeaseOwner == "a-daemon-that-died" {
			t.Fatalf("the expired lease was not recovered at the start: %s, owner %q, recoveries %d", g.Status, g.LeaseOwner, g.RecoveryAttempts)
		}
		waitFor(t, j, expired, 10*time.Second, "the recovered job", func(g *store.Job) bool {
			return g.RecoveryAttempts == 1 && g.Status == store.JobRunning && g.LeaseOwner == j.Owner
		})
		if g := job(t, j, live); g.Status != store.JobRunning || g.LeaseOwner != "a-live-daemon" || g.RecoveryAttempts != 0 {
			t.Fatalf("the live lease was taken at the start: %s, owner %q, recoveries %d", g.Status, g.LeaseOwner, g.RecoveryAttempts)
		}
	})

	// The reaper of a second daemon recovers a lease that expires while it
	// runs (a daemon that died), once expired and not before, and claims
	// the job; it never takes a live lease: neither one held for an hour
	// nor one a running daemon keeps alive by heartbeats over several
	// TTLs.
	t.Run("SecondHandlesReaperRecoversAnExpiredLeaseNeverALiveOne", func(t *testing.T) {
		url := database(t)
		dead, handleA, handleB := pgHandle(t, url), pgHandle(t, url), pgHandle(t, url)
		// B runs one job at a time: once it runs the recovered one, a job
		// submitted to A can only run on A.
		one := pgLeaseCfg
		one.MaxConcurrency = 1
		b := pgRuntime(t, handleB, one, make(chan bool, 8))
		if b.reaper == nil {
			t.Fatal("no reaper runs on PostgreSQL")
		}
		start := time.Now()
		dies := leftRunning(t, dead, "a-daemon-that-died", start, ttl)
		held := leftRunning(t, dead, "a-live-daemon", start, time.Hour)
		time.Sleep(ttl / 2)
		if got := job(t, b, dies); got.LeaseOwner != "a-daemon-that-died" || got.RecoveryAttempts != 0 {
			t.Fatalf("recovered before its lease expired: %s, owner %q", got.Status, got.LeaseOwner)
		}
		got := waitFor(t, b, dies, 3*ttl, "the expired lease", func(g *store.Job) bool {
			return g.RecoveryAttempts == 1 && g.Status == store.JobRunning && g.LeaseOwner == b.Owner
		})
		if at := got.StartedAt; at == nil || at.Before(start.Add(ttl)) {
			t.Fatalf("claimed again at %v, before the lease expired at %v", at, start.Add(ttl))
		}
		// Daemon A runs a job whose lease it keeps alive by heartbeats;
		// over several TTLs, B's reaper takes neither it nor the lease held
		// for an hour.
		a := pgRuntime(t, handleA, pgLeaseCfg, make(chan bool, 8))
		sub, err := a.Submit(context.Background(), Submission{Type: "long"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, a, sub.ID, 10*time.Second, "daemon A's job", func(g *store.Job) bool {
			return g.Status == store.JobRunning && g.LeaseOwner == a.Owner
		})
		for range 6 {
			time.Sleep(ttl / 2)
			if g := job(t, b, held); g.Status != store.JobRunning || g.LeaseOwner != "a-live-daemon" || g.RecoveryAttempts != 0 {
				t.Fatalf("the lease held for an hour was taken: %s, owner %q, recoveries %d", g.Status, g.LeaseOwner, g.RecoveryAttempts)
			}
			if g := job(t, b, sub.ID); g.Status != store.JobRunning || g.LeaseOwner != a.Owner || g.RecoveryAttempts != 0 {
				t.Fatalf("daemon A's heartbeated lease: %s, owner %q until %v, recoveries %d",
					g.Status, g.LeaseOwner, g.LeaseExpiresAt, g.RecoveryAttempts)
			}
		}
		if g := job(t, b, dies); g.LeaseOwner != b.Owner || g.RecoveryAttempts != 1 {
			t.Fatalf("the recovered job left B: %s, owner %q, recoveries %d", g.Status, g.LeaseOwner, g.RecoveryAttempts)
		}
	})

	// A lease another daemon took over (written through its own handle)
	// stops the local worker at its next heartbeat: its context is
	// cancelled.
	t.Run("LostLeaseAbortsTheWorker", func(t *testing.T) {
		url := database(t)
		other, here := pgHandle(t, url), pgHandle(t, url)
		aborted := make(chan bool, 8)
		j := pgRuntime(t, here, pgLeaseCfg, aborted)
		sub, err := j.Submit(context.Background(), Submission{Type: "long"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, j, sub.ID, 10*time.Second, "the job", func(g *store.Job) bool { return g.Status == store.JobRunning && g.LeaseOwner == j.Owner })
		if err := other.Update(context.Background(), func(tx store.Tx) error {
			cur, err := tx.Job(sub.ID)
			if err != nil {
				return err
			}
			next := *cur
			next.LeaseOwner = "another-daemon"
			return tx.PutJob(&next, cur)
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-aborted:
			if !a {
				t.Fatal("the worker stopped without its context being cancelled")
			}
		case <-time.After(ttl/3 + 5*time.Second):
			t.Fatal("the worker still runs after its lease was taken by another daemon")
		}
		if g := job(t, j, sub.ID); g.LeaseOwner != "another-daemon" {
			t.Fatalf("the worker that lost its lease wrote the job again: owner %q", g.LeaseOwner)
		}
	})
}

package services

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/triggers"
)

// Triggers on several daemons sharing one store, as the trigger service
// sees them: supervisors of one process over the store, which each
// daemon's would share through the database (the writes of all daemons
// being serial there as here). cmd/loci's e2e_shared_test.go runs real
// daemons on PostgreSQL.

// sharedStore reports the store shared, as a database several daemons
// use would.
type sharedStore struct{ store.DB }

func (sharedStore) Shared() bool { return true }

// daemonsTriggers are n trigger services over one store (the jobs
// runtime started, kind mine a no-op run on lane source:<locator>).
func daemonsTriggers(t *testing.T, n int) ([]*Triggers, *actors.Jobs) {
	t.Helper()
	j := newJobs(t, testCfg)
	j.Register(actors.Define("mine", actors.Spec[mineParamsForTest]{
		Decode: func(_ context.Context, _ actors.Submission, p mineParamsForTest) (actors.Plan, error) {
			return actors.Plan{Input: p, Priority: store.PriorityBackground, Lane: "source:" + p.Locator}, nil
		},
		Run: done}))
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Stop(context.Background()) })
	dir := t.TempDir()
	var out []*Triggers
	for range n {
		miners := &Miners{Defined: map[string]config.Miner{"docs": {Locator: dir, Enabled: true}},
			Sources: sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20}), Jobs: j}
		out = append(out, &Triggers{Miners: miners, DB: sharedStore{j.DB}, Sys: j.Sys, Log: slog.New(slog.DiscardHandler),
			Webhook: config.Webhook{Enable: true, Bind: "127.0.0.1"}, Listener: &fakeListener{},
			Env:   func(string) (string, bool) { return "secret", true },
			Every: time.Hour, Grace: 2 * time.Second})
	}
	return out, j
}

// A schedule run by three daemons fires once per slot: each slot is
// claimed in one write (the remembered slot compared and replaced), and
// the daemons that lose the claim wait for the slot the winner
// remembered. Without the claim every daemon fires every slot.
func TestAScheduleSlotFiresOnceAcrossDaemons(t *testing.T) {
	ts, _ := daemonsTriggers(t, 3)
	set := triggers.Settings{Type: triggers.Schedule, Every: 150 * time.Millisecond, At: -1}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	fired := map[time.Time]int{}
	var wg sync.WaitGroup
	for i, tr := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var slot time.Time
			runSchedule(ctx, set, nil, func() {
				mu.Lock()
				fired[slot]++
				mu.Unlock()
			}, func(s *time.Time, next time.Time) (time.Time, bool) {
				n, won := tr.claimSlot(ctx, "nightly", s, next)
				if won {
					slot = *s
				}
				return n, won
			})
		}()
		time.Sleep(time.Duration(i) * 20 * time.Millisecond) // daemons start apart
	}
	const run = 2 * time.Second
	time.Sleep(run)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for slot, n := range fired {
		if n != 1 {
			t.Fatalf("slot %v fired %d times", slot, n)
		}
	}
	// About run/Every slots passed; a loaded machine may fire a few late
	// slots once each (After skips the missed ones), never more.
	if len(fired) < 5 || len(fired) > int(run/set.Every)+1 {
		t.Fatalf("%d slots fired in %v at one per %v", len(fired), run, set.Every)
	}
}

// A watch change seen by three daemons watching one directory is claimed
// once: one run is asked for, not three; a later change is claimed again.
func TestAWatchChangeIsClaimedOnceAcrossDaemons(t *testing.T) {
	ts, _ := daemonsTriggers(t, 3)
	dir := t.TempDir()
	set, err := triggers.Check(triggers.Watch, map[string]string{"path": dir, "debounce": "300ms"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var asked atomic.Int32
	var armed sync.WaitGroup
	var wg sync.WaitGroup
	for _, tr := range ts {
		armed.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			runWatch(ctx, set, false, func() {
				if tr.claimSignal(ctx, "docs-watch", set.Debounce/2) {
					asked.Add(1)
				}
			}, func(err error) {
				if err == nil {
					once.Do(armed.Done)
				}
			})
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	armed.Wait()
	change := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	change("a.md")
	time.Sleep(set.Debounce*2 + 500*time.Millisecond)
	if n := asked.Load(); n != 1 {
		t.Fatalf("one change on three daemons asked %d runs", n)
	}
	change("b.md")
	time.Sleep(set.Debounce*2 + 500*time.Millisecond)
	if n := asked.Load(); n != 2 {
		t.Fatalf("a second change: %d runs asked in all, want 2", n)
	}
}

// A poll run by three daemons asks once per interval, not three times.
func TestAPollIsClaimedOnceAcrossDaemons(t *testing.T) {
	ts, _ := daemonsTriggers(t, 3)
	set := triggers.Settings{Type: triggers.Poll, Every: 200 * time.Millisecond, MaxBackoff: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	var asked atomic.Int32
	var wg sync.WaitGroup
	for i, tr := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runPoll(ctx, set, func() error {
				if tr.claimSignal(ctx, "poller", set.Every/2) {
					asked.Add(1)
				}
				return nil
			}, func(time.Time) {})
		}()
		time.Sleep(time.Duration(i) * 30 * time.Millisecond)
	}
	const run = 2 * time.Second
	time.Sleep(run)
	cancel()
	wg.Wait()
	// One per interval at most (a claim holds half an interval, the
	// daemons' polls an interval apart each): about ten, never thirty.
	if n := asked.Load(); n < 5 || n > int32(run/set.Every)+2 {
		t.Fatalf("three daemons polling every %v for %v asked %d times", set.Every, run, n)
	}
}

// A webhook delivery id is remembered in the store: a retried delivery
// reaching another daemon is a duplicate, not run again. A delivery
// accepted and not yet queued by a live daemon is not taken by another
// daemon's start; one left by a daemon that stopped, older than the
// grace, is recovered by exactly one of two daemons starting at once.
func TestWebhookDeliveriesAcrossDaemons(t *testing.T) {
	ts, j := daemonsTriggers(t, 2)
	put := func(id string, at time.Time) {
		if _, err := j.Sys.Write(context.Background(), func(tx store.Tx) (any, error) {
			return nil, tx.PutDelivery(&store.Delivery{Trigger: "hook", ID: id, AcceptedAt: at})
		}); err != nil {
			t.Fatal(err)
		}
	}
	delivery := func(id string) *store.Delivery {
		var d *store.Delivery
		_ = j.DB.View(context.Background(), func(r store.Reader) error { d, _ = r.Delivery("hook", id); return nil })
		return d
	}
	put("in-flight", time.Now().Add(-time.Second)) // a live daemon queues it in a moment
	put("left", time.Now().Add(-time.Minute))      // its daemon stopped before queueing it
	cfg := config.Config{Triggers: map[string]config.Trigger{"hook": {Miner: "docs", Type: "webhook", Enabled: true,
		Credential: &config.CredentialRef{Env: "HOOK"}, Settings: map[string]any{"delivery_header": "x-delivery"}}}}
	var wg sync.WaitGroup
	for _, tr := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := tr.Start(context.Background(), cfg); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, tr := range ts {
			tr.Stop(context.Background())
		}
	}()
	if d := delivery("left"); d == nil || d.Job == "" {
		t.Fatalf("the delivery a stopped daemon left was not recovered: %+v", d)
	}
	if d := delivery("in-flight"); d == nil || d.Job != "" {
		t.Fatalf("another daemon's delivery in flight was taken at a start: %+v", d)
	}
	st := func() store.TriggerState {
		var s *store.TriggerState
		_ = j.DB.View(context.Background(), func(r store.Reader) error { s, _ = r.TriggerState("hook"); return nil })
		if s == nil {
			return store.TriggerState{}
		}
		return *s
	}
	if s := st(); s.Fired+s.Coalesced != 1 {
		t.Fatalf("the left delivery was asked for %d times (fired %d, coalesced %d), want once", s.Fired+s.Coalesced, s.Fired, s.Coalesced)
	}

	ts[0].mu.Lock()
	set := ts[0].running["hook"].set
	ts[0].mu.Unlock()
	header := func(h string) string {
		switch h {
		case "x-hub-signature-256":
			return set.Sign([]byte("secret"), []byte("{}"))
		case "x-delivery":
			return "delivery-42"
		}
		return ""
	}
	first, job, ok, err := ts[0].Deliver(context.Background(), "hook", header, []byte("{}"))
	if !ok || err != nil || first == OutcomeDuplicate {
		t.Fatalf("the first delivery on daemon A: %v %v %v", first, ok, err)
	}
	again, job2, ok, err := ts[1].Deliver(context.Background(), "hook", header, []byte("{}"))
	if !ok || err != nil || again != OutcomeDuplicate || job2 == nil || job2.ID != job.ID {
		t.Fatalf("the same delivery retried on daemon B: %v, job %v, %v %v; want duplicate of %s", again, job2, ok, err, job.ID)
	}
}

// On a shared store a daemon whose configuration file does not define a
// trigger another daemon runs leaves what the store remembers of it (its
// slot, counters and deliveries): each daemon clears or forgets only the
// triggers whose definition changed in its own file.
func TestADaemonLeavesAnotherDaemonsTriggerAlone(t *testing.T) {
	ts, j := daemonsTriggers(t, 2)
	a, b := ts[0], ts[1]
	withTick := config.Config{Triggers: map[string]config.Trigger{"tick": {Miner: "docs", Type: "schedule", Enabled: true,
		Settings: map[string]any{"every": "1h"}}}}
	if err := a.Start(context.Background(), withTick); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	state := func() *store.TriggerState {
		var st *store.TriggerState
		_ = j.DB.View(context.Background(), func(r store.Reader) error { st, _ = r.TriggerState("tick"); return nil })
		return st
	}
	deadline := time.Now().Add(10 * time.Second)
	for st := state(); st == nil || st.Due == nil; st = state() {
		if time.Now().After(deadline) {
			t.Fatal("the schedule's slot was not remembered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	due := *state().Due
	if err := b.Start(context.Background(), config.Config{}); err != nil {
		t.Fatal(err)
	}
	defer b.Stop(context.Background())
	if err := b.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := state(); st == nil || st.Due == nil || !st.Due.Equal(due) {
		t.Fatalf("a daemon that does not define the trigger changed what the store remembers of it: %+v, want the slot %v", st, due)
	}
}

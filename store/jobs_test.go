package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func job(status string) store.Job {
	return store.Job{ID: "11111111-1111-1111-1111-111111111111", Kind: "checkpoint", Status: status, Checkpoint: json.RawMessage("{}")}
}

// Every (status, event) pair: exactly the spec's table is allowed.
func TestApplyAllowsExactlyTheTable(t *testing.T) {
	allowed := map[string][]store.JobEventKind{
		"":                 {store.EvSubmit},
		store.JobQueued:    {store.EvClaim, store.EvCancel},
		store.JobRunning:   {store.EvHeartbeat, store.EvSave, store.EvRequestPause, store.EvRequestCancel, store.EvPause, store.EvComplete, store.EvFail, store.EvRecover, store.EvDrain, store.EvCancel},
		store.JobPaused:    {store.EvResume, store.EvCancel},
		store.JobFailed:    {store.EvRetry},
		store.JobCompleted: nil,
		store.JobCancelled: nil,
	}
	events := []store.JobEventKind{store.EvSubmit, store.EvClaim, store.EvHeartbeat, store.EvSave, store.EvRequestPause,
		store.EvRequestCancel, store.EvPause, store.EvResume, store.EvComplete, store.EvFail, store.EvRecover,
		store.EvDrain, store.EvRetry, store.EvCancel}
	for status, ok := range allowed {
		for _, ev := range events {
			want := false
			for _, e := range ok {
				want = want || e == ev
			}
			_, err := store.Apply(job(status), store.JobEvent{Kind: ev, At: t0, TTL: time.Second})
			if want && err != nil {
				t.Errorf("%q + %s refused: %v", status, ev, err)
			}
			if !want && !fault.Is(err, fault.JobsTransitionInvalid) {
				t.Errorf("%q + %s: err %v, want transition_invalid", status, ev, err)
			}
		}
	}
}

func TestApplyClaimSetsLeaseAndAttempt(t *testing.T) {
	j, err := store.Apply(job(store.JobQueued), store.JobEvent{Kind: store.EvClaim, At: t0, Owner: "me", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.JobRunning || j.LeaseOwner != "me" || !j.LeaseExpiresAt.Equal(t0.Add(30*time.Second)) || j.Attempt != 1 {
		t.Fatalf("claimed: %+v", j)
	}
	// Another owner cannot complete it.
	if _, err := store.Apply(j, store.JobEvent{Kind: store.EvComplete, At: t0, Owner: "other"}); !fault.Is(err, fault.JobsLeaseLost) {
		t.Fatalf("foreign completion: %v", err)
	}
	j, err = store.Apply(j, store.JobEvent{Kind: store.EvComplete, At: t0, Owner: "me", Result: json.RawMessage(`{"items":1}`)})
	if err != nil || j.Status != store.JobCompleted || j.LeaseOwner != "" || j.FinishedAt == nil || string(j.Result) != `{"items":1}` {
		t.Fatalf("completed: %+v %v", j, err)
	}
}

func TestApplyRecoveryBudgetAndRequests(t *testing.T) {
	j := job(store.JobRunning)
	for i := 1; i <= store.MaxRecoveryAttempts; i++ {
		var err error
		j, err = store.Apply(j, store.JobEvent{Kind: store.EvRecover, At: t0})
		if err != nil || j.Status != store.JobQueued || j.RecoveryAttempts != i {
			t.Fatalf("recovery %d: %+v %v", i, j, err)
		}
		j.Status = store.JobRunning
	}
	j, _ = store.Apply(j, store.JobEvent{Kind: store.EvRecover, At: t0})
	if j.Status != store.JobFailed || j.Error == "" || j.RecoveryAttempts != store.MaxRecoveryAttempts {
		t.Fatalf("budget exhausted: %+v", j)
	}
	// Requests are honoured without spending budget; cancel beats pause.
	r := job(store.JobRunning)
	r.PauseRequested, r.CancelRequested = true, true
	if got, _ := store.Apply(r, store.JobEvent{Kind: store.EvRecover, At: t0}); got.Status != store.JobCancelled || got.RecoveryAttempts != 0 {
		t.Fatalf("cancel-requested recovery: %+v", got)
	}
	r.CancelRequested = false
	if got, _ := store.Apply(r, store.JobEvent{Kind: store.EvRecover, At: t0}); got.Status != store.JobPaused || got.RecoveryAttempts != 0 || got.PauseRequested {
		t.Fatalf("pause-requested recovery: %+v", got)
	}
	// Drain: back to queued with the checkpoint, a paused request stays paused.
	d := job(store.JobRunning)
	got, _ := store.Apply(d, store.JobEvent{Kind: store.EvDrain, At: t0, Checkpoint: json.RawMessage(`{"next_index":5}`)})
	if got.Status != store.JobQueued || string(got.Checkpoint) != `{"next_index":5}` {
		t.Fatalf("drain: %+v", got)
	}
	d.PauseRequested = true
	if got, _ := store.Apply(d, store.JobEvent{Kind: store.EvDrain, At: t0}); got.Status != store.JobPaused {
		t.Fatalf("drain of a pause-requested job: %+v", got)
	}
	// Retry clears the error, keeps the checkpoint.
	f := job(store.JobFailed)
	f.Error, f.Checkpoint = "boom", json.RawMessage(`{"next_index":3}`)
	if got, _ := store.Apply(f, store.JobEvent{Kind: store.EvRetry, At: t0}); got.Status != store.JobQueued || got.Error != "" || string(got.Checkpoint) != `{"next_index":3}` {
		t.Fatalf("retry: %+v", got)
	}
}

func TestPriorityJSON(t *testing.T) {
	b, _ := json.Marshal(store.PriorityCritical)
	if string(b) != `"critical"` {
		t.Fatalf("marshal %s", b)
	}
	var p store.Priority
	if err := json.Unmarshal([]byte(`75`), &p); err != nil || p != store.PriorityHigh {
		t.Fatalf("unmarshal number: %v %v", p, err)
	}
}

// The time rules of the spec: validity end and window end are exclusive;
// a drawer closed exactly at from, or opened exactly at until, is not
// found; a single instant t is the window [t, t+1ns).
func TestValidIn(t *testing.T) {
	a := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	b := time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)
	old := store.Drawer{ValidFrom: a, ValidTo: &b}
	cur := store.Drawer{ValidFrom: b}
	ns := time.Nanosecond
	cases := []struct {
		name        string
		from, until time.Time
		old, cur    bool
	}{
		{"cur opens exactly at until", a, b, true, false},
		{"old closed exactly at from", b, b.Add(time.Hour), false, true},
		{"the instant before b", b.Add(-ns), b, true, false},
		{"the single instant b", b, b.Add(ns), false, true},
		{"before anything", a.Add(-time.Hour), a, false, false},
		{"a window holding a", a.Add(-ns), a.Add(ns), true, false},
		{"both", a, b.Add(ns), true, true},
		{"a window after b", b.Add(time.Hour), b.Add(2 * time.Hour), false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := old.ValidIn(c.from, c.until); got != c.old {
				t.Errorf("old in [%s, %s): %v", c.from, c.until, got)
			}
			if got := cur.ValidIn(c.from, c.until); got != c.cur {
				t.Errorf("cur in [%s, %s): %v", c.from, c.until, got)
			}
		})
	}
}

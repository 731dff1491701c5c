package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

var bg = context.Background()

// manyJobs stores n jobs (more than a listing's first pages hold): every
// third completed, priorities in turn low, normal, critical; creation times
// a microsecond apart (and three pairs in one microsecond, told apart by
// their nanoseconds), inputs as given. It returns them in creation order.
func manyJobs(t *testing.T, db store.DB, n int) []*store.Job {
	t.Helper()
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	prios := []store.Priority{store.PriorityLow, store.PriorityNormal, store.PriorityCritical}
	var jobs []*store.Job
	for i := range n {
		at := base.Add(time.Duration(i) * time.Microsecond)
		if i%40 == 1 {
			at = jobs[i-1].CreatedAt.Add(time.Nanosecond) // one microsecond, two jobs
		}
		status := store.JobQueued
		switch i % 3 {
		case 1:
			status = store.JobCompleted
		case 2:
			if i%2 == 0 {
				status = store.JobRunning
			}
		}
		jobs = append(jobs, &store.Job{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n-i), Kind: "demo", Status: status,
			Priority: prios[i%len(prios)], CreatedAt: at, UpdatedAt: at, Input: json.RawMessage(fmt.Sprintf(`{ "n" : %d }`, i))})
	}
	mustUpdate(t, db, func(tx store.Tx) error {
		for _, j := range jobs {
			if err := tx.PutJob(j, nil); err != nil {
				return err
			}
		}
		return nil
	})
	return jobs
}

func ids(jobs []*store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// The job listings keep their orders across pages (several hundred jobs,
// ids that do not follow creation, two jobs in one microsecond), and a
// callback may read the transaction again while one runs (a claim reads a
// queued job's input while it walks the queue): each page is read whole
// before the callback sees it.
func TestJobListingsOrderAndNestedReads(t *testing.T) {
	db := open(t, pgtest.Database(t))
	defer db.Close()
	jobs := manyJobs(t, db, 300)
	newest := slices.Clone(jobs)
	slices.Reverse(newest)
	var queued, active []*store.Job
	for _, j := range jobs {
		if j.Status == store.JobQueued {
			queued = append(queued, j)
		}
		if !j.Finished() {
			active = append(active, j)
		}
	}
	slices.SortStableFunc(queued, func(a, b *store.Job) int { return int(b.Priority) - int(a.Priority) })
	check := func(r store.Reader, name string, visit func(func(*store.Job) bool) error, want []*store.Job) error {
		var got []string
		err := visit(func(j *store.Job) bool {
			in, err := r.JobInput(j.ID) // a read inside the walk
			if err != nil {
				got = append(got, "error: "+err.Error())
				return false
			}
			var v struct{ N int }
			if json.Unmarshal(in, &v) != nil || jobs[v.N].ID != j.ID {
				got = append(got, "wrong input "+string(in))
				return false
			}
			got = append(got, j.ID)
			return true
		})
		if err != nil || !slices.Equal(got, ids(want)) {
			return fmt.Errorf("%s: %d jobs, want %d in order (%v); first differences: %v", name, len(got), len(want), err, firstDiff(got, ids(want)))
		}
		return nil
	}
	for _, rw := range []string{"read", "write"} {
		t.Run(rw, func(t *testing.T) {
			fn := func(r store.Reader) error {
				for _, c := range []struct {
					name  string
					visit func(func(*store.Job) bool) error
					want  []*store.Job
				}{{"Jobs", r.Jobs, newest}, {"QueuedJobs", r.QueuedJobs, queued}, {"ActiveJobs", r.ActiveJobs, active}} {
					if err := check(r, c.name, c.visit, c.want); err != nil {
						return err
					}
				}
				// An early stop stops.
				n := 0
				if err := r.Jobs(func(*store.Job) bool { n++; return n < 20 }); err != nil || n != 20 {
					return fmt.Errorf("a walk stopped at the 20th job visited %d (%v)", n, err)
				}
				return nil
			}
			if rw == "read" {
				mustView(t, db, fn)
			} else {
				mustUpdate(t, db, func(tx store.Tx) error { return fn(tx) })
			}
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("at %d got %q want %q", i, g, w)
		}
	}
	return "none"
}

// A job's input is written once, when it is submitted, byte for byte; a
// later save (a claim, progress) leaves it, and the record's raw JSON
// (checkpoint, result) and a source's cursor read back byte for byte
// (jsonb would reorder their keys).
func TestRecordsReadBackByteForByte(t *testing.T) {
	db := open(t, pgtest.Database(t))
	defer db.Close()
	now := time.Now().UTC()
	j := &store.Job{ID: store.NewID(), Kind: "demo", Status: store.JobQueued, Priority: store.PriorityNormal, CreatedAt: now, UpdatedAt: now,
		Input: json.RawMessage("{ \"z\" : 1,\n \"a\" : 2 }")}
	mustUpdate(t, db, func(tx store.Tx) error { return tx.PutJob(j, nil) })
	next := *j
	next.Status, next.Input = store.JobRunning, json.RawMessage(`{"changed":true}`) // a later save does not write the input
	next.Checkpoint, next.Result = json.RawMessage(`{"z":1,"a":[2,1]}`), json.RawMessage(`{"zz":"x","a":null}`)
	cursor := json.RawMessage(`{"path":"b","mtime_ns":5}`)
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutJob(&next, j); err != nil {
			return err
		}
		return tx.PutSource(&store.SourceState{Key: "k", Cursor: cursor})
	})
	mustView(t, db, func(r store.Reader) error {
		in, err := r.JobInput(j.ID)
		if err != nil || string(in) != string(j.Input) {
			return fmt.Errorf("input %q %v, want %q", in, err, j.Input)
		}
		got, err := r.Job(j.ID)
		if err != nil || string(got.Checkpoint) != string(next.Checkpoint) || string(got.Result) != string(next.Result) || got.Input != nil {
			return fmt.Errorf("job %+v %v", got, err)
		}
		if none, err := r.JobInput(store.NewID()); none != nil || err != nil {
			return fmt.Errorf("the input of an unknown job: %q %v", none, err)
		}
		s, err := r.Source("k")
		if err != nil || string(s.Cursor) != string(cursor) {
			return fmt.Errorf("cursor %q %v, want %q", s.Cursor, err, cursor)
		}
		return nil
	})
	// A job without an input, result or checkpoint reads back without.
	bare := &store.Job{ID: store.NewID(), Kind: "demo", Status: store.JobQueued, CreatedAt: now, UpdatedAt: now}
	mustUpdate(t, db, func(tx store.Tx) error { return tx.PutJob(bare, nil) })
	mustView(t, db, func(r store.Reader) error {
		got, err := r.Job(bare.ID)
		if err != nil || got.Checkpoint != nil || got.Result != nil {
			return fmt.Errorf("a bare job: %+v %v", got, err)
		}
		if in, err := r.JobInput(bare.ID); in != nil || err != nil {
			return fmt.Errorf("a job without input has one: %q %v", in, err)
		}
		return nil
	})
}

// Every write method of these families is one statement: each moves
// Writes (one statement through exec) by exactly one, under the writer
// lock where each is a round trip.
func TestOneStatementPerWrite(t *testing.T) {
	db := open(t, pgtest.Database(t))
	defer db.Close()
	now := time.Now().UTC()
	job := &store.Job{ID: store.NewID(), Kind: "demo", Status: store.JobQueued, CreatedAt: now, UpdatedAt: now, Input: json.RawMessage(`{"a":1}`)}
	claimed := *job
	claimed.Status, claimed.LeaseOwner = store.JobRunning, "me"
	calls := []struct {
		name string
		call func(tx store.Tx) error
	}{
		{"PutJob new with input", func(tx store.Tx) error { return tx.PutJob(job, nil) }},
		{"PutJob save", func(tx store.Tx) error { return tx.PutJob(&claimed, job) }},
		{"PutJobFact", func(tx store.Tx) error { return tx.PutJobFact(job.ID, 3, json.RawMessage(`{}`)) }},
		{"PutAuthState", func(tx store.Tx) error { return tx.PutAuthState(&store.AuthState{Digest: "d", CreatedAt: now}) }},
		{"PutAuthState nil", func(tx store.Tx) error { return tx.PutAuthState(nil) }},
		{"PutSource", func(tx store.Tx) error { return tx.PutSource(&store.SourceState{Key: "s"}) }},
		{"PutSourceDocument", func(tx store.Tx) error { return tx.PutSourceDocument(&store.DocumentState{Source: "s", ID: "d"}) }},
		{"PutChunkOwner", func(tx store.Tx) error { return tx.PutChunkOwner("dr", "s", "d") }},
		{"PutStaleDocument", func(tx store.Tx) error { return tx.PutStaleDocument("s", "d") }},
		{"PutStaleDocument again", func(tx store.Tx) error { return tx.PutStaleDocument("s", "d") }},
		{"PutTriggerState", func(tx store.Tx) error { return tx.PutTriggerState(&store.TriggerState{Name: "t"}) }},
		{"PutDelivery", func(tx store.Tx) error { return tx.PutDelivery(&store.Delivery{Trigger: "t", ID: "1"}) }},
		{"PutDelivery 2", func(tx store.Tx) error { return tx.PutDelivery(&store.Delivery{Trigger: "t", ID: "2"}) }},
		{"DeleteStaleDocument", func(tx store.Tx) error { return tx.DeleteStaleDocument("s", "d") }},
		{"DeleteChunkOwner", func(tx store.Tx) error { return tx.DeleteChunkOwner("dr") }},
		{"DeleteSourceDocument", func(tx store.Tx) error { return tx.DeleteSourceDocument("s", "d") }},
		{"DeleteSource", func(tx store.Tx) error { return tx.DeleteSource("s") }},
		{"DeleteDelivery", func(tx store.Tx) error { return tx.DeleteDelivery("t", "1") }},
		{"DeleteTriggerState with a delivery", func(tx store.Tx) error { return tx.DeleteTriggerState("t") }},
	}
	for _, c := range calls {
		mustUpdate(t, db, func(tx store.Tx) error {
			before := tx.Writes()
			if err := c.call(tx); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if n := tx.Writes() - before; n != 1 {
				return fmt.Errorf("%s made %d statements, want 1", c.name, n)
			}
			return nil
		})
	}
	mustView(t, db, func(r store.Reader) error {
		if in, err := r.JobInput(job.ID); string(in) != `{"a":1}` || err != nil {
			return fmt.Errorf("the input written with the job: %q %v", in, err)
		}
		if j, err := r.Job(job.ID); err != nil || j.Status != store.JobRunning || j.LeaseOwner != "me" {
			return fmt.Errorf("the saved job: %+v %v", j, err)
		}
		n := 0
		if err := r.Deliveries(func(*store.Delivery) bool { n++; return true }); err != nil || n != 0 {
			return fmt.Errorf("%d deliveries left after their trigger was deleted (%v)", n, err)
		}
		return nil
	})
}

// In a write transaction the queue is read FOR UPDATE SKIP LOCKED: a row
// another transaction holds is skipped, not waited for (a reader sees it).
// Every Update takes the writer lock first, so another Update cannot hold
// a queued row meanwhile: the second claimer waits at the writer lock
// before it reads the queue at all.
func TestQueueSkipsLockedRowsAndTheWriterLockSerialisesClaims(t *testing.T) {
	url := pgtest.Database(t)
	db := open(t, url)
	defer db.Close()
	second := open(t, url)
	defer second.Close()
	now := time.Now().UTC()
	head := &store.Job{ID: "00000000-0000-4000-8000-00000000000a", Kind: "demo", Status: store.JobQueued, Priority: store.PriorityCritical, CreatedAt: now, UpdatedAt: now}
	next := &store.Job{ID: "00000000-0000-4000-8000-00000000000b", Kind: "demo", Status: store.JobQueued, Priority: store.PriorityCritical, CreatedAt: now.Add(time.Millisecond), UpdatedAt: now}
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutJob(head, nil); err != nil {
			return err
		}
		return tx.PutJob(next, nil)
	})
	first := func(r store.Reader) (string, error) {
		var got string
		err := r.QueuedJobs(func(j *store.Job) bool { got = j.ID; return false })
		return got, err
	}

	// A row lock held outside the writer lock (a plain transaction on
	// the pool) is skipped by a claim, which does not wait for it.
	lockTx, err := db.Pool().Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lockTx.Rollback(bg) }() // before the pool closes, which waits for it
	if _, err := lockTx.Exec(bg, "SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", head.ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	var got string
	if err := second.Update(ctx, func(tx store.Tx) error { got, err = first(tx); return err }); err != nil || got != next.ID {
		cancel()
		t.Fatalf("a claim with the head of the queue locked elsewhere took %q (%v), want the next job %s without waiting", got, err, next.ID)
	}
	cancel()
	mustView(t, second, func(r store.Reader) error {
		if got, err := first(r); err != nil || got != head.ID {
			return fmt.Errorf("a reader's queue starts at %q (%v), want the locked head %s", got, err, head.ID)
		}
		return nil
	})
	_ = lockTx.Rollback(bg)

	// Two Updates: the first holds the head's row lock (it read the
	// queue) and the writer lock; the second, on another handle, waits
	// at the writer lock and then reads the queue as the first left it.
	inFirst, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.Update(bg, func(tx store.Tx) error {
			id, err := first(tx)
			if err != nil || id != head.ID {
				return fmt.Errorf("first claim: %q %v", id, err)
			}
			j, err := tx.Job(id)
			if err != nil {
				return err
			}
			c := *j
			c.Status, c.LeaseOwner = store.JobRunning, "first"
			if err := tx.PutJob(&c, j); err != nil {
				return err
			}
			close(inFirst)
			<-release
			return nil
		})
	}()
	<-inFirst
	secondDone := make(chan string, 1)
	go func() {
		var id string
		err := second.Update(bg, func(tx store.Tx) error { var err error; id, err = first(tx); return err })
		if err != nil {
			id = "error: " + err.Error()
		}
		secondDone <- id
	}()
	select {
	case id := <-secondDone:
		t.Fatalf("the second claim read the queue (%q) while the first held the writer lock", id)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if id := <-secondDone; id != next.ID {
		t.Fatalf("the second claim, after the first committed, took %q, want %s", id, next.ID)
	}
}

// The schema's listing indexes serve the queue and the active list: the
// planner reads them (no sort) once the table is large enough.
func TestJobIndexesServeTheQueue(t *testing.T) {
	db := open(t, pgtest.Database(t))
	defer db.Close()
	manyJobs(t, db, 2000)
	if _, err := db.Pool().Exec(bg, "ANALYZE jobs"); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{
		"jobs_queue":   "SELECT rec FROM jobs WHERE status = 'queued' ORDER BY priority DESC, created_ns, id LIMIT 16",
		"jobs_active":  "SELECT rec FROM jobs WHERE status NOT IN ('completed', 'failed', 'cancelled') ORDER BY created_ns, id LIMIT 16",
		"jobs_by_time": "SELECT rec FROM jobs ORDER BY created_ns DESC, id DESC LIMIT 16",
	} {
		var plan []string
		rows, err := db.Pool().Query(bg, "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		if !strings.Contains(p, name) || strings.Contains(p, "Sort") {
			t.Errorf("%s is not read in order through %s:\n%s", q, name, p)
		}
	}
}

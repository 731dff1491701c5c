package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// What a second backend needs besides the families' contracts: a
// transaction's context cancels its reads, every write method counts its
// writes (the writer's rollback of a failed function rests on it), and
// job leases hold under concurrent claims, on one handle and on two.

// testCancelMidScan: a read view whose context is cancelled while it
// scans stops promptly and fails with context.Canceled, even when the
// function drops the reader's error; a write transaction cancelled so
// commits nothing.
func testCancelMidScan(t *testing.T, b Backend) {
	db := open(t, b)
	const n = 300
	update(t, db, func(tx store.Tx) error {
		for i := range n {
			if _, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: fmt.Sprintf("drawer number %d of the scan", i),
				Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, dd); err != nil {
				return err
			}
		}
		return nil
	})
	var room string
	view(t, db, func(r store.Reader) error {
		w, err := r.WingByName("w")
		if err != nil || w == nil {
			return fmt.Errorf("wing: %v %v", w, err)
		}
		rm, err := r.RoomByName(w.ID, "r")
		if err != nil || rm == nil {
			return fmt.Errorf("room: %v %v", rm, err)
		}
		room = rm.ID
		return nil
	})
	// A page of a remote backend may already be read when the context
	// ends: a scan stops within one page of it (100 rows), not at the end.
	const page = 100
	scans := []struct {
		name string
		scan func(r store.Reader, visit func() bool) error
	}{
		{"Drawers", func(r store.Reader, visit func() bool) error {
			return r.Drawers(room, false, func(*store.Drawer) bool { return visit() })
		}},
		{"EachDrawer", func(r store.Reader, visit func() bool) error {
			return r.EachDrawer(func(*store.Drawer) bool { return visit() })
		}},
		{"Changes", func(r store.Reader, visit func() bool) error {
			return r.Changes(0, func(store.Change) bool { return visit() })
		}},
	}
	for _, s := range scans {
		t.Run(s.name, func(t *testing.T) {
			for _, dropped := range []bool{false, true} {
				c, cancel := context.WithCancel(ctx)
				seen, after := 0, 0
				var scanErr error
				start := time.Now()
				err := db.View(c, func(r store.Reader) error {
					scanErr = s.scan(r, func() bool {
						seen++
						if seen == 10 {
							cancel()
						} else if seen > 10 {
							after++
						}
						return true
					})
					if dropped {
						return nil // the reader's error dropped: the view still fails
					}
					return scanErr
				})
				cancel()
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("error dropped %v: View answered %v (the scan %v) after %d of %d entries, want context.Canceled", dropped, err, scanErr, seen, n)
				}
				if !errors.Is(scanErr, context.Canceled) {
					t.Fatalf("the cancelled scan answered %v, want context.Canceled", scanErr)
				}
				if after > page {
					t.Fatalf("the scan went on for %d entries after its context was cancelled", after)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Fatalf("the cancelled view took %s", d)
				}
			}
		})
	}
	t.Run("UpdateCommitsNothing", func(t *testing.T) {
		before := lastSeq(t, db)
		c, cancel := context.WithCancel(ctx)
		defer cancel()
		err := db.Update(c, func(tx store.Tx) error {
			if _, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: "written before the cancel",
				Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, dd); err != nil {
				return err
			}
			seen := 0
			_ = tx.Drawers(room, false, func(*store.Drawer) bool {
				if seen++; seen == 10 {
					cancel()
				}
				return true
			})
			return nil // the reader's error dropped
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Update answered %v, want context.Canceled", err)
		}
		if after := lastSeq(t, db); after != before {
			t.Fatalf("a cancelled update committed: the change log moved from %d to %d", before, after)
		}
	})
	t.Run("CancelledBeforeStart", func(t *testing.T) {
		c, cancel := context.WithCancel(ctx)
		cancel()
		ran := false
		if err := db.View(c, func(store.Reader) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
			t.Fatalf("a view on a cancelled context answered %v (ran %v)", err, ran)
		}
	})
}

// WriteCall is one call of a write method of store.Tx.
type WriteCall struct {
	Method string
	Args   []any
}

// Call makes the call on tx and returns the method's error.
func (c WriteCall) Call(tx store.Tx) error {
	args := make([]reflect.Value, len(c.Args))
	for i, a := range c.Args {
		args[i] = reflect.ValueOf(a)
	}
	out := reflect.ValueOf(tx).MethodByName(c.Method).Call(args)
	err, _ := out[0].Interface().(error)
	return err
}

// WriteCalls calls every write method of store.Tx, in an order where what
// a delete removes was put before it: the conformance suite's check that
// every write moves Tx.Writes and the writer's check that every write of
// a failed function is rolled back both run it. Fresh records each call.
// It fails t when a write method of store.Tx has no call here (a new
// method must get one) or a call names no write method.
func WriteCalls(t testing.TB) []WriteCall {
	t.Helper()
	calls := writeCalls()
	methods := writeMethods()
	for _, c := range calls {
		if !methods[c.Method] {
			t.Errorf("call %s is not a write method of store.Tx", c.Method)
		}
		delete(methods, c.Method)
	}
	for name := range methods {
		t.Errorf("write method %s of store.Tx has no call: add one to storetest's writeCalls", name)
	}
	return calls
}

// writeCalls is WriteCalls' table.
func writeCalls() []WriteCall {
	now := time.Now().UTC().Truncate(time.Second)
	wing := &store.Wing{ID: store.NewID(), Name: "w", CreatedAt: now}
	room := &store.Room{ID: store.NewID(), WingID: wing.ID, Name: "r", CreatedAt: now}
	drawer := &store.Drawer{ID: store.NewID(), WingID: wing.ID, RoomID: room.ID, Name: "d", Content: "some text",
		Source: store.Source{Kind: store.KindManual}, ValidFrom: now, CreatedAt: now}
	other := &store.Drawer{ID: store.NewID(), WingID: wing.ID, RoomID: room.ID, Content: "other text",
		Source: store.Source{Kind: store.KindManual}, ValidFrom: now, CreatedAt: now}
	dedupRec := &store.DedupRecord{DrawerID: drawer.ID, Scope: room.ID, Hash: "h", Fingerprint: "f", NormLen: 9}
	link := &store.Link{ID: store.NewID(), Older: other.ID, Newer: drawer.ID, CreatedAt: now}
	job := &store.Job{ID: store.NewID(), Kind: "embed", Status: store.JobQueued, CreatedAt: now, UpdatedAt: now}
	ent := &store.Entity{ID: store.NewID(), Name: "Ada", Kind: "person", Key: "ada", CreatedAt: now}
	ent2 := &store.Entity{ID: store.NewID(), Name: "Bob", Kind: "person", Key: "bob", CreatedAt: now}
	rel := &store.Relationship{ID: store.NewID(), Subject: ent.ID, Predicate: "knows", Object: ent2.ID, ValidFrom: now, RecordedAt: now}
	rel2 := &store.Relationship{ID: store.NewID(), Subject: ent2.ID, Predicate: "knows", Object: ent.ID, ValidFrom: now, RecordedAt: now}
	return []WriteCall{
		{"PutWing", []any{wing}},
		{"PutRoom", []any{room}},
		{"PutDrawer", []any{drawer, (*store.Drawer)(nil)}},
		{"PutDedup", []any{dedupRec}},
		{"PutLink", []any{link}},
		{"PutEmbedding", []any{&store.Embedding{DrawerID: drawer.ID, Profile: "p", Dimension: 2, CreatedAt: now, Vector: []float32{1, 0}}}},
		{"PutJob", []any{job, (*store.Job)(nil)}},
		{"PutJobFact", []any{job.ID, 0, json.RawMessage(`{"op":"add"}`)}},
		{"Log", []any{"drawer", "create", drawer.ID}},
		{"PutAuthState", []any{&store.AuthState{Digest: "d", Algorithm: "a", Version: 1, CreatedAt: now}}},
		{"PutSource", []any{&store.SourceState{Key: "s", WingID: wing.ID}}},
		{"PutSourceDocument", []any{&store.DocumentState{Source: "s", ID: "doc", WingID: wing.ID, Revision: "r"}}},
		{"PutChunkOwner", []any{drawer.ID, "s", "doc"}},
		{"PutStaleDocument", []any{"s", "doc"}},
		{"PutTriggerState", []any{&store.TriggerState{Name: "t"}}},
		{"PutDelivery", []any{&store.Delivery{Trigger: "t", ID: "d", AcceptedAt: now}}},
		{"PutEntity", []any{ent, (*store.Entity)(nil)}},
		{"PutEntityLink", []any{&store.EntityLink{ID: store.NewID(), From: ent.ID, To: ent2.ID, Kind: "same", CreatedAt: now}}},
		{"PutMention", []any{&store.Mention{Drawer: drawer.ID, Entity: ent.ID, Name: "Ada", CreatedAt: now}}},
		{"PutRelationship", []any{rel, (*store.Relationship)(nil)}},
		{"PutRelationshipLink", []any{&store.RelationshipLink{ID: store.NewID(), From: rel.ID, To: rel2.ID, Kind: "supersedes", CreatedAt: now}}},
		{"DeleteStaleDocument", []any{"s", "doc"}},
		{"DeleteChunkOwner", []any{drawer.ID}},
		{"DeleteSourceDocument", []any{"s", "doc"}},
		{"DeleteSource", []any{"s"}},
		{"DeleteDelivery", []any{"t", "d"}},
		{"DeleteTriggerState", []any{"t"}},
		{"DeleteLink", []any{link}},
		{"DeleteDedup", []any{dedupRec}},
		{"DeleteDrawer", []any{drawer}},
		{"DeleteRoom", []any{room}},
		{"DeleteWing", []any{wing}},
	}
}

// writeMethods is store.Tx's write methods: its methods that are not the
// Reader's, nor Now and Writes.
func writeMethods() map[string]bool {
	txType := reflect.TypeFor[store.Tx]()
	readerType := reflect.TypeFor[store.Reader]()
	out := map[string]bool{}
	for i := range txType.NumMethod() {
		name := txType.Method(i).Name
		if _, read := readerType.MethodByName(name); !read && name != "Now" && name != "Writes" {
			out[name] = true
		}
	}
	return out
}

// testWritesCountEveryWrite: every write method of store.Tx moves
// Writes, found by reflection, so that no method added later escapes the
// count. The writer rolls a failed function of a batch back when Writes
// moved during it (actors/writer.go): a method that wrote without
// counting would be committed with the rest of the batch.
func testWritesCountEveryWrite(t *testing.T, b Backend) {
	calls := WriteCalls(t)
	if t.Failed() {
		return
	}
	db := open(t, b)
	for _, c := range calls {
		t.Run(c.Method, func(t *testing.T) {
			update(t, db, func(tx store.Tx) error {
				before := tx.Writes()
				if err := c.Call(tx); err != nil {
					return fmt.Errorf("%s: %w", c.Method, err)
				}
				if after := tx.Writes(); after <= before {
					return fmt.Errorf("%s wrote without moving Writes (%d before, %d after)", c.Method, before, after)
				}
				return nil
			})
		})
	}
}

// putQueued stores n queued jobs.
func putQueued(t *testing.T, db store.DB, n int) []string {
	t.Helper()
	ids := make([]string, n)
	update(t, db, func(tx store.Tx) error {
		for i := range ids {
			ids[i] = store.NewID()
			j, err := store.Apply(store.Job{ID: ids[i], Kind: "demo", Priority: store.PriorityNormal, RequestedBy: store.ByCLI},
				store.JobEvent{Kind: store.EvSubmit, At: tx.Now()})
			if err != nil {
				return err
			}
			if err := tx.PutJob(&j, nil); err != nil {
				return err
			}
		}
		return nil
	})
	return ids
}

// claimOne claims the first queued job for owner as the job runtime does
// (one transaction: read the queue, take its head, lease it), trying
// again on a conflict; "" when the queue is empty.
func claimOne(db store.DB, owner string) (string, error) {
	for {
		var got string
		err := db.Update(ctx, func(tx store.Tx) error {
			got = ""
			var pick *store.Job
			if err := tx.QueuedJobs(func(j *store.Job) bool { pick = j; return false }); err != nil || pick == nil {
				return err
			}
			next, err := store.Apply(*pick, store.JobEvent{Kind: store.EvClaim, At: tx.Now(), Owner: owner, TTL: time.Minute})
			if err != nil {
				return err
			}
			if err := tx.PutJob(&next, pick); err != nil {
				return err
			}
			got = next.ID
			return nil
		})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		return got, err
	}
}

// claimRace has one claimer per handle (several on one handle when dbs
// repeats it) take jobs until the queue is empty, and checks that every
// job was claimed exactly once, by its claimer, whose lease it holds.
func claimRace(t *testing.T, dbs []store.DB, n int) {
	t.Helper()
	ids := putQueued(t, dbs[0], n)
	var mu sync.Mutex
	claimedBy := map[string][]string{}
	var wg sync.WaitGroup
	errs := make(chan error, len(dbs))
	start := make(chan struct{})
	for i, db := range dbs {
		owner := fmt.Sprintf("claimer-%d", i)
		wg.Go(func() {
			<-start
			for {
				id, err := claimOne(db, owner)
				if err != nil {
					errs <- err
					return
				}
				if id == "" {
					return
				}
				mu.Lock()
				claimedBy[id] = append(claimedBy[id], owner)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	owners := map[string]int{}
	for _, id := range ids {
		by := claimedBy[id]
		if len(by) != 1 {
			t.Fatalf("job %s claimed %d times (%v), want once", id, len(by), by)
		}
		owners[by[0]]++
	}
	view(t, dbs[0], func(r store.Reader) error {
		for _, id := range ids {
			j, err := r.Job(id)
			if err != nil || j == nil {
				return fmt.Errorf("job %s: %v %v", id, j, err)
			}
			if j.Status != store.JobRunning || j.LeaseOwner != claimedBy[id][0] || j.LeaseExpiresAt == nil {
				return fmt.Errorf("job %s is %s leased to %q until %v, want running leased to its claimer %s",
					id, j.Status, j.LeaseOwner, j.LeaseExpiresAt, claimedBy[id][0])
			}
		}
		queued := 0
		if err := r.QueuedJobs(func(*store.Job) bool { queued++; return true }); err != nil || queued != 0 {
			return fmt.Errorf("%d jobs still queued after the race (%v)", queued, err)
		}
		return nil
	})
	t.Logf("%d jobs claimed: %v", n, owners)
}

// testConcurrentClaims: two claimers at once on one handle get different
// jobs, every job exactly once.
func testConcurrentClaims(t *testing.T, b Backend) {
	db := open(t, b)
	claimRace(t, []store.DB{db, db, db, db}, 60)
}

// testConcurrentClaimsTwoHandles: two handles on one store (two daemons
// on a shared database) claim at once; every job is claimed exactly once.
func testConcurrentClaimsTwoHandles(t *testing.T, b Backend) {
	if b.OpenSecond == nil {
		t.Skip("the backend cannot open a second handle on one store (an embedded store is held by one process); " +
			"a shared backend sets Backend.OpenSecond and runs this case")
	}
	db := open(t, b)
	second := b.OpenSecond(t, db)
	t.Cleanup(func() { _ = second.Close() })
	claimRace(t, []store.DB{db, second, db, second}, 60)
}

// testMigrations: the backend's migration runner (DB.Migrator) syncs its
// schema, runs the numbered steps in order under its lock, fails closed
// (the watermark stays at the last success) and resumes from the failed
// step; a second run while one holds the lock, on this handle or a second
// one, is loci::migrate::locked and runs nothing.
func testMigrations(t *testing.T, b Backend) {
	db := open(t, b)
	var mu sync.Mutex
	var ran []int
	broken := true
	inStep := make(chan struct{})
	release := make(chan struct{})
	hold := false
	step := func(n int) func(context.Context, store.DB) error {
		return func(context.Context, store.DB) error {
			mu.Lock()
			ran = append(ran, n)
			fail, wait := n == 2 && broken, n == 3 && hold
			mu.Unlock()
			if fail {
				return errors.New("step two is broken")
			}
			if wait {
				inStep <- struct{}{}
				<-release
			}
			return nil
		}
	}
	steps := []store.Step{{N: 1, Name: "one", Run: step(1)}, {N: 2, Name: "two", Run: step(2)}}
	m := db.Migrator(steps)
	st, err := m.State(ctx)
	if err != nil || st.DataVersion != 0 || st.Latest != 2 || st.Pending != 2 || st.SchemaSync {
		t.Fatalf("a fresh store's state: %+v %v", st, err)
	}
	if got, err := m.Run(ctx); !fault.Is(err, fault.MigrateFailed) || fmt.Sprint(got) != "[1]" {
		t.Fatalf("a failing step: ran %v, %v; want [1] and %s", got, err, fault.MigrateFailed)
	}
	if st, err := m.State(ctx); err != nil || st.DataVersion != 1 || st.Pending != 1 || !st.SchemaSync {
		t.Fatalf("after the failure: %+v %v; want data version 1, one pending, schema in sync", st, err)
	}
	mu.Lock()
	broken, ran = false, nil
	mu.Unlock()
	if got, err := m.Run(ctx); err != nil || fmt.Sprint(got) != "[2]" {
		t.Fatalf("the run after the fix: ran %v, %v; want [2] (resumed at the failed step)", got, err)
	}
	if got, err := m.Run(ctx); err != nil || len(got) != 0 {
		t.Fatalf("a run with nothing pending: ran %v, %v", got, err)
	}
	// The lock: a third step holds it while other runs try.
	mu.Lock()
	hold = true
	mu.Unlock()
	steps = append(steps, store.Step{N: 3, Name: "three", Run: step(3)})
	holder := make(chan error, 1)
	go func() { _, err := db.Migrator(steps).Run(ctx); holder <- err }()
	<-inStep
	others := []store.DB{db}
	if b.OpenSecond != nil {
		second := b.OpenSecond(t, db)
		t.Cleanup(func() { _ = second.Close() })
		others = append(others, second)
	}
	for i, other := range others {
		if got, err := other.Migrator(steps).Run(ctx); !fault.Is(err, fault.MigrateLocked) || len(got) != 0 {
			close(release)
			t.Fatalf("handle %d: a run while the lock is held ran %v, %v; want %s", i, got, err, fault.MigrateLocked)
		}
	}
	close(release)
	if err := <-holder; err != nil {
		t.Fatalf("the holder's run: %v", err)
	}
	if st, err := db.Migrator(steps).State(ctx); err != nil || st.DataVersion != 3 || st.Pending != 0 {
		t.Fatalf("after the holder's run: %+v %v", st, err)
	}
	if got, err := db.Migrator(steps).Run(ctx); err != nil || len(got) != 0 {
		t.Fatalf("the lock was not released: ran %v, %v", got, err)
	}
}

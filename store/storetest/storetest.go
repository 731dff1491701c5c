// Package storetest is the conformance suite of store.DB: the contract a
// backend honours, stated as tests. A backend's test calls Run with a way
// to open a fresh store and to reopen one; Badger's passes it
// (store/badgerdb/conformance_test.go), and a second backend must.
//
// The change-log contract a follower relies on: entries are read in
// increasing sequence; an entry is visible only once its transaction has
// committed, with every other change of that transaction; a transaction
// that fails leaves no entry; and once Changes has returned an entry of
// sequence n, no entry below n appears later (so a follower that has read up
// to n never needs to read below it again). A backend whose commits can
// finish out of order (sequences handed out before commit) keeps this by
// showing entries only up to a watermark below which no transaction is
// still open.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// Backend opens stores for the suite.
type Backend struct {
	// Open opens a fresh, empty store; the suite closes it.
	Open func(t *testing.T) store.DB
	// Reopen closes db and opens the same store again.
	Reopen func(t *testing.T, db store.DB) store.DB
	// OpenSecond opens a second handle on db's store, as a second daemon
	// on a shared database would (the suite closes it); nil for a
	// backend one process holds (the embedded store), which skips the
	// two-handle cases.
	OpenSecond func(t *testing.T, db store.DB) store.DB
}

// Run runs every conformance test against the backend.
func Run(t *testing.T, b Backend) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"Palace", testPalace},
		{"FailedUpdateLeavesNothing", testFailedUpdate},
		{"ReadersSeeOneSnapshot", testSnapshot},
		{"ChangeLog", testChangeLog},
		{"ChangeLogUnderConcurrentCommits", testChangeLogConcurrent},
		{"Dedup", testDedup},
		{"Links", testLinks},
		{"Supersession", testSupersession},
		{"RemovalAndCounts", testRemovalAndCounts},
		{"KeptCountsEqualARecount", testKeptCounts},
		{"Neighbours", testNeighbours},
		{"FiledByTime", testFiled},
		{"AuthState", testAuthState},
		{"Sources", testSources},
		{"Triggers", testTriggers},
		{"EntityResolution", testEntities},
		{"Facts", testFacts},
		{"Embeddings", testEmbeddings},
		{"Jobs", testJobs},
		{"Meta", testMeta},
		{"DurableAcrossReopen", testReopen},
		{"Migrations", testMigrations},
		{"CancelMidScan", testCancelMidScan},
		{"WritesCountEveryWrite", testWritesCountEveryWrite},
		{"ConcurrentClaims", testConcurrentClaims},
		{"ConcurrentClaimsTwoHandles", testConcurrentClaimsTwoHandles},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
	}
}

var ctx = context.Background()

var dd = store.Dedup{Enabled: true, Threshold: dedup.DefaultThreshold}

func open(t *testing.T, b Backend) store.DB {
	t.Helper()
	db := b.Open(t)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func update(t *testing.T, db store.DB, fn func(store.Tx) error) {
	t.Helper()
	if err := db.Update(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

func view(t *testing.T, db store.DB, fn func(store.Reader) error) {
	t.Helper()
	if err := db.View(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

// remove deletes a drawer through the palace rules.
func remove(t *testing.T, db store.DB, id string) {
	t.Helper()
	update(t, db, func(tx store.Tx) error {
		d, err := tx.Drawer(id)
		if err != nil {
			return err
		}
		return store.DeleteDrawer(tx, d)
	})
}

func lastSeq(t *testing.T, db store.DB) uint64 {
	t.Helper()
	var seq uint64
	view(t, db, func(r store.Reader) error { var err error; seq, err = r.LastSeq(); return err })
	return seq
}

func file(t *testing.T, db store.DB, wing, room, name, content string) *store.Drawer {
	t.Helper()
	var d *store.Drawer
	update(t, db, func(tx store.Tx) error {
		res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: wing, Room: room, Name: name, Content: content,
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, dd)
		if err != nil {
			return err
		}
		d = res.Drawer
		return nil
	})
	return d
}

// Wings, rooms and drawers read back as written, by id and by name; a
// room lists its drawers newest first; deleting a drawer removes it from
// every lookup.
func testPalace(t *testing.T, b Backend) {
	db := open(t, b)
	a := file(t, db, "work", "notes", "first", "the first drawer about the deploy queue")
	time.Sleep(2 * time.Millisecond)
	c := file(t, db, "work", "notes", "", "a second drawer about the index rebuild")
	view(t, db, func(r store.Reader) error {
		w, err := r.WingByName("work")
		if err != nil || w == nil || w.ID != a.WingID {
			return fmt.Errorf("wing by name: %+v %v", w, err)
		}
		rm, err := r.RoomByName(w.ID, "notes")
		if err != nil || rm == nil || rm.ID != a.RoomID {
			return fmt.Errorf("room by name: %+v %v", rm, err)
		}
		got, err := r.Drawer(a.ID)
		if err != nil || got == nil || got.Content != a.Content || got.Name != "first" {
			return fmt.Errorf("drawer by id: %+v %v", got, err)
		}
		many, err := r.DrawersByID([]string{c.ID, "00000000-0000-4000-8000-000000000000", a.ID, c.ID})
		if err != nil || len(many) != 4 || many[0] == nil || many[0].ID != c.ID || many[1] != nil ||
			many[2] == nil || many[2].Content != a.Content || many[3] == nil || many[3].ID != c.ID {
			return fmt.Errorf("drawers by id, in the order asked, nil for the unknown: %+v %v", many, err)
		}
		if none, err := r.DrawersByID(nil); err != nil || len(none) != 0 {
			return fmt.Errorf("no ids: %v %v", none, err)
		}
		byName, err := r.DrawerByName(rm.ID, "first")
		if err != nil || byName == nil || byName.ID != a.ID {
			return fmt.Errorf("drawer by name: %+v %v", byName, err)
		}
		var order []string
		if err := r.Drawers(rm.ID, true, func(d *store.Drawer) bool { order = append(order, d.ID); return true }); err != nil {
			return err
		}
		if len(order) != 2 || order[0] != c.ID || order[1] != a.ID {
			return fmt.Errorf("drawers newest first: %v, want [%s %s]", order, c.ID, a.ID)
		}
		// The page after a drawer starts with the one filed before it.
		var after []string
		for _, from := range []*store.Drawer{c, a} {
			after = after[:0]
			if err := r.DrawersBefore(rm.ID, true, from.CreatedAt, from.ID, func(d *store.Drawer) bool { after = append(after, d.ID); return true }); err != nil {
				return err
			}
			if from == c && (len(after) != 1 || after[0] != a.ID) || from == a && len(after) != 0 {
				return fmt.Errorf("drawers before %s: %v", from.ID, after)
			}
		}
		cur, stored, err := r.CountDrawers(rm.ID)
		if err != nil || cur != 2 || stored != 2 {
			return fmt.Errorf("counts %d/%d %v", cur, stored, err)
		}
		return nil
	})
	remove(t, db, a.ID)
	view(t, db, func(r store.Reader) error {
		if d, err := r.Drawer(a.ID); err != nil || d != nil {
			return fmt.Errorf("deleted drawer still read: %+v %v", d, err)
		}
		if d, err := r.DrawerByName(a.RoomID, "first"); err != nil || d != nil {
			return fmt.Errorf("deleted drawer still found by name: %+v %v", d, err)
		}
		ids, err := r.DrawerIDs(a.RoomID)
		if err != nil || len(ids) != 1 || ids[0] != c.ID {
			return fmt.Errorf("drawer ids after the delete: %v %v", ids, err)
		}
		return nil
	})
}

// An Update whose function fails leaves nothing of what it wrote: no
// record, no index entry, no change-log entry.
func testFailedUpdate(t *testing.T, b Backend) {
	db := open(t, b)
	before := lastSeq(t, db)
	boom := errors.New("boom")
	err := db.Update(ctx, func(tx store.Tx) error {
		if _, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: "never kept",
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, dd); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want the function's error", err)
	}
	view(t, db, func(r store.Reader) error {
		ws, err := r.Wings()
		if err != nil || len(ws) != 0 {
			return fmt.Errorf("a failed update left wings %v (%v)", ws, err)
		}
		last, err := r.LastSeq()
		if err != nil || last != before {
			return fmt.Errorf("a failed update moved the change log from %d to %d (%v)", before, last, err)
		}
		n := 0
		if err := r.Changes(before, func(store.Change) bool { n++; return true }); err != nil || n != 0 {
			return fmt.Errorf("a failed update left %d change-log entries (%v)", n, err)
		}
		return nil
	})
}

// A read view is one snapshot: a commit made while it is open is not seen
// by it, and is seen by the next view. A transaction reads its own writes.
func testSnapshot(t *testing.T, b Backend) {
	db := open(t, b)
	d := file(t, db, "w", "r", "", "before the view opened")
	err := db.View(ctx, func(r store.Reader) error {
		other := file(t, db, "w", "r", "", "committed while the view was open")
		if got, err := r.Drawer(other.ID); err != nil || got != nil {
			return fmt.Errorf("an open view saw a later commit: %+v %v", got, err)
		}
		if got, err := r.Drawer(d.ID); err != nil || got == nil {
			return fmt.Errorf("an open view lost an earlier commit: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	update(t, db, func(tx store.Tx) error {
		w := &store.Wing{ID: store.NewID(), Name: "fresh", CreatedAt: tx.Now()}
		if err := tx.PutWing(w); err != nil {
			return err
		}
		if got, err := tx.WingByName("fresh"); err != nil || got == nil || got.ID != w.ID {
			return fmt.Errorf("a transaction does not read its own write: %+v %v", got, err)
		}
		return nil
	})
}

// Change-log entries appear in commit order with increasing sequences,
// each transaction's together; Changes reads strictly after its argument;
// LastSeq is the last entry.
func testChangeLog(t *testing.T, b Backend) {
	db := open(t, b)
	start := lastSeq(t, db)
	for i := range 3 {
		update(t, db, func(tx store.Tx) error {
			for j := range 2 {
				if err := tx.Log(store.ChangeDrawer, store.ActionCreated, fmt.Sprintf("d%d-%d", i, j)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	var got []store.Change
	view(t, db, func(r store.Reader) error {
		return r.Changes(start, func(c store.Change) bool { got = append(got, c); return true })
	})
	if len(got) != 6 {
		t.Fatalf("%d entries after %d, want 6: %+v", len(got), start, got)
	}
	for i, c := range got {
		if want := fmt.Sprintf("d%d-%d", i/2, i%2); c.ID != want || c.Kind != store.ChangeDrawer || c.Action != store.ActionCreated {
			t.Fatalf("entry %d is %+v, want id %s", i, c, want)
		}
		if i > 0 && c.Seq <= got[i-1].Seq {
			t.Fatalf("sequences not increasing: %d after %d", c.Seq, got[i-1].Seq)
		}
	}
	var rest []store.Change
	var last uint64
	view(t, db, func(r store.Reader) error {
		var err error
		if last, err = r.LastSeq(); err != nil {
			return err
		}
		return r.Changes(got[3].Seq, func(c store.Change) bool { rest = append(rest, c); return true })
	})
	if len(rest) != 2 || rest[0].Seq != got[4].Seq || last != got[5].Seq {
		t.Fatalf("after entry 4: %+v, last %d; want entries 5 and 6, last %d", rest, last, got[5].Seq)
	}
	// Stopping early is honoured.
	n := 0
	view(t, db, func(r store.Reader) error {
		return r.Changes(start, func(store.Change) bool { n++; return n < 2 })
	})
	if n != 2 {
		t.Fatalf("Changes went on after fn returned false: %d calls", n)
	}
}

// While commits land concurrently, a reader that follows the log (reading
// after the last sequence it saw, as a follower does) sees every entry
// exactly once: none appears below a sequence already read.
func testChangeLogConcurrent(t *testing.T, b Backend) {
	db := open(t, b)
	start := lastSeq(t, db)
	// On a shared backend half the writers are a second daemon's handle:
	// the order must hold across daemons, not only within one.
	handles := []store.DB{db}
	if b.OpenSecond != nil {
		second := b.OpenSecond(t, db)
		t.Cleanup(func() { _ = second.Close() })
		handles = append(handles, second)
	}
	const writers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := handles[w%len(handles)]
			for i := range each {
				if err := h.Update(ctx, func(tx store.Tx) error {
					return tx.Log(store.ChangeDrawer, store.ActionCreated, fmt.Sprintf("w%d-%d", w, i))
				}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[string]bool{}
	pos := start
	follow := func() {
		view(t, db, func(r store.Reader) error {
			return r.Changes(pos, func(c store.Change) bool {
				if c.Seq <= pos {
					t.Errorf("entry %d read after %d", c.Seq, pos)
				}
				if seen[c.ID] {
					t.Errorf("entry %s read twice", c.ID)
				}
				seen[c.ID], pos = true, c.Seq
				return true
			})
		})
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		follow()
	}
	follow()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Fatalf("a follower saw %d of %d entries", len(seen), writers*each)
	}
}

// Exact and normalised copies are found by hash and fingerprint; a near
// copy shares a band and is visited within its length window, not outside
// it; deleting a drawer removes it from every list.
func testDedup(t *testing.T, b Backend) {
	db := open(t, b)
	a := file(t, db, "w", "r", "", "The deploy queue stalls when the index rebuild runs overnight on the staging cluster")
	var rec *store.DedupRecord
	view(t, db, func(r store.Reader) error {
		var err error
		rec, err = r.DedupRecord(a.ID)
		if err != nil || rec == nil {
			return fmt.Errorf("dedup record: %+v %v", rec, err)
		}
		if ids, err := r.DedupByHash(rec.Scope, rec.Hash); err != nil || len(ids) != 1 || ids[0] != a.ID {
			return fmt.Errorf("by hash: %v %v", ids, err)
		}
		if ids, err := r.DedupByFingerprint(rec.Scope, rec.Fingerprint); err != nil || len(ids) != 1 || ids[0] != a.ID {
			return fmt.Errorf("by fingerprint: %v %v", ids, err)
		}
		return nil
	})
	sk := dedup.MakeSketch(dedup.Normalize("The deploy queue stalls when the index rebuild runs overnight on the staging cluster!"))
	// Read in a write transaction: a write's view is exact (a read view
	// may see fewer candidates, never more).
	near := func(lo, hi int) []string {
		var ids []string
		update(t, db, func(tx store.Tx) error {
			return tx.DedupNear(rec.Scope, sk.Bands, lo, hi, func(c store.NearCandidate) { ids = append(ids, c.DrawerID()) })
		})
		return ids
	}
	if got := near(0, 1<<30); len(got) != 1 || got[0] != a.ID {
		t.Fatalf("near candidates in a write: %v, want [%s]", got, a.ID)
	}
	if got := near(rec.NormLen+1, 1<<30); len(got) != 0 {
		t.Fatalf("a candidate outside the length window: %v", got)
	}
	// A read view never sees a candidate a write would not.
	view(t, db, func(r store.Reader) error {
		return r.DedupNear(rec.Scope, sk.Bands, 0, 1<<30, func(c store.NearCandidate) {
			if c.ID.String() != a.ID {
				t.Errorf("a read view saw %s, which a write does not", c.DrawerID())
			}
		})
	})
	remove(t, db, a.ID)
	view(t, db, func(r store.Reader) error {
		if ids, err := r.DedupByHash(rec.Scope, rec.Hash); err != nil || len(ids) != 0 {
			return fmt.Errorf("a deleted drawer still listed by hash: %v %v", ids, err)
		}
		return nil
	})
	if got := near(0, 1<<30); len(got) != 0 {
		t.Fatalf("a deleted drawer is still a near candidate: %v", got)
	}
}

// Vectors read back exactly; a profile's vectors are visited; deleting the
// drawer deletes its vectors.
func testEmbeddings(t *testing.T, b Backend) {
	db := open(t, b)
	d := file(t, db, "w", "r", "", "a drawer with a vector")
	vec := []float32{0.25, -1, 3.5}
	update(t, db, func(tx store.Tx) error {
		return tx.PutEmbedding(&store.Embedding{DrawerID: d.ID, Profile: "p", Provider: "hash", Model: "m", Dimension: 3,
			Pipeline: "v1", CreatedAt: tx.Now(), Vector: vec})
	})
	view(t, db, func(r store.Reader) error {
		e, err := r.Embedding(d.ID, "p")
		if err != nil || e == nil || len(e.Vector) != 3 || e.Vector[1] != -1 || e.Model != "m" || e.Pipeline != "v1" {
			return fmt.Errorf("embedding: %+v %v", e, err)
		}
		n := 0
		if err := r.Embeddings("p", func(*store.Embedding) bool { n++; return true }); err != nil || n != 1 {
			return fmt.Errorf("%d embeddings visited (%v)", n, err)
		}
		if e, err := r.Embedding(d.ID, "other"); err != nil || e != nil {
			return fmt.Errorf("another profile's embedding: %+v %v", e, err)
		}
		return nil
	})
	remove(t, db, d.ID)
	view(t, db, func(r store.Reader) error {
		if e, err := r.Embedding(d.ID, "p"); err != nil || e != nil {
			return fmt.Errorf("a deleted drawer kept its vector: %+v %v", e, err)
		}
		return nil
	})
}

// Jobs read back with their input; listings come newest first, the queue
// in claim order (priority, then age), the active list oldest first.
func testJobs(t *testing.T, b Backend) {
	db := open(t, b)
	put := func(id string, p store.Priority, status string) {
		update(t, db, func(tx store.Tx) error {
			j := &store.Job{ID: id, Kind: "demo", Status: status, Priority: p, RequestedBy: store.ByCLI,
				CreatedAt: tx.Now(), UpdatedAt: tx.Now(), Input: []byte(`{"n":"` + id + `"}`)}
			return tx.PutJob(j, nil)
		})
		time.Sleep(2 * time.Millisecond)
	}
	ids := []string{"00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002",
		"00000000-0000-4000-8000-000000000003", "00000000-0000-4000-8000-000000000004"}
	put(ids[0], store.PriorityNormal, store.JobQueued)
	put(ids[1], store.PriorityCritical, store.JobQueued)
	put(ids[2], store.PriorityNormal, store.JobCompleted)
	put(ids[3], store.PriorityNormal, store.JobQueued)
	view(t, db, func(r store.Reader) error {
		j, err := r.Job(ids[1])
		if err != nil || j == nil || j.Priority != store.PriorityCritical {
			return fmt.Errorf("job: %+v %v", j, err)
		}
		in, err := r.JobInput(ids[1])
		if err != nil || string(in) != `{"n":"`+ids[1]+`"}` {
			return fmt.Errorf("job input: %s %v", in, err)
		}
		collect := func(visit func(func(*store.Job) bool) error) ([]string, error) {
			var out []string
			err := visit(func(j *store.Job) bool { out = append(out, j.ID); return true })
			return out, err
		}
		all, err := collect(r.Jobs)
		if err != nil || fmt.Sprint(all) != fmt.Sprint([]string{ids[3], ids[2], ids[1], ids[0]}) {
			return fmt.Errorf("jobs newest first: %v %v", all, err)
		}
		queued, err := collect(r.QueuedJobs)
		if err != nil || fmt.Sprint(queued) != fmt.Sprint([]string{ids[1], ids[0], ids[3]}) {
			return fmt.Errorf("queue in claim order: %v %v", queued, err)
		}
		active, err := collect(r.ActiveJobs)
		if err != nil || fmt.Sprint(active) != fmt.Sprint([]string{ids[0], ids[1], ids[3]}) {
			return fmt.Errorf("active jobs oldest first: %v %v", active, err)
		}
		return nil
	})
	// A job that leaves the queue leaves the queue's listing.
	update(t, db, func(tx store.Tx) error {
		prev, err := tx.Job(ids[1])
		if err != nil {
			return err
		}
		next := *prev
		next.Status = store.JobCompleted
		return tx.PutJob(&next, prev)
	})
	view(t, db, func(r store.Reader) error {
		n := 0
		if err := r.QueuedJobs(func(j *store.Job) bool { n++; return j.ID != ids[1] }); err != nil || n != 2 {
			return fmt.Errorf("a completed job is still queued (%d queued, %v)", n, err)
		}
		return nil
	})
}

// Operational records: read, write, compare-and-swap (absent as ""),
// delete.
func testMeta(t *testing.T, b Backend) {
	db := open(t, b)
	if _, ok, err := db.GetMeta(ctx, "k"); err != nil || ok {
		t.Fatalf("absent key: %v %v", ok, err)
	}
	if swapped, err := db.CompareAndSwapMeta(ctx, "k", "", "one"); err != nil || !swapped {
		t.Fatalf("swap from absent: %v %v", swapped, err)
	}
	if swapped, err := db.CompareAndSwapMeta(ctx, "k", "zero", "two"); err != nil || swapped {
		t.Fatalf("swap from a wrong value: %v %v", swapped, err)
	}
	if err := db.PutMeta(ctx, "k", "three"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := db.GetMeta(ctx, "k"); err != nil || !ok || v != "three" {
		t.Fatalf("read back: %q %v %v", v, ok, err)
	}
	if err := db.DeleteMeta(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.GetMeta(ctx, "k"); ok {
		t.Fatal("a deleted key is still there")
	}
}

// What an Update committed is there after the store is closed and opened
// again, the change log and the credential state included.
func testReopen(t *testing.T, b Backend) {
	db := b.Open(t)
	d := file(t, db, "w", "r", "kept", "a drawer that outlives a restart")
	update(t, db, func(tx store.Tx) error {
		return tx.PutAuthState(&store.AuthState{Digest: "ab", Algorithm: "sha256", Version: 1, CreatedAt: tx.Now()})
	})
	last := lastSeq(t, db)
	db = b.Reopen(t, db)
	t.Cleanup(func() { _ = db.Close() })
	view(t, db, func(r store.Reader) error {
		got, err := r.Drawer(d.ID)
		if err != nil || got == nil || got.Content != d.Content {
			return fmt.Errorf("drawer after reopen: %+v %v", got, err)
		}
		if seq, err := r.LastSeq(); err != nil || seq != last {
			return fmt.Errorf("change log after reopen ends at %d, was %d (%v)", seq, last, err)
		}
		if a, err := r.AuthState(); err != nil || a == nil || a.Digest != "ab" {
			return fmt.Errorf("credential state after reopen: %+v %v", a, err)
		}
		return nil
	})
	// New entries continue after the old ones.
	update(t, db, func(tx store.Tx) error { return tx.Log(store.ChangeWing, store.ActionUpdated, "x") })
	view(t, db, func(r store.Reader) error {
		if seq, err := r.LastSeq(); err != nil || seq <= last {
			return fmt.Errorf("a new entry after reopen has sequence %d, not above %d (%v)", seq, last, err)
		}
		return nil
	})
}

// A similar_to link reads back by id and from both of its drawers, and is
// gone from all three once deleted.
func testLinks(t *testing.T, b Backend) {
	db := open(t, b)
	older := file(t, db, "w", "r", "", "an older drawer about the lamp")
	newer := file(t, db, "w", "r", "", "a newer drawer about the lamp")
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	l := store.Link{ID: "11111111-1111-4111-8111-111111111111", Older: older.ID, Newer: newer.ID, Kind: dedup.Near,
		Signals: dedup.Signals{SameFingerprint: false, Similarity: 0.91, Threshold: 0.9}, CreatedAt: at}
	update(t, db, func(tx store.Tx) error { return tx.PutLink(&l) })
	view(t, db, func(r store.Reader) error {
		got, err := r.Link(l.ID)
		if err != nil || got == nil || *got != l {
			return fmt.Errorf("link by id: %+v %v, want %+v", got, err, l)
		}
		for _, id := range []string{older.ID, newer.ID} {
			ls, err := r.Links(id)
			if err != nil || len(ls) != 1 || ls[0] != l {
				return fmt.Errorf("links of %s: %+v %v", id, ls, err)
			}
		}
		if c, err := r.Counts(); err != nil || c.Links != 1 {
			return fmt.Errorf("counts with one link: %+v %v", c, err)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error { return tx.DeleteLink(&l) })
	view(t, db, func(r store.Reader) error {
		if got, err := r.Link(l.ID); err != nil || got != nil {
			return fmt.Errorf("deleted link read: %+v %v", got, err)
		}
		if ls, err := r.Links(older.ID); err != nil || len(ls) != 0 {
			return fmt.Errorf("deleted link still listed: %+v %v", ls, err)
		}
		return nil
	})
}

// Superseding closes the old drawer and opens its replacement with the
// name: the name finds the replacement, the current listing shows it
// alone, the full listing both, and the history links them.
func testSupersession(t *testing.T, b Backend) {
	db := open(t, b)
	old := file(t, db, "w", "r", "plan", "the plan is to ship on friday")
	text := "the plan is to ship on monday"
	var res *store.SupersedeResult
	update(t, db, func(tx store.Tx) error {
		var err error
		res, err = store.Supersede(tx, store.Supersession{DrawerID: old.ID, Content: &text, RequestedBy: store.ByCLI}, dd)
		return err
	})
	if res.Replacement == nil || res.Superseded.ValidTo == nil || !res.Replacement.ValidFrom.Equal(*res.Superseded.ValidTo) {
		t.Fatalf("supersede: %+v", res)
	}
	view(t, db, func(r store.Reader) error {
		o, err := r.Drawer(old.ID)
		if err != nil || o == nil || o.Current() || o.SupersededBy != res.Replacement.ID {
			return fmt.Errorf("the superseded drawer: %+v %v", o, err)
		}
		byName, err := r.DrawerByName(old.RoomID, "plan")
		if err != nil || byName == nil || byName.ID != res.Replacement.ID || byName.Supersedes != old.ID {
			return fmt.Errorf("the name after a supersession: %+v %v", byName, err)
		}
		var cur, all []string
		if err := r.Drawers(old.RoomID, true, func(d *store.Drawer) bool { cur = append(cur, d.ID); return true }); err != nil {
			return err
		}
		if err := r.Drawers(old.RoomID, false, func(d *store.Drawer) bool { all = append(all, d.ID); return true }); err != nil {
			return err
		}
		if len(cur) != 1 || cur[0] != res.Replacement.ID || len(all) != 2 {
			return fmt.Errorf("listings: current %v, all %v", cur, all)
		}
		if c, s, err := r.CountDrawers(old.RoomID); err != nil || c != 1 || s != 2 {
			return fmt.Errorf("counts: %d current, %d stored, %v", c, s, err)
		}
		_, versions, err := store.History(r, res.Replacement.ID)
		if err != nil || len(versions) != 2 || versions[0].ID != old.ID || versions[1].ID != res.Replacement.ID {
			return fmt.Errorf("history, oldest first: %+v %v", versions, err)
		}
		return nil
	})
}

// Wings and rooms list by name; the palace counts follow every write and
// delete; deleting a wing removes its rooms and drawers from every read.
func testRemovalAndCounts(t *testing.T, b Backend) {
	db := open(t, b)
	file(t, db, "beta", "r1", "", "one drawer in beta")
	a := file(t, db, "alpha", "r2", "", "one drawer in alpha room two")
	file(t, db, "alpha", "r1", "", "one drawer in alpha room one")
	counts := func(want store.Counts) {
		t.Helper()
		view(t, db, func(r store.Reader) error {
			if c, err := r.Counts(); err != nil || c != want {
				return fmt.Errorf("counts %+v %v, want %+v", c, err, want)
			}
			return nil
		})
	}
	counts(store.Counts{Wings: 2, Rooms: 3, Drawers: 3, DrawersStored: 3})
	var alpha *store.Wing
	view(t, db, func(r store.Reader) error {
		ws, err := r.Wings()
		if err != nil || len(ws) != 2 || ws[0].Name != "alpha" || ws[1].Name != "beta" {
			return fmt.Errorf("wings by name: %+v %v", ws, err)
		}
		alpha = &ws[0]
		rs, err := r.Rooms(alpha.ID)
		if err != nil || len(rs) != 2 || rs[0].Name != "r1" || rs[1].Name != "r2" {
			return fmt.Errorf("rooms by name: %+v %v", rs, err)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		n, err := store.DeleteWing(tx, alpha)
		if err == nil && n != (store.Removed{Wings: 1, Rooms: 2, Drawers: 2}) {
			err = fmt.Errorf("removed %+v", n)
		}
		return err
	})
	counts(store.Counts{Wings: 1, Rooms: 1, Drawers: 1, DrawersStored: 1})
	view(t, db, func(r store.Reader) error {
		if w, err := r.WingByName("alpha"); err != nil || w != nil {
			return fmt.Errorf("deleted wing found: %+v %v", w, err)
		}
		if rs, err := r.Rooms(alpha.ID); err != nil || len(rs) != 0 {
			return fmt.Errorf("deleted wing's rooms: %+v %v", rs, err)
		}
		if d, err := r.Drawer(a.ID); err != nil || d != nil {
			return fmt.Errorf("deleted wing's drawer: %+v %v", d, err)
		}
		return nil
	})
}

// The kept counts equal a recount after every kind of write: drawers
// filed (new, exact and near duplicates with their links), superseded,
// invalidated and deleted, a link undone, a wing updated, a failed
// transaction, a room and a wing deleted, and a reopen.
func testKeptCounts(t *testing.T, b Backend) {
	db := open(t, b)
	check := func(step string, want *store.Counts) {
		t.Helper()
		view(t, db, func(r store.Reader) error {
			kept, err := r.Counts()
			if err != nil {
				return err
			}
			re, err := r.Recount()
			if err != nil {
				return err
			}
			if kept != re {
				return fmt.Errorf("%s: kept counts %+v, a recount %+v", step, kept, re)
			}
			if want != nil && kept != *want {
				return fmt.Errorf("%s: counts %+v, want %+v", step, kept, *want)
			}
			return nil
		})
	}
	check("empty", &store.Counts{})
	lamp := "the lamp in the hall flickers when the heating starts in the morning"
	a := file(t, db, "home", "hall", "lamp", lamp)
	file(t, db, "home", "hall", "", lamp) // an exact duplicate
	near := file(t, db, "home", "hall", "", lamp+" again")
	file(t, db, "home", "kitchen", "", "the kettle takes four minutes to boil")
	file(t, db, "work", "deploys", "", "the deploy queue stalls on fridays")
	check("filed", nil)
	text := "the lamp in the hall was fixed on tuesday"
	update(t, db, func(tx store.Tx) error {
		_, err := store.Supersede(tx, store.Supersession{DrawerID: a.ID, Content: &text, RequestedBy: store.ByCLI}, dd)
		return err
	})
	check("superseded", nil)
	k := file(t, db, "home", "kitchen", "", "the fridge hums at night")
	update(t, db, func(tx store.Tx) error {
		_, err := store.Supersede(tx, store.Supersession{DrawerID: k.ID, RequestedBy: store.ByCLI}, dd)
		return err
	})
	check("invalidated", nil)
	update(t, db, func(tx store.Tx) error {
		d, err := tx.Drawer(near.ID)
		if err != nil {
			return err
		}
		links, err := tx.Links(near.ID)
		if err != nil || len(links) == 0 {
			return fmt.Errorf("the near duplicate's links: %+v %v", links, err)
		}
		return store.DeleteSimilar(tx, d, links[0].ID)
	})
	check("a link undone", nil)
	remove(t, db, near.ID)
	check("a drawer deleted", nil)
	update(t, db, func(tx store.Tx) error {
		w, err := tx.WingByName("work")
		if err != nil || w == nil {
			return fmt.Errorf("wing work: %+v %v", w, err)
		}
		return tx.PutWing(w) // written again: no new wing
	})
	check("a wing written again", nil)
	before := lastSeq(t, db)
	failed := errors.New("abandoned")
	if err := db.Update(ctx, func(tx store.Tx) error {
		if _, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "gone", Room: "gone", Content: "never filed",
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, dd); err != nil {
			return err
		}
		return failed
	}); !errors.Is(err, failed) || lastSeq(t, db) != before {
		t.Fatalf("a failed transaction: %v", err)
	}
	check("a failed transaction", nil)
	update(t, db, func(tx store.Tx) error {
		w, err := tx.WingByName("home")
		if err != nil || w == nil {
			return fmt.Errorf("wing home: %+v %v", w, err)
		}
		rm, err := tx.RoomByName(w.ID, "kitchen")
		if err != nil || rm == nil {
			return fmt.Errorf("room kitchen: %+v %v", rm, err)
		}
		_, err = store.DeleteRoom(tx, rm)
		return err
	})
	check("a room deleted", nil)
	file(t, db, "attic", "boxes", "", "the winter coats are in the blue box")
	update(t, db, func(tx store.Tx) error {
		w, err := tx.WingByName("home")
		if err != nil || w == nil {
			return fmt.Errorf("wing home: %+v %v", w, err)
		}
		_, err = store.DeleteWing(tx, w)
		return err
	})
	want := store.Counts{Wings: 2, Rooms: 2, Drawers: 2, DrawersStored: 2}
	check("a wing deleted", &want)
	db = b.Reopen(t, db)
	t.Cleanup(func() { _ = db.Close() })
	check("reopened", &want)
}

// The credential state reads back as stored and nil removes it.
func testAuthState(t *testing.T, b Backend) {
	db := open(t, b)
	view(t, db, func(r store.Reader) error {
		if a, err := r.AuthState(); err != nil || a != nil {
			return fmt.Errorf("a fresh store has auth state %+v %v", a, err)
		}
		return nil
	})
	want := store.AuthState{Digest: "ab12", Algorithm: "sha256", Version: 1, CreatedAt: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
	update(t, db, func(tx store.Tx) error { return tx.PutAuthState(&want) })
	view(t, db, func(r store.Reader) error {
		if a, err := r.AuthState(); err != nil || a == nil || *a != want {
			return fmt.Errorf("auth state %+v %v, want %+v", a, err, want)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error { return tx.PutAuthState(nil) })
	view(t, db, func(r store.Reader) error {
		if a, err := r.AuthState(); err != nil || a != nil {
			return fmt.Errorf("removed auth state still read: %+v %v", a, err)
		}
		return nil
	})
}

// A source's state and its documents' filed revisions read back as
// written, are listed and counted, and replacing one keeps one.
func testSources(t *testing.T, b Backend) {
	db := open(t, b)
	id := store.SourceIdentity{Adapter: "directory", Locator: "/home/u/proj"}
	other := store.SourceIdentity{Adapter: "directory", Locator: "/home/u/other"}
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	st := store.SourceState{Key: id.Key(), Identity: id, Cursor: []byte(`{"mtime_ns":5,"path":"a"}`), LastJob: "j1", LastRun: at}
	doc := store.DocumentState{Source: id.Key(), ID: "src/a b.go", WingID: "w", Revision: "r1", Meta: "mode=0644",
		Chunks: []store.ChunkState{{Drawer: "d1", Hash: "h1"}, {Drawer: "d2", Hash: "h2"}}}
	update(t, db, func(tx store.Tx) error {
		for _, f := range []func() error{
			func() error { return tx.PutSource(&st) },
			func() error { return tx.PutSource(&store.SourceState{Key: other.Key(), Identity: other, LastRun: at}) },
			func() error { return tx.PutSourceDocument(&doc) },
			func() error { d := doc; d.ID = "README"; d.Chunks = nil; return tx.PutSourceDocument(&d) },
			func() error { d := doc; d.Source = other.Key(); return tx.PutSourceDocument(&d) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
	doc.Revision = "r2"
	update(t, db, func(tx store.Tx) error { return tx.PutSourceDocument(&doc) })
	view(t, db, func(r store.Reader) error {
		got, err := r.Source(id.Key())
		if err != nil || got == nil || got.Identity != id || string(got.Cursor) != string(st.Cursor) || got.LastJob != "j1" || !got.LastRun.Equal(at) {
			return fmt.Errorf("source: %+v %v", got, err)
		}
		if none, err := r.Source(store.SourceIdentity{Adapter: "x"}.Key()); err != nil || none != nil {
			return fmt.Errorf("an unknown source: %+v %v", none, err)
		}
		var n int
		if err := r.Sources(func(*store.SourceState) bool { n++; return true }); err != nil || n != 2 {
			return fmt.Errorf("sources listed: %d %v", n, err)
		}
		d, err := r.SourceDocument(id.Key(), "src/a b.go")
		if err != nil || d == nil || d.Revision != "r2" || d.Meta != "mode=0644" || len(d.Chunks) != 2 || d.Chunks[1] != (store.ChunkState{Drawer: "d2", Hash: "h2"}) {
			return fmt.Errorf("document: %+v %v", d, err)
		}
		if c, err := r.CountSourceDocuments(id.Key()); err != nil || c != 2 {
			return fmt.Errorf("documents of the source: %d %v", c, err)
		}
		var ids []string
		if err := r.SourceDocuments(id.Key(), func(d *store.DocumentState) bool { ids = append(ids, d.ID); return true }); err != nil ||
			fmt.Sprint(ids) != "[README src/a b.go]" {
			return fmt.Errorf("documents listed: %v %v", ids, err)
		}
		return nil
	})
	// A state per wing; chunk owners; marks to file again; deletes.
	wst := store.SourceState{Key: store.TargetKey(id.Key(), "w"), Identity: id, WingID: "w", Documents: 7, LastRun: at}
	update(t, db, func(tx store.Tx) error {
		for _, f := range []func() error{
			func() error { return tx.PutSource(&wst) },
			func() error { return tx.PutChunkOwner("d1", wst.Key, "src/a b.go") },
			func() error { return tx.PutChunkOwner("d2", wst.Key, "src/a b.go") },
			func() error { return tx.PutStaleDocument(wst.Key, "src/a b.go") },
			func() error { return tx.PutStaleDocument(wst.Key, "README") },
			func() error { return tx.PutStaleDocument(other.Key(), "x") },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for _, f := range []func() error{
			func() error { return tx.DeleteChunkOwner("d2") },
			func() error { return tx.DeleteStaleDocument(wst.Key, "README") },
			func() error { return tx.DeleteSourceDocument(id.Key(), "README") },
			func() error { return tx.DeleteSource(other.Key()) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(r store.Reader) error {
		got, err := r.Source(wst.Key)
		if err != nil || got == nil || got.WingID != "w" || got.Identity != id || got.Documents != 7 {
			return fmt.Errorf("a state in a wing: %+v %v", got, err)
		}
		if src, doc, err := r.ChunkOwner("d1"); err != nil || src != wst.Key || doc != "src/a b.go" {
			return fmt.Errorf("chunk owner: %q %q %v", src, doc, err)
		}
		if src, doc, err := r.ChunkOwner("d2"); err != nil || src != "" || doc != "" {
			return fmt.Errorf("a forgotten chunk owner: %q %q %v", src, doc, err)
		}
		var stale []string
		if err := r.StaleDocuments(wst.Key, func(doc string) bool { stale = append(stale, doc); return true }); err != nil ||
			fmt.Sprint(stale) != "[src/a b.go]" {
			return fmt.Errorf("documents to file again: %v %v", stale, err)
		}
		if none, err := r.Source(other.Key()); err != nil || none != nil {
			return fmt.Errorf("a deleted state: %+v %v", none, err)
		}
		if c, err := r.CountSourceDocuments(id.Key()); err != nil || c != 1 {
			return fmt.Errorf("documents after a delete: %d %v", c, err)
		}
		return nil
	})
}

func testTriggers(t *testing.T, b Backend) {
	db := open(t, b)
	due := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	claimed := due.Add(1500 * time.Microsecond)
	st := store.TriggerState{Name: "hook", Due: &due, Fired: 3, Coalesced: 1, Failed: 2, Deliveries: 4, LastFired: &due, LastJob: "j1", LastError: "boom", Failures: 2,
		Claimed: &claimed}
	update(t, db, func(tx store.Tx) error {
		for _, f := range []func() error{
			func() error { return tx.PutTriggerState(&st) },
			func() error { return tx.PutTriggerState(&store.TriggerState{Name: "hook-b"}) },
			func() error { return tx.PutDelivery(&store.Delivery{Trigger: "hook", ID: "d1", AcceptedAt: due}) },
			func() error {
				return tx.PutDelivery(&store.Delivery{Trigger: "hook", ID: "d2/x", AcceptedAt: due, Job: "j2"})
			},
			func() error { return tx.PutDelivery(&store.Delivery{Trigger: "hook-b", ID: "d1", AcceptedAt: due}) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
	count := func(r store.Reader) (states, deliveries int) {
		r.TriggerStates(func(*store.TriggerState) bool { states++; return true })
		r.Deliveries(func(*store.Delivery) bool { deliveries++; return true })
		return
	}
	view(t, db, func(r store.Reader) error {
		got, err := r.TriggerState("hook")
		if err != nil || got == nil || !got.Due.Equal(due) || got.Fired != 3 || got.Coalesced != 1 || got.Failed != 2 || got.Deliveries != 4 ||
			got.LastJob != "j1" || got.LastError != "boom" || got.Failures != 2 || !got.LastFired.Equal(due) ||
			got.Claimed == nil || !got.Claimed.Equal(claimed) {
			return fmt.Errorf("trigger state: %+v %v", got, err)
		}
		if none, err := r.TriggerState("nope"); none != nil || err != nil {
			return fmt.Errorf("unknown trigger: %+v %v", none, err)
		}
		d, err := r.Delivery("hook", "d2/x")
		if err != nil || d == nil || d.Job != "j2" || !d.AcceptedAt.Equal(due) {
			return fmt.Errorf("delivery: %+v %v", d, err)
		}
		if s, n := count(r); s != 2 || n != 3 {
			return fmt.Errorf("%d states and %d deliveries, want 2 and 3", s, n)
		}
		return nil
	})
	// Forgetting a trigger forgets its deliveries, not another's.
	update(t, db, func(tx store.Tx) error {
		if err := tx.DeleteDelivery("hook-b", "d1"); err != nil {
			return err
		}
		return tx.DeleteTriggerState("hook")
	})
	view(t, db, func(r store.Reader) error {
		if s, n := count(r); s != 1 || n != 0 {
			return fmt.Errorf("after removal %d states and %d deliveries, want 1 and 0", s, n)
		}
		return nil
	})
}

func testEntities(t *testing.T, b Backend) {
	db := open(t, b)
	resolve := func(name, kind string, fuzzy bool) store.Resolved {
		t.Helper()
		var r store.Resolved
		update(t, db, func(tx store.Tx) error {
			var err error
			r, err = store.ResolveEntity(tx, name, kind, fuzzy, "")
			return err
		})
		return r
	}
	cpp := resolve("C++", "tool", true)
	c := resolve("C", "tool", true)
	cs := resolve("C#", "tool", true)
	if !cpp.New || !c.New || !cs.New || cpp.Entity.ID == c.Entity.ID || c.Entity.ID == cs.Entity.ID {
		t.Fatalf("C++, C and C# must be three entities: %+v %+v %+v", cpp, c, cs)
	}
	pg := resolve("PostgreSQL", "tool", true)
	for _, w := range []struct{ name, rule string }{{"PostgreSQL", "exact"}, {"postgre-sql", "normalized"}, {"PostgreSLQ", "typo"}} {
		if r := resolve(w.name, "tool", true); r.New || r.Entity.ID != pg.Entity.ID || r.Rule != w.rule {
			t.Fatalf("%s: %+v, want %s by %s", w.name, r, pg.Entity.ID, w.rule)
		}
	}
	// The spellings taken are aliases now, and resolve by alias; the
	// canonical name stays.
	view(t, db, func(r store.Reader) error {
		e, err := r.Entity(pg.Entity.ID)
		if err != nil || e.Name != "PostgreSQL" || len(e.Aliases) != 2 || e.Aliases[0] != "postgre-sql" || e.Aliases[1] != "PostgreSLQ" {
			return fmt.Errorf("entity after three spellings: %+v %v", e, err)
		}
		ids, err := r.EntityIDs(store.EntityByAlias, "postgreslq")
		if err != nil || len(ids) != 1 || ids[0] != e.ID {
			return fmt.Errorf("alias index: %v %v", ids, err)
		}
		return nil
	})
	// One edit from two entities: a new one, linked to both.
	m1 := resolve("Melanie", "person", true)
	if r := resolve("Melania", "person", true); r.New || r.Entity.ID != m1.Entity.ID || r.Rule != "typo" {
		t.Fatalf("Melania one edit from Melanie: %+v", r)
	}
	m2 := resolve("Melania", "person", false) // fuzzy off: the alias still converges
	if m2.New {
		t.Fatalf("an alias with fuzzy off: %+v", m2)
	}
	m2 = resolve("Melanii", "person", false) // fuzzy off: a second person
	if !m2.New {
		t.Fatalf("fuzzy off made no new entity: %+v", m2)
	}
	mo := resolve("Melanio", "person", true)
	if !mo.New {
		t.Fatalf("Melanio: %+v", mo)
	}
	view(t, db, func(r store.Reader) error {
		links, err := r.EntityLinks(mo.Entity.ID)
		if err != nil || len(links) != 2 {
			return fmt.Errorf("possibly_same_as links of Melanio: %+v %v", links, err)
		}
		to := []string{links[0].To, links[1].To}
		if !(slicesContains(to, m1.Entity.ID) && slicesContains(to, m2.Entity.ID)) || links[0].Kind != "possibly_same_as" {
			return fmt.Errorf("links %+v", links)
		}
		n := 0
		last := ""
		err = r.Entities(func(e *store.Entity) bool {
			if e.Name < last {
				t.Errorf("entities out of name order: %q after %q", e.Name, last)
			}
			last = e.Name
			n++
			return true
		})
		if err != nil || n != 7 {
			return fmt.Errorf("%d entities listed, want 7: %v", n, err)
		}
		return nil
	})
	// Mentions: a drawer links an entity once; the name as spelled kept.
	d := file(t, db, "w", "r", "", "We moved the queue to Postgre SQL last week.")
	update(t, db, func(tx store.Tx) error {
		m, e, linked, err := store.LinkMention(tx, d.ID, "Postgre SQL", "tool", true, "manual", "http", 1)
		if err != nil || !linked || e.ID != pg.Entity.ID || m.Rule != "normalized" || m.Name != "Postgre SQL" {
			return fmt.Errorf("first mention: %+v %+v %v %v", m, e, linked, err)
		}
		if _, _, linked, err := store.LinkMention(tx, d.ID, "PostgreSQL", "tool", true, "manual", "http", 1); err != nil || linked {
			return fmt.Errorf("second mention of the same entity: linked %v %v", linked, err)
		}
		if _, _, _, err := store.LinkMention(tx, "0190c4c8-0000-7000-8000-000000000000", "X", "tool", true, "manual", "http", 1); fault.As(err).Code != "loci::palace::drawer_not_found" {
			return fmt.Errorf("a missing drawer: %v", err)
		}
		if e, err := store.AddAlias(tx, c.Entity.ID, "C language"); err != nil || len(e.Aliases) != 1 {
			return fmt.Errorf("alias: %+v %v", e, err)
		}
		if e, err := store.AddAlias(tx, c.Entity.ID, "C language"); err != nil || len(e.Aliases) != 1 {
			return fmt.Errorf("alias again: %+v %v", e, err)
		}
		return nil
	})
	view(t, db, func(r store.Reader) error {
		var ms []*store.Mention
		r.Mentions(pg.Entity.ID, func(m *store.Mention) bool { ms = append(ms, m); return true })
		dm, err := r.DrawerMentions(d.ID)
		if len(ms) != 1 || ms[0].Drawer != d.ID || err != nil || len(dm) != 1 || dm[0].Entity != pg.Entity.ID {
			return fmt.Errorf("mentions %+v, drawer mentions %+v %v", ms, dm, err)
		}
		return nil
	})
	if r := resolve("c-language", "tool", true); r.New || r.Entity.ID != c.Entity.ID || r.Rule != "alias" {
		t.Fatalf("by the alias added: %+v", r)
	}
	// Fuzzy off: no typo rule.
	if r := resolve("PostgreSQM", "tool", false); !r.New {
		t.Fatalf("fuzzy off resolved a typo: %+v", r)
	}
	// Bad labels.
	update(t, db, func(tx store.Tx) error {
		for _, c := range []struct{ name, kind, code string }{{"  ", "tool", "loci::graph::empty_label"}, {"X", " ", "loci::graph::empty_label"}, {"X", "gadget", "loci::input::invalid"}} {
			if _, err := store.ResolveEntity(tx, c.name, c.kind, true, ""); err == nil || string(fault.As(err).Code) != c.code {
				t.Errorf("%q/%q: %v, want %s", c.name, c.kind, err, c.code)
			}
		}
		return nil
	})
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func testFacts(t *testing.T, b Backend) {
	db := open(t, b)
	d := file(t, db, "w", "r", "", "Caroline works at Acme since March.")
	d2 := file(t, db, "w", "r", "", "Caroline moved to Initech in June.")
	str := func(s string) *string { return &s }
	conf := 0.8
	apply := func(f store.FactOp, drawer string, index int) error {
		var err error
		update(t, db, func(tx store.Tx) error {
			err = store.ApplyFact(tx, &f, drawer, "0190c4c8-1111-7000-8000-000000000000", index, true)
			return nil
		})
		return err
	}
	if err := apply(store.FactOp{Op: "add", Subject: "Caroline", SubjectKind: "person", Predicate: str("works_at"), Object: "Acme",
		ObjectKind: "organization", Confidence: &conf, ValidFrom: "2026-03-01"}, d.ID, 0); err != nil {
		t.Fatal(err)
	}
	first := store.RelationshipID("0190c4c8-1111-7000-8000-000000000000", 0)
	// Replaying the same item changes nothing.
	if err := apply(store.FactOp{Op: "add", Subject: "Caroline", SubjectKind: "person", Predicate: str("works_at"), Object: "Acme"}, d.ID, 0); err != nil {
		t.Fatal(err)
	}
	var caroline string
	view(t, db, func(r store.Reader) error {
		rel, err := r.Relationship(first)
		if err != nil || rel == nil || rel.Predicate != "works_at" || rel.Confidence != 0.8 || rel.Drawer != d.ID || rel.ValidFrom.Format("2006-01-02") != "2026-03-01" {
			return fmt.Errorf("the fact added: %+v %v", rel, err)
		}
		caroline = rel.Subject
		n := 0
		r.EntityRelationships(caroline, func(*store.Relationship) bool { n++; return true })
		if n != 1 {
			return fmt.Errorf("caroline has %d facts", n)
		}
		return nil
	})
	// Supersede: the old one ends where the new one begins, linked.
	if err := apply(store.FactOp{Op: "supersede", RelationshipID: first, Object: "Initech", ObjectKind: "organization", ValidFrom: "2026-06-01", Reason: str("moved")}, d2.ID, 1); err != nil {
		t.Fatal(err)
	}
	second := store.RelationshipID("0190c4c8-1111-7000-8000-000000000000", 1)
	view(t, db, func(r store.Reader) error {
		old, _ := r.Relationship(first)
		next, _ := r.Relationship(second)
		if old.ValidTo == nil || old.ValidTo.Format("2006-01-02") != "2026-06-01" || old.SupersededBy != second || old.Reason != "moved" || old.ClosedBy != d2.ID {
			return fmt.Errorf("the superseded fact: %+v", old)
		}
		if next == nil || next.Subject != caroline || next.Predicate != "works_at" || next.Object == old.Object {
			return fmt.Errorf("the new fact: %+v", next)
		}
		may := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		july := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
		now := time.Now()
		if !old.CurrentAt(may, now, true) || old.CurrentAt(july, now, true) || next.CurrentAt(may, now, true) || !next.CurrentAt(july, now, true) {
			return fmt.Errorf("valid time: old %v/%v, new %v/%v", old.CurrentAt(may, now, true), old.CurrentAt(july, now, true), next.CurrentAt(may, now, true), next.CurrentAt(july, now, true))
		}
		if next.CurrentAt(july, next.RecordedAt.Add(-time.Second), true) {
			return fmt.Errorf("known before it was recorded")
		}
		return nil
	})
	// The evidence drawer mentions the fact's subject and object (as
	// spelled, extractor checkpoint, origin the job), once however often
	// the item is replayed.
	mentions := func(drawer string, want ...string) {
		t.Helper()
		view(t, db, func(r store.Reader) error {
			ms, err := r.DrawerMentions(drawer)
			if err != nil {
				return err
			}
			var got []string
			for _, m := range ms {
				if m.Extractor != "checkpoint" || m.Origin != "job:0190c4c8-1111-7000-8000-000000000000" || m.Confidence != 1 || m.Rule == "" {
					return fmt.Errorf("mention %+v", m)
				}
				got = append(got, m.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("drawer %s mentions %v, want %v", drawer, got, want)
			}
			return nil
		})
	}
	mentions(d.ID, "Acme", "Caroline")
	// The supersede replayed: its drawer mentions Caroline and Initech once.
	if err := apply(store.FactOp{Op: "supersede", RelationshipID: first, Object: "Initech", ObjectKind: "organization", ValidFrom: "2026-06-01", Reason: str("moved")}, d2.ID, 1); err != nil {
		t.Fatal(err)
	}
	mentions(d2.ID, "Caroline", "Initech")
	// Invalidate: never true; loci stops believing it from now on.
	if err := apply(store.FactOp{Op: "invalidate", RelationshipID: second}, d2.ID, 2); err != nil {
		t.Fatal(err)
	}
	d3 := file(t, db, "w", "r", "", "Caroline was never at Initech.")
	if err := apply(store.FactOp{Op: "invalidate", RelationshipID: second}, d3.ID, 4); err != nil {
		t.Fatal(err)
	}
	if err := apply(store.FactOp{Op: "invalidate", RelationshipID: second}, d3.ID, 4); err != nil {
		t.Fatal(err)
	}
	mentions(d3.ID, "Caroline", "Initech")
	// Link: closes neither.
	if err := apply(store.FactOp{Op: "link", RelationshipID: second, OtherID: first, Kind: "contradicts", Reason: str("HR says otherwise")}, d2.ID, 3); err != nil {
		t.Fatal(err)
	}
	view(t, db, func(r store.Reader) error {
		next, _ := r.Relationship(second)
		if next.RetractedAt == nil || next.CurrentAt(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), time.Now().Add(time.Hour), true) {
			return fmt.Errorf("invalidated fact still believed: %+v", next)
		}
		if !next.CurrentAt(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), next.RecordedAt, true) {
			return fmt.Errorf("before its retraction it was believed")
		}
		links, err := r.RelationshipLinks(first)
		if err != nil || len(links) != 1 || links[0].Kind != "contradicts" || links[0].From != second {
			return fmt.Errorf("links: %+v %v", links, err)
		}
		return nil
	})
	for _, c := range []struct {
		f    store.FactOp
		code string
	}{
		{store.FactOp{Op: "supersede", RelationshipID: "0190c4c8-2222-7000-8000-000000000000"}, "loci::graph::relationship_not_found"},
		{store.FactOp{Op: "link", RelationshipID: first, OtherID: "0190c4c8-2222-7000-8000-000000000000", Kind: "refines", Reason: str("x")}, "loci::graph::relationship_not_found"},
		{store.FactOp{Op: "add", Subject: "0190c4c8-3333-7000-8000-000000000000", Predicate: str("uses"), Object: "Go"}, "loci::graph::entity_not_found"},
		{store.FactOp{Op: "add", Subject: "A", Predicate: str(" "), Object: "B"}, "loci::graph::empty_label"},
		{store.FactOp{Op: "add", Subject: "A", Predicate: str("hates_mondays"), Object: "B"}, "loci::input::invalid"},
	} {
		t.Run(fmt.Sprintf("%s %s", c.f.Op, c.code), func(t *testing.T) {
			if err := apply(c.f, d.ID, 10); err == nil || string(fault.As(err).Code) != c.code {
				t.Errorf("%+v: %v, want %s", c.f, err, c.code)
			}
		})
	}
}

// A drawer's neighbours are the drawers filed just before and after it in
// its room, nearest first, never itself, never another room's; a deleted
// drawer is no one's neighbour and is not stored any more.
func testNeighbours(t *testing.T, b Backend) {
	db := open(t, b)
	var ds []*store.Drawer
	for i := range 6 {
		ds = append(ds, file(t, db, "w", "r", fmt.Sprintf("n%d", i), fmt.Sprintf("turn number %d of the talk", i)))
		file(t, db, "w", "other", fmt.Sprintf("o%d", i), fmt.Sprintf("another room's drawer %d", i))
	}
	remove(t, db, ds[4].ID)
	view(t, db, func(r store.Reader) error {
		for i, want := range []bool{true, true, true, true, false, true} {
			if ok, err := r.HasDrawer(ds[i].ID); ok != want || err != nil {
				t.Errorf("HasDrawer %d: %v %v, want %v", i, ok, err, want)
			}
		}
		got, err := r.Neighbours([]*store.Drawer{ds[0], ds[2], ds[5], nil}, 2)
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{
			{ds[1].ID, ds[2].ID},
			{ds[1].ID, ds[0].ID, ds[3].ID, ds[5].ID},
			{ds[3].ID, ds[2].ID},
			nil,
		}
		for i := range want {
			if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
				t.Errorf("neighbours of %d: got %v, want %v", i, got[i], want[i])
			}
		}
		if none, _ := r.Neighbours([]*store.Drawer{ds[1]}, 0); len(none[0]) != 0 {
			t.Errorf("n 0: %v", none)
		}
		return nil
	})
}

// Filed counts the stored drawers of every room by when they were filed:
// a superseded one still counts, a deleted one no longer, and spans
// outside the window count nothing.
func testFiled(t *testing.T, b Backend) {
	db := open(t, b)
	var ds []*store.Drawer
	for i := range 5 {
		ds = append(ds, file(t, db, "w", fmt.Sprintf("r%d", i%2), "", fmt.Sprintf("filed drawer number %d", i)))
		time.Sleep(2 * time.Millisecond)
	}
	update(t, db, func(tx store.Tx) error {
		text := "filed drawer number one, corrected"
		_, err := store.Supersede(tx, store.Supersession{DrawerID: ds[1].ID, Content: &text, RequestedBy: store.ByCLI}, dd)
		return err
	})
	remove(t, db, ds[2].ID)
	first, last := ds[0].CreatedAt, ds[4].CreatedAt
	view(t, db, func(r store.Reader) error {
		// Spans of last-first: [first, last) holds ds 0, 1 and 3 (2 is
		// deleted); the next ones ds 4 and, filed after it, the correction.
		got, err := r.Filed(first, last.Sub(first), 3)
		if err != nil || len(got) != 3 || got[0] != 3 || got[1] < 1 || got[1]+got[2] != 2 {
			t.Errorf("Filed over three spans: %v %v, want [3 1 1] or [3 2 0]", got, err)
		}
		if got, err := r.Filed(first.Add(-time.Hour), time.Hour, 1); err != nil || fmt.Sprint(got) != "[0]" {
			t.Errorf("Filed before the first drawer: %v %v", got, err)
		}
		if got, err := r.Filed(first, time.Millisecond, 0); err != nil || len(got) != 0 {
			t.Errorf("Filed with no span: %v %v", got, err)
		}
		return nil
	})
}

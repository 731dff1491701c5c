package sqlview_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// spyDB watches the reads of every view it opens. A read is "running"
// while the store's code runs (from a method's entry to its return, less
// the time spent in a visitor's callback, which is ours), and "open" from
// its entry to its return (a pulled visitor is open while it waits in its
// callback for the next page to be asked for).
type spyDB struct {
	store.DB
	running, maxRunning atomic.Int64
	open, maxOpen       atomic.Int64
	reads               atomic.Int64
	// entityScans counts the Entities visitors run.
	entityScans atomic.Int64
	// views counts the views opened and ended; openAtEnd sums the reads
	// still open when a view's function returned.
	views, ended, openAtEnd atomic.Int64
}

func (d *spyDB) View(ctx context.Context, fn func(store.Reader) error) error {
	d.views.Add(1)
	return d.DB.View(ctx, func(r store.Reader) error {
		err := fn(spyReader{Reader: r, d: d})
		d.openAtEnd.Add(d.open.Load())
		d.ended.Add(1)
		return err
	})
}

// raise sets m to v when v is larger.
func raise(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// run marks the store's code as running again; it yields the processor so
// that a read made concurrently elsewhere would be caught overlapping.
func (d *spyDB) run() {
	raise(&d.maxRunning, d.running.Add(1))
	runtime.Gosched()
}

func (d *spyDB) enter() {
	d.reads.Add(1)
	raise(&d.maxOpen, d.open.Add(1))
	d.run()
}

func (d *spyDB) exit() {
	d.running.Add(-1)
	d.open.Add(-1)
}

// visit wraps a visitor's callback: the store's code does not run while
// it does.
func visit[T any](d *spyDB, fn func(T) bool) func(T) bool {
	return func(v T) bool {
		d.running.Add(-1)
		defer d.run()
		return fn(v)
	}
}

// spyReader counts the reads the tables make.
type spyReader struct {
	store.Reader
	d *spyDB
}

func (s spyReader) Entities(fn func(*store.Entity) bool) error {
	s.d.entityScans.Add(1)
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Entities(visit(s.d, fn))
}
func (s spyReader) Mentions(id string, fn func(*store.Mention) bool) error {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Mentions(id, visit(s.d, fn))
}
func (s spyReader) EntityRelationships(id string, fn func(*store.Relationship) bool) error {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.EntityRelationships(id, visit(s.d, fn))
}
func (s spyReader) Jobs(fn func(*store.Job) bool) error {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Jobs(visit(s.d, fn))
}
func (s spyReader) Sources(fn func(*store.SourceState) bool) error {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Sources(visit(s.d, fn))
}
func (s spyReader) SourceDocuments(key string, fn func(*store.DocumentState) bool) error {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.SourceDocuments(key, visit(s.d, fn))
}
func (s spyReader) TriggerStates(fn func(*store.TriggerState) bool) error {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.TriggerStates(visit(s.d, fn))
}
func (s spyReader) Drawers(room string, current bool, fn func(*store.Drawer) bool) error {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Drawers(room, current, visit(s.d, fn))
}
func (s spyReader) DrawersBefore(room string, current bool, at time.Time, id string, fn func(*store.Drawer) bool) error {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.DrawersBefore(room, current, at, id, visit(s.d, fn))
}
func (s spyReader) Drawer(id string) (*store.Drawer, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Drawer(id)
}
func (s spyReader) Entity(id string) (*store.Entity, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Entity(id)
}
func (s spyReader) EntityIDs(ix store.EntityIndex, v string) ([]string, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.EntityIDs(ix, v)
}
func (s spyReader) DrawerIDs(room string) ([]string, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.DrawerIDs(room)
}
func (s spyReader) DrawerMentions(id string) ([]store.Mention, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.DrawerMentions(id)
}
func (s spyReader) Wings() ([]store.Wing, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Wings()
}
func (s spyReader) Rooms(wing string) ([]store.Room, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Rooms(wing)
}
func (s spyReader) Wing(id string) (*store.Wing, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Wing(id)
}
func (s spyReader) Room(id string) (*store.Room, error) {
	s.d.enter()
	defer s.d.exit()
	return s.Reader.Room(id)
}

// pullPalace is a store of 600 entities (more than a page of the
// entities' visitor, so that a scan of them is held open between pages),
// each mentioned by 2 of 2,400 drawers in 3 rooms.
func pullPalace(t *testing.T) store.DB {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	fillPalace(t, db, 2400, 3, 2, 600)
	return db
}

// pulls is the stacks of the goroutines running an iter.Pull coroutine (a
// store visitor pulled a page at a time).
func pulls() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "iter.Pull") {
			out = append(out, g)
		}
	}
	return out
}

// The store's view is never read concurrently: across joins, sorts,
// groupings and subqueries that read two families pulled a page at a time
// (the entities' visitor held open while each entity's mentions are
// read, a hash join of both, a correlated subquery over the mentions of
// each entity), at most one store read runs at any moment, although
// several are open at once; and none is still open when the view ends.
//
// Before the pulled visitors, this test asserted that every read ran on
// the goroutine that opened the view. A pulled visitor (iter.Pull) runs on
// its coroutine's own goroutine, so that no longer holds; what it stood
// for still does and is asserted directly: iter.Pull's coroutine and its
// caller strictly alternate, so no two reads overlap in time.
func TestStoreReadsNeverOverlap(t *testing.T) {
	base := pullPalace(t)
	t.Cleanup(func() { _ = base.Close() })
	db := &spyDB{DB: base}
	e := sqlview.New(db, defaults())
	hash := "SELECT /*+ HASH_JOIN(e, m) */ e.name, count(*) FROM entities e JOIN mentions m ON m.entity_id = e.id GROUP BY e.name ORDER BY 2 DESC, 1 LIMIT 3"
	if plan := fmt.Sprint(one(t, e, "EXPLAIN PLAN "+hash, nil).Rows); !strings.Contains(plan, "HashJoin") {
		t.Fatalf("want a hash join of entities and mentions: %s", plan)
	}
	res, err := e.Query(context.Background(), hash+`;
		SELECT d.room, e.name, count(*) FROM drawers d JOIN mentions m ON m.drawer_id = d.id JOIN entities e ON e.id = m.entity_id GROUP BY d.room, e.name ORDER BY 3 DESC, 1, 2 LIMIT 5;
		SELECT count(*) FROM drawers a JOIN drawers b ON a.id = b.id WHERE a.content LIKE 'Drawer 1%';
		SELECT DISTINCT room FROM drawers WHERE id IN (SELECT drawer_id FROM mentions) ORDER BY room;
		SELECT e.name, (SELECT count(*) FROM mentions m WHERE m.entity_id = e.id) AS n FROM entities e ORDER BY n DESC, e.name LIMIT 3`, nil)
	if err != nil || len(res) != 5 {
		t.Fatal(res, err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Statement, r.Err)
		}
	}
	if len(res[0].Rows) != 3 || res[0].Rows[0][1] != int64(2) || res[0].Rows[0][0] != "Person 000" {
		t.Fatalf("hash join: %v", res[0].Rows)
	}
	if len(res[3].Rows) != 3 || len(res[4].Rows) != 3 || res[4].Rows[0][1] != int64(2) {
		t.Fatalf("subqueries: %v %v", res[3].Rows, res[4].Rows)
	}
	if db.maxOpen.Load() < 2 {
		t.Fatalf("at most %d reads open at once: the test no longer holds two pulled visitors open", db.maxOpen.Load())
	}
	if db.reads.Load() < 1000 || db.maxRunning.Load() != 1 {
		t.Fatalf("%d reads, up to %d running at once", db.reads.Load(), db.maxRunning.Load())
	}
	if db.views.Load() != 2 || db.ended.Load() != 2 || db.openAtEnd.Load() != 0 {
		t.Fatalf("views %d, ended %d, reads open at their end %d", db.views.Load(), db.ended.Load(), db.openAtEnd.Load())
	}
}

// A statement that stops before its tables are read through (a LIMIT, a
// too_large failure, a timeout, a join cut at the result limit) stops
// every store visitor it pulled a page at a time: no coroutine outlives
// it, and no read is still open when the view ends. A correlated subquery
// that takes one row of a scan per row of its outer table stops each
// scan's visitor when the engine closes the scan, before the next row's
// (not only when the statement ends): one is open at a time.
func TestPulledVisitorsStopWithTheStatement(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	base := pullPalace(t)
	db := &spyDB{DB: base}
	check := func(what string) {
		t.Helper()
		if left := pulls(); len(left) > 0 {
			t.Fatalf("%s: %d pulled visitors left running:\n%s", what, len(left), strings.Join(left, "\n\n"))
		}
		if db.ended.Load() != db.views.Load() || db.openAtEnd.Load() != 0 || db.open.Load() != 0 {
			t.Fatalf("%s: views %d, ended %d, reads open at their end %d, open now %d", what, db.views.Load(), db.ended.Load(), db.openAtEnd.Load(), db.open.Load())
		}
	}
	// held says a pulled visitor was held open across pages: the case
	// tested.
	held := func(what string) {
		t.Helper()
		if db.maxOpen.Load() < 2 {
			t.Fatalf("%s: at most %d reads open at once: no visitor was held open", what, db.maxOpen.Load())
		}
		db.maxOpen.Store(0)
	}

	e := sqlview.New(db, defaults())
	if r := one(t, e, "SELECT * FROM entities LIMIT 1", nil); len(r.Rows) != 1 {
		t.Fatalf("limit 1: %v", r.Rows)
	}
	check("LIMIT 1 over entities")
	if db.maxOpen.Load() != 1 {
		t.Fatalf("LIMIT 1: %d reads open at once", db.maxOpen.Load())
	}
	db.maxOpen.Store(0)

	// Each drawer's subquery reads the entities (600: more than a page)
	// and takes one: the engine closes that scan before the next row's.
	scans := db.entityScans.Load()
	r := one(t, e, "SELECT d.id, (SELECT e.name FROM entities e WHERE e.name <= d.room LIMIT 1) FROM drawers d LIMIT 40", nil)
	if len(r.Rows) != 40 || r.Rows[0][1] != "Person 000" {
		t.Fatalf("a subquery per row: %v", r.Rows)
	}
	check("a subquery per row")
	if n, runs := db.maxOpen.Load(), db.entityScans.Load()-scans; n != 1 || runs < 40 {
		t.Fatalf("a subquery per row: %d scans of the entities, up to %d reads open at once; want one at a time", runs, n)
	}
	db.maxOpen.Store(0)

	small := sqlview.New(db, sqlview.Limits{ScanRows: 700, ResultRows: 10_000, Timeout: 30 * time.Second})
	if r := failed(t, small, "SELECT * FROM mentions"); r.Err.Code != fault.DBTooLarge {
		t.Fatalf("too large: %+v", r.Err)
	}
	check("too_large")
	held("too_large")

	cut := sqlview.New(db, sqlview.Limits{ScanRows: 2_000_000, ResultRows: 5, Timeout: 30 * time.Second})
	if r := one(t, cut, "SELECT e.name, m.drawer_id FROM entities e JOIN mentions m ON m.entity_id = e.id", nil); !r.Truncated || len(r.Rows) != 5 {
		t.Fatalf("cut join: %d rows, truncated %v", len(r.Rows), r.Truncated)
	}
	check("a join cut at the result limit")
	held("a join cut at the result limit")

	slow := sqlview.New(db, sqlview.Limits{ScanRows: 1 << 40, ResultRows: 10, Timeout: 300 * time.Millisecond})
	if r := failed(t, slow, "SELECT count(*) FROM entities a, mentions m, entities b"); r.Err.Code != fault.DBTimeout {
		t.Fatalf("timeout: %+v", r.Err)
	}
	check("a timeout")
	held("a timeout")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := e.Query(ctx, "SELECT count(*) FROM entities a, mentions m, entities b", nil)
	if err != nil || len(res) != 1 || res[0].Err == nil || res[0].Err.Code != fault.DBCanceled {
		t.Fatalf("cancelled: %+v %v", res, err)
	}
	check("a cancelled context")
	held("a cancelled context")

	if err := base.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, ignore)
}

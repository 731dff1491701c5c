package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/storetest"
)

// countingDB counts transactions.
type countingDB struct {
	store.DB
	updates atomic.Int64
}

func (c *countingDB) Update(ctx context.Context, fn func(store.Tx) error) error {
	c.updates.Add(1)
	return c.DB.Update(ctx, fn)
}

func newSystem(t testing.TB) (*System, *countingDB) {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cdb := &countingDB{DB: db}
	sys := Start(cdb, slog.New(slog.DiscardHandler), slog.LevelInfo)
	t.Cleanup(func() {
		sys.Stop(context.Background())
		db.Close()
	})
	return sys, cdb
}

func TestGroupCommit(t *testing.T) {
	sys, db := newSystem(t)
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r",
				Content: fmt.Sprintf("memory number %d about something entirely its own %d", i, i*7919),
				Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, _ := p.Counts(context.Background())
	if c.Drawers != n {
		t.Fatalf("%d drawers stored, want %d", c.Drawers, n)
	}
	if u := db.updates.Load(); u >= n {
		t.Fatalf("%d transactions for %d concurrent writes: no group commit", u, n)
	}
}

func TestFailedWriteInBatchLeavesNoTrace(t *testing.T) {
	sys, db := newSystem(t)
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	boom := errors.New("boom")
	var wg sync.WaitGroup
	var badErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, badErr = sys.Write(context.Background(), func(tx store.Tx) (any, error) {
			w := &store.Wing{ID: store.NewID(), Name: "ghost"}
			if err := tx.PutWing(w); err != nil {
				return nil, err
			}
			return nil, boom
		})
	}()
	go func() {
		defer wg.Done()
		if _, _, err := p.CreateWing(context.Background(), "real", ""); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	if !errors.Is(badErr, boom) {
		t.Fatalf("failing write answered %v", badErr)
	}
	wings, _ := p.Wings(context.Background())
	if len(wings) != 1 || wings[0].Name != "real" {
		t.Fatalf("wings %+v: the failed write's changes leaked or the good one was lost", wings)
	}
	// A panicking write fails alone.
	if _, err := sys.Write(context.Background(), func(store.Tx) (any, error) { panic("bad") }); err == nil {
		t.Fatal("panic not reported")
	}
	if _, _, err := p.CreateWing(context.Background(), "after", ""); err != nil {
		t.Fatalf("writer dead after a panic: %v", err)
	}
}

func TestStopCommitsQueuedWrites(t *testing.T) {
	sys, db := newSystem(t)
	p := &Palace{DB: db, Sys: sys}
	var wg sync.WaitGroup
	var ok atomic.Int64
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := p.CreateWing(context.Background(), fmt.Sprintf("w%d", i), ""); err == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if err := sys.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Write(context.Background(), func(store.Tx) (any, error) { return nil, nil }); err == nil {
		t.Fatal("write accepted after stop")
	}
	var n int
	db.View(context.Background(), func(r store.Reader) error {
		w, _ := r.Wings()
		n = len(w)
		return nil
	})
	if int64(n) != ok.Load() {
		t.Fatalf("%d wings stored, %d acknowledged", n, ok.Load())
	}
}

func TestOversizeBatchIsSplit(t *testing.T) {
	sys, db := newSystem(t)
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	const n = 24 // 24 x 600 KB is more than one Badger transaction takes
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			// Random CJK text: 600 KB whose three-character runs no other
			// drawer shares, so nothing is a near duplicate.
			b := make([]rune, 200<<10)
			for k := range b {
				b[k] = rune(0x4e00 + r.IntN(20000))
			}
			content := string(b)
			_, err := p.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r", Content: content,
				Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a write in an oversize batch failed: %v", err)
		}
	}
	if c, _ := p.Counts(context.Background()); c.Drawers != n {
		t.Fatalf("%d drawers, want %d", c.Drawers, n)
	}
}

// conflictingDB refuses its first conflicts commits as a shared backend
// refuses a serialization failure: the transaction runs, nothing is kept.
type conflictingDB struct {
	store.DB
	conflicts atomic.Int64
	updates   atomic.Int64
}

func (c *conflictingDB) Update(ctx context.Context, fn func(store.Tx) error) error {
	c.updates.Add(1)
	if c.conflicts.Add(-1) >= 0 {
		err := c.DB.Update(ctx, func(tx store.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			return store.ErrConflict
		})
		return err
	}
	return c.DB.Update(ctx, fn)
}

// A batch the backend refuses as conflicting is run again, and its caller
// answered once it commits; one that keeps conflicting fails its callers
// after a few tries, with nothing kept.
func TestConflictingBatchIsRetried(t *testing.T) {
	for _, c := range []struct {
		conflicts int64
		ok        bool
	}{{2, true}, {maxConflictRetries + 1, false}} {
		db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		cdb := &conflictingDB{DB: db}
		cdb.conflicts.Store(c.conflicts)
		sys := Start(cdb, slog.New(slog.DiscardHandler), slog.LevelInfo)
		p := &Palace{DB: cdb, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
		_, err = p.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r", Content: "written despite a conflict",
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}})
		counts, _ := p.Counts(context.Background())
		if c.ok && (err != nil || counts.Drawers != 1 || cdb.updates.Load() != c.conflicts+1) {
			t.Errorf("%d conflicts: %v, %d drawers after %d tries", c.conflicts, err, counts.Drawers, cdb.updates.Load())
		}
		if !c.ok && (err == nil || counts.Drawers != 0 || cdb.updates.Load() != maxConflictRetries+1) {
			t.Errorf("endless conflicts: %v, %d drawers after %d tries", err, counts.Drawers, cdb.updates.Load())
		}
		sys.Stop(context.Background())
		db.Close()
	}
}

// runBatch commits fns as one batch of the writer, as a flush does.
func runBatch(t *testing.T, db store.DB, fns ...func(store.Tx) (any, error)) []writeResp {
	t.Helper()
	w := &writer{db: db, log: slog.New(slog.DiscardHandler)}
	batch := make([]*writeReq, len(fns))
	for i, fn := range fns {
		batch[i] = &writeReq{fn: fn, reply: make(chan writeResp, 1)}
	}
	w.commit(batch)
	out := make([]writeResp, len(batch))
	for i, r := range batch {
		out[i] = <-r.reply
	}
	return out
}

// A function that writes a trigger state and a delivery, then fails,
// leaves neither behind; the good function of its batch is committed.
func TestFailedTriggerWriteInBatchLeavesNoTrace(t *testing.T) {
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	boom := errors.New("boom")
	res := runBatch(t, db,
		func(tx store.Tx) (any, error) {
			return nil, tx.PutWing(&store.Wing{ID: store.NewID(), Name: "real", CreatedAt: tx.Now()})
		},
		func(tx store.Tx) (any, error) {
			if err := tx.PutTriggerState(&store.TriggerState{Name: "ghost"}); err != nil {
				return nil, err
			}
			if err := tx.PutDelivery(&store.Delivery{Trigger: "ghost", ID: "d1", AcceptedAt: tx.Now()}); err != nil {
				return nil, err
			}
			return nil, boom
		})
	if res[0].err != nil || !errors.Is(res[1].err, boom) {
		t.Fatalf("answers %v, %v", res[0].err, res[1].err)
	}
	err = db.View(context.Background(), func(r store.Reader) error {
		w, err := r.WingByName("real")
		if err != nil || w == nil {
			t.Errorf("the good function's wing: %v %v", w, err)
		}
		if s, err := r.TriggerState("ghost"); err != nil || s != nil {
			t.Errorf("the failed function's trigger state was kept: %+v %v", s, err)
		}
		if d, err := r.Delivery("ghost", "d1"); err != nil || d != nil {
			t.Errorf("the failed function's delivery was kept: %+v %v", d, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dumpStore is every key and value of a closed store, read with Badger
// itself: what a rollback must leave byte for byte.
func dumpStore(t *testing.T, dir string) map[string]string {
	t.Helper()
	bdb, err := badger.Open(badger.DefaultOptions(dir).WithMemTableSize(badgerdb.MemTableSize).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	out := map[string]string{}
	err = bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out[string(it.Item().KeyCopy(nil))] = string(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every write method of store.Tx, called in a function that then fails,
// leaves the store byte for byte as it was; the same call in a function
// that succeeds changes it (so the check can fail). The calls are the
// conformance suite's (storetest.WriteCalls), which must name every write
// method: a new one without a call fails the test.
func TestEveryWriteMethodRollsBack(t *testing.T) {
	cases := storetest.WriteCalls(t)
	if t.Failed() {
		return
	}
	dir := t.TempDir()
	batch := func(fns ...func(store.Tx) (any, error)) []writeResp {
		db, err := badgerdb.Open(dir, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return runBatch(t, db, fns...)
	}
	batch() // the store's own records, written when it is made
	before := dumpStore(t, dir)
	boom := errors.New("boom")
	for _, c := range cases {
		t.Run(c.Method, func(t *testing.T) {
			call := c.Call
			res := batch(func(tx store.Tx) (any, error) {
				if err := call(tx); err != nil {
					return nil, err
				}
				return nil, boom
			})
			if !errors.Is(res[0].err, boom) {
				t.Fatalf("failing function answered %v", res[0].err)
			}
			if after := dumpStore(t, dir); !maps.Equal(before, after) {
				defer func() { before = after }() // the next case starts from here
				t.Fatalf("a failed function's %s left %d keys changed", c.Method, diffKeys(before, after))
			}
			if res := batch(func(tx store.Tx) (any, error) { return nil, call(tx) }); res[0].err != nil {
				t.Fatalf("%s: %v", c.Method, res[0].err)
			}
			after := dumpStore(t, dir)
			if maps.Equal(before, after) {
				t.Fatalf("%s committed changed nothing: the case proves nothing", c.Method)
			}
			before = after
		})
	}
}

// diffKeys is how many keys differ between two dumps.
func diffKeys(a, b map[string]string) int {
	n := 0
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			n++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n++
		}
	}
	return n
}

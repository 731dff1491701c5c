package actors

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
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

// A wing and a room too big for one transaction are deleted all the same,
// a batch of drawers at a time, with every drawer counted.
func TestDeleteBigWingAndRoom(t *testing.T) {
	sys, db := newSystem(t)
	// Dedup on: each drawer then has its dedup keys too, as in a daemon.
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	text := func(i int, place string) string {
		a := sha256.Sum256([]byte(fmt.Sprint(place, i)))
		b := sha256.Sum256(a[:])
		return fmt.Sprintf("%x %x %x", a, b, sha256.Sum256(b[:]))
	}
	fill := func(wing, room string, n int) {
		t.Helper()
		for b := 0; b < n; b += 500 {
			if _, err := sys.Write(context.Background(), func(tx store.Tx) (any, error) {
				for i := b; i < min(n, b+500); i++ {
					if _, err := store.CreateDrawer(tx, store.NewDrawer{Wing: wing, Room: room,
						Content: text(i, wing+"/"+room),
						Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, p.Dedup); err != nil {
						return nil, err
					}
				}
				return nil, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill("big", "a", 3000)
	fill("big", "b", 2600)
	fill("other", "r", 4500)
	ctx := context.Background()
	n, err := p.DeleteWing(ctx, "big")
	if err != nil || n != (store.Removed{Wings: 1, Rooms: 2, Drawers: 5600}) {
		t.Fatalf("delete the wing: %+v %v", n, err)
	}
	n, err = p.DeleteRoom(ctx, "other", "r")
	if err != nil || n != (store.Removed{Rooms: 1, Drawers: 4500}) {
		t.Fatalf("delete the room: %+v %v", n, err)
	}
	c, err := p.Counts(ctx)
	if err != nil || c.Drawers != 0 || c.Wings != 1 || c.Rooms != 0 {
		t.Fatalf("counts after: %+v %v", c, err)
	}
}

package badgerdb

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

const base = "We decided to move the job queue from Redis to PostgreSQL for durability and easier backups."

var ndd = store.Dedup{Enabled: true, Threshold: dedup.DefaultThreshold}

func nearDrawer(content string) store.NewDrawer {
	return store.NewDrawer{Wing: "w", Room: "r", Content: content, Source: store.Source{Kind: store.KindManual}}
}

func create(t *testing.T, db *DB, in store.NewDrawer) *store.WriteResult {
	t.Helper()
	var res *store.WriteResult
	err := db.Update(context.Background(), func(tx store.Tx) error {
		var err error
		res, err = store.CreateDrawer(tx, in, ndd)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// candidates lists what a read transaction finds near content.
func candidates(t *testing.T, db *DB, content string) []string {
	t.Helper()
	sk := dedup.MakeSketch(dedup.Normalize(content))
	var ids []string
	err := db.View(context.Background(), func(r store.Reader) error {
		w, err := store.FindWing(r, "w")
		if err != nil {
			return err
		}
		rm, err := store.FindRoom(r, w, "r")
		if err != nil {
			return err
		}
		scope := (&store.Drawer{RoomID: rm.ID}).DedupScope()
		return r.DedupNear(scope, sk.Bands, 0, 1<<30, func(c store.NearCandidate) { ids = append(ids, c.DrawerID()) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestNearIndexFollowsCommitsAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a := create(t, db, nearDrawer(base)).Drawer
	if got := candidates(t, db, base); len(got) != 1 || got[0] != a.ID {
		t.Fatalf("after the write: %v, want [%s]", got, a.ID)
	}
	// A transaction that fails publishes nothing.
	boom := errors.New("boom")
	err = db.Update(context.Background(), func(tx store.Tx) error {
		if _, err := store.CreateDrawer(tx, nearDrawer(strings.Replace(base, "Redis", "Rediss", 1)), ndd); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got := candidates(t, db, base); len(got) != 1 {
		t.Fatalf("a rolled-back write is a candidate: %v", got)
	}
	b := create(t, db, nearDrawer(strings.Replace(base, "Redis", "Rediss", 1)))
	if len(b.Similar) != 1 || b.Similar[0].Older != a.ID {
		t.Fatalf("near copy not linked: %+v", b.Similar)
	}
	// Deleting a drawer removes it from the index.
	err = db.Update(context.Background(), func(tx store.Tx) error { return store.DeleteDrawer(tx, a) })
	if err != nil {
		t.Fatal(err)
	}
	if got := candidates(t, db, base); len(got) != 1 || got[0] != b.Drawer.ID {
		t.Fatalf("after the delete: %v, want [%s]", got, b.Drawer.ID)
	}
	db.Close()

	// Reopened: reads see nothing until a write loads the scope from disk;
	// the writer finds the drawer either way.
	db, err = Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := create(t, db, nearDrawer(strings.Replace(base, "durability", "durabilty", 1)))
	if len(c.Similar) != 1 || c.Similar[0].Older != b.Drawer.ID {
		t.Fatalf("after reopening, near copy not linked to %s: %+v", b.Drawer.ID, c.Similar)
	}
	if got := candidates(t, db, base); len(got) != 2 {
		t.Fatalf("after reopening and one write: %v, want two", got)
	}
}

func TestNearIndexSameBatchDeleteHidesPendingAdd(t *testing.T) {
	db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(context.Background(), func(tx store.Tx) error {
		a, err := store.CreateDrawer(tx, nearDrawer(base), ndd)
		if err != nil {
			return err
		}
		if err := store.DeleteDrawer(tx, a.Drawer); err != nil {
			return err
		}
		b, err := store.CreateDrawer(tx, nearDrawer(strings.Replace(base, "Redis", "Rediss", 1)), ndd)
		if err != nil {
			return err
		}
		if len(b.Similar) != 0 {
			t.Errorf("linked to a drawer deleted earlier in the batch: %+v", b.Similar)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := candidates(t, db, base); len(got) != 1 {
		t.Fatalf("after commit: %v, want only the second drawer", got)
	}
}

// A v4 store kept band posting lists; SyncSchema replaces them with
// near-index records derived from the stored text.
func TestSyncSchemaRebuildsNearRecords(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a := create(t, db, nearDrawer(base)).Drawer
	// Make it look like v4: no xs/ records, a stale xb/ list.
	err = db.bdb.Update(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pNear)})
		var keys [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		it.Close()
		if len(keys) != 1 {
			t.Errorf("xs records: %d, want 1", len(keys))
		}
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return txn.Set([]byte(pBand+"scope\x00band0000"), make([]byte, 20))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SyncSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	db.bdb.View(func(txn *badger.Txn) error {
		for _, p := range []string{pBand, pNear} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(p)})
			for it.Rewind(); it.Valid(); it.Next() {
				if p == pBand {
					t.Errorf("band list left: %q", it.Item().Key())
				}
				n++
			}
			it.Close()
		}
		return nil
	})
	if n != 1 {
		t.Fatalf("xs records after sync: %d, want 1", n)
	}
	b := create(t, db, nearDrawer(strings.Replace(base, "Redis", "Rediss", 1)))
	if len(b.Similar) != 1 || b.Similar[0].Older != a.ID {
		t.Fatalf("after the sync, near copy not linked: %+v", b.Similar)
	}
}

// The band table keeps every key through its growth, and a key's slot
// (at) is the one get and put use.
func TestBandTable(t *testing.T) {
	var bt bandTable
	want := map[uint32]int32{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 50000 {
		k := bandKey32(r.Uint64() % 30000) // repeats overwrite
		if i%2 == 0 {
			bt.put(k, int32(i))
		} else {
			sl := bt.at(k)
			if sl.key == 0 {
				bt.n++
			}
			*sl = bandSlot{k, int32(i)}
		}
		want[k] = int32(i)
	}
	if bt.n != len(want) {
		t.Fatalf("n = %d, want %d distinct keys", bt.n, len(want))
	}
	for k, v := range want {
		if got, ok := bt.get(k); !ok || got != v {
			t.Fatalf("get(%x) = %d %v, want %d", k, got, ok, v)
		}
	}
	if _, ok := bt.get(2); ok { // even keys are never stored
		t.Fatal("found a key never put")
	}
}

// A scope sized up front for its records (as a load makes it) answers
// exactly as one grown entry by entry, shared bands, long lists and
// removals included.
func TestLoadedScopeMatchesIncremental(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	entries := make([]nearEntry, 3000)
	for i := range entries {
		e := nearEntry{n: uint32(20 + r.IntN(200)), mins: make([]byte, dedup.Bands*dedup.Rows), bag: make([]byte, dedup.BagSize)}
		e.id[0], e.id[1] = byte(i), byte(i>>8)
		for range dedup.Bands {
			w := r.Uint64()
			if r.IntN(3) == 0 {
				w = uint64(r.IntN(40)) // a popular band: lists, some over MaxBandPostings
			}
			e.bands = append(e.bands, w)
		}
		entries[i] = e
	}
	one := newScopeIndex()
	for _, e := range entries {
		one.add(e)
	}
	all := loadInto(scopeIndexFor(len(entries)), entries)
	for _, s := range []*scopeIndex{one, all} {
		for i := 0; i < len(entries); i += 7 {
			s.remove(entries[i].id)
		}
	}
	for i := 0; i < len(entries); i += 3 {
		var a, b []int32
		one.visit(entries[i].bands, 0, 1<<30, func(o int32) { a = append(a, o) })
		all.visit(entries[i].bands, 0, 1<<30, func(o int32) { b = append(b, o) })
		if !slices.Equal(a, b) {
			t.Fatalf("entry %d: incremental visits %v, loaded %v", i, a, b)
		}
		if i%7 != 0 && !slices.Contains(b, int32(i)) {
			t.Fatalf("entry %d does not find itself", i)
		}
	}
}

// The band index answers as a plain map of key to entries through many
// merges of its recent pairs into the run, with removals dropped at a
// merge and keys capped at MaxBandPostings live entries.
func TestBandIndexMatchesAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var x bandIndex
	want := map[uint32][]int32{}
	dead := map[int32]bool{}
	live := func(o int32) bool { return !dead[o] }
	hot := bandKey32(12345)
	const n = 300_000 // several merges: the first at minMerge pairs
	for ord := range int32(n) {
		k := bandKey32(r.Uint64() % 200_000) // shared keys: lists of several entries
		if ord%50 == 0 {
			k = hot // one key far past the cap
		}
		x.add(k, ord, live)
		if k != hot || len(want[k]) < MaxBandPostings {
			want[k] = append(want[k], ord)
		}
		if ord%97 == 0 {
			dead[ord] = true
			x.removed++
		}
	}
	if x.run.n == 0 {
		t.Fatal("no merge happened; the test does not reach the run")
	}
	for k, ords := range want {
		var got []int32
		x.visit(k, func(o int32) {
			if live(o) {
				got = append(got, o)
			}
		})
		var exp []int32
		for _, o := range ords {
			if live(o) {
				exp = append(exp, o)
			}
		}
		if k == hot {
			if got != nil {
				t.Fatalf("a capped key was read: %d entries", len(got))
			}
			continue
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("key %x: visited %v, want %v", k, got, exp)
		}
	}
	x.visit(2, func(int32) { t.Fatal("found a key never added") })
}

// A v7 store kept sketches of three-character runs in 32 bands (128
// minimums); SyncSchema sketches them again from the stored text.
func TestSyncSchemaSketchesAgain(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a := create(t, db, nearDrawer(base)).Drawer
	var nearKeys [][]byte
	err = db.bdb.Update(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pNear)})
		for it.Rewind(); it.Valid(); it.Next() {
			nearKeys = append(nearKeys, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range nearKeys {
			if err := txn.Set(k, make([]byte, 4+32*8+128+dedup.BagSize)); err != nil {
				return err
			}
		}
		return txn.Set([]byte(k(pSketch, a.ID)), sketchValue(make([]uint16, 128), dedup.Normalize(base)))
	})
	if err != nil || len(nearKeys) != 1 {
		t.Fatal(err, len(nearKeys))
	}
	db.Close()
	db, err = Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SyncSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = db.View(context.Background(), func(r store.Reader) error {
		mins, norm, err := r.DedupSketch(a.ID)
		if err != nil || len(mins) != dedup.Bands*dedup.Rows || norm != dedup.Normalize(base) {
			t.Errorf("sketch value after sync: %d minimums, %q, %v", len(mins), norm, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.bdb.View(func(txn *badger.Txn) error {
		item, err := txn.Get(nearKeys[0])
		if err != nil || item.ValueSize() != nearRecordSize {
			t.Errorf("near record after sync: %v, %d bytes, want %d", err, item.ValueSize(), nearRecordSize)
		}
		return nil
	})
	b := create(t, db, nearDrawer(strings.Replace(base, "Redis", "Rediss", 1)))
	if len(b.Similar) != 1 || b.Similar[0].Older != a.ID {
		t.Fatalf("after the sync, near copy not linked: %+v", b.Similar)
	}
}

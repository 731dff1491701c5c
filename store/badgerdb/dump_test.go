package badgerdb

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/store"
)

func openTemp(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// contents reads every live key of a Badger transaction (nil: a new one).
func contents(t *testing.T, db *DB, txn *badger.Txn) map[string]string {
	t.Helper()
	out := map[string]string{}
	read := func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out[string(it.Item().Key())] = string(v)
		}
		return nil
	}
	var err error
	if txn != nil {
		err = read(txn)
	} else {
		err = db.bdb.View(read)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// only is the keys of m under prefix.
func only(prefix string, m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func put(t *testing.T, db *DB, kvs ...string) {
	t.Helper()
	if err := db.bdb.Update(func(txn *badger.Txn) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			if err := txn.Set([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func dump(t *testing.T, s store.Snapshot, since uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	st, err := s.Dump(t.Context(), since, &b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(b.Len()) {
		t.Fatalf("Dump reports %d bytes, wrote %d", st.Bytes, b.Len())
	}
	return b.Bytes()
}

// A dump taken while 16 writers change pairs of keys is the store at
// the snapshot's one version: loaded into an empty store it equals the
// snapshot's own read, and every pair written in one transaction is
// whole. (Badger's DB.Backup reads with one transaction per goroutine.)
func TestDumpIsOneVersionUnderConcurrentWrites(t *testing.T) {
	db := openTemp(t)
	const keys = 4000
	for i := 0; i < keys; i += 500 {
		var kvs []string
		for j := i; j < i+500; j++ {
			kvs = append(kvs, fmt.Sprintf("a/%05d", j), "0", fmt.Sprintf("b/%05d", j), "0")
		}
		put(t, db, kvs...)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 16 {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				k := (n*16 + w) % keys
				v := fmt.Sprint(n + 1)
				if err := db.bdb.Update(func(txn *badger.Txn) error {
					if err := txn.Set(fmt.Appendf(nil, "a/%05d", k), []byte(v)); err != nil {
						return err
					}
					return txn.Set(fmt.Appendf(nil, "b/%05d", k), []byte(v))
				}); err != nil {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		})
	}
	for writes.Load() < 200 {
		// the writers are running
	}
	snap, err := db.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	body := dump(t, snap, 0)
	before := writes.Load()
	for writes.Load() < before+200 {
		// more writes land after the dump
	}
	want := contents(t, db, snap.(*snapshot).txn)
	version := snap.Version()
	snap.Close()
	stop.Store(true)
	wg.Wait()

	if n, err := CheckDump(bytes.NewReader(body), 0, version); err != nil || n != int64(len(want)) {
		t.Fatalf("CheckDump = %d, %v; want %d records", n, err, len(want))
	}
	restored := openTemp(t)
	if err := restored.Load(t.Context(), bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	got := contents(t, restored, nil)
	if !maps.Equal(got, want) {
		t.Fatalf("the restored store differs from the snapshot: %d keys, want %d", len(got), len(want))
	}
	for i := range keys {
		a, b := got[fmt.Sprintf("a/%05d", i)], got[fmt.Sprintf("b/%05d", i)]
		if a != b {
			t.Fatalf("pair %d is torn: %s != %s", i, a, b)
		}
	}
	if now := contents(t, db, nil); maps.Equal(now, want) {
		t.Fatal("the writers changed nothing after the snapshot: the test proves nothing")
	}
}

// An incremental dump carries what changed after the full one's version,
// deletions included, and the chain loaded in order is the store.
func TestIncrementalDumpCarriesDeletions(t *testing.T) {
	db := openTemp(t)
	put(t, db, "k/1", "one", "k/2", "two", "k/3", "three", "k/4", "four")
	s1, _ := db.Snapshot(t.Context())
	full, v1 := dump(t, s1, 0), s1.Version()
	s1.Close()

	put(t, db, "k/2", "two again", "k/5", "five")
	if err := db.bdb.Update(func(txn *badger.Txn) error { return txn.Delete([]byte("k/3")) }); err != nil {
		t.Fatal(err)
	}
	s2, _ := db.Snapshot(t.Context())
	inc1, v2 := dump(t, s2, v1), s2.Version()
	s2.Close()

	if err := db.bdb.Update(func(txn *badger.Txn) error { return txn.Delete([]byte("k/1")) }); err != nil {
		t.Fatal(err)
	}
	put(t, db, "k/3", "three back")
	s3, _ := db.Snapshot(t.Context())
	inc2, v3 := dump(t, s3, v2), s3.Version()
	s3.Close()

	if n, err := CheckDump(bytes.NewReader(inc1), v1, v2); err != nil || n != 3 {
		t.Fatalf("the first incremental: %d records, %v; want 3 (k/2, k/3 deleted, k/5)", n, err)
	}
	if _, err := CheckDump(bytes.NewReader(inc1), v2, v3); err == nil {
		t.Fatal("CheckDump took records outside its version range")
	}
	restored := openTemp(t)
	for i, b := range [][]byte{full, inc1} {
		if err := restored.Load(t.Context(), bytes.NewReader(b)); err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	want := map[string]string{"k/1": "one", "k/2": "two again", "k/4": "four", "k/5": "five"}
	if got := only("k/", contents(t, restored, nil)); !maps.Equal(got, want) {
		t.Fatalf("full + first incremental = %v, want %v", got, want)
	}
	if err := restored.Load(t.Context(), bytes.NewReader(inc2)); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, restored, nil), contents(t, db, nil); !maps.Equal(got, want) {
		t.Fatalf("the whole chain = %v, want %v", got, want)
	}
}

// A restored store's next commits get versions above the loaded ones
// (else a new write would hide under a loaded record), and its change
// log goes on after the loaded entries.
func TestCommitsAfterALoadGoAboveIt(t *testing.T) {
	db := openTemp(t)
	for i := range 50 {
		put(t, db, "k/x", fmt.Sprint("old ", i))
	}
	if err := db.Update(t.Context(), func(tx store.Tx) error {
		_, _, err := store.EnsureWing(tx, "alpha", "")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s, _ := db.Snapshot(t.Context())
	body := dump(t, s, 0)
	s.Close()
	var lastSeq uint64
	_ = db.View(t.Context(), func(r store.Reader) (err error) { lastSeq, err = r.LastSeq(); return })

	restored := openTemp(t)
	if err := restored.Load(t.Context(), bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	put(t, restored, "k/x", "new")
	if got := contents(t, restored, nil)["k/x"]; got != "new" {
		t.Fatalf("after a load, a new write reads back %q", got)
	}
	if err := restored.Update(t.Context(), func(tx store.Tx) error {
		_, _, err := store.EnsureWing(tx, "beta", "")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	_ = restored.View(t.Context(), func(r store.Reader) error {
		return r.Changes(0, func(c store.Change) bool { seqs = append(seqs, c.Seq); return true })
	})
	if len(seqs) == 0 || seqs[len(seqs)-1] <= lastSeq {
		t.Fatalf("change log after the load = %v; the original's ended at %d", seqs, lastSeq)
	}
}

// The migration lock belongs to the process that took it: never dumped.
func TestDumpLeavesTheMigrationLockOut(t *testing.T) {
	db := openTemp(t)
	put(t, db, "meta/migrate_lock", `{"owner":"x"}`, "meta/schema", "s", "w/1", "wing")
	s, _ := db.Snapshot(t.Context())
	body := dump(t, s, 0)
	s.Close()
	restored := openTemp(t)
	if err := restored.Load(t.Context(), bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	got := contents(t, restored, nil)
	if _, ok := got["meta/migrate_lock"]; ok || got["w/1"] != "wing" || got["meta/schema"] != "s" {
		t.Fatalf("restored %v", got)
	}
}

// Holds: nothing but operational records is an empty store.
func TestHolds(t *testing.T) {
	db := openTemp(t)
	put(t, db, "meta/palace_id", "x")
	if h, err := db.Holds(t.Context()); err != nil || h {
		t.Fatalf("Holds = %v, %v on a store of meta records", h, err)
	}
	put(t, db, "w/1", "wing")
	if h, err := db.Holds(t.Context()); err != nil || !h {
		t.Fatalf("Holds = %v, %v on a store with a wing", h, err)
	}
}

// CheckDump and Load refuse a broken body with the byte offset.
func TestCheckDumpRefusesBrokenBodies(t *testing.T) {
	db := openTemp(t)
	for i := range 3000 {
		put(t, db, fmt.Sprintf("k/%05d", i), string(bytes.Repeat([]byte{'v'}, 600)))
	}
	s, _ := db.Snapshot(t.Context())
	body, v := dump(t, s, 0), s.Version()
	s.Close()
	if n, err := CheckDump(bytes.NewReader(body), 0, v); err != nil || n != int64(len(contents(t, db, nil))) {
		t.Fatalf("a whole body: %d, %v", n, err)
	}
	flipped := bytes.Clone(body)
	flipped[20] ^= 0xff
	for _, c := range []struct {
		name      string
		body      []byte
		truncated bool
	}{
		{"truncated in a frame", body[:len(body)-10], true},
		{"truncated in a length", append(bytes.Clone(body), 1, 2, 3), true},
		{"a huge frame length", append([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, body...), false},
		{"a flipped byte", flipped, false},
		{"not a dump", []byte("hello, this is not a dump at all, just text"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CheckDump(bytes.NewReader(c.body), 0, v)
			var dc *store.DumpCorrupt
			if !errors.As(err, &dc) || dc.Truncated != c.truncated {
				t.Fatalf("CheckDump = %v; want a DumpCorrupt (truncated %v)", err, c.truncated)
			}
			err = openTemp(t).Load(t.Context(), bytes.NewReader(c.body))
			if !errors.As(err, &dc) {
				t.Fatalf("Load = %v; want a DumpCorrupt", err)
			}
		})
	}
}

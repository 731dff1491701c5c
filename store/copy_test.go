package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/dedup"
)

// fullPalace is sourcePalace with a record of every family: a job with
// its input and checkpoint facts, mining's state (a cursor, a document, a
// chunk owner, a document to file again), a trigger's state and a
// delivery, an entity link, a fact's lifecycle link, the credential state
// and an operational record.
func fullPalace(t *testing.T) *badgerdb.DB {
	t.Helper()
	db := sourcePalace(t)
	ctx := context.Background()
	err := db.Update(ctx, func(tx store.Tx) error {
		now := tx.Now()
		var first *store.Drawer
		ws, _ := tx.Wings()
		rs, _ := tx.Rooms(ws[0].ID)
		ids, _ := tx.DrawerIDs(rs[0].ID)
		first, _ = tx.Drawer(ids[0])
		j := &store.Job{ID: store.NewID(), Kind: "mine", Status: store.JobCompleted, RequestedBy: store.ByCLI, CreatedAt: now, UpdatedAt: now,
			Checkpoint: json.RawMessage(`{"b": 2, "a": [1, 2.5]}`), Result: json.RawMessage(`{"filed":1}`), Input: json.RawMessage(`{"source":"x"}`)}
		if err := tx.PutJob(j, nil); err != nil {
			return err
		}
		if err := tx.PutJob(&store.Job{ID: store.NewID(), Kind: "embed", Status: store.JobQueued, CreatedAt: now, UpdatedAt: now}, nil); err != nil {
			return err
		}
		for i := range 3 {
			if err := tx.PutJobFact(j.ID, i, json.RawMessage(`{"op":"add","i":`+string(rune('0'+i))+`}`)); err != nil {
				return err
			}
		}
		ident := store.SourceIdentity{Adapter: "folder", Locator: "/notes"}
		key := store.TargetKey(ident.Key(), ws[0].ID)
		if err := tx.PutSource(&store.SourceState{Key: key, Identity: ident, WingID: ws[0].ID, Cursor: json.RawMessage(`{"path":"a.md"}`), Documents: 1, LastJob: j.ID, LastRun: now}); err != nil {
			return err
		}
		if err := tx.PutSourceDocument(&store.DocumentState{Source: key, ID: "notes/a.md", WingID: ws[0].ID, Revision: "r1",
			Chunks: []store.ChunkState{{Drawer: first.ID, Hash: "h"}}}); err != nil {
			return err
		}
		if err := tx.PutChunkOwner(first.ID, key, "notes/a.md"); err != nil {
			return err
		}
		if err := tx.PutStaleDocument(key, "notes/b.md"); err != nil {
			return err
		}
		if err := tx.PutTriggerState(&store.TriggerState{Name: "nightly", Due: &now, Fired: 3, LastFired: &now, LastJob: j.ID}); err != nil {
			return err
		}
		if err := tx.PutDelivery(&store.Delivery{Trigger: "nightly", ID: "d1", AcceptedAt: now, Job: j.ID}); err != nil {
			return err
		}
		var es []*store.Entity
		_ = tx.Entities(func(e *store.Entity) bool { es = append(es, e); return true })
		if err := tx.PutEntityLink(&store.EntityLink{ID: store.NewID(), From: es[0].ID, To: es[1].ID, Kind: "related", CreatedAt: now}); err != nil {
			return err
		}
		var facts []*store.Relationship
		_ = tx.EntityRelationships(es[0].ID, func(r *store.Relationship) bool { facts = append(facts, r); return true })
		_ = tx.EntityRelationships(es[1].ID, func(r *store.Relationship) bool { facts = append(facts, r); return true })
		f2 := *facts[0]
		f2.ID, f2.Predicate = store.NewID(), "leads"
		if err := tx.PutRelationship(&f2, nil); err != nil {
			return err
		}
		if err := tx.PutRelationshipLink(&store.RelationshipLink{ID: store.NewID(), From: f2.ID, To: facts[0].ID, Kind: "supersedes", CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.PutLink(&store.Link{ID: store.NewID(), Older: ids[0], Newer: ids[len(ids)-1], Kind: dedup.Near,
			Signals: dedup.Signals{Similarity: 0.91, Threshold: 0.85}, CreatedAt: now}); err != nil {
			return err
		}
		return tx.PutAuthState(&store.AuthState{Digest: "abc", Algorithm: "sha256", Version: 1, CreatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutMeta(ctx, "embedding/serving", "p|static|m|2|v1"); err != nil {
		t.Fatal(err)
	}
	return db
}

func digests(t *testing.T, db store.DB) []store.FamilyDigest {
	t.Helper()
	d, err := store.Digest(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sameDigests(t *testing.T, a, b []store.FamilyDigest) {
	t.Helper()
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("family %s differs: %+v against %+v", a[i].Family, a[i], b[i])
		}
	}
}

// A copy holds every record of every family: the same counts and digests,
// the same change log (sequences included, so that the next write logs
// after it), the same kept counts.
func TestCopyBadgerToBadger(t *testing.T) {
	ctx := context.Background()
	src := fullPalace(t)
	dst := open(t)
	batches := 0
	rep, err := store.Copy(ctx, src, dst, store.CopyOptions{Batch: 3, AfterBatch: func(n int, _ string, _ int) { batches = n }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed || rep.Batches < 10 || batches != rep.Batches {
		t.Errorf("report %+v, %d batches seen", rep, batches)
	}
	want := digests(t, src)
	for _, f := range want {
		if f.Count == 0 {
			t.Errorf("the source palace has no record of %s: the test does not cover it", f.Family)
		}
	}
	sameDigests(t, want, digests(t, dst))
	sameDigests(t, want, rep.Families)
	if rep.Counts != counts(t, src) || rep.Counts.Drawers == 0 {
		t.Errorf("counts %+v, source %+v", rep.Counts, counts(t, src))
	}
	last := lastSeq(t, src)
	if got := lastSeq(t, dst); got != last {
		t.Fatalf("the copy's log ends at %d, the source's at %d", got, last)
	}
}

// The copy's change log goes on from the copied end, also after the
// target is opened again.
func TestCopyLogGoesOn(t *testing.T) {
	ctx := context.Background()
	src := fullPalace(t)
	dir := t.TempDir()
	dst, err := badgerdb.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, src, dst, store.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	last := lastSeq(t, src)
	must(t, dst, drawer("Written after the move."))
	var got []store.Change
	_ = dst.View(ctx, func(r store.Reader) error {
		return r.Changes(last, func(c store.Change) bool { got = append(got, c); return true })
	})
	if len(got) == 0 || got[0].Seq != last+1 {
		t.Fatalf("changes after the copied log: %+v (want from %d)", got, last+1)
	}
	dst.Close()
	dst, err = badgerdb.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	n := lastSeq(t, dst)
	must(t, dst, drawer("Written after a restart."))
	if lastSeq(t, dst) <= n {
		t.Fatal("the log did not go on after a restart")
	}
}

// A copy stopped part way (its context cancelled after three batches)
// continues where it stopped when run again, and ends with the same
// records.
func TestCopyResumes(t *testing.T) {
	src := fullPalace(t)
	dst := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := store.Copy(ctx, src, dst, store.CopyOptions{Batch: 2, AfterBatch: func(n int, _ string, _ int) {
		if n == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped copy: %v", err)
	}
	part := digests(t, dst)
	n := 0
	for _, f := range part {
		n += f.Count
	}
	if n != 6 {
		t.Fatalf("after three batches of two the target holds %d records", n)
	}
	all := 0
	rep, err := store.Copy(context.Background(), src, dst, store.CopyOptions{Batch: 2, AfterBatch: func(int, string, int) {}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Families {
		all += f.Count
	}
	if rest := all - 6; !rep.Resumed || rep.Batches != max(1, (rest+1)/2) {
		t.Errorf("resumed copy: %+v (%d records in all)", rep, all)
	}
	sameDigests(t, digests(t, src), digests(t, dst))
	// Run again once done: nothing is copied, it verifies.
	rep, err = store.Copy(context.Background(), src, dst, store.CopyOptions{})
	if err != nil || !rep.Resumed || rep.Batches != 0 {
		t.Fatalf("a finished copy run again: %+v %v", rep, err)
	}
}

func migrateFailed(t *testing.T, err error, words string) {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code != fault.MigrateFailed || !strings.Contains(err.Error()+" "+fe.Help, words) {
		t.Fatalf("want loci::migrate::failed saying %q, got %v", words, err)
	}
}

// A target holding records that is not a copy of this source in progress
// is refused and left as it was; so is a copy of another palace.
func TestCopyRefusesATargetThatIsNotEmpty(t *testing.T) {
	ctx := context.Background()
	src := fullPalace(t)
	dst := open(t)
	must(t, dst, drawer("Already here."))
	before := digests(t, dst)
	_, err := store.Copy(ctx, src, dst, store.CopyOptions{})
	migrateFailed(t, err, "not empty")
	sameDigests(t, before, digests(t, dst))
	if _, ok, _ := dst.GetMeta(ctx, store.MetaCopyProgress); ok {
		t.Fatal("a refused copy left a progress record")
	}

	other := fullPalace(t)
	dst2 := open(t)
	if _, err := store.Copy(ctx, other, dst2, store.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	before = digests(t, dst2)
	_, err = store.Copy(ctx, src, dst2, store.CopyOptions{})
	migrateFailed(t, err, "another palace")
	sameDigests(t, before, digests(t, dst2))
}

// A copy whose records differ from the source's fails verification,
// naming the family; so does a source written to after the copy began
// (another identity: refused).
func TestCopyVerificationFails(t *testing.T) {
	ctx := context.Background()
	src := fullPalace(t)
	dst := open(t)
	if _, err := store.Copy(ctx, src, dst, store.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	// A record changed in the copy behind the copy's back.
	err := dst.Update(ctx, func(tx store.Tx) error {
		ws, _ := tx.Wings()
		w := ws[0]
		w.Description = "changed"
		return tx.PutWing(&w)
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Copy(ctx, src, dst, store.CopyOptions{})
	migrateFailed(t, err, "wings")

	must(t, src, drawer("Filed after the copy began, at "+time.Now().String()))
	_, err = store.Copy(ctx, src, dst, store.CopyOptions{})
	migrateFailed(t, err, "before it changed")
}

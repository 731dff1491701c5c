package store_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/storetest"
)

// fullPalace is a palace with a record of every family.
func fullPalace(t *testing.T) *badgerdb.DB {
	t.Helper()
	db := open(t)
	storetest.FillEveryFamily(t, db, 10)
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

// capDB refuses, as too big, a transaction writing more than max drawers.
type capDB struct {
	*badgerdb.DB
	max     int
	refused *int
}

type capTx struct {
	store.Tx
	store.CopyWriter
	db *capDB
	n  *int
}

func (c capTx) PutDrawer(d, prev *store.Drawer) error {
	if *c.n++; *c.n > c.db.max {
		*c.db.refused++
		return store.ErrTxnTooBig
	}
	return c.Tx.PutDrawer(d, prev)
}

func (d *capDB) Update(ctx context.Context, fn func(store.Tx) error) error {
	n := 0
	return d.DB.Update(ctx, func(tx store.Tx) error {
		return fn(capTx{Tx: tx, CopyWriter: tx.(store.CopyWriter), db: d, n: &n})
	})
}

// A batch the target refuses as too big is written in halves, each with
// its own progress, and the copy ends the same.
func TestCopySplitsABatchTooBig(t *testing.T) {
	src := fullPalace(t)
	refused := 0
	dst := &capDB{DB: open(t), max: 3, refused: &refused}
	rep, err := store.Copy(context.Background(), src, dst, store.CopyOptions{Batch: 40})
	if err != nil {
		t.Fatal(err)
	}
	if refused == 0 || rep.Batches < 3 {
		t.Fatalf("no batch was split: %d refusals, %d batches", refused, rep.Batches)
	}
	sameDigests(t, digests(t, src), digests(t, dst.DB))
}

// metaSnapshot is every operational record of a store, key=value.
func metaSnapshot(t *testing.T, db store.DB) string {
	t.Helper()
	keys, err := db.(store.MetaLister).MetaKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, k := range keys {
		v, _, _ := db.GetMeta(context.Background(), k)
		b.WriteString(k + "=" + v + "\n")
	}
	return b.String()
}

// A target holding a complete copy of this palace that daemons have used
// since (one wrote to it: its change log moved on; one started on it: its
// migration time is after the copy's) is refused at once, before any
// verification, unchanged, with help that never says to empty it; an
// unused complete copy is verified again.
func TestCopyRefusesACompleteCopyUsedSince(t *testing.T) {
	ctx := context.Background()
	src := fullPalace(t)
	dst := open(t)
	if _, err := store.Copy(ctx, src, dst, store.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep, err := store.Copy(ctx, src, dst, store.CopyOptions{}); err != nil || !rep.Resumed || rep.Batches != 0 {
		t.Fatalf("an unused complete copy, again: %+v %v", rep, err)
	}
	if resume, done, err := store.CheckTarget(ctx, src, dst); err != nil || !resume || !done {
		t.Fatalf("CheckTarget on an unused complete copy: %v %v %v", resume, done, err)
	}

	// A daemon started on it (a migration recorded after the copy).
	later := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339)
	if err := dst.PutMeta(ctx, "migrated_at", later); err != nil {
		t.Fatal(err)
	}
	before, meta := digests(t, dst), metaSnapshot(t, dst)
	_, err := store.Copy(ctx, src, dst, store.CopyOptions{})
	migrateFailed(t, err, "already holds this palace, copied at")
	if !strings.Contains(err.Error(), "daemons have served it since (opened at "+later) {
		t.Fatalf("the refusal does not say when it was opened: %v", err)
	}
	if h := fault.As(err).Help; strings.Contains(h, "empty") || strings.Contains(h, "drop") {
		t.Fatalf("the help says to empty a store holding a palace: %s", h)
	}
	if _, _, err := store.CheckTarget(ctx, src, dst); !fault.Is(err, fault.MigrateFailed) {
		t.Fatalf("CheckTarget: %v", err)
	}
	sameDigests(t, before, digests(t, dst))
	if after := metaSnapshot(t, dst); after != meta {
		t.Fatalf("the refused target's operational records changed:\n%s\n%s", meta, after)
	}

	// A daemon wrote to it (its change log moved on).
	dst2 := open(t)
	if _, err := store.Copy(ctx, src, dst2, store.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, dst2, drawer("Filed by a daemon serving the copy."))
	before, meta = digests(t, dst2), metaSnapshot(t, dst2)
	_, err = store.Copy(ctx, src, dst2, store.CopyOptions{})
	migrateFailed(t, err, "already holds this palace")
	if !strings.Contains(err.Error(), "its change log is at") {
		t.Fatalf("the refusal does not say why: %v", err)
	}
	sameDigests(t, before, digests(t, dst2))
	if after := metaSnapshot(t, dst2); after != meta {
		t.Fatalf("the refused target's operational records changed:\n%s\n%s", meta, after)
	}
}

// A failed verification names every family that differs, one a line,
// whole (fault.Newf would clip the list at fault.MaxQuoted bytes), and
// what a client receives of it is not cut either.
func TestCopyVerificationMessageIsWhole(t *testing.T) {
	ctx := context.Background()
	src := fullPalace(t)
	dst := open(t)
	if _, err := store.Copy(ctx, src, dst, store.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	// Records changed behind the copy's back, in several families,
	// without logging (as a stray writer would).
	err := dst.Update(ctx, func(tx store.Tx) error {
		ws, _ := tx.Wings()
		for i := range ws {
			ws[i].Description = "changed"
			if err := tx.PutWing(&ws[i]); err != nil {
				return err
			}
			rs, _ := tx.Rooms(ws[i].ID)
			for j := range rs {
				rs[j].Description = "changed"
				if err := tx.PutRoom(&rs[j]); err != nil {
					return err
				}
			}
		}
		var es []*store.Entity
		_ = tx.Entities(func(e *store.Entity) bool { es = append(es, e); return true })
		for _, e := range es {
			e.Name += " changed"
			if err := tx.PutEntity(e, nil); err != nil {
				return err
			}
		}
		var js []*store.Job
		_ = tx.Jobs(func(j *store.Job) bool { js = append(js, j); return true })
		for _, j := range js {
			j.Error = "changed"
			if err := tx.PutJob(j, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Copy(ctx, src, dst, store.CopyOptions{})
	migrateFailed(t, err, "verification failed")
	body := fault.As(err).Body().Error
	if strings.Contains(body, "…(") || len(body) > fault.MaxMsg {
		t.Fatalf("the message is cut (%d bytes): %s", len(body), body)
	}
	for _, f := range []string{"\n  wings: ", "\n  rooms: ", "\n  entities: ", "\n  jobs: "} {
		if !strings.Contains(body, f) {
			t.Errorf("the message does not name %q whole:\n%s", f, body)
		}
	}
	if h := fault.As(err).Help; strings.Contains(h, "empty") || strings.Contains(h, "drop") {
		t.Fatalf("the help says to empty a target this run did not make: %s", h)
	}
}

package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/postgres"
	"github.com/loci-dev/loci/store/postgres/pgtest"
	"github.com/loci-dev/loci/store/storetest"
)

func openBadger(t *testing.T) *badgerdb.DB {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func digest(t *testing.T, db store.DB) []store.FamilyDigest {
	t.Helper()
	d, err := store.Digest(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func lastSeq(t *testing.T, db store.DB) uint64 {
	t.Helper()
	var seq uint64
	if err := db.View(context.Background(), func(r store.Reader) (err error) { seq, err = r.LastSeq(); return err }); err != nil {
		t.Fatal(err)
	}
	return seq
}

// An embedded palace copied into PostgreSQL and back into an embedded
// store: every family's count and digest equal across the three, the
// change log with its sequences (the next write logs after it), the kept
// counts.
func TestCopyBadgerToPostgresAndBack(t *testing.T) {
	ctx := context.Background()
	src := openBadger(t)
	storetest.FillEveryFamily(t, src, 30)
	want := digest(t, src)
	for _, f := range want {
		if f.Count == 0 {
			t.Fatalf("the source has no record of %s", f.Family)
		}
	}
	pg := open(t, pgtest.Database(t))
	defer pg.Close()
	rep, err := store.Copy(ctx, src, pg, store.CopyOptions{Batch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Batches < 5 {
		t.Errorf("batches: %d", rep.Batches)
	}
	got := digest(t, pg)
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("PostgreSQL: %+v, embedded %+v", got[i], want[i])
		}
	}
	if lastSeq(t, pg) != lastSeq(t, src) {
		t.Fatalf("log ends at %d, the source's at %d", lastSeq(t, pg), lastSeq(t, src))
	}
	back := openBadger(t)
	if _, err := store.Copy(ctx, pg, back, store.CopyOptions{Batch: 11}); err != nil {
		t.Fatal(err)
	}
	again := digest(t, back)
	for i := range want {
		if want[i] != again[i] {
			t.Errorf("back: %+v, first %+v", again[i], want[i])
		}
	}
	// The copy on PostgreSQL takes writes, logged after the copied log.
	last := lastSeq(t, pg)
	if err := pg.Update(ctx, func(tx store.Tx) error {
		_, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: "Filed after the move.",
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, store.Dedup{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if lastSeq(t, pg) <= last {
		t.Fatalf("a write after the move logged nothing after %d", last)
	}
}

// A copy into PostgreSQL stopped part way continues where it stopped;
// a database holding a palace is refused, unchanged.
func TestCopyToPostgresResumesAndRefuses(t *testing.T) {
	src := openBadger(t)
	storetest.FillEveryFamily(t, src, 20)
	pg := open(t, pgtest.Database(t))
	defer pg.Close()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := store.Copy(ctx, src, pg, store.CopyOptions{Batch: 5, AfterBatch: func(n int, _ string, _ int) {
		if n == 4 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped copy: %v", err)
	}
	n := 0
	for _, f := range digest(t, pg) {
		n += f.Count
	}
	if n != 20 {
		t.Fatalf("after four batches of five the database holds %d records", n)
	}
	rep, err := store.Copy(context.Background(), src, pg, store.CopyOptions{Batch: 5})
	if err != nil || !rep.Resumed {
		t.Fatalf("resumed: %+v %v", rep, err)
	}
	want, got := digest(t, src), digest(t, pg)
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("after the resume: %+v, source %+v", got[i], want[i])
		}
	}
	other := openBadger(t)
	storetest.FillEveryFamily(t, other, 0)
	_, err = store.Copy(context.Background(), other, pg, store.CopyOptions{})
	if fe := fault.As(err); fe.Code != fault.MigrateFailed {
		t.Fatalf("a copy of another palace into it: %v", err)
	}
	after := digest(t, pg)
	for i := range got {
		if got[i] != after[i] {
			t.Errorf("the refused target changed: %+v, was %+v", after[i], got[i])
		}
	}
}

// OtherDaemons counts the daemons connected to the database (each by its
// listener, whatever its pool holds), not the handle asking, when it is
// opened under another application name (as `loci migrate --to` is), and
// names their hosts; a daemon gone is no longer counted.
func TestOtherDaemons(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	mig, err := postgres.Open(ctx, store.OpenOptions{Location: url, ApplicationName: "loci migrate"})
	if err != nil {
		t.Fatal(err)
	}
	defer mig.Close()
	// The asking handle's own sessions, several of them, are not counted.
	var conns []*pgxpool.Conn
	for range 3 {
		c, err := mig.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	if n, hosts, err := mig.OtherDaemons(ctx); err != nil || n != 0 || len(hosts) != 0 {
		t.Fatalf("no daemon: %d %v %v", n, hosts, err)
	}
	daemon := func() func() {
		d := open(t, url)
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { d.Watch(wctx, func() {}); close(done) }()
		// Its pool in use too.
		if err := d.View(ctx, func(store.Reader) error { return nil }); err != nil {
			t.Fatal(err)
		}
		return func() { cancel(); <-done; d.Close() }
	}
	stop1, stop2 := daemon(), daemon()
	eventually(t, func() bool { n, _, _ := mig.OtherDaemons(ctx); return n == 2 })
	n, hosts, err := mig.OtherDaemons(ctx)
	if err != nil || n != 2 || len(hosts) != 1 || hosts[0] != "127.0.0.1" {
		t.Fatalf("two daemons: %d %v %v", n, hosts, err)
	}
	stop1()
	eventually(t, func() bool { n, _, _ := mig.OtherDaemons(ctx); return n == 1 })
	stop2()
	eventually(t, func() bool { n, _, _ := mig.OtherDaemons(ctx); return n == 0 })
	// A handle under the daemons' name, without a listener, is one.
	plain := open(t, url)
	defer plain.Close()
	if n, _, err := mig.OtherDaemons(ctx); err != nil || n != 1 {
		t.Fatalf("a plain handle: %d %v", n, err)
	}
}

// eventually waits up to 10 s for ok.
func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("timed out")
		}
	}
}

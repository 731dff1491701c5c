package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// smallPalace is an embedded palace holding a few notes, its daemon
// stopped.
func smallPalace(t *testing.T) (home, palace string) {
	t.Helper()
	home, palace = newPalace(t)
	d := start(t, home, palace)
	for _, n := range []string{"The queue moved to PostgreSQL.", "Copper kettles heat evenly.", "Caroline joined Acme."} {
		if out, errOut, code := d.cli("", "note", "add", "--wing", "projects", "--room", "notes", n); code != 0 {
			t.Fatalf("note add: %d %s %s", code, out, errOut)
		}
	}
	stopDaemon(t, d)
	return home, palace
}

// sqlOf runs a query on database db of s and gives its rows, one a line.
func sqlOf(t *testing.T, s *pgtest.Server, db, query string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.URLWithPassword(db))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rows.Next() {
		vs, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			b.WriteString(fmt.Sprint(v) + "\t")
		}
		b.WriteString("\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// stopAfterBatches runs `loci migrate --to` until it committed n batches
// (a test hook) and kills it there.
func stopAfterBatches(t *testing.T, home, palace, to string, n int, extraEnv ...string) {
	t.Helper()
	cmd := exec.Command(bin, "migrate", "--palace", palace, "--to", to)
	cmd.Env = env(home, append(extraEnv, fmt.Sprintf("LOCI_TEST_MIGRATE_PAUSE_AFTER=%d", n))...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	eventually(t, 30*time.Second, "the copy to pause", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the copy ended before its pause: %v\n%s", err, out.String())
		default:
		}
		return strings.Contains(out.String(), fmt.Sprintf("paused after %d batches", n))
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// A second `loci migrate --to` into a database that already holds the
// copy, after a daemon served it and wrote to it: refused at once, naming
// when it was copied, the help not saying to empty it, and nothing
// written to the database (its operational records, migrated_at among
// them, unchanged), while the daemon runs and after it stopped.
func TestMigrateToPostgresAgainAfterDaemonsServedIt(t *testing.T) {
	t.Parallel()
	srv, db := newSharedDB(t)
	url := srv.URL(db)
	pw := "LOCI_DATASTORE_PASSWORD=" + pgtest.Password
	home, palace := smallPalace(t)
	if _, errOut, code := migrateTo(t, home, palace, url, pw); code != 0 {
		t.Fatalf("the first copy: %d %s", code, errOut)
	}
	// A daemon serves the database and writes to it.
	dhome, dpalace := newPalace(t)
	d := start(t, dhome, dpalace, sharedEnv(srv, db)...)
	if out, errOut, code := d.cli("", "note", "add", "--wing", "projects", "--room", "notes", "Filed on the shared store."); code != 0 {
		t.Fatalf("note add on the shared store: %d %s %s", code, out, errOut)
	}
	const meta = "SELECT key, value FROM loci_meta ORDER BY key"
	check := func(what string) {
		t.Helper()
		before := sqlOf(t, srv, db, meta)
		began := time.Now()
		_, errOut, code := migrateTo(t, home, palace, url, pw)
		if code == 0 || !strings.Contains(errOut, "loci::migrate::failed") || !strings.Contains(errOut, "already holds this palace, copied at") ||
			!strings.Contains(errOut, "daemons have served it since") {
			t.Fatalf("%s: migrate --to again: %d %s", what, code, errOut)
		}
		if strings.Contains(errOut, "empty") || strings.Contains(errOut, "drop") || strings.Contains(errOut, "verification") {
			t.Fatalf("%s: the refusal advises emptying a database holding a palace, or verified first: %s", what, errOut)
		}
		if took := time.Since(began); took > 15*time.Second {
			t.Errorf("%s: the refusal took %s", what, took)
		}
		if after := sqlOf(t, srv, db, meta); after != before {
			t.Fatalf("%s: the refused run wrote to the database:\n%s\n%s", what, before, after)
		}
	}
	check("a daemon serving it")
	stopDaemon(t, d)
	check("its daemon stopped")
}

// `loci migrate --to DIR` from a shared store that daemons serve is
// refused before copying (loci::migrate::locked), naming how many and
// where from, the directory left empty; once they stopped it copies.
func TestMigrateToDirectoryRefusedWhileDaemonsServe(t *testing.T) {
	t.Parallel()
	srv, db := newSharedDB(t)
	shared := sharedEnv(srv, db)
	h1, p1 := newPalace(t)
	d1 := start(t, h1, p1, shared...)
	if out, errOut, code := d1.cli("", "note", "add", "--wing", "w", "--room", "r", "A note on the shared store."); code != 0 {
		t.Fatalf("note add: %d %s %s", code, out, errOut)
	}
	mhome, mlocal := newPalace(t)
	dst := filepath.Join(t.TempDir(), "moved")
	_, errOut, code := migrateTo(t, mhome, mlocal, dst, shared...)
	if code == 0 || !strings.Contains(errOut, "loci::migrate::locked") ||
		!strings.Contains(errOut, "1 loci daemon is connected to postgres://127.0.0.1:") || !strings.Contains(errOut, "hosts 127.0.0.1") {
		t.Fatalf("migrate --to a directory while a daemon serves the palace: %d %s", code, errOut)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 0 {
		t.Fatalf("the refused move wrote to the target: %v", entries)
	}
	h2, p2 := newPalace(t)
	d2 := start(t, h2, p2, shared...)
	// A daemon is counted by its LISTEN session, which its watcher opens
	// just after the daemon answers: until then the count says one (the
	// move is refused either way, as the first check above shows).
	eventually(t, 15*time.Second, "the move refused naming two daemons", func() bool {
		_, errOut, code = migrateTo(t, mhome, mlocal, dst, shared...)
		if code == 0 || !strings.Contains(errOut, "loci::migrate::locked") {
			t.Fatalf("two daemons: %d %s", code, errOut)
		}
		return strings.Contains(errOut, "2 loci daemons are connected to")
	})
	stopDaemon(t, d1)
	stopDaemon(t, d2)
	rep, errOut, code := migrateTo(t, mhome, mlocal, dst, shared...)
	if code != 0 || rep.Drawers == 0 {
		t.Fatalf("the move once the daemons stopped: %d %s %+v", code, errOut, rep)
	}
}

// A failed verification is told whole, with --json too: every family
// that differs on its own line, nothing cut.
func TestMigrateToVerificationFailureIsWhole(t *testing.T) {
	t.Parallel()
	srv, db := newSharedDB(t)
	url := srv.URL(db)
	pw := "LOCI_DATASTORE_PASSWORD=" + pgtest.Password
	home, palace := movablePalace(t)
	// A copy stopped part way (after the wings and rooms)...
	stopAfterBatches(t, home, palace, url, 3, pw, "LOCI_TEST_MIGRATE_BATCH=20")
	// ...whose copied records someone changed meanwhile.
	sqlOf(t, srv, db, `UPDATE wings SET rec = jsonb_set(rec, '{Description}', '"changed behind the copy"')`)
	sqlOf(t, srv, db, `UPDATE rooms SET rec = jsonb_set(rec, '{Description}', '"changed behind the copy"')`)
	_, errOut, code := migrateTo(t, home, palace, url, pw, "LOCI_TEST_MIGRATE_BATCH=20")
	if code == 0 || !strings.Contains(errOut, "loci::migrate::failed") || !strings.Contains(errOut, "verification failed") {
		t.Fatalf("the resumed copy: %d %s", code, errOut)
	}
	if strings.Contains(errOut, "…(") || strings.Contains(errOut, "bytes)") {
		t.Fatalf("the message is cut: %s", errOut)
	}
	for _, f := range []string{`\n  wings: `, `\n  rooms: `} {
		if !strings.Contains(errOut, f) {
			t.Errorf("the message does not name %s on its own line: %s", f, errOut)
		}
	}
}

// `loci migrate --to postgres://...` continuing a copy into a database
// that a daemon was started on meanwhile (serving the half-copied palace)
// is refused before anything is written to it, naming the daemon; a
// database that a daemon holds a palace in is refused as not empty, the
// help not saying to empty it.
func TestMigrateToPostgresRefusedWhileADaemonIsConnected(t *testing.T) {
	t.Parallel()
	srv, db := newSharedDB(t)
	url := srv.URL(db)
	pw := "LOCI_DATASTORE_PASSWORD=" + pgtest.Password
	home, palace := smallPalace(t)
	stopAfterBatches(t, home, palace, url, 1, pw, "LOCI_TEST_MIGRATE_BATCH=2")
	h1, p1 := newPalace(t)
	d := start(t, h1, p1, sharedEnv(srv, db)...)
	const meta = "SELECT key, value FROM loci_meta ORDER BY key"
	before := sqlOf(t, srv, db, meta)
	_, errOut, code := migrateTo(t, home, palace, url, pw)
	if code == 0 || !strings.Contains(errOut, "loci::migrate::locked") || !strings.Contains(errOut, "1 loci daemon is connected to postgres://127.0.0.1:") {
		t.Fatalf("migrate --to a database a daemon is connected to: %d %s", code, errOut)
	}
	if after := sqlOf(t, srv, db, meta); after != before {
		t.Fatalf("the refused run wrote to the database:\n%s\n%s", before, after)
	}
	stopDaemon(t, d)

	srv2, db2 := newSharedDB(t)
	h2, p2 := newPalace(t)
	stopDaemon(t, start(t, h2, p2, sharedEnv(srv2, db2)...))
	_, errOut, code = migrateTo(t, home, palace, srv2.URL(db2), pw)
	if code == 0 || !strings.Contains(errOut, "loci::migrate::failed") || !strings.Contains(errOut, "is not empty") || strings.Contains(errOut, "one emptied") || strings.Contains(errOut, "empty the") {
		t.Fatalf("migrate --to a database holding a palace: %d %s", code, errOut)
	}
}

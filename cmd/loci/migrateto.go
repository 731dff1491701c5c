package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/loci-dev/loci/cli"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres"
)

// pauseAfterEnv is a test hook: `loci migrate --to` stops after that many
// committed batches, says so on stderr and waits to be killed (the end to
// end tests kill it there with SIGKILL and run it again).
const pauseAfterEnv = "LOCI_TEST_MIGRATE_PAUSE_AFTER"

// batchEnv is a test hook: the records of one batch (default 500), so
// that a small palace takes many.
const batchEnv = "LOCI_TEST_MIGRATE_BATCH"

// migrateTo copies the configured palace (embedded, or shared when
// datastore.url is set) into an empty store at o.To, holding both stores'
// migration locks, and verifies the copy (loci migrate --to).
func migrateTo(ctx context.Context, cfg config.Config, log *slog.Logger, o cli.MigrateToOptions) (cli.MigrateToReport, error) {
	var rep cli.MigrateToReport
	src, err := openWith(ctx, cfg, store.OpenOptions{Log: log, ApplicationName: migrateApplication})
	if err != nil {
		return rep, err
	}
	defer src.Close()
	// The palace is brought to this build's schema and data steps first,
	// as `loci migrate` does: the copy reads current records. A palace
	// already current is left as it is (a migration records its time,
	// which a copy of it judges: servedSince).
	if st, err := migrator(src).State(ctx); err != nil {
		return rep, err
	} else if !st.SchemaSync || st.Pending > 0 {
		if _, err := migrator(src).Run(ctx); err != nil {
			return rep, err
		}
	}
	unlockSrc, err := holdMigrationLock(ctx, src)
	if err != nil {
		return rep, err
	}
	defer func() { _ = unlockSrc(context.WithoutCancel(ctx)) }()
	// A shared palace is moved only when no daemon serves it: what they
	// wrote during the copy would be lost (and fail the verification at
	// its end). A daemon starting now finds the migration lock held.
	if err := noDaemons(ctx, src); err != nil {
		return rep, err
	}

	location := o.To
	if store.Scheme(o.To) == store.EmbeddedScheme {
		if src.Backend() == store.EmbeddedScheme && filepath.Clean(o.To) == filepath.Clean(cfg.Palace.Path) {
			return rep, fault.New(fault.InputInvalid, "--to: that directory is this palace's own", "give an empty directory")
		}
		if location, err = targetDir(o.To); err != nil {
			return rep, err
		}
	}
	dst, err := store.Open(ctx, store.OpenOptions{Location: location, Password: o.Password, Log: log, ApplicationName: migrateApplication})
	if err != nil {
		return rep, err
	}
	defer dst.Close()
	rep.From, rep.To = src.Location(), dst.Location()
	if rep.From == rep.To {
		return rep, fault.New(fault.InputInvalid, "--to: that database is this palace's own", "give an empty database")
	}
	// The target's migration lock first: another `loci migrate` (or a
	// daemon starting) on it answers loci::migrate::locked, and a killed
	// holder's is released by PostgreSQL at once.
	unlockDst, err := holdMigrationLock(ctx, dst)
	if err != nil {
		return rep, err
	}
	defer func() { _ = unlockDst(context.WithoutCancel(ctx)) }()
	// A target is judged before anything is written to it (only its
	// migration lock is taken): one holding records that are not a copy
	// of this palace in progress, a complete copy used since, a database
	// holding tables of something else, or one daemons are connected to,
	// is refused unchanged.
	done := false
	if _, migrated, err := dst.GetMeta(ctx, "schema_hash"); err != nil {
		return rep, err
	} else if migrated || dst.Backend() == store.EmbeddedScheme {
		if _, done, err = store.CheckTarget(ctx, src, dst); err != nil {
			return rep, err
		}
	} else if err := noForeignTables(ctx, dst); err != nil {
		return rep, err
	}
	if err := noDaemons(ctx, dst); err != nil {
		return rep, err
	}
	// Then its schema (and data steps, which find nothing to do), under
	// the lock this process holds; a complete copy is only verified
	// again, untouched (a migration would record its time, which marks a
	// copy opened since).
	if !done {
		if err := migrateHeld(ctx, dst); err != nil {
			return rep, err
		}
	}

	opts := store.CopyOptions{}
	opts.Batch, _ = strconv.Atoi(os.Getenv(batchEnv))
	pause, _ := strconv.Atoi(os.Getenv(pauseAfterEnv))
	opts.AfterBatch = func(batches int, family string, copied int) {
		if o.Progress != nil {
			o.Progress(batches, family, copied)
		}
		if pause > 0 && batches == pause {
			fmt.Fprintf(os.Stderr, "loci migrate: paused after %d batches (%s)\n", batches, pauseAfterEnv)
			<-ctx.Done()
		}
	}
	crep, err := store.Copy(ctx, src, dst, opts)
	rep.Source, rep.Resumed, rep.Batches, rep.Drawers = crep.Source, crep.Resumed, crep.Batches, crep.Counts.Drawers
	for _, f := range crep.Families {
		rep.Families = append(rep.Families, cli.MigrateFamily{Family: f.Family, Count: f.Count, Digest: f.Digest})
	}
	if err != nil && fault.As(err).Code != fault.MigrateFailed && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		err = fault.Wrap(fault.MigrateFailed, err, "copying the palace failed: "+err.Error(),
			"fix the cause and run the same command again: the copy continues where it stopped")
	}
	return rep, err
}

// migrateApplication is how `loci migrate --to` names its sessions on a
// shared store: not a daemon's (noDaemons).
const migrateApplication = "loci migrate"

// noDaemons refuses (loci::migrate::locked) a move while loci daemons are
// connected to a shared store (the palace or the target).
func noDaemons(ctx context.Context, db store.DB) error {
	pg, ok := db.(*postgres.DB)
	if !ok {
		return nil
	}
	n, hosts, err := pg.OtherDaemons(ctx)
	if err != nil || n == 0 {
		return err
	}
	what := "1 loci daemon is"
	if n > 1 {
		what = fmt.Sprintf("%d loci daemons are", n)
	}
	return fault.New(fault.MigrateLocked,
		fmt.Sprintf("%s connected to %s (hosts %s): stop them, then move the palace", what, db.Location(), strings.Join(hosts, ", ")),
		"stop every daemon using that database (loci stop, or the service manager), then run the same command again; nothing was changed")
}

// holdMigrationLock takes a store's migration lock for the copy when its
// holder's crash releases it (PostgreSQL's session lock); another holder
// answers loci::migrate::locked.
func holdMigrationLock(ctx context.Context, db store.DB) (func(context.Context) error, error) {
	if r, ok := migrator(db).(*store.Runner); ok {
		return r.HoldMigrationLock(ctx)
	}
	return func(context.Context) error { return nil }, nil
}

// migrateHeld runs a store's migrations (schema, data steps) while this
// process holds its migration lock (holdMigrationLock).
func migrateHeld(ctx context.Context, db store.DB) error {
	m := migrator(db)
	if r, ok := m.(*store.Runner); ok {
		held := *r
		held.Lock = func(context.Context) (func(context.Context) error, error) {
			return func(context.Context) error { return nil }, nil
		}
		m = &held
	}
	_, err := m.Run(ctx)
	return err
}

// targetDir checks a directory target (a palace.path): absent, empty, or
// holding only the store of a copy in progress; it answers the store's
// directory in it.
func targetDir(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fault.Wrap(fault.IOFailed, err, "cannot create "+dir+": "+err.Error(), "give a directory loci can create")
		}
	case err != nil:
		return "", fault.Wrap(fault.IOFailed, err, "cannot read "+dir+": "+err.Error(), "give a directory loci can read")
	}
	for _, e := range entries {
		if e.Name() != "store" {
			return "", fault.Newf(fault.MigrateFailed, "copy into an empty directory (a new one); nothing was changed",
				"the target %s is not empty (it holds %s)", dir, e.Name())
		}
	}
	return storeDir(config.Config{Palace: config.Palace{Path: dir}}), nil
}

// noForeignTables refuses a database that holds tables but no palace
// (something else's database).
func noForeignTables(ctx context.Context, db store.DB) error {
	pg, ok := db.(*postgres.DB)
	if !ok {
		return nil
	}
	var n int
	err := pg.Pool().QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_name <> 'loci_meta'`).Scan(&n)
	if err != nil {
		return fault.Wrap(fault.StoreBackendFailed, err, "cannot read the target database's tables", "check the target URL and its user")
	}
	if n > 0 {
		return fault.Newf(fault.MigrateFailed, "copy into an empty database (createdb a new one); nothing was changed",
			"the target %s is not empty: it holds %d tables and no palace", db.Location(), n)
	}
	return nil
}

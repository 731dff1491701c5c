package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/cli"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// apiHeader is a backup header as the CLI prints it.
func apiHeader(h backup.Header) api.BackupHeader {
	return api.BackupHeader{Format: h.Format, Version: h.Version, PalaceID: h.PalaceID, Backend: h.Backend, SchemaHash: h.SchemaHash,
		DataVersion: h.DataVersion, Since: h.Since, StoreVersion: h.StoreVersion, CreatedAt: h.CreatedAt,
		Counts:  api.BackupCounts{Wings: h.Counts.Wings, Rooms: h.Counts.Rooms, Drawers: h.Counts.Drawers},
		Records: h.Records, BodyBytes: h.BodyBytes, BodyDigest: h.BodyDigest, HeaderDigest: h.HeaderDigest}
}

// verifyBackup is `loci backup verify`'s body.
func verifyBackup(ctx context.Context, path string) (api.BackupHeader, error) {
	h, err := backup.VerifyFile(ctx, path)
	return apiHeader(h), err
}

// readBackupHeader reads the header of `loci backup --since FILE`.
func readBackupHeader(path string) (api.BackupHeader, error) {
	h, err := backup.ReadHeader(path)
	if err != nil {
		// The refusal names the file (a wrapping fmt.Errorf's text
		// would be lost: the CLI prints the fault's message).
		var fe *fault.Error
		if !errors.As(err, &fe) {
			return api.BackupHeader{}, fmt.Errorf("--since %s: %w", path, err)
		}
		c := *fe
		if strings.Contains(c.Msg, path) {
			c.Msg = "--since: " + c.Msg
		} else {
			c.Msg = "--since " + path + ": " + c.Msg
		}
		return api.BackupHeader{}, &c
	}
	return apiHeader(h), nil
}

// latestData is the data version this build's steps reach.
func latestData() int {
	n := 0
	for _, s := range store.Steps() {
		n = max(n, s.N)
	}
	return n
}

// derivedDirs are the palace's derived indexes, rebuilt from the store by
// their followers at a start when missing.
func derivedDirs(cfg config.Config) []string {
	return []string{filepath.Join(cfg.Palace.Path, "index")}
}

// restore is `loci restore`'s body, with the daemon stopped: every file is
// verified and the chain checked before anything is touched; the backup
// is loaded into a new store beside the palace's (<palace>/store.restoring-*),
// which takes the store's place only once it is whole (a palace holding
// data is replaced only with --force, its old store kept aside until the
// new one is in place, then removed); the derived indexes are removed so
// that the next start rebuilds them.
func restore(ctx context.Context, cfg config.Config, log *slog.Logger, o cli.RestoreOptions) (rep api.RestoreReport, err error) {
	rep.Palace = cfg.Palace.Path
	if cfg.Datastore.Shared() {
		// A backup loads into an embedded store only: restoring here would
		// fill a directory the daemon does not read.
		return rep, fault.New(fault.BackupUnsupported, "loci restore loads an embedded palace, and this palace is a shared store (datastore.url)",
			"restore the database with pg_restore (from pg_dump); or restore into an embedded palace (datastore.url unset, --data-dir DIR) and copy it with `loci migrate --to postgres://...`")
	}
	for _, f := range o.Files {
		what := map[string]string{cli.KindExport: "a loci export", cli.KindEncrypted: "age-encrypted (an encrypted loci export)"}[cli.FileKind(f)]
		if what != "" {
			return rep, fault.Newf(fault.BackupInvalid, "import an export with `loci import "+f+"` (the daemon running); restore takes files written by `loci backup` or `loci backups run`",
				"%s is %s, not a backup", f, what)
		}
	}
	hs, err := backup.Check(ctx, o.Files, latestData())
	if err != nil {
		return rep, err
	}
	if reg, live, _ := config.ReadRegistry(cfg.Palace.Path); live {
		return rep, fault.Newf(fault.BackupDaemonRunning, "stop it first (loci daemon stop), then restore",
			"a loci daemon (pid %d, %s) holds the palace at %s", reg.PID, reg.Address, cfg.Palace.Path)
	}
	dir := storeDir(cfg)
	_, statErr := os.Stat(dir)
	exists := statErr == nil
	if exists {
		db, err := openStore(ctx, cfg, log)
		if err != nil {
			if strings.Contains(err.Error(), "directory lock") {
				return rep, fault.Wrap(fault.BackupDaemonRunning, err, "another loci process holds the palace's store at "+dir,
					"stop it first (loci daemon stop), then restore")
			}
			return rep, err
		}
		holds, previous, err := backup.Target(ctx, db)
		db.Close()
		if err != nil {
			return rep, err
		}
		if holds && !o.Force {
			return rep, fault.Newf(fault.BackupNotEmpty, "restore into an empty palace (--data-dir DIR), or give --force to replace this one",
				"the palace at %s holds data", cfg.Palace.Path)
		}
		rep.Replaced = holds
		if holds {
			rep.PreviousPalaceID = previous
		}
	}
	rep.PalaceID = hs[len(hs)-1].PalaceID
	if err := os.MkdirAll(cfg.Palace.Path, 0o700); err != nil {
		return rep, fault.Wrap(fault.IOFailed, err, "cannot create the palace folder "+cfg.Palace.Path+": "+err.Error(), "check the path and its permissions")
	}
	// What an interrupted restore left beside the store is never the
	// store: removed.
	if left, _ := filepath.Glob(dir + ".restoring-*"); len(left) > 0 {
		for _, l := range left {
			log.Info("removing what an interrupted restore left", "path", l)
			_ = os.RemoveAll(l)
		}
	}
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	fresh := dir + ".restoring-" + stamp
	defer func() {
		if err != nil {
			os.RemoveAll(fresh)
		}
	}()
	db, err := store.Open(ctx, store.OpenOptions{Location: fresh, Log: log, Bulk: true})
	if err != nil {
		return rep, err
	}
	err = backup.Apply(ctx, db, o.Files, hs, backup.RestoreOptions{Progress: o.Progress})
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fault.Wrap(fault.StoreBackendFailed, cerr, "cannot close the restored store: "+cerr.Error(), "check the disk")
	}
	if err != nil {
		return rep, err
	}
	// The swap: in one step where the system offers it (the old store
	// then sits at fresh's name), else the old store aside, the new one
	// in its place.
	old := dir + ".replaced-" + stamp
	switch {
	case !exists:
		if err = os.Rename(fresh, dir); err != nil {
			return rep, fault.Wrap(fault.IOFailed, err, "cannot move the restored store into place: "+err.Error(), "check the palace folder's permissions")
		}
	case exchange(fresh, dir) == nil:
		old = fresh
	default:
		if err = os.Rename(dir, old); err != nil {
			return rep, fault.Wrap(fault.IOFailed, err, "cannot move the palace's store aside: "+err.Error(), "check the palace folder's permissions")
		}
		if err = os.Rename(fresh, dir); err != nil {
			if rerr := os.Rename(old, dir); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return rep, fault.Wrap(fault.IOFailed, err, "cannot move the restored store into place: "+err.Error(), "the previous store is at "+old+" if it is not back in place")
		}
	}
	syncDir(cfg.Palace.Path)
	for _, d := range derivedDirs(cfg) {
		if _, serr := os.Stat(d); serr == nil {
			if rerr := os.RemoveAll(d); rerr != nil {
				return rep, fault.Wrap(fault.IOFailed, rerr, "cannot remove the derived index "+d+": "+rerr.Error(), "remove it by hand before starting the daemon")
			}
			rep.IndexesRemoved = append(rep.IndexesRemoved, d)
		}
	}
	if exists {
		if rerr := os.RemoveAll(old); rerr != nil {
			log.Warn("cannot remove the replaced store", "path", old, "err", rerr)
		}
	}
	for _, h := range hs {
		rep.Files = append(rep.Files, apiHeader(h))
	}
	return rep, nil
}

// syncDir syncs a folder's entries (a rename in it).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

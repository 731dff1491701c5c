package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

// RestoreOptions shape `loci restore`.
type RestoreOptions struct {
	// Files are the backup files: a full backup, then its incrementals in
	// order.
	Files []string
	// Force replaces a palace that holds data.
	Force bool
	// Progress, when set, is called with the file being loaded and its
	// body bytes loaded so far.
	Progress func(file int, bytes int64)
}

func (a *app) backupCmd() *cobra.Command {
	var out, since string
	var force bool
	c := &cobra.Command{
		Use:   "backup",
		Short: "Back up the whole palace to a file you choose while the daemon runs (loci backups: the daemon's own in backup.dir)",
		Long: `Back up the whole palace to a file while the daemon runs and keeps writing: a
consistent snapshot at one version of the store, fetched from GET /api/backup,
written to a temporary file in the target's folder, verified end to end,
fsynced and renamed into place, so an interrupted backup never leaves a file
that looks complete.

An existing file is refused unless --force; the --since file never is the
--out. A hidden temporary file (.NAME.tmp-N) that a killed backup left in the
folder for more than an hour is removed.

--since takes an earlier backup file (its palace must be this one) or a store
version, and makes an incremental backup of what changed after it. Restore
with "loci restore FULL INCREMENTAL...", the daemon stopped.

This is a backup you take, to a file you choose; "loci backups" lists the
daemon's own backups in backup.dir ("loci backups run" or backup.schedule),
which are the ones status, doctor and the dashboard count.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return a.backup(c.Context(), out, since, force) },
	}
	c.Flags().StringVarP(&out, "out", "o", "", "the file to write (default loci-<palace>-<time>-full.backup, or -incremental.backup with --since, in the current folder)")
	c.Flags().BoolVar(&force, "force", false, "replace an existing --out file (never the --since file)")
	c.Flags().StringVar(&since, "since", "", "an earlier backup file, or a store version: back up only what changed after it")
	verify := &cobra.Command{
		Use:   "verify FILE...",
		Short: "Check backup files end to end: header, digest, framing, record count (no daemon needed)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var hs []api.BackupHeader
			for _, p := range args {
				h, err := a.local.VerifyBackup(c.Context(), p)
				if err != nil {
					return err
				}
				hs = append(hs, h)
				if !a.jsonOut {
					a.printf("%s: ok, %s\n", p, describeBackup(h))
				}
			}
			if a.jsonOut {
				if len(hs) == 1 {
					return a.out(hs[0])
				}
				return a.out(hs)
			}
			return nil
		},
	}
	c.AddCommand(verify)
	return c
}

// describeBackup is a header in one line.
func describeBackup(h api.BackupHeader) string {
	kind := "full backup"
	if h.Since > 0 {
		kind = fmt.Sprintf("incremental backup since store version %d", h.Since)
	}
	return fmt.Sprintf("%s of palace %s at store version %d (%s), %d wings, %d rooms, %d drawers, %d records, %s",
		kind, h.PalaceID, h.StoreVersion, h.CreatedAt.Format(time.RFC3339), h.Counts.Wings, h.Counts.Rooms, h.Counts.Drawers, h.Records, byteSize(h.BodyBytes+api.BackupHeaderSize))
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// backup fetches GET /api/backup into out through a temporary file that
// is verified, synced and renamed.
func (a *app) backup(ctx context.Context, out, since string, force bool) error {
	q := url.Values{}
	if since != "" {
		if n, err := strconv.ParseUint(since, 10, 64); err == nil {
			q.Set("since", strconv.FormatUint(n, 10))
		} else {
			if out != "" && samePath(out, since) {
				return fault.Newf(fault.InputInvalid, "give --out another file: the incremental is written beside the backup it follows, never over it",
					"--out %s is the --since file: it would be replaced by the incremental that needs it", out)
			}
			if what := map[string]string{KindExport: "a loci export", KindEncrypted: "age-encrypted (an encrypted loci export)"}[FileKind(since)]; what != "" {
				return fault.Newf(fault.BackupInvalid, "give --since a file written by `loci backup` (or a store version); an export is imported with `loci import FILE`",
					"--since %s: the file is %s, not a backup", since, what)
			}
			base, err := a.local.ReadBackupHeader(since)
			if err != nil {
				return err
			}
			q.Set("since", strconv.FormatUint(base.StoreVersion, 10))
			q.Set("palace", base.PalaceID)
		}
	}
	if out != "" {
		if err := refuseExisting(out, force); err != nil {
			return err
		}
	}
	sweepTemps(a, out)
	cl, err := a.client()
	if err != nil {
		return err
	}
	path := "/api/backup"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	if !a.jsonOut && a.stderrIsTerminal() {
		// The daemon reads the palace once for the digest before the
		// first byte: the wait has a line of its own.
		fmt.Fprintln(a.stderrOrDiscard(), "preparing the backup: the daemon reads the palace once for its digest, then sends it")
	}
	body, err := cl.Stream(ctx, path)
	if err != nil {
		return err
	}
	defer body.Close()
	block := make([]byte, api.BackupHeaderSize)
	if _, err := io.ReadFull(body, block); err != nil {
		return fault.Wrap(fault.ClientRequestFailed, err, "the daemon's backup stream broke off in its header: "+err.Error(), "run the backup again")
	}
	var h api.BackupHeader
	if err := json.Unmarshal(bytes.TrimRight(block, " \n"), &h); err != nil {
		return fault.Wrap(fault.ClientRequestFailed, err, "the daemon's backup stream does not start with a backup header", "check that client and daemon versions match")
	}
	if out == "" {
		kind := "full"
		if h.Since > 0 {
			kind = "incremental"
		}
		out = fmt.Sprintf("loci-%s-%s-%s.backup", shortID(h.PalaceID), h.CreatedAt.UTC().Format("20060102T150405Z"), kind)
	}
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		return fault.Newf(fault.InputInvalid, "give --out a file path", "--out %s is a folder", out)
	}
	if err := refuseExisting(out, force); err != nil {
		return err
	}
	var bar *progressbar.ProgressBar
	if !a.jsonOut && a.stderrIsTerminal() {
		bar = progressbar.NewOptions64(h.BodyBytes+api.BackupHeaderSize, progressbar.OptionSetWriter(a.stderrOrDiscard()),
			progressbar.OptionSetDescription(fmt.Sprintf("backup (%d records)", h.Records)), progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
	err = writeThrough(out, force, func(f *os.File) error {
		var w io.Writer = f
		if bar != nil {
			w = io.MultiWriter(f, bar)
		}
		if _, err := w.Write(block); err != nil {
			return err
		}
		n, err := io.Copy(w, io.LimitReader(body, h.BodyBytes))
		if err != nil {
			return fault.Wrap(fault.ClientRequestFailed, err, "the backup stream broke off: "+err.Error(), "run the backup again")
		}
		if n != h.BodyBytes {
			return fault.Newf(fault.ClientRequestFailed, "run the backup again", "the backup stream broke off after %d of %d bytes", n, h.BodyBytes)
		}
		if err := f.Sync(); err != nil {
			return err
		}
		// The file is verified before it takes its name.
		_, err = a.local.VerifyBackup(ctx, f.Name())
		return err
	})
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return err
	}
	if a.jsonOut {
		return a.out(struct {
			File string `json:"file"`
			api.BackupHeader
		}{out, h})
	}
	a.printf("%s: %s\n", out, describeBackup(h))
	return nil
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// refuseExisting refuses an --out that exists, unless force.
func refuseExisting(out string, force bool) error {
	fi, err := os.Lstat(out)
	if err != nil || force {
		return nil
	}
	if fi.IsDir() {
		return fault.Newf(fault.InputInvalid, "give --out a file path", "--out %s is a folder", out)
	}
	return fault.Newf(fault.InputInvalid, "give --out a new file name, or --force to replace it",
		"--out %s exists; it was left as it was", out)
}

// samePath reports whether a and b name one file: the same cleaned
// absolute path, or (both existing) the same file under two names.
func samePath(a, b string) bool {
	pa, errA := filepath.Abs(a)
	pb, errB := filepath.Abs(b)
	if errA == nil && errB == nil && pa == pb {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// The kinds FileKind tells apart.
const (
	// KindBackup is a file written by loci backup (or the daemon's
	// backups): it starts with the backup header block.
	KindBackup = "backup"
	// KindExport is a file written by loci export: JSON Lines whose
	// first record is the loci-export header.
	KindExport = "export"
	// KindEncrypted is an age-encrypted file (an encrypted export).
	KindEncrypted = "encrypted"
)

// FileKind says what the first bytes of the file at path are: a loci
// backup, a loci export, an age-encrypted file, or "" (none of them, or
// unreadable). It reads no more than a backup's header block.
func FileKind(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, api.BackupHeaderSize)
	n, _ := io.ReadFull(f, head)
	return kindOf(head[:n])
}

// kindOf is FileKind of a file's first bytes.
func kindOf(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("{")) && bytes.Contains(head, []byte(`"format":"loci-backup"`)):
		return KindBackup
	case export.IsEncrypted(head):
		return KindEncrypted
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	var first struct {
		Type   string `json:"type"`
		Format string `json:"format"`
	}
	if json.Unmarshal(line, &first) == nil && first.Type == export.TypeHeader && first.Format == export.Format {
		return KindExport
	}
	return ""
}

// staleTemp is the name writeThrough gives its temporary file
// (os.CreateTemp's random part is decimal digits).
var staleTemp = regexp.MustCompile(`^\..+\.tmp-[0-9]+$`)

// staleAfter is how old a temporary file of a backup is before the next
// backup into its folder removes it: a running backup writes its file all
// along, so its time is recent.
const staleAfter = time.Hour

// sweepTemps removes, from the folder a backup is written to, the
// temporary files a killed `loci backup` left there: only a hidden file
// of writeThrough's name that starts with a backup header and has not
// been written for staleAfter. Any other file is left alone.
func sweepTemps(a *app, out string) {
	dir := "."
	if out != "" {
		dir = filepath.Dir(out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !staleTemp.MatchString(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		head := make([]byte, api.BackupHeaderSize)
		n, _ := io.ReadFull(f, head)
		f.Close()
		if kindOf(head[:n]) != KindBackup {
			continue
		}
		if os.Remove(p) == nil && !a.jsonOut {
			fmt.Fprintf(a.stderrOrDiscard(), "removed %s, which an interrupted backup left %s ago\n", safeText(p), time.Since(fi.ModTime()).Round(time.Minute))
		}
	}
}

// writeThrough creates path through a temporary file in its folder:
// fill writes (and may check) it, then it is synced, renamed to path and
// the folder synced; on any failure the temporary file is removed and
// nothing is at path.
func writeThrough(path string, force bool, fill func(*os.File) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot create a file in "+dir+": "+err.Error(), "check that the folder exists and is writable")
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot sync "+tmp+": "+err.Error(), "check the disk")
	}
	if err = f.Close(); err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot close "+tmp+": "+err.Error(), "check the disk")
	}
	// A file that appeared at the path while the backup ran is kept.
	if err = refuseExisting(path, force); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot rename the backup into place: "+err.Error(), "check that "+path+" is not a folder")
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func (a *app) restoreCmd() *cobra.Command {
	var f listenerFlags
	var force bool
	c := &cobra.Command{
		Use:   "restore FILE [FILE...]",
		Short: "Restore the palace from a full backup and its incrementals (daemon stopped)",
		Long: `Restore the palace from backup files, with the daemon stopped: a full backup,
then its incrementals in the order they were taken.

Every file is verified end to end first (header, digest, framing, record
count, data version, the chain: one palace, no gap); a refused file changes
nothing. A palace holding data is refused unless --force is given: the backup
is then restored into a new store beside the old one, which replaces it only
once the restore succeeded. The derived indexes (lexical, vectors) are
removed: the daemon rebuilds them from the store at its next start.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if c.Flags().Changed("data-dir") {
				f.palaceFlag = "data-dir"
			}
			cfg, log, _, err := a.localSetup(&f)
			if err != nil {
				return err
			}
			o := RestoreOptions{Files: args, Force: force}
			var bar *progressbar.ProgressBar
			if !a.jsonOut && a.stderrIsTerminal() {
				o.Progress = func(file int, n int64) {
					if bar == nil {
						bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(a.stderrOrDiscard()), progressbar.OptionShowBytes(true),
							progressbar.OptionSetDescription("restore"), progressbar.OptionClearOnFinish())
					}
					bar.Describe(fmt.Sprintf("restore %s", args[file]))
					_ = bar.Set64(n)
				}
			}
			rep, err := a.local.Restore(c.Context(), *cfg, log, o)
			if bar != nil {
				_ = bar.Finish()
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(rep)
			}
			last := rep.Files[len(rep.Files)-1]
			a.printf("restored %d file(s) into %s: palace %s at store version %d, %d wings, %d rooms, %d drawers\n",
				len(rep.Files), rep.Palace, last.PalaceID, last.StoreVersion, last.Counts.Wings, last.Counts.Rooms, last.Counts.Drawers)
			if rep.Replaced {
				a.printf("the palace's previous store was replaced\n")
				if rep.PreviousPalaceID != "" && rep.PreviousPalaceID != rep.PalaceID {
					a.printf("the palace's identity changes from %s to %s (the backup is of another palace)\n", rep.PreviousPalaceID, rep.PalaceID)
				}
			}
			a.printf("the search indexes are rebuilt when the daemon starts (loci daemon start)\n")
			return nil
		},
	}
	c.Flags().StringVar(&f.palace, "data-dir", "", "absolute palace directory to restore into (palace.path, LOCI_PALACE_PATH)")
	c.Flags().StringVar(&f.palace, "palace", "", "the same as --data-dir")
	c.Flags().BoolVar(&force, "force", false, "replace a palace that holds data")
	f.port = -1
	return c
}

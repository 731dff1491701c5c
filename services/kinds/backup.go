package kinds

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// KindBackup is the kind of the daemon's own backups: a full backup of
// the palace into backup.dir, then rotation.
const KindBackup = "backup"

// backupLane: one backup runs at a time.
const backupLane = "backup"

// BackupSettings are what the backup kind reads: the folder its files go
// to and how many of them it keeps. No submission names a path: a backup
// is only ever written under Dir, with a name the kind makes.
type BackupSettings struct {
	// Dir is backup.dir (config.Config.BackupDir).
	Dir string
	// Keep is backup.keep: after each backup the oldest of the kind's own
	// files beyond it are deleted.
	Keep int
	// Write writes one backup file (nil: backup.WriteFile, which writes a
	// temporary file, fsyncs it and renames it into place).
	Write func(ctx context.Context, db store.DB, path string, o backup.Options) (backup.Header, error)
	// Now is the clock the file names are read from (nil: time.Now).
	Now func() time.Time
}

// backupParams are a backup submission's fields: none. A backup's
// place is the daemon's configuration, never a request's.
type backupParams struct{}

// BackupInput is a backup job's stored input (nothing: the folder is the
// configuration's when the job runs).
type BackupInput struct{}

// BackupResult is a completed backup job's result.
type BackupResult struct {
	// File is the backup's file name in backup.dir.
	File         string `json:"file"`
	Bytes        int64  `json:"bytes"`
	Records      int64  `json:"records"`
	StoreVersion uint64 `json:"store_version"`
	// Removed are the older backups rotation deleted, and temporary
	// files a killed daemon left.
	Removed []string `json:"removed,omitempty"`
	// RotationError says why rotation could not delete an old backup
	// (the backup itself is complete).
	RotationError string `json:"rotation_error,omitempty"`
}

// backupProgressEvery spaces the progress saves of a running backup.
const backupProgressEvery = 500 * time.Millisecond

// Backup is the backup kind: it writes a full backup of the palace into
// s.Dir under a timestamped name of its own, then keeps the newest
// s.Keep of its files. A cancelled or paused job stops the write (the
// backup package leaves no partial file at the name); a paused one starts
// over when resumed.
func Backup(db store.DB, s BackupSettings) actors.Kind {
	if s.Write == nil {
		s.Write = backup.WriteFile
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return actors.Define(KindBackup, actors.Spec[backupParams]{
		Background: true,
		Decode: func(context.Context, actors.Submission, backupParams) (actors.Plan, error) {
			return actors.Plan{Input: BackupInput{}, Priority: store.PriorityNormal, Lane: backupLane}, nil
		},
		Run: func(ctx context.Context, r *actors.Run) (any, error) { return runBackup(ctx, r, db, s) },
	})
}

func runBackup(ctx context.Context, r *actors.Run, db store.DB, s BackupSettings) (any, error) {
	if s.Dir == "" {
		return nil, fault.New(fault.IOFailed, "no backup folder is configured", "set backup.dir")
	}
	id, err := store.PalaceID(ctx, db)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fault.Wrap(fault.IOFailed, err, "cannot create the backup folder "+s.Dir+": "+err.Error(),
			"make backup.dir a folder the daemon can write, or set another")
	}
	name := BackupFileName(id, s.Now())
	path := filepath.Join(s.Dir, name)

	// The write follows the job's control: a stop request (cancel, pause,
	// shutdown) cancels it.
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if r.Stopping() {
					cancel()
					return
				}
			}
		}
	}()
	var last time.Time
	hdr, werr := s.Write(wctx, db, path, backup.Options{Progress: func(bytes, records int64) {
		if time.Since(last) < backupProgressEvery || r.Stopping() {
			return
		}
		last = time.Now()
		// Current is the records written (the CLI prints it before the
		// message); the message says what it counts.
		_ = r.Save(ctx, nil, store.Progress{Current: records,
			Message: fmt.Sprintf("records written (%d bytes) to %s", bytes, name)})
	}})
	close(done)
	wg.Wait()
	cancel()
	if werr != nil {
		if r.Stopping() {
			return nil, actors.ErrStopped
		}
		var fe *fault.Error
		if !errors.As(werr, &fe) {
			werr = fault.Wrap(fault.IOFailed, werr, "writing the backup "+path+" failed: "+werr.Error(), "check backup.dir and the daemon's log")
		}
		return nil, werr
	}
	removed, rerr := RotateBackups(s.Dir, id, s.Keep)
	removed = append(removed, removeLeftovers(s.Dir, id)...)
	size := hdr.BodyBytes
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	res := BackupResult{File: name, Bytes: size, Records: hdr.Records, StoreVersion: hdr.StoreVersion, Removed: removed}
	if rerr != nil {
		res.RotationError = fault.As(rerr).Msg
	}
	return res, nil
}

// EnsureBackup queues a backup job unless one is queued, running or
// paused (then it returns that one and queued is false): the schedule's
// one request per slot.
func EnsureBackup(ctx context.Context, j *actors.Jobs) (job *store.Job, queued bool, err error) {
	var active *store.Job
	err = j.DB.View(ctx, func(r store.Reader) error {
		return r.ActiveJobs(func(x *store.Job) bool {
			if x.Kind == KindBackup {
				c := *x
				active = &c
				return false
			}
			return true
		})
	})
	if err != nil || active != nil {
		return active, false, err
	}
	job, err = j.Submit(ctx, actors.Submission{Type: KindBackup, Automatic: true})
	return job, err == nil, err
}

// backupStamp is the time in a backup's file name (UTC, milliseconds).
const backupStamp = "20060102T150405.000Z"

// backupName is the pattern of the kind's own file names: loci-<palace
// id>-<stamp>.backup. Rotation touches nothing else.
var backupName = regexp.MustCompile(`^loci-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-([0-9]{8}T[0-9]{6}\.[0-9]{3}Z)\.backup$`)

// BackupFileName is the name of the palace's backup made at t. The
// palace's id keeps two palaces sharing a folder apart; the time sorts
// a palace's backups.
func BackupFileName(palaceID string, t time.Time) string {
	return "loci-" + palaceID + "-" + t.UTC().Format(backupStamp) + ".backup"
}

// ParseBackupName reads a name BackupFileName made: the palace and the
// time (ok false for any other name).
func ParseBackupName(name string) (palaceID string, at time.Time, ok bool) {
	m := backupName.FindStringSubmatch(name)
	if m == nil {
		return "", time.Time{}, false
	}
	at, err := time.Parse(backupStamp, m[2])
	if err != nil {
		return "", time.Time{}, false
	}
	return m[1], at, true
}

// BackupFile is one of the palace's backups in the folder.
type BackupFile struct {
	Name string
	Path string
	Size int64
	// At is the time in its name.
	At time.Time
	// Header is its header as read; nil when it could not be (Err says
	// why).
	Header *backup.Header
	Err    string
}

// ListBackupNames lists palaceID's backups in dir by name, newest first
// (a missing folder holds none), without reading them.
func ListBackupNames(dir, palaceID string) ([]BackupFile, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fault.Wrap(fault.IOFailed, err, "cannot read the backup folder "+dir+": "+err.Error(), "check backup.dir")
	}
	var out []BackupFile
	if palaceID == "" {
		return nil, nil
	}
	for _, e := range entries {
		id, at, ok := ParseBackupName(e.Name())
		if !ok || id != palaceID || !e.Type().IsRegular() {
			continue
		}
		out = append(out, BackupFile{Name: e.Name(), Path: filepath.Join(dir, e.Name()), At: at})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].At.After(out[b].At) })
	return out, nil
}

// ListBackups lists palaceID's backups in dir, newest first, each with
// its size and header: the kind's own files of the palace (a file whose
// header cannot be read is listed with the reason) and any other file
// whose header names the palace, whatever its name (`loci backup --out`
// into the folder, a copy put there by hand). Hidden files (a write's
// temporary files) and files whose header is no backup of this palace
// are left out. Rotation never reads this list: it touches the kind's
// own names only (RotateBackups).
func ListBackups(dir, palaceID string) ([]BackupFile, error) {
	own, others, err := listBackups(dir, palaceID)
	if err != nil {
		return nil, err
	}
	files := others
	for _, f := range own {
		files = append(files, ReadBackup(f))
	}
	for i := range files {
		if h := files[i].Header; h != nil && !h.CreatedAt.IsZero() {
			files[i].At = h.CreatedAt
		}
	}
	sort.SliceStable(files, func(a, b int) bool { return files[a].At.After(files[b].At) })
	return files, nil
}

// LastBackup is palaceID's newest backup in dir whose header reads (nil:
// none), as ListBackups would list it first among those, reading only
// the headers it needs: the kind's own files newest first until one
// reads, and the files of other names.
func LastBackup(dir, palaceID string) (*BackupFile, error) {
	own, others, err := listBackups(dir, palaceID)
	if err != nil {
		return nil, err
	}
	var last *BackupFile
	for i := range others {
		if last == nil || others[i].At.After(last.At) {
			last = &others[i]
		}
	}
	for _, f := range own {
		if f = ReadBackup(f); f.Header != nil {
			if !f.Header.CreatedAt.IsZero() {
				f.At = f.Header.CreatedAt
			}
			if last == nil || f.At.After(last.At) {
				last = &f
			}
			break
		}
	}
	return last, nil
}

// listBackups is the kind's own files of palaceID by name, newest first
// and unread, and the files of other names whose header reads and names
// the palace (read, At their header's time).
func listBackups(dir, palaceID string) (own, others []BackupFile, err error) {
	own, err = ListBackupNames(dir, palaceID)
	if err != nil || palaceID == "" {
		return nil, nil, err
	}
	seen := make(map[string]bool, len(own))
	for _, f := range own {
		seen[f.Name] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		// Listed a moment ago: a folder removed since holds nothing more.
		entries = nil
	}
	for _, e := range entries {
		n := e.Name()
		if seen[n] || strings.HasPrefix(n, ".") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err != nil || info.Size() < backup.HeaderSize {
			continue
		}
		f := ReadBackup(BackupFile{Name: n, Path: filepath.Join(dir, n)})
		if f.Header == nil || f.Header.PalaceID != palaceID {
			continue
		}
		f.At = f.Header.CreatedAt
		others = append(others, f)
	}
	return own, others, nil
}

// ReadBackup fills in a listed file's size and header (or why its header
// does not read).
func ReadBackup(f BackupFile) BackupFile {
	if st, err := os.Stat(f.Path); err == nil {
		f.Size = st.Size()
	}
	h, err := backup.ReadHeader(f.Path)
	if err != nil {
		f.Err = err.Error()
		var fe *fault.Error
		if errors.As(err, &fe) {
			f.Err = fe.Msg
		}
		return f
	}
	f.Header = &h
	return f
}

// RotateBackups deletes palaceID's backups in dir beyond the newest keep
// and names them. Only names BackupFileName makes for this palace are
// candidates: another palace's backups and any other file stay.
func RotateBackups(dir, palaceID string, keep int) ([]string, error) {
	if keep < 1 {
		return nil, nil
	}
	files, err := ListBackupNames(dir, palaceID)
	if err != nil || len(files) <= keep {
		return nil, err
	}
	var removed []string
	for _, f := range files[keep:] {
		if err := os.Remove(f.Path); err != nil && !os.IsNotExist(err) {
			return removed, fault.Wrap(fault.IOFailed, err, "cannot delete the old backup "+f.Path+": "+err.Error(), "check backup.dir's permissions")
		}
		removed = append(removed, f.Name)
	}
	return removed, nil
}

// removeLeftovers deletes the temporary files of palaceID's backups that
// a killed daemon left in dir (the backup package writes
// ".<name>.tmp-<random>" beside <name>): one backup job runs at a time,
// so once one has completed no other of its temporary files is in use.
// Such a file never verifies (its header is written last) and only
// takes space. Other files are never touched.
func removeLeftovers(dir, palaceID string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		n := e.Name()
		i := strings.LastIndex(n, ".tmp-")
		if !strings.HasPrefix(n, ".") || i < 0 || !e.Type().IsRegular() {
			continue
		}
		if id, _, ok := ParseBackupName(n[1:i]); ok && id == palaceID && os.Remove(filepath.Join(dir, n)) == nil {
			removed = append(removed, n)
		}
	}
	return removed
}

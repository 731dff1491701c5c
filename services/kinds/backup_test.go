package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

const (
	palaceA = "0b6f4c1e-6a1d-4c5e-9a49-1f3c2d4e5f60"
	palaceB = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
)

// backupRuntime is a job runtime on a real store with every kind
// registered and the backup kind writing into dir with write.
func backupRuntime(t *testing.T, dir string, keep int, write func(context.Context, store.DB, string, backup.Options) (backup.Header, error)) *actors.Jobs {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sys := actors.Start(db, slog.New(slog.DiscardHandler), slog.LevelInfo)
	j := actors.NewJobs(db, sys, slog.New(slog.DiscardHandler),
		actors.JobConfig{MaxConcurrency: 2, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second})
	j.Register(All(j, Settings{Backup: BackupSettings{Dir: dir, Keep: keep, Write: write}})...)
	t.Cleanup(func() {
		j.Stop(context.Background())
		_ = sys.Stop(context.Background())
		db.Close()
	})
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return j
}

// fileWriter stands in for backup.WriteFile where the test is about the
// kind (the folder, names, rotation, control), not the format: it writes
// a temporary file in the folder and renames it, as WriteFile does.
func fileWriter(ctx context.Context, db store.DB, path string, o backup.Options) (backup.Header, error) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("backup body"), 0o600); err != nil {
		return backup.Header{}, err
	}
	if o.Progress != nil {
		o.Progress(11, 1)
	}
	return backup.Header{StoreVersion: 7, Records: 1, BodyBytes: 11}, os.Rename(tmp, path)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Names round-trip, and nothing else reads as the kind's own.
func TestBackupFileNames(t *testing.T) {
	at := time.Date(2026, 11, 26, 9, 30, 1, 250e6, time.FixedZone("CET", 3600))
	name := BackupFileName(palaceA, at)
	if name != "loci-"+palaceA+"-20261126T083001.250Z.backup" {
		t.Fatalf("name %q", name)
	}
	id, got, ok := ParseBackupName(name)
	if !ok || id != palaceA || !got.Equal(at) {
		t.Fatalf("parse %q: %s %s %v", name, id, got, ok)
	}
	for _, other := range []string{"notes.txt", "loci-" + palaceA + ".backup", name + ".tmp", "x" + name,
		"loci-" + palaceA + "-20261126T083001Z.backup", "loci-../../etc-20261126T083001.250Z.backup"} {
		t.Run(other, func(t *testing.T) {
			if _, _, ok := ParseBackupName(other); ok {
				t.Errorf("%q read as a backup's name", other)
			}
		})
	}
}

// Rotation keeps the palace's newest keep backups and never deletes a
// file it did not name: another palace's backups, other files, a folder
// named like a backup.
func TestRotateKeepsTheNewestOwnBackupsOnly(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var own []string
	for i := range 5 {
		n := BackupFileName(palaceA, base.Add(time.Duration(i)*time.Hour))
		own = append(own, n)
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	foreign := []string{BackupFileName(palaceB, base), BackupFileName(palaceB, base.Add(time.Hour)), "notes.txt", own[0] + ".tmp", "loci-backup.tar"}
	for _, n := range foreign {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	asDir := BackupFileName(palaceA, base.Add(-time.Hour))
	if err := os.Mkdir(filepath.Join(dir, asDir), 0o700); err != nil {
		t.Fatal(err)
	}
	removed, err := RotateBackups(dir, palaceA, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{own[2], own[1], own[0]}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v (oldest beyond the newest two)", removed, want)
	}
	want := append([]string{own[3], own[4], asDir}, foreign...)
	got := dirNames(t, dir)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	// Nothing beyond keep: nothing removed.
	if removed, err := RotateBackups(dir, palaceA, 2); err != nil || len(removed) != 0 {
		t.Fatalf("second rotation: %v %v", removed, err)
	}
}

// A backup job writes a file of its own name into the folder, records
// what it wrote, and rotates at keep; no submission can name a path.
func TestBackupJobWritesIntoTheFolderAndRotates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "backups")
	j := backupRuntime(t, dir, 2, fileWriter)
	id, err := store.PalaceID(context.Background(), j.DB)
	if err != nil {
		t.Fatal(err)
	}
	// What a daemon killed mid-backup leaves: its own temporary file
	// (removed after the next backup), another palace's (kept).
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ownLeft := "." + BackupFileName(id, time.Now().Add(-time.Hour)) + ".tmp-123456"
	otherLeft := "." + BackupFileName(palaceB, time.Now().Add(-time.Hour)) + ".tmp-654321"
	for _, n := range []string{ownLeft, otherLeft} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, params := range []string{`{"path":"/tmp/elsewhere"}`, `{"dir":"/tmp"}`, `{"file":"x.backup"}`} {
		_, err := j.Submit(context.Background(), actors.Submission{Type: KindBackup, Channel: store.ByHTTP, Params: json.RawMessage(params)})
		if e := fault.As(err); err == nil || e.Code != fault.InputInvalid || !strings.Contains(e.Msg, "is not a field of a backup job") {
			t.Fatalf("%s: %v, want input::invalid", params, err)
		}
	}
	var results []BackupResult
	for range 3 {
		done := backupDone(t, j, store.ByHTTP)
		var res BackupResult
		if err := json.Unmarshal(done.Result, &res); err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
		// Names are to the millisecond: the next one is another.
		time.Sleep(2 * time.Millisecond)
	}
	for _, r := range results {
		if pid, _, ok := ParseBackupName(r.File); !ok || pid != id || r.StoreVersion != 7 || r.Bytes != 11 {
			t.Fatalf("result %+v: not a backup of palace %s", r, id)
		}
	}
	if !slices.Equal(results[0].Removed, []string{ownLeft}) {
		t.Fatalf("first backup removed %v, want the leftover %s", results[0].Removed, ownLeft)
	}
	if !slices.Equal(results[2].Removed, []string{results[0].File}) {
		t.Fatalf("third backup removed %v, want the first, %s", results[2].Removed, results[0].File)
	}
	if got, want := dirNames(t, dir), []string{otherLeft, results[1].File, results[2].File}; !slices.Equal(got, want) {
		t.Fatalf("folder holds %v, want %v", got, want)
	}
}

// A cancelled backup stops its write: the job ends cancelled and the
// folder holds no backup and no temporary file.
func TestCancelledBackupLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	started := make(chan struct{})
	write := func(ctx context.Context, _ store.DB, path string, o backup.Options) (backup.Header, error) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte("part"), 0o600); err != nil {
			return backup.Header{}, err
		}
		close(started)
		<-ctx.Done() // a long write, cut short only by the job's control
		os.Remove(tmp)
		return backup.Header{}, ctx.Err()
	}
	j := backupRuntime(t, dir, 2, write)
	job, err := j.Submit(context.Background(), actors.Submission{Type: KindBackup, Channel: store.ByCLI})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the backup never started")
	}
	cancelLeavesNothing(t, j, job.ID, dir)
}

// The schedule's request queues one backup job, and none more while it
// is queued or running.
func TestEnsureBackupQueuesOneAtATime(t *testing.T) {
	release := make(chan struct{})
	running := make(chan struct{}, 4)
	write := func(ctx context.Context, db store.DB, path string, o backup.Options) (backup.Header, error) {
		running <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return backup.Header{}, ctx.Err()
		}
		return fileWriter(ctx, db, path, o)
	}
	j := backupRuntime(t, t.TempDir(), 3, write)
	first, queued, err := EnsureBackup(context.Background(), j)
	if err != nil || !queued {
		t.Fatalf("first request: %v %v", queued, err)
	}
	again, queued, err := EnsureBackup(context.Background(), j)
	if err != nil || queued || again.ID != first.ID {
		t.Fatalf("request while queued: queued %v, job %v, err %v; want the first job", queued, again, err)
	}
	<-running
	again, queued, err = EnsureBackup(context.Background(), j)
	if err != nil || queued || again.ID != first.ID {
		t.Fatalf("request while running: queued %v, job %v, err %v; want the first job", queued, again, err)
	}
	close(release)
	if done := waitDone(t, j, first.ID); done.Status != store.JobCompleted || done.RequestedBy != store.ByDaemon {
		t.Fatalf("first: %s by %s", done.Status, done.RequestedBy)
	}
	next, queued, err := EnsureBackup(context.Background(), j)
	if err != nil || !queued || next.ID == first.ID {
		t.Fatalf("request after it ended: queued %v, err %v", queued, err)
	}
	waitDone(t, j, next.ID)
}

// A failing write fails the job with its error, and rotation does not
// run: the backups there stay.
func TestFailedBackupKeepsTheOldOnes(t *testing.T) {
	dir := t.TempDir()
	j := backupRuntime(t, dir, 1, func(context.Context, store.DB, string, backup.Options) (backup.Header, error) {
		return backup.Header{}, errors.New("disk on fire")
	})
	id, err := store.PalaceID(context.Background(), j.DB)
	if err != nil {
		t.Fatal(err)
	}
	old := []string{BackupFileName(id, time.Now().Add(-2*time.Hour)), BackupFileName(id, time.Now().Add(-time.Hour))}
	for _, n := range old {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	job, err := j.Submit(context.Background(), actors.Submission{Type: KindBackup, Channel: store.ByCLI})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitDone(t, j, job.ID); done.Status != store.JobFailed || !strings.Contains(done.Error, "disk on fire") {
		t.Fatalf("job %s %q", done.Status, done.Error)
	}
	if got := dirNames(t, dir); !slices.Equal(got, old) {
		t.Fatalf("folder %v, want %v", got, old)
	}
}

// The job's file is a backup the backup package accepts end to end, of
// this palace at the store version the job reports.
func TestBackupJobWritesAVerifiedBackup(t *testing.T) {
	dir := t.TempDir()
	j := backupRuntime(t, dir, 2, nil)
	pal := &Palace{DB: j.DB, Sys: j.Sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	for _, c := range []string{"the first drawer of the backed-up palace", "a second drawer, quite different from the first"} {
		if _, err := pal.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r", Content: c, Source: store.Source{Kind: "manual"}}); err != nil {
			t.Fatal(err)
		}
	}
	done := backupDone(t, j, store.ByCLI)
	var res BackupResult
	if err := json.Unmarshal(done.Result, &res); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, res.File)
	h, err := backup.ReadHeader(path)
	if err != nil {
		t.Fatalf("ReadHeader of the job's file: %v", err)
	}
	id, _ := store.PalaceID(context.Background(), j.DB)
	if h.PalaceID != id || h.StoreVersion != res.StoreVersion || h.Since != 0 || h.Counts.Drawers != 2 || res.Records != h.Records {
		t.Fatalf("header %+v, result %+v", h, res)
	}
	if _, err := backup.VerifyFile(context.Background(), path); err != nil {
		t.Fatalf("the job's backup does not verify: %v", err)
	}
	if st, _ := os.Stat(path); st == nil || res.Bytes != st.Size() {
		t.Fatalf("result bytes %d, file %v", res.Bytes, st)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{res.File}) {
		t.Fatalf("folder %v", got)
	}
}

// A backup cancelled while the real writer is at work leaves nothing in
// the folder: no backup at its name, no temporary file.
func TestCancelledRealBackupLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	started := make(chan struct{})
	var once bool
	write := func(ctx context.Context, db store.DB, path string, o backup.Options) (backup.Header, error) {
		return backup.WriteFile(ctx, db, path, backup.Options{Progress: func(int64, int64) {
			if !once {
				once = true
				close(started)
			}
			<-ctx.Done() // the write is held mid-body until the job's control cuts it
		}})
	}
	j := backupRuntime(t, dir, 2, write)
	job, err := j.Submit(context.Background(), actors.Submission{Type: KindBackup, Channel: store.ByCLI})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the backup never started its body")
	}
	if len(dirNames(t, dir)) == 0 {
		t.Fatal("no temporary file while the body is written")
	}
	cancelLeavesNothing(t, j, job.ID, dir)
}

// The job's progress counts one thing and says which: the records
// written, with the bytes in the message (it once read "839483 3851
// records, 839483 bytes written" in the CLI, which prints the count
// before the message).
func TestBackupJobProgressSaysWhatItCounts(t *testing.T) {
	dir := t.TempDir()
	j := backupRuntime(t, dir, 2, fileWriter)
	done := backupDone(t, j, store.ByCLI)
	p := done.Progress
	if p.Current != 1 || !strings.HasPrefix(p.Message, "records written (11 bytes) to loci-") {
		t.Fatalf("progress %d %q, want 1 \"records written (11 bytes) to loci-…\"", p.Current, p.Message)
	}
}

// Any file in the folder whose header names the palace is one of its
// backups, whatever its name (`loci backup --out` into backup.dir), and
// is listed by its header's time; another palace's file, a file that is
// no backup and a hidden temporary file are not. Rotation still touches
// the kind's own names only.
func TestListBackupsReadsHeadersOfAnyName(t *testing.T) {
	dir := t.TempDir()
	j := backupRuntime(t, dir, 1, nil)
	pal := &Palace{DB: j.DB, Sys: j.Sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	if _, err := pal.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r", Content: "a drawer worth a backup", Source: store.Source{Kind: "manual"}}); err != nil {
		t.Fatal(err)
	}
	id, err := store.PalaceID(context.Background(), j.DB)
	if err != nil {
		t.Fatal(err)
	}
	// What `loci backup --out` names a file, and a name of the operator's.
	cliFull := filepath.Join(dir, "loci-"+id[:8]+"-20261126T095810Z-full.backup")
	if _, err := backup.WriteFile(context.Background(), j.DB, cliFull, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	h, _ := backup.ReadHeader(cliFull)
	time.Sleep(5 * time.Millisecond)
	mine := filepath.Join(dir, "before-upgrade.bak")
	if _, err := backup.WriteFile(context.Background(), j.DB, mine, backup.Options{Since: h.StoreVersion}); err != nil {
		t.Fatal(err)
	}
	// Not this palace's: a full-size file that is no backup, a hidden one.
	junk := make([]byte, 2*backup.HeaderSize)
	for _, n := range []string{"notes.bin", ".hidden.backup.tmp-1"} {
		if err := os.WriteFile(filepath.Join(dir, n), junk, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := ListBackups(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		if f.Header == nil || f.Err != "" {
			t.Fatalf("%s listed without its header: %q", f.Name, f.Err)
		}
	}
	if want := []string{"before-upgrade.bak", filepath.Base(cliFull)}; !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v (newest first)", names, want)
	}
	if other, err := ListBackups(dir, palaceB); err != nil || len(other) != 0 {
		t.Fatalf("another palace lists %v %v", other, err)
	}
	// A job's backup, then rotation at keep 1: the other names stay.
	backupDone(t, j, store.ByCLI)
	for _, n := range []string{filepath.Base(cliFull), "before-upgrade.bak", "notes.bin"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("rotation touched %s: %v", n, err)
		}
	}
	if files, _ := ListBackups(dir, id); len(files) != 3 {
		t.Fatalf("%d listed after the job's backup, want 3", len(files))
	}
}

// LastBackup is what ListBackups lists first among the files whose
// header reads: a newer own-named file that is no backup is passed
// over, a file of another name counts by its header's time.
func TestLastBackupIsTheListsNewestReadable(t *testing.T) {
	dir := t.TempDir()
	j := backupRuntime(t, dir, 5, nil)
	id, err := store.PalaceID(context.Background(), j.DB)
	if err != nil {
		t.Fatal(err)
	}
	if last, err := LastBackup(dir, id); err != nil || last != nil {
		t.Fatalf("an empty folder: %+v %v", last, err)
	}
	own := filepath.Join(dir, BackupFileName(id, time.Now().Add(-time.Hour)))
	if _, err := backup.WriteFile(context.Background(), j.DB, own, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	broken := BackupFileName(id, time.Now().Add(time.Hour))
	if err := os.WriteFile(filepath.Join(dir, broken), []byte("cut short"), 0o600); err != nil {
		t.Fatal(err)
	}
	last, err := LastBackup(dir, id)
	if err != nil || last == nil || last.Name != filepath.Base(own) {
		t.Fatalf("last %+v %v, want %s", last, err, filepath.Base(own))
	}
	time.Sleep(5 * time.Millisecond)
	named := filepath.Join(dir, "mine.backup")
	if _, err := backup.WriteFile(context.Background(), j.DB, named, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	last, err = LastBackup(dir, id)
	list, _ := ListBackups(dir, id)
	if err != nil || last == nil || last.Name != "mine.backup" || len(list) != 3 || list[0].Name != broken || list[1].Name != "mine.backup" {
		t.Fatalf("last %+v %v; list %+v", last, err, list)
	}
}

// cancelLeavesNothing cancels the running backup job id, waits for it to
// be cancelled and checks that dir holds nothing it wrote.
func cancelLeavesNothing(t *testing.T, j *actors.Jobs, id, dir string) {
	t.Helper()
	if _, err := j.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	var got *store.Job
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got, err = j.Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if got.Status == store.JobCancelled {
			break
		}
	}
	if got.Status != store.JobCancelled {
		t.Fatalf("job %s, want cancelled", got.Status)
	}
	if left := dirNames(t, dir); len(left) != 0 {
		t.Fatalf("a cancelled backup left %v", left)
	}
}

// backupDone submits a backup job on channel ch and waits for it to
// complete (a failure fails the test).
func backupDone(t *testing.T, j *actors.Jobs, ch string) *store.Job {
	t.Helper()
	job, err := j.Submit(context.Background(), actors.Submission{Type: KindBackup, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	done := waitDone(t, j, job.ID)
	if done.Status != store.JobCompleted {
		t.Fatalf("backup job %s: %s", done.Status, done.Error)
	}
	return done
}

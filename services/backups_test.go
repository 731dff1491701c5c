package services

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/services/kinds"
	"github.com/loci-dev/loci/store"
)

// The warning: none without drawers; with drawers, when there is no
// backup, when the last successful one is older than warn_after (a newer
// file whose header does not read is no backup), and not when it is
// fresh.
func TestBackupWarning(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	fresh := api.BackupFile{Name: "fresh", CreatedAt: now.Add(-time.Hour)}
	old := api.BackupFile{Name: "old", CreatedAt: now.Add(-9 * 24 * time.Hour)}
	broken := api.BackupFile{Name: "broken", CreatedAt: now.Add(-time.Minute), Error: "truncated"}
	tests := []struct {
		name    string
		files   []api.BackupFile
		drawers int
		last    string
		warn    string
	}{
		{"empty palace, no backup", nil, 0, "", ""},
		{"empty palace, old backup", []api.BackupFile{old}, 0, "old", ""},
		{"none", nil, 3, "", "no backup yet: the palace holds 3 current drawers"},
		{"old", []api.BackupFile{old}, 3, "old", "the last backup (old, taken 2026-11-17 12:00:00 UTC) is 9d old, older than backup.warn_after (7d)"},
		{"fresh", []api.BackupFile{fresh, old}, 3, "fresh", ""},
		{"only a broken one", []api.BackupFile{broken}, 3, "", "no backup yet"},
		{"broken newer than old", []api.BackupFile{broken, old}, 3, "old", "is 9d old"},
		{"broken newer than fresh", []api.BackupFile{broken, fresh}, 3, "fresh", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last, age, warn := BackupWarning(BackupFacts{Files: tt.files, Held: Held{Current: tt.drawers, Stored: tt.drawers}, Now: now, WarnAfter: week, Dir: "/b"})
			if name := map[bool]string{true: ""}[last == nil]; last != nil {
				name = last.Name
				if name != tt.last {
					t.Fatalf("last %q, want %q", name, tt.last)
				}
				if want := int64(now.Sub(last.CreatedAt) / time.Second); age != want {
					t.Fatalf("age %d, want %d", age, want)
				}
			} else if tt.last != "" {
				t.Fatalf("no last, want %q", tt.last)
			}
			if tt.warn == "" && warn != "" || tt.warn != "" && !strings.Contains(warn, tt.warn) {
				t.Fatalf("warning %q, want %q", warn, tt.warn)
			}
		})
	}
}

// backupsOn is the backups service over a runtime with every kind
// registered, the backup kind writing into dir with a stand-in writer
// that counts its files.
func backupsOn(t *testing.T, dir string, set config.Backup) (*Backups, *actors.Jobs) {
	t.Helper()
	j := newJobs(t, testCfg)
	write := func(ctx context.Context, db store.DB, path string, o backup.Options) (backup.Header, error) {
		return backup.Header{}, os.WriteFile(path, []byte("x"), 0o600)
	}
	j.Register(kinds.All(j, kinds.Settings{Backup: kinds.BackupSettings{Dir: dir, Keep: set.Keep, Write: write}})...)
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Stop(context.Background()) })
	return &Backups{DB: j.DB, Jobs: j, Settings: set, Dir: dir}, j
}

func backupJobs(t *testing.T, j *actors.Jobs) []store.Job {
	t.Helper()
	list, err := j.List(context.Background(), "", kinds.KindBackup, 0)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// The schedule queues a backup job at its slots, remembers the next one
// in the store, and a start after a missed slot fires once at once; a
// changed timetable starts afresh, and no schedule forgets the slot.
func TestBackupScheduleQueuesAndSurvivesRestarts(t *testing.T) {
	dir := t.TempDir()
	set := config.Backup{Schedule: config.BackupSchedule{Every: "1s"}, Keep: 100, WarnAfter: "7d"}
	b, j := backupsOn(t, dir, set)
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Slots are a second apart: the rule is about time.
	deadline := time.Now().Add(30 * time.Second)
	for len(backupJobs(t, j)) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	b.Stop(context.Background())
	jobs := backupJobs(t, j)
	if len(jobs) < 2 {
		t.Fatalf("%d backup jobs after the schedule ran, want 2 or more", len(jobs))
	}
	for _, job := range jobs {
		if job.RequestedBy != store.ByDaemon {
			t.Fatalf("a scheduled backup requested by %s", job.RequestedBy)
		}
	}
	raw, ok, err := j.DB.GetMeta(context.Background(), metaBackupSchedule)
	if err != nil || !ok {
		t.Fatalf("no remembered slot: %v", err)
	}
	var m scheduleMeta
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.Every != "1s" || m.Due.IsZero() {
		t.Fatalf("remembered %s (%v)", raw, err)
	}

	// A daily schedule whose remembered slot passed while the daemon was
	// down fires once at the start.
	waitIdle(t, j)
	daily := config.Backup{Schedule: config.BackupSchedule{Every: "1d"}, Keep: 100, WarnAfter: "7d"}
	past, _ := json.Marshal(scheduleMeta{Every: "1d", Due: time.Now().Add(-3 * 24 * time.Hour)})
	if err := j.DB.PutMeta(context.Background(), metaBackupSchedule, string(past)); err != nil {
		t.Fatal(err)
	}
	before := len(backupJobs(t, j))
	b2 := &Backups{DB: j.DB, Jobs: j, Settings: daily, Dir: dir}
	if err := b2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for len(backupJobs(t, j)) == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// A missed slot fires once: a second would need a day.
	time.Sleep(300 * time.Millisecond)
	b2.Stop(context.Background())
	if n := len(backupJobs(t, j)) - before; n != 1 {
		t.Fatalf("%d backups queued for a missed daily slot, want 1", n)
	}
	raw, _, _ = j.DB.GetMeta(context.Background(), metaBackupSchedule)
	_ = json.Unmarshal([]byte(raw), &m)
	if d := time.Until(m.Due); d < 0 || d > 24*time.Hour {
		t.Fatalf("next slot %s after firing the missed one; want within the day", m.Due)
	}

	// A changed timetable starts afresh: the remembered slot of another
	// one does not fire.
	if err := j.DB.PutMeta(context.Background(), metaBackupSchedule, string(past)); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, j)
	before = len(backupJobs(t, j))
	b3 := &Backups{DB: j.DB, Jobs: j, Settings: config.Backup{Schedule: config.BackupSchedule{Every: "2d"}, Keep: 100, WarnAfter: "7d"}, Dir: dir}
	if err := b3.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // an absence: a slot due now would have queued by then
	b3.Stop(context.Background())
	if n := len(backupJobs(t, j)) - before; n != 0 {
		t.Fatalf("a changed timetable fired %d backups at start", n)
	}

	// No schedule: the slot is forgotten.
	b4 := &Backups{DB: j.DB, Jobs: j, Settings: config.Backup{Keep: 1, WarnAfter: "7d"}, Dir: dir}
	if err := b4.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b4.Stop(context.Background())
	if _, ok, _ := j.DB.GetMeta(context.Background(), metaBackupSchedule); ok {
		t.Fatal("the slot of a removed schedule is still remembered")
	}
}

// waitIdle waits until no backup job is queued or running.
func waitIdle(t *testing.T, j *actors.Jobs) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		busy := false
		for _, job := range backupJobs(t, j) {
			busy = busy || job.Status == store.JobQueued || job.Status == store.JobRunning
		}
		if !busy {
			return
		}
	}
	t.Fatal("backup jobs still queued or running after a minute")
}

// List and Status read the folder: the palace's own files, newest first,
// a file whose header does not read listed with its reason, and the
// warning of a palace with drawers.
func TestBackupsListAndStatus(t *testing.T) {
	dir := t.TempDir()
	b, j := backupsOn(t, dir, config.Backup{Keep: 3, WarnAfter: "7d"})
	st, err := b.Status(context.Background())
	if err != nil || st.Last != nil || st.Warning != "" || st.Dir != dir || st.WarnAfterSecs != 7*24*3600 {
		t.Fatalf("empty palace: %+v %v", st, err)
	}
	pal := &Palace{DB: j.DB, Sys: j.Sys}
	if _, _, err := pal.CreateWing(context.Background(), "w", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pal.CreateRoom(context.Background(), "w", "r", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := pal.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r", Content: "the backup warning appears once there is data", Source: store.Source{Kind: "manual"}}); err != nil {
		t.Fatal(err)
	}
	st, err = b.Status(context.Background())
	if err != nil || st.Last != nil || !strings.Contains(st.Warning, "no backup yet") {
		t.Fatalf("palace with a drawer, no backup: %+v %v", st, err)
	}
	id, _ := store.PalaceID(context.Background(), j.DB)
	older := kinds.BackupFileName(id, time.Now().Add(-time.Hour))
	newer := kinds.BackupFileName(id, time.Now())
	other := kinds.BackupFileName("7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6", time.Now())
	for _, n := range []string{older, newer, other, "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("not a backup"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	list, err := b.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Backups) != 2 || list.Backups[0].Name != newer || list.Backups[1].Name != older {
		t.Fatalf("listed %+v, want the palace's two, newest first", list.Backups)
	}
	for _, f := range list.Backups {
		if f.Error == "" || f.Size != int64(len("not a backup")) {
			t.Fatalf("a file that is no backup listed as %+v", f)
		}
	}
	if list.Last != nil || !strings.Contains(list.Warning, "no backup yet") {
		t.Fatalf("unreadable files counted as a backup: %+v", list.BackupStatus)
	}
}

// A backup folder that cannot be read is reported in the status as a
// warning naming it, not left out.
func TestStatusWarnsOfAnUnreadableBackupFolder(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, j := backupsOn(t, notADir, config.Backup{Keep: 3, WarnAfter: "7d"})
	if _, err := store.PalaceID(context.Background(), j.DB); err != nil {
		t.Fatal(err)
	}
	rp := &Reporter{Palace: &Palace{DB: j.DB, Sys: j.Sys}, Backups: b}
	st := rp.Status(context.Background(), "full")
	if st.Backup == nil || st.Backup.Dir != notADir || !strings.Contains(st.Backup.Warning, "cannot read the backup folder "+notADir) {
		t.Fatalf("status backup %+v", st.Backup)
	}
}

// drawerIn files one drawer into a palace on j's store.
func drawerIn(t *testing.T, j *actors.Jobs, content string) {
	t.Helper()
	pal := &Palace{DB: j.DB, Sys: j.Sys}
	if _, err := pal.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r", Content: content, Source: store.Source{Kind: "manual"}}); err != nil {
		t.Fatal(err)
	}
}

// The warning's advice fits the configuration: without a schedule it
// suggests one (with the table's form); with one it does not, and says
// when the schedule takes the first. Both offer `loci backup --out
// FILE`. The palace's drawers are counted as the status counts them,
// with the right plural; a stale backup's age is said precisely
// ("older than", to the second).
func TestBackupWarningFitsTheConfiguration(t *testing.T) {
	dir := t.TempDir()
	b, j := backupsOn(t, dir, config.Backup{Keep: 3, WarnAfter: "1m"})
	drawerIn(t, j, "one drawer is enough for a warning")
	if _, err := store.PalaceID(context.Background(), j.DB); err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the palace holds 1 current drawer,", "`loci backup --out FILE`", "`loci backups run`", `or set backup.schedule (e.g. backup.schedule = { every = "1d" })`} {
		if !strings.Contains(st.Warning, want) {
			t.Fatalf("no schedule: warning %q lacks %q", st.Warning, want)
		}
	}

	scheduled := &Backups{DB: j.DB, Jobs: j, Dir: dir, Settings: config.Backup{Schedule: config.BackupSchedule{Every: "1h"}, Keep: 3, WarnAfter: "1m"}}
	if err := scheduled.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer scheduled.Stop(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for st, _ = scheduled.Status(context.Background()); st.NextDue == nil && time.Now().Before(deadline); st, _ = scheduled.Status(context.Background()) {
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(st.Warning, "set backup.schedule") || !strings.Contains(st.Warning, "`loci backup --out FILE`") ||
		!strings.Contains(st.Warning, "the schedule (every 1h) takes the first at ") {
		t.Fatalf("with a schedule: warning %q", st.Warning)
	}

	// A backup 1m4s old against warn_after 1m.
	id, _ := store.PalaceID(context.Background(), j.DB)
	taken := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	path := filepath.Join(dir, kinds.BackupFileName(id, taken))
	if _, err := backup.WriteFile(context.Background(), j.DB, path, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	h, _ := backup.ReadHeader(path)
	scheduled.Now = func() time.Time { return h.CreatedAt.Add(64 * time.Second) }
	st, err = scheduled.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Warning, "is 1m4s old, older than backup.warn_after (1m)") || strings.Contains(st.Warning, "set backup.schedule") ||
		!strings.Contains(st.Warning, "check its backup jobs") {
		t.Fatalf("stale backup with a schedule: warning %q", st.Warning)
	}
}

// After a restart, the next scheduled backup's time is known at once
// (the remembered slot), not only after the first run.
func TestNextBackupShownAfterARestart(t *testing.T) {
	dir := t.TempDir()
	set := config.Backup{Schedule: config.BackupSchedule{Every: "1d"}, Keep: 3, WarnAfter: "7d"}
	b, j := backupsOn(t, dir, set)
	due := time.Now().Add(5 * time.Hour).UTC().Truncate(time.Second)
	raw, _ := json.Marshal(scheduleMeta{Every: "1d", Due: due})
	if err := j.DB.PutMeta(context.Background(), metaBackupSchedule, string(raw)); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer b.Stop(context.Background())
	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.NextDue == nil || !st.NextDue.Equal(due) {
		t.Fatalf("next_due %v right after the start, want the remembered %s", st.NextDue, due)
	}
	list, err := b.List(context.Background())
	if err != nil || list.NextDue == nil || !list.NextDue.Equal(due) {
		t.Fatalf("GET /api/backups next_due %v (%v), want %s", list.NextDue, err, due)
	}
}

// A backup a client downloaded whole counts as the last backup, full or
// incremental, once it is the newest, and says it was downloaded (no
// path); another palace's record (a restore brings the source's along)
// does not count. Files of any name in the folder whose header names
// the palace count too.
func TestDownloadedAndForeignNamedBackupsCount(t *testing.T) {
	dir := t.TempDir()
	b, j := backupsOn(t, dir, config.Backup{Keep: 3, WarnAfter: "1h"})
	drawerIn(t, j, "a drawer that needs a backup")
	id, err := store.PalaceID(context.Background(), j.DB)
	if err != nil {
		t.Fatal(err)
	}
	// A file the CLI wrote into the folder under its own name.
	cliFile := filepath.Join(dir, "loci-"+id[:8]+"-20261126T095810Z-full.backup")
	full, err := backup.WriteFile(context.Background(), j.DB, cliFile, backup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(context.Background())
	if err != nil || st.Warning != "" || st.Last == nil || st.Last.Name != filepath.Base(cliFile) {
		t.Fatalf("a `loci backup` file in backup.dir: %+v %v", st, err)
	}
	list, err := b.List(context.Background())
	if err != nil || len(list.Backups) != 1 || list.Backups[0].Name != filepath.Base(cliFile) || list.Backups[0].Error != "" {
		t.Fatalf("listed %+v %v", list.Backups, err)
	}
	if err := os.Remove(cliFile); err != nil {
		t.Fatal(err)
	}

	// A download: counted, newest, no path.
	if err := b.Downloaded(context.Background(), full); err != nil {
		t.Fatal(err)
	}
	st, err = b.Status(context.Background())
	if err != nil || st.Warning != "" || st.Last == nil || !st.Last.Downloaded || st.Last.Name != DownloadedName ||
		st.Last.StoreVersion != full.StoreVersion || st.Last.Since != 0 || st.Last.Size != full.Size() || st.Downloaded == nil {
		t.Fatalf("after a download: %+v (last %+v) %v", st, st.Last, err)
	}
	raw, _, _ := j.DB.GetMeta(context.Background(), metaBackupDownload)
	if strings.Contains(raw, dir) || strings.Contains(raw, "path") {
		t.Fatalf("the download record names a path: %s", raw)
	}
	// An incremental download an hour and a half later resets the age.
	drawerIn(t, j, "another drawer after the full backup")
	later := time.Now().Add(90 * time.Minute)
	b.Now = func() time.Time { return later }
	if st, _ = b.Status(context.Background()); !strings.Contains(st.Warning, "the last backup (downloaded by a client, taken ") {
		t.Fatalf("an old download: warning %q", st.Warning)
	}
	inc := full
	inc.Since, inc.StoreVersion, inc.CreatedAt = full.StoreVersion, full.StoreVersion+5, later.Add(-time.Minute)
	if err := b.Downloaded(context.Background(), inc); err != nil {
		t.Fatal(err)
	}
	if st, _ = b.Status(context.Background()); st.Warning != "" || st.Last == nil || st.Last.Since != full.StoreVersion {
		t.Fatalf("an incremental download: %+v (last %+v)", st, st.Last)
	}
	// Another palace's record does not count.
	other := inc
	other.PalaceID = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
	if err := b.Downloaded(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if st, _ = b.Status(context.Background()); st.Last != nil || st.Downloaded != nil || !strings.Contains(st.Warning, "no backup yet") {
		t.Fatalf("another palace's download counted: %+v", st)
	}
}

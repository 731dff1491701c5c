package services

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services/kinds"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/triggers"
)

// metaBackupSchedule is the meta record of the backup schedule: the
// timetable it was made for and its next slot, so that a restart keeps
// the slot (a missed one fires once) and a changed timetable starts
// afresh.
const metaBackupSchedule = "backup_schedule"

// metaBackupDownload is the meta record of the last backup the daemon
// streamed whole to a client (GET /api/backup, `loci backup`): its
// palace, times, store versions and size, never where the client put it
// (the daemon does not know, and a client's path is not the palace's
// business).
const metaBackupDownload = "backup_last_download"

// downloadMeta is the meta record of the last downloaded backup.
type downloadMeta struct {
	PalaceID string `json:"palace_id"`
	// CreatedAt is the backup's own time (its header's: the snapshot's);
	// DoneAt when its last byte was handed to the connection.
	CreatedAt    time.Time `json:"created_at"`
	DoneAt       time.Time `json:"done_at"`
	Since        uint64    `json:"since"`
	StoreVersion uint64    `json:"store_version"`
	Bytes        int64     `json:"bytes"`
	Drawers      int       `json:"drawers"`
}

// DownloadedName is the Name of a BackupFile that is a backup a client
// downloaded (GET /api/backup): it is no file in backup.dir.
const DownloadedName = "downloaded by a client"

// Backups is the daemon's own backups: the schedule that queues a backup
// job at each slot of backup.schedule, the list of the palace's backups
// in backup.dir with the last successful one and the warning, and the
// request for one now. It never writes anywhere but backup.dir (the
// backup kind's folder).
type Backups struct {
	DB   store.DB
	Jobs *actors.Jobs
	Log  *slog.Logger
	// Settings is the configuration's backup section; Dir is
	// config.Config.BackupDir.
	Settings config.Backup
	Dir      string
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu      sync.Mutex
	nextDue *time.Time
	cancel  context.CancelFunc
	done    chan struct{}
}

// scheduleMeta is the meta record of the schedule.
type scheduleMeta struct {
	Every string    `json:"every"`
	At    string    `json:"at"`
	Due   time.Time `json:"due"`
}

func (b *Backups) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// schedule parses backup.schedule (ok false: none).
func (b *Backups) schedule() (triggers.Settings, bool) {
	s := b.Settings.Schedule
	if s.Every == "" {
		return triggers.Settings{}, false
	}
	raw := map[string]string{"every": s.Every}
	if s.At != "" {
		raw["at"] = s.At
	}
	set, err := triggers.Check(triggers.Schedule, raw)
	return set, err == nil
}

// Start starts the schedule when backup.schedule is set: it remembers
// its next slot in the store, so a restart fires a slot missed while the
// daemon was down once, then keeps the timetable. Without a schedule it
// forgets the remembered slot.
func (b *Backups) Start(ctx context.Context) error {
	if b.Log == nil {
		b.Log = slog.New(slog.DiscardHandler)
	}
	b.Log = b.Log.With("component", "backups")
	set, ok := b.schedule()
	if ok && b.DB.Shared() {
		// The database is backed up with pg_dump; a schedule here would
		// queue backups that fail on every daemon.
		b.Log.Warn("backup.schedule is not followed on a shared store: back the database up with pg_dump", "store", b.DB.Location())
		return nil
	}
	if !ok {
		return b.DB.DeleteMeta(ctx, metaBackupSchedule)
	}
	var due *time.Time
	if raw, found, err := b.DB.GetMeta(ctx, metaBackupSchedule); err != nil {
		return err
	} else if found {
		var m scheduleMeta
		if json.Unmarshal([]byte(raw), &m) == nil && m.Every == b.Settings.Schedule.Every && m.At == b.Settings.Schedule.At && !m.Due.IsZero() {
			due = &m.Due
			// Shown at once: the next slot is known before it fires.
			b.mu.Lock()
			b.nextDue = &m.Due
			b.mu.Unlock()
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	go func() {
		defer close(b.done)
		defer func() {
			if p := recover(); p != nil {
				b.Log.Error("the backup schedule stopped on a panic", "panic", fmt.Sprint(p))
			}
		}()
		// Each daemon's schedule fires its slots: a backup already queued or
		// running is not asked again (kinds.EnsureBackup).
		runSchedule(rctx, set, due, func() { b.ask(rctx) }, func(_ *time.Time, next time.Time) (time.Time, bool) {
			b.save(rctx, next)
			return next, true
		})
	}()
	return nil
}

// Stop stops the schedule and waits for it; its next slot stays
// remembered.
func (b *Backups) Stop(ctx context.Context) {
	if b.cancel == nil {
		return
	}
	b.cancel()
	select {
	case <-b.done:
	case <-ctx.Done():
	}
}

// ask is a slot's request: a backup job, unless one is queued or
// running.
func (b *Backups) ask(ctx context.Context) {
	job, queued, err := kinds.EnsureBackup(ctx, b.Jobs)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			b.Log.Warn("queueing a scheduled backup failed", "err", fault.As(err).Msg)
		}
	case queued:
		b.Log.Info("scheduled backup queued", "job", job.ID)
	default:
		b.Log.Info("scheduled backup not queued: one is already queued or running", "job", job.ID)
	}
}

// save remembers the schedule's next slot.
func (b *Backups) save(ctx context.Context, next time.Time) {
	b.mu.Lock()
	b.nextDue = &next
	b.mu.Unlock()
	raw, _ := json.Marshal(scheduleMeta{Every: b.Settings.Schedule.Every, At: b.Settings.Schedule.At, Due: next.UTC()})
	if err := b.DB.PutMeta(ctx, metaBackupSchedule, string(raw)); err != nil && ctx.Err() == nil {
		b.Log.Error("saving the backup schedule's next slot failed", "err", err)
	}
}

// Run queues a backup job now (POST /api/backups, `loci backups run`).
// It takes no path: the job writes into backup.dir.
func (b *Backups) Run(ctx context.Context, channel string) (*store.Job, error) {
	if b.DB != nil && b.DB.Shared() {
		return nil, backup.Unsupported(b.DB) // pg_dump's, not a job that fails
	}
	return b.Jobs.Submit(ctx, actors.Submission{Type: kinds.KindBackup, Channel: channel})
}

// List is GET /api/backups: the palace's backups in backup.dir, newest
// first, with the state (last successful, warning).
func (b *Backups) List(ctx context.Context) (api.BackupList, error) {
	// A palace without an identity has made no backup: it is not given
	// one by a read.
	id, _, err := store.KnownPalaceID(ctx, b.DB)
	if err != nil {
		return api.BackupList{}, err
	}
	files, err := kinds.ListBackups(b.Dir, id)
	if err != nil {
		return api.BackupList{}, err
	}
	out := api.BackupList{Backups: make([]api.BackupFile, 0, len(files))}
	for _, f := range files {
		out.Backups = append(out.Backups, backupFile(f))
	}
	held, err := b.held(ctx)
	if err != nil {
		return api.BackupList{}, err
	}
	dl, err := b.lastDownload(ctx, id)
	if err != nil {
		return api.BackupList{}, err
	}
	out.BackupStatus = b.state(out.Backups, held, dl)
	return out, nil
}

// Downloaded records h as the last backup the daemon streamed whole to a
// client (GET /api/backup): from then on it counts as the last backup
// when it is the newest, full or incremental (an incremental continues a
// chain the client holds: the palace's changes are saved). The record
// is the header's facts and the bytes sent, never a path.
func (b *Backups) Downloaded(ctx context.Context, h backup.Header) error {
	raw, err := json.Marshal(downloadMeta{PalaceID: h.PalaceID, CreatedAt: h.CreatedAt.UTC(), DoneAt: b.now().UTC(),
		Since: h.Since, StoreVersion: h.StoreVersion, Bytes: h.Size(), Drawers: h.Counts.Drawers})
	if err != nil {
		return err
	}
	return b.DB.PutMeta(ctx, metaBackupDownload, string(raw))
}

// lastDownload is the last backup of palace id a client downloaded, as
// a listed backup (nil: none, or one of another palace, which a restore
// of another palace's backup brings along).
func (b *Backups) lastDownload(ctx context.Context, id string) (*api.BackupFile, error) {
	if b.DB == nil || id == "" {
		return nil, nil
	}
	raw, found, err := b.DB.GetMeta(ctx, metaBackupDownload)
	if err != nil || !found {
		return nil, err
	}
	var m downloadMeta
	if json.Unmarshal([]byte(raw), &m) != nil || m.PalaceID != id {
		return nil, nil
	}
	return &api.BackupFile{Name: DownloadedName, Downloaded: true, Size: m.Bytes, CreatedAt: m.CreatedAt,
		StoreVersion: m.StoreVersion, Since: m.Since, Drawers: m.Drawers}, nil
}

// Status is the backups' state for the status report: the last
// successful backup (the newest whose header reads) and the warning.
func (b *Backups) Status(ctx context.Context) (api.BackupStatus, error) {
	id, _, err := store.KnownPalaceID(ctx, b.DB)
	if err != nil {
		return api.BackupStatus{}, err
	}
	held, err := b.held(ctx)
	if err != nil {
		return api.BackupStatus{}, err
	}
	dl, err := b.lastDownload(ctx, id)
	if err != nil {
		return api.BackupStatus{}, err
	}
	return b.statusOf(id, held, dl)
}

// StatusOf is Status for the palace palaceID ("": one without an
// identity, which has no backup) holding drawers drawers, without a
// store (no downloaded backup is known).
func (b *Backups) StatusOf(palaceID string, drawers int) (api.BackupStatus, error) {
	return b.statusOf(palaceID, Held{Current: drawers, Stored: drawers}, nil)
}

func (b *Backups) statusOf(palaceID string, held Held, dl *api.BackupFile) (api.BackupStatus, error) {
	// Only the folder's newest backup whose header reads matters here.
	f, err := kinds.LastBackup(b.Dir, palaceID)
	if err != nil {
		return api.BackupStatus{}, err
	}
	var last []api.BackupFile
	if f != nil {
		last = append(last, backupFile(*f))
	}
	return b.state(last, held, dl), nil
}

// Held is what the palace holds, as the status counts it: its current
// drawers and all it stores (current or not).
type Held struct {
	Current int
	Stored  int
}

// held is the palace's drawers.
func (b *Backups) held(ctx context.Context) (Held, error) {
	var counts store.Counts
	err := b.DB.View(ctx, func(r store.Reader) (err error) { counts, err = r.Counts(); return err })
	return Held{Current: counts.Drawers, Stored: counts.DrawersStored}, err
}

// state is the status of a folder whose backups are files, newest first,
// and of the last download (nil: none), for a palace holding held.
func (b *Backups) state(files []api.BackupFile, held Held, dl *api.BackupFile) api.BackupStatus {
	warn := backupWarnAfter(b.Settings)
	st := api.BackupStatus{Dir: b.Dir, Keep: b.Settings.Keep, WarnAfterSecs: int64(warn / time.Second)}
	if s := b.Settings.Schedule; s.Every != "" {
		st.Schedule = "every " + s.Every
		if s.At != "" {
			st.Schedule += " at " + s.At + " UTC"
		}
		b.mu.Lock()
		st.NextDue = b.nextDue
		b.mu.Unlock()
	}
	st.Downloaded = dl
	if dl != nil {
		// The download takes its place by its time among the folder's.
		i := 0
		for i < len(files) && !files[i].CreatedAt.Before(dl.CreatedAt) {
			i++
		}
		files = append(files[:i:i], append([]api.BackupFile{*dl}, files[i:]...)...)
	}
	st.Last, st.AgeSecs, st.Warning = BackupWarning(BackupFacts{Files: files, Held: held, Now: b.now(), WarnAfter: warn,
		Dir: b.Dir, Schedule: st.Schedule, NextDue: st.NextDue})
	if b.DB != nil && b.DB.Shared() {
		st.Schedule, st.NextDue = "", nil
		st.Warning = "loci does not back up a shared store: back the database at " + b.DB.Location() + " up with pg_dump"
	}
	return st
}

// backupWarnAfter is backup.warn_after as a duration.
func backupWarnAfter(s config.Backup) time.Duration {
	return config.Config{Backup: s}.BackupWarnAfter()
}

// BackupFacts are what the backup warning judges.
type BackupFacts struct {
	// Files are the palace's backups, newest first: the folder's and the
	// last download (a file with an Error is no backup).
	Files []api.BackupFile
	// Held is what the palace holds: no warning when it holds no drawer.
	Held Held
	// Now is the time the ages are taken at; WarnAfter is
	// backup.warn_after; Dir is backup.dir.
	Now       time.Time
	WarnAfter time.Duration
	Dir       string
	// Schedule is backup.schedule as the status says it ("every 1h",
	// "": none); NextDue its next slot when known.
	Schedule string
	NextDue  *time.Time
}

// BackupWarning judges the palace's backups: the last successful one
// (the first without an error), its age at f.Now, and the warning when
// the palace holds drawers and no backup is newer than f.WarnAfter (""
// otherwise). The warning's advice fits the configuration: it suggests
// backup.schedule only when none is set.
func BackupWarning(f BackupFacts) (last *api.BackupFile, ageSecs int64, warning string) {
	for i := range f.Files {
		if f.Files[i].Error == "" {
			b := f.Files[i]
			last = &b
			break
		}
	}
	if last != nil {
		ageSecs = max(int64(f.Now.Sub(last.CreatedAt)/time.Second), 0)
	}
	if f.Held.Current == 0 && f.Held.Stored == 0 {
		return last, ageSecs, ""
	}
	switch {
	case last == nil:
		warning = fmt.Sprintf("no backup yet: the palace holds %s, and neither %s nor a client's download (`loci backup`) is a backup of it; %s",
			f.Held.String(), f.Dir, advice(f, true))
	case f.Now.Sub(last.CreatedAt) > f.WarnAfter:
		old, limit := age(f.Now.Sub(last.CreatedAt)), triggers.FormatDuration(f.WarnAfter)
		if old == limit {
			old = "just over " + old
		}
		warning = fmt.Sprintf("the last backup (%s, taken %s) is %s old, older than backup.warn_after (%s); %s",
			last.Name, last.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"), old, limit, advice(f, false))
	}
	return last, ageSecs, warning
}

// advice is the warning's remedy: a backup now (either way), and the
// schedule: set one when there is none, else check the one there is.
func advice(f BackupFacts, none bool) string {
	now := "run `loci backups run` (a backup into backup.dir) or `loci backup --out FILE` (a backup where you choose)"
	switch {
	case f.Schedule == "":
		return now + ", or set backup.schedule (e.g. backup.schedule = { every = \"1d\" })"
	case none && f.NextDue != nil:
		return fmt.Sprintf("the schedule (%s) takes the first at %s; %s to have one now", f.Schedule, f.NextDue.UTC().Format("2006-01-02 15:04 UTC"), now)
	default:
		return fmt.Sprintf("backup.schedule (%s) is set: check its backup jobs (`loci job list --kind backup`) and the daemon's log; %s", f.Schedule, now)
	}
}

// String reads the palace's drawers as the status counts them: its
// current drawers, or its stored ones when none is current.
func (h Held) String() string {
	if h.Current > 0 || h.Stored == 0 {
		return plural(h.Current, "current drawer")
	}
	return plural(h.Stored, "stored drawer") + " (none current)"
}

// plural is "1 drawer", "2 drawers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// backupFile is a listed file on the wire.
func backupFile(f kinds.BackupFile) api.BackupFile {
	out := api.BackupFile{Name: f.Name, Size: f.Size, CreatedAt: f.At.UTC(), Error: f.Err}
	if h := f.Header; h != nil {
		out.StoreVersion, out.Since, out.Drawers = h.StoreVersion, h.Since, h.Counts.Drawers
		if !h.CreatedAt.IsZero() {
			out.CreatedAt = h.CreatedAt.UTC()
		}
	}
	return out
}

// age reads a duration to the second, its units from days down, zero
// units left out ("9d", "1m4s", "2h0m5s" reads "2h5s").
func age(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

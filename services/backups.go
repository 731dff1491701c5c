package services

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
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
		runSchedule(rctx, set, due, func() { b.ask(rctx) }, func(next time.Time) { b.save(rctx, next) })
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
	drawers, err := b.drawers(ctx)
	if err != nil {
		return api.BackupList{}, err
	}
	out.BackupStatus = b.state(out.Backups, drawers)
	return out, nil
}

// Status is the backups' state for the status report: the last
// successful backup (the newest whose header reads) and the warning.
func (b *Backups) Status(ctx context.Context) (api.BackupStatus, error) {
	id, _, err := store.KnownPalaceID(ctx, b.DB)
	if err != nil {
		return api.BackupStatus{}, err
	}
	drawers, err := b.drawers(ctx)
	if err != nil {
		return api.BackupStatus{}, err
	}
	return b.StatusOf(id, drawers)
}

// StatusOf is Status for the palace palaceID ("": one without an
// identity, which has no backup) holding drawers stored drawers.
func (b *Backups) StatusOf(palaceID string, drawers int) (api.BackupStatus, error) {
	files, err := kinds.ListBackupNames(b.Dir, palaceID)
	if err != nil {
		return api.BackupStatus{}, err
	}
	// Newest first: the first whose header reads is the last successful
	// one; the rest need not be read.
	var last []api.BackupFile
	for _, f := range files {
		if bf := backupFile(kinds.ReadBackup(f)); bf.Error == "" {
			last = append(last, bf)
			break
		}
	}
	return b.state(last, drawers), nil
}

// drawers is the palace's stored drawers.
func (b *Backups) drawers(ctx context.Context) (int, error) {
	var counts store.Counts
	err := b.DB.View(ctx, func(r store.Reader) (err error) { counts, err = r.Counts(); return err })
	return counts.DrawersStored, err
}

// state is the status of a folder whose backups are files, newest first,
// for a palace of drawers stored drawers.
func (b *Backups) state(files []api.BackupFile, drawers int) api.BackupStatus {
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
	st.Last, st.AgeSecs, st.Warning = BackupWarning(files, drawers, b.now(), warn, b.Dir)
	return st
}

// backupWarnAfter is backup.warn_after as a duration.
func backupWarnAfter(s config.Backup) time.Duration {
	return config.Config{Backup: s}.BackupWarnAfter()
}

// BackupWarning judges a folder's backups (newest first): the last
// successful one (the first without an error), its age at now, and the
// warning when the palace holds drawers and no backup is newer than
// warnAfter ("" otherwise).
func BackupWarning(files []api.BackupFile, drawers int, now time.Time, warnAfter time.Duration, dir string) (last *api.BackupFile, ageSecs int64, warning string) {
	for i := range files {
		if files[i].Error == "" {
			f := files[i]
			last = &f
			break
		}
	}
	if last != nil {
		ageSecs = max(int64(now.Sub(last.CreatedAt)/time.Second), 0)
	}
	if drawers == 0 {
		return last, ageSecs, ""
	}
	switch {
	case last == nil:
		warning = fmt.Sprintf("no backup yet: the palace holds %d drawers and %s has no backup of it; run `loci backups run`, or set backup.schedule", drawers, dir)
	case now.Sub(last.CreatedAt) > warnAfter:
		warning = fmt.Sprintf("the last backup (%s) is %s old, more than backup.warn_after (%s); run `loci backups run`, or check backup.schedule and the backup jobs",
			last.Name, age(now.Sub(last.CreatedAt)), triggers.FormatDuration(warnAfter))
	}
	return last, ageSecs, warning
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

// age reads a duration roughly: whole days from two days, whole hours
// from two hours, else minutes.
func age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}

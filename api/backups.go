package api

import "time"

// BackupFile is one of the palace's backups in backup.dir, as
// GET /api/backups lists it.
type BackupFile struct {
	// Name is the file's name in backup.dir (never a path a client
	// chose).
	Name string `json:"name"`
	Size int64  `json:"size"`
	// CreatedAt is when the backup was taken (its header's time, else
	// its name's).
	CreatedAt time.Time `json:"created_at"`
	// StoreVersion is the store version the backup reached; Since the
	// version an incremental backup starts after (0: full).
	StoreVersion uint64 `json:"store_version"`
	Since        uint64 `json:"since"`
	Drawers      int    `json:"drawers"`
	// Error says why the file's header could not be read (the file is
	// then no successful backup).
	Error string `json:"error,omitempty"`
	// Downloaded is true for a backup the daemon streamed whole to a
	// client (GET /api/backup, `loci backup`): it is no file in
	// backup.dir, and its Name says so ("downloaded by a client"); the
	// daemon never knows where the client put it.
	Downloaded bool `json:"downloaded,omitempty"`
}

// BackupStatus is the backups' state in the status report and at the
// head of GET /api/backups: the last successful backup and the warning.
type BackupStatus struct {
	// Dir is backup.dir.
	Dir string `json:"dir"`
	// Schedule is backup.schedule ("every 1d at 03:00"), empty when
	// there are no scheduled backups; NextDue its next slot.
	Schedule string     `json:"schedule,omitempty"`
	NextDue  *time.Time `json:"next_due,omitempty"`
	Keep     int        `json:"keep"`
	// WarnAfterSecs is backup.warn_after.
	WarnAfterSecs int64 `json:"warn_after_secs"`
	// Last is the newest backup: of the files in backup.dir whose header
	// reads and the last download (Downloaded), full or incremental;
	// nil when none.
	Last *BackupFile `json:"last"`
	// Downloaded is the last backup of the palace the daemon streamed
	// whole to a client, nil when none.
	Downloaded *BackupFile `json:"downloaded,omitempty"`
	// AgeSecs is Last's age.
	AgeSecs int64 `json:"age_secs,omitempty"`
	// Warning is set when the palace holds data and no backup is newer
	// than backup.warn_after.
	Warning string `json:"warning,omitempty"`
}

// BackupList is GET /api/backups: the state, then the palace's backups
// in backup.dir, newest first.
type BackupList struct {
	BackupStatus
	Backups []BackupFile `json:"backups"`
}

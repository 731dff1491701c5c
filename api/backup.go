package api

import "time"

// BackupHeader is a backup file's header (package backup's Header, the
// same JSON): what `loci backup --json`, `loci backup verify --json` and
// `loci restore --json` print for each file.
type BackupHeader struct {
	Format       string       `json:"format"`
	Version      int          `json:"version"`
	PalaceID     string       `json:"palace_id"`
	Backend      string       `json:"backend"`
	SchemaHash   string       `json:"schema_hash"`
	DataVersion  int          `json:"data_version"`
	Since        uint64       `json:"since"`
	StoreVersion uint64       `json:"store_version"`
	CreatedAt    time.Time    `json:"created_at"`
	Counts       BackupCounts `json:"counts"`
	Records      int64        `json:"records"`
	BodyBytes    int64        `json:"body_bytes"`
	BodyDigest   string       `json:"body_digest"`
	HeaderDigest string       `json:"header_digest"`
}

// BackupCounts are the palace's counts at a backup's version.
type BackupCounts struct {
	Wings   int `json:"wings"`
	Rooms   int `json:"rooms"`
	Drawers int `json:"drawers"`
}

// BackupHeaderSize is the size of a backup file's header block (the
// header's JSON padded with spaces, then a newline); the body follows.
const BackupHeaderSize = 4096

// RestoreReport says what `loci restore` did.
type RestoreReport struct {
	// Palace is the palace folder restored into.
	Palace string `json:"palace"`
	// Files are the headers of the files applied, in order.
	Files []BackupHeader `json:"files"`
	// Replaced is true when a palace holding data was replaced (--force).
	Replaced bool `json:"replaced"`
	// PalaceID is the restored palace's identity (the backups'); when a
	// palace was replaced, PreviousPalaceID is the identity it had ("":
	// it had none). They differ when --force put another palace's
	// backup in place of this one: the palace id changes from
	// PreviousPalaceID to PalaceID (backup.Target reads it before the
	// restore).
	PalaceID         string `json:"palace_id,omitempty"`
	PreviousPalaceID string `json:"previous_palace_id,omitempty"`
	// IndexesRemoved lists the derived index folders removed; the daemon
	// rebuilds them at its next start.
	IndexesRemoved []string `json:"indexes_removed,omitempty"`
}

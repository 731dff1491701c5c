// Package backup writes, checks and restores whole-palace backups: a
// header (format, palace, schema, store version, counts, the body's
// digest) and the body, a consistent dump of the store at one version,
// full or incremental. This file is the package's API as agreed between
// its users (the REST route, the CLI, the scheduled job); the bodies are
// being built.
package backup

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/loci-dev/loci/store"
)

// Header is what a backup file starts with.
type Header struct {
	Format       string    `json:"format"`  // "loci-backup"
	Version      int       `json:"version"` // the file format's version
	PalaceID     string    `json:"palace_id"`
	Backend      string    `json:"backend"` // the store family that wrote the body
	SchemaHash   string    `json:"schema_hash"`
	DataVersion  int       `json:"data_version"`
	Since        uint64    `json:"since"`         // 0 for a full backup
	StoreVersion uint64    `json:"store_version"` // the store version the body reaches
	CreatedAt    time.Time `json:"created_at"`
	Counts       Counts    `json:"counts"`
	Records      int64     `json:"records"`
	BodyBytes    int64     `json:"body_bytes"`
	BodyDigest   string    `json:"body_digest"` // "sha256:<hex>"
}

// Counts are the palace's counts at the backup's version.
type Counts struct {
	Wings   int `json:"wings"`
	Rooms   int `json:"rooms"`
	Drawers int `json:"drawers"`
}

// Options shape one backup.
type Options struct {
	// Since makes an incremental backup of what changed after the
	// store version an earlier backup reached (its Header.StoreVersion);
	// 0 is a full backup.
	Since uint64
	// Progress, when set, is called now and then with the body's bytes
	// and records written so far.
	Progress func(bytes, records int64)
}

var errNotBuilt = errors.New("backup: not built yet")

// Write writes a backup of db to w (header first, then the body).
func Write(ctx context.Context, db store.DB, w io.Writer, o Options) (Header, error) {
	return Header{}, errNotBuilt
}

// WriteFile writes a backup of db to path through a temporary file in
// the same folder, fsynced and renamed into place, so that a crash never
// leaves a file at path that looks complete.
func WriteFile(ctx context.Context, db store.DB, path string, o Options) (Header, error) {
	return Header{}, errNotBuilt
}

// ReadHeader reads and checks a backup file's header without reading
// its body.
func ReadHeader(path string) (Header, error) {
	return Header{}, errNotBuilt
}

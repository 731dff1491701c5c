package store

import (
	"context"
	"io"
	"sync"
)

// Dumper is the capability of a backend that can dump the whole store
// consistently, at one version, and load such a dump back (package backup
// writes and restores whole-palace backups through it). A backend without
// it cannot be backed up; backup answers loci::backup::unsupported.
type Dumper interface {
	// Snapshot opens one consistent read of the whole store at the
	// version it reached when opened; writes made after it are not in it.
	// The caller closes it.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Load applies a body written by Snapshot.Dump (this backend's format)
	// to the store, keeping the records' versions: into an empty store
	// (a full dump), then on top of that (each incremental in order).
	// Commits after a Load get versions above every loaded one. It runs
	// with nothing else writing.
	Load(ctx context.Context, r io.Reader) error
	// Holds reports whether the store holds anything besides its
	// operational records (schema, watermarks, the palace's identity): a
	// restore over such a store needs --force.
	Holds(ctx context.Context) (bool, error)
}

// Snapshot is one consistent read of a store at one version.
type Snapshot interface {
	// Version is the store version the snapshot reached: an incremental
	// dump of what came after it starts there.
	Version() uint64
	// View runs fn on a palace reader at the snapshot's version.
	View(fn func(Reader) error) error
	// Dump writes every record whose version is above since, in the
	// backend's dump format, to w: with since 0, every record (a full
	// dump); otherwise also deletion markers for what was deleted after
	// since (an incremental). Its output for the same since is the same
	// bytes every time (a caller may dump twice: once for the digest,
	// once to send). The migration lock is never in it. progress, when
	// set, is called now and then with the bytes and records written.
	Dump(ctx context.Context, since uint64, w io.Writer, progress func(bytes, records int64)) (DumpStats, error)
	// Close ends the snapshot.
	Close()
}

// DumpStats is what one Dump wrote.
type DumpStats struct {
	Bytes   int64
	Records int64
}

// DumpChecker reads a dump body of one backend's format without a store
// and checks its framing record by record: every record's version must lie
// in (since, until]. It answers the records read, or an error naming the
// byte offset (from the body's start) where the body goes wrong.
type DumpChecker func(r io.Reader, since, until uint64) (records int64, err error)

var (
	checkersMu sync.RWMutex
	checkers   = map[string]DumpChecker{}
)

// RegisterDumpChecker registers the body checker of a backend's dump
// format under the backend's name (DB.Backend), in the backend's init.
func RegisterDumpChecker(backend string, c DumpChecker) {
	checkersMu.Lock()
	defer checkersMu.Unlock()
	checkers[backend] = c
}

// DumpCheckerFor is the registered body checker of a backend's dumps.
func DumpCheckerFor(backend string) (DumpChecker, bool) {
	checkersMu.RLock()
	defer checkersMu.RUnlock()
	c, ok := checkers[backend]
	return c, ok
}

// DumpCorrupt is the error a DumpChecker (or a Load) answers for a body
// that is not a well-formed dump: Offset is the byte offset from the
// body's start where it goes wrong; Truncated says the body ended inside
// a frame.
type DumpCorrupt struct {
	Offset    int64
	Truncated bool
	Reason    string
}

// Error is the reason, with its offset.
func (e *DumpCorrupt) Error() string { return e.Reason }

// Package badgerdb is the embedded store backend: the palace in a Badger
// key-value store, one process, one writer. Every Update commits one synced
// transaction, so a change acknowledged after Update returns survives a
// crash. The key space is documented in docs/ARCHITECTURE.md.
package badgerdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/disk"
)

// DB is the Badger backend of store.DB.
type DB struct {
	bdb *badger.DB
	// swap is held for reading by everything that uses bdb, and for
	// writing by Reopen, which replaces a read-only bdb (a start on a full
	// disk) by a writable one.
	swap sync.RWMutex
	// readOnly: bdb was opened read-only because the disk was full; every
	// write is refused with loci::store::disk_full until Reopen.
	readOnly atomic.Bool
	log      *slog.Logger
	dir      string
	mu       sync.Mutex // guards seq across Updates
	seq      uint64
	once     sync.Once
	near     *nearIndex
	// entityKeys filters lookups of entity index keys (entitykeys.go).
	entityKeys entityKeys
	// countsStale is set when the counts record could not be brought up
	// to date at open (counts.go): Counts recounts until a write rewrites
	// the record.
	countsStale atomic.Bool
	// bulk: opened without a sync at every commit (OpenOptions.Bulk);
	// Close syncs.
	bulk bool
}

var (
	_ store.DB         = (*DB)(nil)
	_ store.NearLoader = (*DB)(nil)
	_ store.Embedded   = (*DB)(nil)
)

// The embedded store opens a directory path, or a badger:// URL whose
// path is the directory (badger:///var/lib/loci/palace/store).
func init() {
	store.RegisterBackend(store.EmbeddedScheme, func(_ context.Context, o store.OpenOptions) (store.DB, error) {
		dir := o.Location
		if strings.Contains(dir, "://") {
			u, err := url.Parse(dir)
			if err != nil || u.Path == "" || u.Host != "" {
				return nil, fault.New(fault.StoreBackendFailed, "the embedded store's location is not a badger:// URL with a path",
					"write it badger:///absolute/path/to/store, or give the path alone")
			}
			dir = u.Path
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fault.Wrap(fault.StoreBackendFailed, err, "cannot create the store directory "+dir,
				"check palace.path and its permissions")
		}
		if o.Serving {
			return OpenServing(dir, o.Log)
		}
		if o.Bulk {
			return open(dir, o.Log, bulk)
		}
		return Open(dir, o.Log)
	})
}

// Badger's file sizes. Every file Badger writes through a memory map is
// allocated before it is mapped (third_party/ristretto: fallocate, not a
// sparse ftruncate), so a full disk is an error, never SIGBUS; but Badger
// cannot go on without its next memtable log, which is created inside a
// commit. Headroom is the free space that creation, a new value log file
// and the flush of the full memtable take; the reserve the daemon keeps
// (store.min_free_bytes) is at least this much, and a start with less
// free opens the store read-only.
// The sizes are budget.go's.
const (
	// Headroom: a memtable log (twice the memtable), a value log file
	// (twice its size), and the table of a flushed memtable. 128 MiB.
	Headroom int64 = 2*MemTableSize + 2*ValueLogFileSize + MemTableSize
)

// Open opens (creating when needed) the Badger store in dir. A store held
// by another process is loci::store::backend_failed.
func Open(dir string, log *slog.Logger) (*DB, error) {
	return open(dir, log, writable)
}

// How Badger is opened.
type openMode int

const (
	writable openMode = iota
	// readOnly: Badger's read-only mode, which creates no file.
	readOnly
	// cutOnly: writable, on a full disk whose last run left its memtable
	// log uncut (a kill): Badger in read-only mode refuses to open it, a
	// writable open replays it into a memtable as large as the one it was
	// written for (a smaller arena is a fatal error in Badger) and cuts it
	// to its end, freeing the rest of the file. The open then creates its
	// own new log, which the freed space may not hold: openFull opens
	// read-only after that failure (the old log is cut by then). Writes
	// are refused as in read-only mode.
	cutOnly
	// bulk: writable without a sync at every commit, for a new store that
	// one loader fills (a restore) and closes: Close makes it durable.
	bulk
)

// OpenServing opens the store for the daemon: writable when the disk has
// Headroom free, else read-only (writes refused with
// loci::store::disk_full until Reopen), so that a start on a full disk
// serves reads instead of failing.
func OpenServing(dir string, log *slog.Logger) (*DB, error) {
	if free := disk.FreeBytes(dir); free >= 0 && free < Headroom {
		log.Warn("the palace's disk is full: the store opens read-only; writes resume once space is freed",
			"dir", dir, "free", disk.Bytes(free), "needed", disk.Bytes(Headroom))
		return openFull(dir, log)
	}
	db, err := open(dir, log, writable)
	if err != nil && noSpace(err) {
		log.Warn("the palace's disk filled while the store opened: it opens read-only; writes resume once space is freed", "dir", dir, "err", err)
		return openFull(dir, log)
	}
	return db, err
}

// openFull opens the store on a full disk for reads: read-only, or, when
// the last run's memtable log must be cut first, writable with a small
// memtable (cutOnly); writes are refused either way until Reopen.
func openFull(dir string, log *slog.Logger) (*DB, error) {
	db, err := open(dir, log, readOnly)
	if err != nil && strings.Contains(err.Error(), "Log truncate required") {
		log.Info("the memtable log of the last run must be cut to its end before a read-only open; opening writable to cut it", "dir", dir)
		db, err = open(dir, log, cutOnly)
		if err != nil && noSpace(err) {
			log.Info("the cut memtable log left too little space for a new one; opening read-only", "dir", dir)
			db, err = open(dir, log, readOnly)
		}
	}
	return db, err
}

// largestMemtableLog is the size of the largest memtable log (*.mem) in
// dir: Badger creates each at twice the memtable size of its run.
func largestMemtableLog(dir string) int64 {
	var largest int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".mem") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() > largest {
			largest = fi.Size()
		}
	}
	return largest
}

// noSpace reports an error of a full filesystem. Badger formats causes
// into text, so the text is what is left to match.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), syscall.ENOSPC.Error())
}

func badgerOptions(dir string, log *slog.Logger, mode openMode) badger.Options {
	opts := badger.DefaultOptions(dir).
		WithReadOnly(mode == readOnly).
		WithSyncWrites(mode != bulk).
		WithLogger(badgerLogger{log}).
		// The sizes that hold memory are budget.go's.
		WithMemTableSize(MemTableSize).
		WithNumMemtables(NumMemtables).
		WithBlockCacheSize(BlockCacheSize).
		WithBaseTableSize(BaseTableSize).
		// Zstandard instead of Snappy: tables 27 % smaller on a palace of
		// Markov text, and Badger maps every table it writes into memory,
		// so a smaller store is a smaller resident set (a million drawers:
		// BENCHMARKS.md). Each table records its own compression, so the
		// Snappy tables of an older palace stay readable and are
		// rewritten as compaction reaches them.
		WithCompression(options.ZSTD).
		// Two compactors instead of four: each holds its new tables'
		// buffers on the heap and both old and new tables mapped while it
		// runs, and on a small machine four at once made the resident
		// set jump by half a gigabyte at a million drawers.
		WithNumCompactors(2).
		WithZSTDCompressionLevel(1).
		WithValueLogFileSize(ValueLogFileSize).
		WithNumVersionsToKeep(1).
		WithCompactL0OnClose(false)
	// Every table BaseTableSize, at every level (budget.go).
	opts.TableSizeMultiplier = 1
	if mode == cutOnly {
		// The last run's logs replay into memtables of the size they were
		// written for (a smaller build's or this one's); no write is let
		// through, so the value log file can be small.
		opts = opts.WithMemTableSize(max(int64(MemTableSize), largestMemtableLog(dir)/2)).WithValueLogFileSize(1 << 20).WithValueThreshold(1 << 16)
	}
	return opts
}

// openBadger opens Badger, once more after a memtable file left empty.
func openBadger(dir string, log *slog.Logger, mode openMode) (*badger.DB, error) {
	opts := badgerOptions(dir, log, mode)
	bdb, err := badger.Open(opts)
	if err != nil && emptyMemtable(err) {
		// A kill -9 right after Badger created its next memtable file left
		// it empty: the failed open sized and headed it (it holds nothing
		// that was acknowledged), and a second open succeeds
		// (dgraph-io/badger#2207).
		log.Warn("a memtable file left empty by an interrupted start or a kill was set up; opening the store again", "dir", dir)
		bdb, err = badger.Open(opts)
	}
	if err != nil {
		help := "check that the palace path is a writable directory"
		switch {
		case strings.Contains(err.Error(), "Cannot acquire directory lock"):
			help = "another loci process holds this palace; stop it (loci daemon stop) or use another palace.path"
		case noSpace(err):
			return nil, fault.Wrap(fault.StoreDiskFull, err, fmt.Sprintf("cannot open the store at %s: the disk is full", dir),
				fmt.Sprintf("free space on the disk holding %s (%s free; the store needs %s to open for writing)",
					dir, disk.Bytes(max(disk.FreeBytes(dir), 0)), disk.Bytes(Headroom)))
		}
		return nil, fault.Wrap(fault.StoreBackendFailed, err, fmt.Sprintf("cannot open the store at %s: %v", dir, err), help)
	}
	return bdb, nil
}

func open(dir string, log *slog.Logger, mode openMode) (*DB, error) {
	bdb, err := openBadger(dir, log, mode)
	if err != nil {
		return nil, err
	}
	db := &DB{bdb: bdb, dir: dir, log: log, near: newNearIndex()}
	db.readOnly.Store(mode == readOnly || mode == cutOnly)
	db.bulk = mode == bulk
	db.near.bdb, db.near.log = bdb, log
	err = bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: []byte(pLog)})
		defer it.Close()
		it.Seek(append([]byte(pLog), 0xff))
		if it.Valid() {
			db.seq = binary.BigEndian.Uint64(it.Item().Key()[len(pLog):])
		}
		return nil
	})
	if err != nil {
		bdb.Close()
		return nil, fault.Wrap(fault.StoreBackendFailed, err, "cannot read the change log", "the store may be damaged; restore a backup")
	}
	if err := db.recountIfStale(log); err != nil {
		bdb.Close()
		return nil, fault.Wrap(fault.StoreBackendFailed, err, "cannot count the palace", "the store may be damaged; restore a backup")
	}
	return db, nil
}

// ReadOnly reports that the store was opened read-only on a full disk and
// refuses writes until Reopen.
func (db *DB) ReadOnly() bool { return db.readOnly.Load() }

// Reopen makes a store opened read-only (OpenServing on a full disk)
// writable, once space is back: reads in progress finish, then the
// read-only store is closed and opened again for writing (reads wait for
// that; writes are refused until it is done). Nothing happens to a
// writable store. If the writable open fails, the store is opened
// read-only again and the error returned.
func (db *DB) Reopen() error {
	if !db.readOnly.Load() {
		return nil
	}
	db.swap.Lock()
	defer db.swap.Unlock()
	if err := db.bdb.Close(); err != nil {
		db.log.Warn("closing the read-only store", "err", err)
	}
	bdb, err := openBadger(db.dir, db.log, writable)
	if err != nil {
		ro, rerr := openBadger(db.dir, db.log, readOnly)
		if rerr != nil {
			return fault.Wrap(fault.StoreBackendFailed, errors.Join(err, rerr), "cannot open the store again: "+rerr.Error(),
				"start the daemon again once the disk has space")
		}
		db.bdb, db.near.bdb = ro, ro
		return err
	}
	db.bdb, db.near.bdb = bdb, bdb
	if err := db.recountIfStale(db.log); err != nil {
		db.log.Warn("recounting the palace after reopening the store", "err", err)
	}
	db.readOnly.Store(false)
	return nil
}

// CheckWritable is nil for a writable store, loci::store::disk_full
// while it is read-only (OpenServing on a full disk, until Reopen).
func (db *DB) CheckWritable() error {
	if !db.readOnly.Load() {
		return nil
	}
	free := disk.FreeBytes(db.dir)
	return fault.New(fault.StoreDiskFull, "the palace's disk is full: the store is read-only until space is freed",
		fmt.Sprintf("%s free at %s; the store needs %s to open for writing: free space there, writes resume by themselves",
			disk.Bytes(max(free, 0)), db.dir, disk.Bytes(Headroom)))
}

// emptyMemtable reports Badger's refusal to open a store whose newest
// memtable file is empty. Badger formats the cause with %+v, so only its
// text is left to match: the z.NewFile sentinel's under "while opening
// memtables".
func emptyMemtable(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "while opening memtables") && strings.Contains(msg, "Create a new file")
}

// Backend names the backend.
func (db *DB) Backend() string { return "badger" }

// Location is the store directory.
func (db *DB) Location() string { return db.dir }

// Shared is false: one process holds the directory.
func (db *DB) Shared() bool { return false }

// Migrator is the migration runner of the key space: its schema hash and
// lock are operational records (meta/), its sync SyncSchema.
func (db *DB) Migrator(steps []store.Step) store.Migrator {
	return &store.Runner{DB: db, Schema: Schema, Sync: db.SyncSchema, Steps: steps}
}

// Close closes the store; it is safe to call twice.
func (db *DB) Close() error {
	var err error
	db.once.Do(func() {
		// Background loads of the near-duplicate index stop first.
		db.near.stopping.Store(true)
		db.near.wg.Wait()
		db.swap.Lock()
		defer db.swap.Unlock()
		if db.bulk {
			if serr := db.bdb.Sync(); serr != nil {
				db.log.Warn("syncing the store before closing it", "err", serr)
			}
		}
		err = db.bdb.Close()
	})
	return err
}

// OnLateNear sets the receiver of drawers whose near-duplicate judgment
// was deferred because their scope's index was loading in the background
// (a write into a big room right after a start): it gets their ids once
// the scope is loaded, and must not block. Set it before serving.
func (db *DB) OnLateNear(fn func(ids []string)) { db.near.late = fn }

// PreloadNear starts loading, in the background, the near-duplicate index
// of every scope big enough to load in the background (SetBigScope), so
// that writes after a start find it ready sooner.
func (db *DB) PreloadNear() {
	if db.readOnly.Load() {
		return // nothing is written; Reopen's caller preloads
	}
	db.near.preload(&db.mu)
}

// SetBigScope sets the number of drawers from which a scope's index loads
// in the background (default DefaultBigScope); for tests.
func (db *DB) SetBigScope(n int) { db.near.big = max(n, 1) }

// View runs fn in a read transaction.
func (db *DB) View(ctx context.Context, fn func(store.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	db.swap.RLock()
	defer db.swap.RUnlock()
	return db.bdb.View(func(txn *badger.Txn) error {
		t := &tx{txn: txn, near: db.near, entityKeys: &db.entityKeys, countsStale: db.countsStale.Load(), ctx: ctx, done: ctx.Done()}
		if err := fn(t); err != nil {
			return err
		}
		// A scan the context cut short fails the view, whatever fn made
		// of the reader's error (a view that read everything it asked
		// for stands, even if the context ended since).
		return t.cancelled
	})
}

// Update runs fn in one read-write transaction and commits it synced.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := db.CheckWritable(); err != nil {
		return err
	}
	db.swap.RLock()
	defer db.swap.RUnlock()
	db.mu.Lock()
	defer db.mu.Unlock()
	txn := db.bdb.NewTransaction(true)
	defer txn.Discard()
	snap := db.bdb.NewTransaction(false)
	defer snap.Discard()
	t := &tx{txn: txn, snap: snap, ov: newOverlay(), postingCache: map[string][]byte{}, near: db.near, entityKeys: &db.entityKeys, pending: newNearPending(), write: true, seq: db.seq, now: time.Now().UTC(), countsStale: db.countsStale.Load(),
		ctx: ctx, done: ctx.Done()}
	if err := fn(t); err != nil {
		if errors.Is(err, badger.ErrTxnTooBig) {
			return store.ErrTxnTooBig
		}
		return err
	}
	// A scan the context cut short never commits, whatever fn made of
	// the reader's error.
	if t.cancelled != nil {
		return t.cancelled
	}
	if err := t.keepCounts(db.seq); err != nil {
		return err
	}
	if err := txn.Commit(); err != nil {
		if errors.Is(err, badger.ErrTxnTooBig) {
			return store.ErrTxnTooBig
		}
		if errors.Is(err, badger.ErrConflict) {
			return store.ErrConflict
		}
		if noSpace(err) {
			return fault.Wrap(fault.StoreDiskFull, err, "the palace's disk is full: the store refused a commit",
				fmt.Sprintf("%s free at %s: free space there and write again", disk.Bytes(max(disk.FreeBytes(db.dir), 0)), db.dir))
		}
		return fault.Wrap(fault.StoreBackendFailed, err, "the store refused a commit", "check disk space and the daemon log")
	}
	db.seq = t.seq
	if t.countsStale {
		db.countsStale.Store(false)
	}
	db.applyNear(t.pending)
	return nil
}

// Sync flushes Badger's write-ahead log; commits are already synced, this
// is for shutdown.
func (db *DB) Sync() error {
	if db.readOnly.Load() {
		return nil
	}
	db.swap.RLock()
	defer db.swap.RUnlock()
	return db.bdb.Sync()
}

const metaPrefix = "meta/"

// GetMeta reads an operational record.
func (db *DB) GetMeta(ctx context.Context, key string) (string, bool, error) {
	var v string
	var ok bool
	db.swap.RLock()
	defer db.swap.RUnlock()
	err := db.bdb.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(metaPrefix + key))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		return item.Value(func(b []byte) error { v = string(b); return nil })
	})
	return v, ok, err
}

// PutMeta writes an operational record, synced.
func (db *DB) PutMeta(ctx context.Context, key, value string) error {
	if err := db.CheckWritable(); err != nil {
		return err
	}
	db.swap.RLock()
	defer db.swap.RUnlock()
	return db.bdb.Update(func(txn *badger.Txn) error { return txn.Set([]byte(metaPrefix+key), []byte(value)) })
}

// DeleteMeta removes an operational record.
func (db *DB) DeleteMeta(ctx context.Context, key string) error {
	if err := db.CheckWritable(); err != nil {
		return err
	}
	db.swap.RLock()
	defer db.swap.RUnlock()
	return db.bdb.Update(func(txn *badger.Txn) error { return txn.Delete([]byte(metaPrefix + key)) })
}

// CompareAndSwapMeta sets key to value when it currently holds old.
func (db *DB) CompareAndSwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	swapped := false
	if err := db.CheckWritable(); err != nil {
		return false, err
	}
	db.swap.RLock()
	defer db.swap.RUnlock()
	err := db.bdb.Update(func(txn *badger.Txn) error {
		cur := ""
		item, err := txn.Get([]byte(metaPrefix + key))
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			if err := item.Value(func(b []byte) error { cur = string(b); return nil }); err != nil {
				return err
			}
		}
		if cur != old {
			return nil
		}
		swapped = true
		if value == "" {
			return txn.Delete([]byte(metaPrefix + key))
		}
		return txn.Set([]byte(metaPrefix+key), []byte(value))
	})
	if errors.Is(err, badger.ErrConflict) {
		return false, nil
	}
	return swapped, err
}

// encode is the versioned value encoding: one version byte, then JSON.
// encode is a record's stored form: version byte 1, then JSON. HTML's
// characters (<, > and &) are kept as they are, not escaped to six bytes
// each: a mined file of markup took up to six times its size in its
// transaction, which Badger bounds (budget.go).
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(1)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fault.Wrap(fault.SerializationFailed, err, "cannot encode a record", "report this as a bug")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func decode(b []byte, v any) error {
	if len(b) == 0 || b[0] != 1 {
		return fault.New(fault.StoreMalformed, "a stored record has an unknown encoding", "the store may come from a newer loci; upgrade, or restore a backup")
	}
	if err := json.Unmarshal(b[1:], v); err != nil {
		return fault.Wrap(fault.StoreMalformed, err, "a stored record has an unexpected shape", "restore a backup or run loci migrate")
	}
	return nil
}

// badgerLogger routes Badger's logging into slog; its info chatter is
// debug here.
type badgerLogger struct{ log *slog.Logger }

func (l badgerLogger) Errorf(f string, a ...any) {
	l.log.Error(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (l badgerLogger) Warningf(f string, a ...any) {
	l.log.Warn(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (l badgerLogger) Infof(f string, a ...any) {
	l.log.Debug(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (l badgerLogger) Debugf(f string, a ...any) {}

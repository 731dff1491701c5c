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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/fault"
)

// DB is the Badger backend of store.DB.
type DB struct {
	bdb  *badger.DB
	dir  string
	mu   sync.Mutex // guards seq across Updates
	seq  uint64
	once sync.Once
	near *nearIndex
	// entityKeys filters lookups of entity index keys (entitykeys.go).
	entityKeys entityKeys
	// countsStale is set when the counts record could not be brought up
	// to date at open (counts.go): Counts recounts until a write rewrites
	// the record.
	countsStale atomic.Bool
}

var (
	_ store.DB         = (*DB)(nil)
	_ store.NearLoader = (*DB)(nil)
)

// Open opens (creating when needed) the Badger store in dir. A store held
// by another process is loci::store::backend_failed.
func Open(dir string, log *slog.Logger) (*DB, error) {
	opts := badger.DefaultOptions(dir).
		WithSyncWrites(true).
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
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			help = "another loci process holds this palace; stop it (loci daemon stop) or use another palace.path"
		}
		return nil, fault.Wrap(fault.StoreBackendFailed, err, fmt.Sprintf("cannot open the store at %s: %v", dir, err), help)
	}
	db := &DB{bdb: bdb, dir: dir, near: newNearIndex()}
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

// Close closes the store; it is safe to call twice.
func (db *DB) Close() error {
	var err error
	db.once.Do(func() {
		// Background loads of the near-duplicate index stop first.
		db.near.stopping.Store(true)
		db.near.wg.Wait()
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
func (db *DB) PreloadNear() { db.near.preload(&db.mu) }

// SetBigScope sets the number of drawers from which a scope's index loads
// in the background (default DefaultBigScope); for tests.
func (db *DB) SetBigScope(n int) { db.near.big = max(n, 1) }

// View runs fn in a read transaction.
func (db *DB) View(ctx context.Context, fn func(store.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.bdb.View(func(txn *badger.Txn) error {
		return fn(&tx{txn: txn, near: db.near, entityKeys: &db.entityKeys, countsStale: db.countsStale.Load()})
	})
}

// Update runs fn in one read-write transaction and commits it synced.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	txn := db.bdb.NewTransaction(true)
	defer txn.Discard()
	snap := db.bdb.NewTransaction(false)
	defer snap.Discard()
	t := &tx{txn: txn, snap: snap, ov: newOverlay(), postingCache: map[string][]byte{}, near: db.near, entityKeys: &db.entityKeys, pending: newNearPending(), write: true, seq: db.seq, now: time.Now().UTC(), countsStale: db.countsStale.Load()}
	if err := fn(t); err != nil {
		if errors.Is(err, badger.ErrTxnTooBig) {
			return store.ErrTxnTooBig
		}
		return err
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
func (db *DB) Sync() error { return db.bdb.Sync() }

const metaPrefix = "meta/"

// GetMeta reads an operational record.
func (db *DB) GetMeta(ctx context.Context, key string) (string, bool, error) {
	var v string
	var ok bool
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
	return db.bdb.Update(func(txn *badger.Txn) error { return txn.Set([]byte(metaPrefix+key), []byte(value)) })
}

// DeleteMeta removes an operational record.
func (db *DB) DeleteMeta(ctx context.Context, key string) error {
	return db.bdb.Update(func(txn *badger.Txn) error { return txn.Delete([]byte(metaPrefix + key)) })
}

// CompareAndSwapMeta sets key to value when it currently holds old.
func (db *DB) CompareAndSwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	swapped := false
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

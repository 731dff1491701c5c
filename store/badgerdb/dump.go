package badgerdb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"google.golang.org/protobuf/proto"

	"github.com/loci-dev/loci/store"
)

// The dump format is Badger's own (what DB.Backup writes and DB.Load
// reads): frames of a little-endian uint64 length and a protobuf KVList.
// It is written from one read transaction, so every record is at the one
// version the transaction reads (DB.Backup's Stream opens a transaction
// per goroutine, each at its own version, so under concurrent writes its
// output is not one version of the store).
const (
	// frameTarget is the size of keys and values gathered into a frame
	// before it is written.
	frameTarget = 1 << 20
	// maxFrame bounds a frame a checker or a load accepts.
	maxFrame = 256 << 20
	// bitDelete is Badger's meta bit of a deletion marker (value.go).
	bitDelete byte = 1 << 0
	// loadPending is how many batches a load keeps in flight.
	loadPending = 16
)

// migrationLockKey is the migration lock's record: it belongs to the
// process that took it and is never dumped.
var migrationLockKey = []byte(metaPrefix + "migrate_lock")

var _ store.Dumper = (*DB)(nil)

func init() {
	store.RegisterDumpChecker("badger", CheckDump)
}

// snapshot is one read transaction of the store.
type snapshot struct {
	db  *DB
	txn *badger.Txn
	ctx context.Context
}

// Snapshot opens one read transaction: its version is the store's
// version when it opened, and every Dump of it reads that version.
func (db *DB) Snapshot(ctx context.Context) (store.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	db.swap.RLock()
	return &snapshot{db: db, txn: db.bdb.NewTransaction(false), ctx: ctx}, nil
}

// Version is the transaction's read timestamp.
func (s *snapshot) Version() uint64 { return s.txn.ReadTs() }

// View reads the palace in the snapshot's transaction.
func (s *snapshot) View(fn func(store.Reader) error) error {
	t := &tx{txn: s.txn, near: s.db.near, entityKeys: &s.db.entityKeys, countsStale: s.db.countsStale.Load(), ctx: s.ctx, done: s.ctx.Done()}
	if err := fn(t); err != nil {
		return err
	}
	return t.cancelled
}

// Close discards the transaction; a second call does nothing.
func (s *snapshot) Close() {
	if s.txn != nil {
		s.txn.Discard()
		s.txn = nil
		s.db.swap.RUnlock()
	}
}

// Dump writes the newest version of every key above since: with since
// 0, the keys that exist (no deletion markers); otherwise deletion
// markers too, so that a load on top of the earlier dumps deletes what
// was deleted since.
func (s *snapshot) Dump(ctx context.Context, since uint64, w io.Writer, progress func(bytes, records int64)) (store.DumpStats, error) {
	var st store.DumpStats
	it := s.txn.NewIterator(badger.IteratorOptions{AllVersions: true, SinceTs: since})
	defer it.Close()
	var (
		list   pb.KVList
		size   int
		last   []byte
		buf    []byte
		lenBuf [8]byte
	)
	flush := func() error {
		if len(list.Kv) == 0 {
			return nil
		}
		var err error
		buf, err = proto.MarshalOptions{Deterministic: true}.MarshalAppend(buf[:0], &list)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(buf)))
		if _, err := w.Write(lenBuf[:]); err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		st.Bytes += int64(len(lenBuf) + len(buf))
		st.Records += int64(len(list.Kv))
		list.Kv, size = list.Kv[:0], 0
		if progress != nil {
			progress(st.Bytes, st.Records)
		}
		return nil
	}
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		key := item.Key()
		if bytes.Equal(key, last) {
			continue // an older version of a key already written
		}
		last = append(last[:0], key...)
		if bytes.Equal(key, migrationLockKey) {
			continue
		}
		kv := &pb.KV{Key: item.KeyCopy(nil), Version: item.Version(), UserMeta: []byte{item.UserMeta()}, ExpiresAt: item.ExpiresAt()}
		if item.IsDeletedOrExpired() {
			if since == 0 {
				continue
			}
			kv.Meta = []byte{bitDelete}
		} else {
			v, err := item.ValueCopy(nil)
			if err != nil {
				return st, err
			}
			kv.Value, kv.Meta = v, []byte{0}
		}
		list.Kv = append(list.Kv, kv)
		size += len(kv.Key) + len(kv.Value) + 32
		if size >= frameTarget {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
	if err := flush(); err != nil {
		return st, err
	}
	return st, ctx.Err()
}

// Load applies a dump with Badger's DB.Load, which keeps the records'
// versions and moves the store's next commit version above them, then
// reads the change log's end again (the next change is logged after the
// loaded ones). The body is checked as it is read (CheckDump's rules): a
// body that breaks off or does not decode stops the load with
// *store.DumpCorrupt.
func (db *DB) Load(ctx context.Context, r io.Reader) error {
	if err := db.CheckWritable(); err != nil {
		return err
	}
	db.swap.RLock()
	defer db.swap.RUnlock()
	db.mu.Lock()
	defer db.mu.Unlock()
	// The body goes through the checker's framing first (a pipe), so a
	// damaged body is named with its offset rather than Badger's text.
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := db.bdb.Load(pr, loadPending)
		_ = pr.CloseWithError(err)
		done <- err
	}()
	_, cerr := checkFrames(ctx, r, 0, ^uint64(0), pw)
	_ = pw.CloseWithError(cerr)
	lerr := <-done
	if cerr != nil {
		return cerr
	}
	if lerr != nil {
		return fmt.Errorf("loading a dump into the store: %w", lerr)
	}
	return db.bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: []byte(pLog)})
		defer it.Close()
		it.Seek(append([]byte(pLog), 0xff))
		if it.Valid() {
			db.seq = binary.BigEndian.Uint64(it.Item().Key()[len(pLog):])
		}
		return nil
	})
}

// Holds reports whether any key outside the operational records (meta/)
// is stored.
func (db *DB) Holds(ctx context.Context) (bool, error) {
	db.swap.RLock()
	defer db.swap.RUnlock()
	var holds bool
	err := db.bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if !bytes.HasPrefix(it.Item().Key(), []byte(metaPrefix)) {
				holds = true
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	return holds, err
}

// CheckDump reads a dump body of Badger's format and checks its frames:
// each a length and a KVList that decodes, every record with a key, a
// value or a deletion marker, and a version in (since, until]. It answers
// the records read, or *store.DumpCorrupt naming the byte offset.
func CheckDump(r io.Reader, since, until uint64) (int64, error) {
	return checkFrames(context.Background(), r, since, until, nil)
}

// checkFrames is CheckDump, copying every frame it accepts to out when
// out is set.
func checkFrames(ctx context.Context, r io.Reader, since, until uint64, out io.Writer) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		off     int64
		records int64
		lenBuf  [8]byte
		frame   bytes.Buffer
	)
	for {
		if err := ctx.Err(); err != nil {
			return records, err
		}
		n, err := io.ReadFull(br, lenBuf[:])
		if err == io.EOF {
			return records, nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return records, &store.DumpCorrupt{Offset: off + int64(n), Truncated: true, Reason: fmt.Sprintf("the body ends inside a frame's length at byte %d", off+int64(n))}
			}
			return records, err
		}
		sz := binary.LittleEndian.Uint64(lenBuf[:])
		if sz == 0 || sz > maxFrame {
			return records, &store.DumpCorrupt{Offset: off, Reason: fmt.Sprintf("the frame at byte %d declares %d bytes (a frame holds 1 to %d)", off, sz, maxFrame)}
		}
		// The frame grows as its bytes arrive: a damaged length costs
		// no more memory than the body holds.
		frame.Reset()
		if n, err := io.CopyN(&frame, br, int64(sz)); err != nil {
			if errors.Is(err, io.EOF) {
				return records, &store.DumpCorrupt{Offset: off + 8 + n, Truncated: true,
					Reason: fmt.Sprintf("the body ends inside the frame at byte %d (%d of its %d bytes)", off, n, sz)}
			}
			return records, err
		}
		buf := frame.Bytes()
		var list pb.KVList
		if err := proto.Unmarshal(buf, &list); err != nil {
			return records, &store.DumpCorrupt{Offset: off, Reason: fmt.Sprintf("the frame at byte %d does not decode: %v", off, err)}
		}
		if len(list.Kv) == 0 {
			return records, &store.DumpCorrupt{Offset: off, Reason: fmt.Sprintf("the frame at byte %d holds no record", off)}
		}
		for i, kv := range list.Kv {
			switch {
			case len(kv.Key) == 0:
				return records, &store.DumpCorrupt{Offset: off, Reason: fmt.Sprintf("record %d of the frame at byte %d has no key", i, off)}
			case kv.Version <= since || kv.Version > until:
				return records, &store.DumpCorrupt{Offset: off, Reason: fmt.Sprintf("record %d of the frame at byte %d has version %d, outside (%d, %d]", i, off, kv.Version, since, until)}
			case len(kv.Meta) != 1 || (kv.Meta[0] != 0 && kv.Meta[0] != bitDelete):
				return records, &store.DumpCorrupt{Offset: off, Reason: fmt.Sprintf("record %d of the frame at byte %d has an unknown kind", i, off)}
			case kv.StreamDone:
				return records, &store.DumpCorrupt{Offset: off, Reason: fmt.Sprintf("record %d of the frame at byte %d is a stream marker", i, off)}
			}
		}
		records += int64(len(list.Kv))
		if out != nil {
			if _, err := out.Write(lenBuf[:]); err != nil {
				return records, err
			}
			if _, err := out.Write(buf); err != nil {
				return records, err
			}
		}
		off += 8 + int64(sz)
	}
}

// RawBackup is Badger's own DB.Backup of the whole store, for the
// benchmark that compares it with Dump.
func (db *DB) RawBackup(w io.Writer) (uint64, error) {
	db.swap.RLock()
	defer db.swap.RUnlock()
	return db.bdb.Backup(w, 0)
}

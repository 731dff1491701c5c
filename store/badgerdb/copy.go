package badgerdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/store"
)

// What a copy of a palace (store.Copy) needs besides the store contract:
// the families Reader cannot enumerate, in key order, and the change log
// and operational records written as they are.

var (
	_ store.CopyReader = (*tx)(nil)
	_ store.CopyWriter = (*tx)(nil)
	_ store.MetaLister = (*DB)(nil)
)

// MetaKeys lists the operational records' keys, without the store's own
// (its kept counts and the migration lock).
func (db *DB) MetaKeys(ctx context.Context) ([]string, error) {
	db.swap.RLock()
	defer db.swap.RUnlock()
	var keys []string
	err := db.bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(metaPrefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			key := it.Item().Key()
			if bytes.Equal(key, []byte(countsKey)) || bytes.Equal(key, migrationLockKey) {
				continue
			}
			keys = append(keys, string(key[len(metaPrefix):]))
		}
		return ctx.Err()
	})
	return keys, err
}

// CopyEmbeddings visits every vector in key order: by profile, then
// drawer id.
func (t *tx) CopyEmbeddings(fn func(*store.Embedding) bool) error {
	var err error
	if cerr := t.keys(k(pEmbed), false, func(_ []byte, val valueFn) bool {
		var raw []byte
		if raw, err = val(); err != nil {
			return false
		}
		var e *store.Embedding
		if e, err = decodeEmbedding(raw); err != nil {
			return false
		}
		return fn(e)
	}); cerr != nil {
		return cerr
	}
	return err
}

// CopyJobFacts visits every checkpoint fact in key order: by job id, then
// index.
func (t *tx) CopyJobFacts(fn func(job string, index int, fact json.RawMessage) bool) error {
	var err error
	if cerr := t.keys(k(pJobFact), false, func(key []byte, val valueFn) bool {
		rest := key[len(pJobFact):]
		if len(rest) < 6 || rest[len(rest)-5] != '/' {
			return true // not a fact's key
		}
		job := string(rest[:len(rest)-5])
		index := int(binary.BigEndian.Uint32(rest[len(rest)-4:]))
		var raw []byte
		if raw, err = val(); err != nil {
			return false
		}
		return fn(job, index, json.RawMessage(bytes.Clone(raw)))
	}); cerr != nil {
		return cerr
	}
	return err
}

// CopyStaleDocuments visits every document marked to be filed again, in
// key order: by state key, then document id.
func (t *tx) CopyStaleDocuments(fn func(source, doc string) bool) error {
	return t.keys(k(pStaleSource), false, func(key []byte, _ valueFn) bool {
		source, doc, ok := strings.Cut(string(key[len(pStaleSource):]), "/")
		if !ok {
			return true
		}
		return fn(source, doc)
	})
}

// PutChange writes a change-log entry as it is, replacing one of its
// sequence; the log's end moves to it when it is beyond.
func (t *tx) PutChange(c store.Change) error {
	if err := t.put(seqKey(c.Seq), changeRecord{Seq: c.Seq, At: c.At.UTC(), Kind: c.Kind, Action: c.Action, ID: c.ID}); err != nil {
		return err
	}
	t.seq = max(t.seq, c.Seq)
	return nil
}

// TruncateChanges removes the entries after seq; the log ends there.
func (t *tx) TruncateChanges(after uint64) error {
	var keys [][]byte
	if err := t.keys(k(pLog), false, func(key []byte, _ valueFn) bool {
		if binary.BigEndian.Uint64(key[len(pLog):]) > after {
			keys = append(keys, bytes.Clone(key))
		}
		return true
	}); err != nil {
		return err
	}
	for _, key := range keys {
		if err := t.del(key); err != nil {
			return err
		}
	}
	if t.seq > after {
		t.seq = after
	}
	return nil
}

// PutCopyMeta writes an operational record in the transaction.
func (t *tx) PutCopyMeta(key, value string) error {
	return t.set([]byte(metaPrefix+key), []byte(value))
}

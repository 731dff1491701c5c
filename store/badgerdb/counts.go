package badgerdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/store"
)

// The palace's counts are kept, not recounted: status is polled by
// dashboards and scripts, and a recount scans every drawer's time key
// (about 14 ms at 30,000 drawers, growing with the palace). Every set and
// delete of a counted key family (w/, r/, l/, dt/) looks up the key's
// present state in its transaction and adds the difference to the
// transaction's counts; Update writes the sum into countsKey in the same
// commit, with the change-log sequence it is valid at. Open recounts once
// when the record is missing (a palace from before kept counts) or is not
// at the change log's last sequence (written by a build that did not keep
// them).
const countsKey = metaPrefix + "counts"

// The counts record: the change-log sequence, then wings, rooms, current
// drawers, stored drawers and links, 8 bytes each, big-endian.
const countsLen = 6 * 8

func encodeCounts(seq uint64, c store.Counts) []byte {
	b := make([]byte, countsLen)
	binary.BigEndian.PutUint64(b, seq)
	for i, n := range []int{c.Wings, c.Rooms, c.Drawers, c.DrawersStored, c.Links} {
		binary.BigEndian.PutUint64(b[8*(i+1):], uint64(int64(n)))
	}
	return b
}

// readCounts reads the counts record in txn; ok is false when there is
// none or it is not a record.
func readCounts(txn *badger.Txn) (c store.Counts, seq uint64, ok bool, err error) {
	item, err := txn.Get([]byte(countsKey))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return c, 0, false, nil
	}
	if err != nil {
		return c, 0, false, err
	}
	err = item.Value(func(b []byte) error {
		if len(b) != countsLen {
			return nil
		}
		n := func(i int) int { return int(int64(binary.BigEndian.Uint64(b[8*i:]))) }
		seq, ok = binary.BigEndian.Uint64(b), true
		c = store.Counts{Wings: n(1), Rooms: n(2), Drawers: n(3), DrawersStored: n(4), Links: n(5)}
		return nil
	})
	return c, seq, ok, err
}

func addCounts(a, b store.Counts) store.Counts {
	return store.Counts{Wings: a.Wings + b.Wings, Rooms: a.Rooms + b.Rooms, Drawers: a.Drawers + b.Drawers,
		DrawersStored: a.DrawersStored + b.DrawersStored, Links: a.Links + b.Links}
}

func isCurrentFlag(b []byte) bool { return len(b) == 1 && b[0] == 1 }

// count adds to the transaction's counts what setting key to val (or
// deleting it) changes, from the key's present state in the transaction.
func (t *tx) count(key, val []byte, deleting bool) error {
	var field *int
	switch {
	case bytes.HasPrefix(key, []byte(pWing)):
		field = &t.counted.Wings
	case bytes.HasPrefix(key, []byte(pRoom)):
		field = &t.counted.Rooms
	case bytes.HasPrefix(key, []byte(pLink)):
		field = &t.counted.Links
	case bytes.HasPrefix(key, []byte(pDrawerTime)):
		field = &t.counted.DrawersStored
	default:
		return nil
	}
	exists, current := false, false
	item, err := t.txn.Get(key)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return err
	default:
		exists = true
		if field == &t.counted.DrawersStored {
			if err := item.Value(func(b []byte) error { current = isCurrentFlag(b); return nil }); err != nil {
				return err
			}
		}
	}
	switch {
	case deleting && exists:
		*field--
	case !deleting && !exists:
		*field++
	}
	if field == &t.counted.DrawersStored {
		if current {
			t.counted.Drawers--
		}
		if !deleting && isCurrentFlag(val) {
			t.counted.Drawers++
		}
	}
	return nil
}

// keepCounts writes the counts as of this write transaction's commit,
// when its writes changed them or the change log, or the record is stale
// (then recounted, this transaction's writes included).
func (t *tx) keepCounts(lastSeq uint64) error {
	if t.countsStale {
		c, err := t.Recount()
		if err != nil {
			return err
		}
		return tooBig(t.txn.Set([]byte(countsKey), encodeCounts(t.seq, c)))
	}
	if t.counted == (store.Counts{}) && t.seq == lastSeq {
		return nil
	}
	c, _, _, err := readCounts(t.txn)
	if err != nil {
		return err
	}
	return tooBig(t.txn.Set([]byte(countsKey), encodeCounts(t.seq, addCounts(c, t.counted))))
}

// recountIfStale recounts the palace when its counts record is missing
// or not at the change log's last sequence, and keeps the result. A
// store that refuses the write (a full disk) still opens, for reads: its
// counts are recounted on each read until a write rewrites the record.
func (db *DB) recountIfStale(log *slog.Logger) error {
	var stale bool
	err := db.bdb.View(func(txn *badger.Txn) error {
		_, seq, ok, err := readCounts(txn)
		stale = !ok || seq != db.seq
		return err
	})
	if err != nil || !stale {
		return err
	}
	var c store.Counts
	if err := db.bdb.View(func(txn *badger.Txn) (err error) {
		c, err = (&tx{txn: txn}).Recount()
		return err
	}); err != nil {
		return err
	}
	if err := db.bdb.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte(countsKey), encodeCounts(db.seq, c))
	}); err != nil {
		log.Warn("cannot keep the palace's counts; status counts them on each read until a write succeeds", "err", err)
		db.countsStale.Store(true)
	}
	return nil
}

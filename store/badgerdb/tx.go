package badgerdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// Key families.
const (
	pWing       = "w/"   // w/<wingID> -> Wing
	pWingName   = "wn/"  // wn/<name> -> wingID
	pRoom       = "r/"   // r/<roomID> -> Room
	pRoomName   = "rn/"  // rn/<wingID>/<name> -> roomID
	pWingRoom   = "rw/"  // rw/<wingID>/<roomID>
	pDrawer     = "d/"   // d/<drawerID> -> Drawer
	pDrawerName = "dn/"  // dn/<roomID>/<name> -> drawerID (current holder)
	pDrawerTime = "dt/"  // dt/<roomID>/<created ns BE>/<drawerID> -> 1 byte current flag
	pHash       = "xh/"  // xh/<scope>\x00<hash> -> posting list
	pFinger     = "xf/"  // xf/<scope>\x00<fingerprint> -> posting list
	pBand       = "xb/"  // xb/<scope>\x00<band 8 bytes>: posting lists of schema v4, removed by SyncSchema
	pNear       = "xs/"  // xs/<scope>\x00<drawer 16 bytes> -> near-index record (nearindex.go)
	pDedup      = "dd/"  // dd/<drawerID> -> DedupRecord
	pSketch     = "ds/"  // ds/<drawerID> -> MinHash minimums, 2 bytes each
	pLink       = "l/"   // l/<linkID> -> Link
	pDrawerLink = "ld/"  // ld/<drawerID>/<linkID> -> the link's kind, similarity, time (linkEndValue; empty before issue 38)
	pLog        = "log/" // log/<seq BE> -> Change
)

type tx struct {
	txn  *badger.Txn
	snap *badger.Txn // read-only snapshot scanned by keys; txn for views
	ov   *overlay    // pending writes of a write transaction, nil for views
	// postingCache keeps the dedup posting lists this write transaction
	// read or wrote: a drawer write reads each of its ~34 lists to find
	// candidates and again to extend them.
	postingCache map[string][]byte
	near         *nearIndex
	entityKeys   *entityKeys
	entityReady  bool                     // entityKeys checked by this write transaction
	entityCache  map[string]*store.Entity // read or written by this write transaction
	pending      *nearPending             // index changes of a write transaction
	write        bool
	seq          uint64
	now          time.Time
	// counted is what this write transaction's writes add to the kept
	// counts (counts.go); countsStale is DB.countsStale when it began.
	counted     store.Counts
	countsStale bool
	// writes counts the calls of set and del (Writes).
	writes uint64
	// ctx is the transaction's context (View's, Update's): scans check
	// it between keys and stop with its error (cancelled), and the
	// transaction fails with it (a remote backend's slow read is
	// cancelled the same way). done is ctx.Done(), nil for a context
	// that is never cancelled.
	ctx  context.Context
	done <-chan struct{}
	// cancelled is the context's error once a scan stopped on it.
	cancelled error
}

// interrupted is the transaction context's error once it is done, else
// nil; a scan that stops on it is cut short, and the error is remembered
// (cancelled), so that the transaction fails with it even when a caller
// dropped the reader's error.
func (t *tx) interrupted() error {
	if t.cancelled != nil {
		return t.cancelled
	}
	select {
	case <-t.done:
		t.cancelled = t.ctx.Err()
		return t.cancelled
	default:
		return nil
	}
}

func k(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func (t *tx) get(key []byte, v any) (bool, error) {
	item, err := t.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, item.Value(func(b []byte) error { return decode(b, v) })
}

func (t *tx) getRaw(key []byte) ([]byte, error) {
	item, err := t.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

func (t *tx) put(key []byte, v any) error {
	b, err := encode(v)
	if err != nil {
		return err
	}
	return t.set(key, b)
}

// keys visits keys under prefix until fn returns false, or the
// transaction's context is done: then it returns the context's error.
func (t *tx) keys(prefix []byte, reverse bool, fn func(key []byte, val valueFn) bool) error {
	snap := t.snap
	if snap == nil {
		snap = t.txn
	}
	var err error
	scan(snap, t.ov, prefix, reverse, func(key []byte, val valueFn) bool {
		if err = t.interrupted(); err != nil {
			return false
		}
		return fn(key, val)
	})
	return err
}

// set and del write through to the transaction and its overlay: every
// write method writes through them, and nothing else writes a palace
// key. Each counts itself first (Writes), before anything it changes.
func (t *tx) set(key, val []byte) error {
	t.writes++
	if err := t.count(key, val, false); err != nil {
		return err
	}
	if t.ov != nil {
		t.ov.set(key, val)
	}
	return tooBig(t.txn.Set(key, val))
}

func (t *tx) del(key []byte) error {
	t.writes++
	if err := t.count(key, nil, true); err != nil {
		return err
	}
	if t.ov != nil {
		t.ov.del(key)
	}
	return tooBig(t.txn.Delete(key))
}

func (t *tx) Now() time.Time { return t.now }

// Writes is how many times this transaction has called set or del.
func (t *tx) Writes() uint64 { return t.writes }

func (t *tx) Wing(id string) (*store.Wing, error) {
	var w wingRecord
	ok, err := t.get(k(pWing, id), &w)
	if !ok || err != nil {
		return nil, err
	}
	return w.wing(), nil
}

func (t *tx) WingByName(name string) (*store.Wing, error) {
	id, err := t.getRaw(k(pWingName, name))
	if id == nil || err != nil {
		return nil, err
	}
	return t.Wing(string(id))
}

func (t *tx) Wings() ([]store.Wing, error) {
	var out []store.Wing
	var err error
	if cerr := t.keys([]byte(pWingName), false, func(key []byte, val valueFn) bool {
		var id []byte
		if id, err = val(); err != nil {
			return false
		}
		var w *store.Wing
		if w, err = t.Wing(string(id)); err != nil {
			return false
		}
		if w != nil {
			out = append(out, *w)
		}
		return true
	}); cerr != nil {
		return nil, cerr
	}
	return out, err
}

func (t *tx) Room(id string) (*store.Room, error) {
	var r roomRecord
	ok, err := t.get(k(pRoom, id), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.room(), nil
}

func (t *tx) RoomByName(wingID, name string) (*store.Room, error) {
	id, err := t.getRaw(k(pRoomName, wingID, "/", name))
	if id == nil || err != nil {
		return nil, err
	}
	return t.Room(string(id))
}

func (t *tx) Rooms(wingID string) ([]store.Room, error) {
	var out []store.Room
	var err error
	if cerr := t.keys(k(pRoomName, wingID, "/"), false, func(key []byte, val valueFn) bool {
		var id []byte
		if id, err = val(); err != nil {
			return false
		}
		var r *store.Room
		if r, err = t.Room(string(id)); err != nil {
			return false
		}
		if r != nil {
			out = append(out, *r)
		}
		return true
	}); cerr != nil {
		return nil, cerr
	}
	return out, err
}

func (t *tx) Drawer(id string) (*store.Drawer, error) {
	var d drawerRecord
	ok, err := t.get(k(pDrawer, id), &d)
	if !ok || err != nil {
		return nil, err
	}
	return d.drawer(), nil
}

// DrawersByID reads the drawers in this one transaction: Badger has no
// multi-get, and a point read is a memtable and table probe.
func (t *tx) DrawersByID(ids []string) ([]*store.Drawer, error) {
	out := make([]*store.Drawer, len(ids))
	for i, id := range ids {
		d, err := t.Drawer(id)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func (t *tx) DrawerByName(roomID, name string) (*store.Drawer, error) {
	id, err := t.getRaw(k(pDrawerName, roomID, "/", name))
	if id == nil || err != nil {
		return nil, err
	}
	return t.Drawer(string(id))
}

func timeKey(roomID string, created time.Time, id string) []byte {
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(created.UnixNano()))
	return k(pDrawerTime, roomID, "/", string(ts[:]), "/", id)
}

func (t *tx) Drawers(roomID string, current bool, fn func(*store.Drawer) bool) error {
	return t.drawersBefore(roomID, current, nil, fn)
}

func (t *tx) DrawersBefore(roomID string, current bool, createdAt time.Time, id string, fn func(*store.Drawer) bool) error {
	return t.drawersBefore(roomID, current, timeKey(roomID, createdAt, id), fn)
}

// drawersBefore visits the room's drawers newest first, from the time key
// before start on (nil: from the newest).
func (t *tx) drawersBefore(roomID string, current bool, start []byte, fn func(*store.Drawer) bool) error {
	prefix := k(pDrawerTime, roomID, "/")
	var err error
	visit := func(key []byte, val valueFn) bool {
		if current {
			cur := false
			if err = withVal(val, func(b []byte) error { cur = len(b) == 1 && b[0] == 1; return nil }); err != nil {
				return false
			}
			if !cur {
				return true
			}
		}
		id := string(key[len(prefix)+9:])
		var d *store.Drawer
		if d, err = t.Drawer(id); err != nil {
			return false
		}
		if d == nil {
			return true
		}
		return fn(d)
	}
	switch {
	case start == nil:
		if cerr := t.keys(prefix, true, visit); cerr != nil {
			return cerr
		}
	case t.ov != nil:
		// A write transaction sees its own writes through the overlay's
		// merged scan: skip to the position (pages are read in views).
		if cerr := t.keys(prefix, true, func(key []byte, val valueFn) bool {
			if bytes.Compare(key, start) >= 0 {
				return true
			}
			return visit(key, val)
		}); cerr != nil {
			return cerr
		}
	default:
		// One seek to the position: a deep page costs what it reads.
		snap := t.snap
		if snap == nil {
			snap = t.txn
		}
		it := snap.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
			if err = t.interrupted(); err != nil {
				break
			}
			item := it.Item()
			key := item.KeyCopy(nil)
			if bytes.Compare(key, start) >= 0 {
				continue
			}
			if !visit(key, func() ([]byte, error) { return item.ValueCopy(nil) }) {
				break
			}
		}
	}
	return err
}

func (t *tx) DrawerIDs(roomID string) ([]string, error) {
	prefix := k(pDrawerTime, roomID, "/")
	var ids []string
	if cerr := t.keys(prefix, false, func(key []byte, _ valueFn) bool {
		ids = append(ids, string(key[len(prefix)+9:]))
		return true
	}); cerr != nil {
		return nil, cerr
	}
	return ids, nil
}

func (t *tx) HasDrawer(id string) (bool, error) {
	_, err := t.txn.Get(k(pDrawer, id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (t *tx) Neighbours(ds []*store.Drawer, n int) ([][]string, error) {
	out := make([][]string, len(ds))
	if len(ds) == 0 || n <= 0 {
		return out, nil
	}
	snap := t.snap
	if snap == nil {
		snap = t.txn
	}
	// Two iterators over every room's time keys serve all the drawers:
	// one walking back from each drawer, one forward.
	for _, reverse := range []bool{true, false} {
		it := snap.NewIterator(badger.IteratorOptions{Prefix: []byte(pDrawerTime), Reverse: reverse, PrefetchValues: false})
		for i, d := range ds {
			if d == nil {
				continue
			}
			prefix := k(pDrawerTime, d.RoomID, "/")
			if err := t.interrupted(); err != nil {
				it.Close()
				return nil, err
			}
			got := 0
			for it.Seek(timeKey(d.RoomID, d.CreatedAt, d.ID)); it.ValidForPrefix(prefix) && got < n; it.Next() {
				key := it.Item().Key()
				if len(key) < len(prefix)+9 {
					continue
				}
				if id := string(key[len(prefix)+9:]); id != d.ID {
					out[i] = append(out[i], id)
					got++
				}
			}
		}
		it.Close()
	}
	return out, nil
}

func (t *tx) Filed(since time.Time, step time.Duration, buckets int) ([]int, error) {
	out := make([]int, max(buckets, 0))
	if buckets <= 0 || step <= 0 {
		return out, nil
	}
	var rooms []string
	if cerr := t.keys([]byte(pRoom), false, func(key []byte, _ valueFn) bool {
		rooms = append(rooms, string(key[len(pRoom):]))
		return true
	}); cerr != nil {
		return nil, cerr
	}
	snap := t.snap
	if snap == nil {
		snap = t.txn
	}
	from, end := since.UnixNano(), since.Add(step*time.Duration(buckets)).UnixNano()
	it := snap.NewIterator(badger.IteratorOptions{Prefix: []byte(pDrawerTime), PrefetchValues: false})
	defer it.Close()
	// Each room's time keys from since on, until the window's end.
	for _, room := range rooms {
		prefix := k(pDrawerTime, room, "/")
		for it.Seek(timeKey(room, since, "")); it.ValidForPrefix(prefix); it.Next() {
			if err := t.interrupted(); err != nil {
				return nil, err
			}
			key := it.Item().Key()
			if len(key) < len(prefix)+9 {
				continue
			}
			at := int64(binary.BigEndian.Uint64(key[len(prefix) : len(prefix)+8]))
			if at >= end {
				break
			}
			if at >= from {
				out[(at-from)/int64(step)]++
			}
		}
	}
	return out, nil
}

func (t *tx) CountDrawers(roomID string) (current, stored int, err error) {
	if cerr := t.keys(k(pDrawerTime, roomID, "/"), false, func(key []byte, val valueFn) bool {
		stored++
		err = withVal(val, func(b []byte) error {
			if len(b) == 1 && b[0] == 1 {
				current++
			}
			return nil
		})
		return err == nil
	}); cerr != nil {
		return 0, 0, cerr
	}
	return current, stored, err
}

func (t *tx) idsUnder(prefix []byte) ([]string, error) {
	var out []string
	if cerr := t.keys(prefix, false, func(key []byte, _ valueFn) bool {
		out = append(out, string(key[len(prefix):]))
		return true
	}); cerr != nil {
		return nil, cerr
	}
	return out, nil
}

func hashKey(scope, hash string) []byte { return k(pHash, scope, "\x00", hash) }
func fingerKey(scope, fp string) []byte { return k(pFinger, scope, "\x00", fp) }

func (t *tx) DedupByHash(scope, hash string) ([]string, error) {
	return t.postingIDs(hashKey(scope, hash))
}

func (t *tx) DedupByFingerprint(scope, fp string) ([]string, error) {
	return t.postingIDs(fingerKey(scope, fp))
}

func (t *tx) DedupRecord(drawerID string) (*store.DedupRecord, error) {
	var r dedupRecord
	ok, err := t.get(k(pDedup, drawerID), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.record(), nil
}

func (t *tx) Links(drawerID string) ([]store.Link, error) {
	ids, err := t.idsUnder(k(pDrawerLink, drawerID, "/"))
	if err != nil {
		return nil, err
	}
	out := make([]store.Link, 0, len(ids))
	for _, id := range ids {
		l, err := t.Link(id)
		if err != nil {
			return nil, err
		}
		if l != nil {
			out = append(out, *l)
		}
	}
	return out, nil
}

// LinkEnds reads a drawer's link index: each key's value ranks its link
// (linkEndValue); a key written before values were kept has none, and
// its link is read instead.
func (t *tx) LinkEnds(drawerID string) ([]store.LinkEnd, error) {
	prefix := k(pDrawerLink, drawerID, "/")
	var out []store.LinkEnd
	var old []string
	var err error
	if cerr := t.keys(prefix, false, func(key []byte, val valueFn) bool {
		id := string(key[len(prefix):])
		var b []byte
		if b, err = val(); err != nil {
			return false
		}
		if e, ok := decodeLinkEnd(id, b); ok {
			out = append(out, e)
		} else {
			old = append(old, id)
		}
		return true
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	for _, id := range old {
		l, err := t.Link(id)
		if err != nil {
			return nil, err
		}
		if l != nil {
			out = append(out, store.LinkEnd{ID: l.ID, Kind: l.Kind, Similarity: l.Signals.Similarity, CreatedAt: l.CreatedAt})
		}
	}
	return out, nil
}

// linkKinds codes a link's kind in its index value.
var linkKinds = []dedup.Verdict{1: dedup.Exact, 2: dedup.Normalized, 3: dedup.Near}

// linkEndValue is a link index key's value: its kind (one byte), its
// similarity (float64 bits) and creation time (Unix nanoseconds).
func linkEndValue(l *store.Link) []byte {
	b := make([]byte, 17)
	for i, v := range linkKinds {
		if v == l.Kind && i > 0 {
			b[0] = byte(i)
		}
	}
	binary.BigEndian.PutUint64(b[1:], math.Float64bits(l.Signals.Similarity))
	binary.BigEndian.PutUint64(b[9:], uint64(l.CreatedAt.UnixNano()))
	return b
}

func decodeLinkEnd(id string, b []byte) (store.LinkEnd, bool) {
	if len(b) != 17 || b[0] == 0 || int(b[0]) >= len(linkKinds) {
		return store.LinkEnd{}, false
	}
	return store.LinkEnd{ID: id, Kind: linkKinds[b[0]], Similarity: math.Float64frombits(binary.BigEndian.Uint64(b[1:])),
		CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(b[9:]))).UTC()}, true
}

func (t *tx) Link(id string) (*store.Link, error) {
	var l linkRecord
	ok, err := t.get(k(pLink, id), &l)
	if !ok || err != nil {
		return nil, err
	}
	return l.link(), nil
}

func seqKey(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return k(pLog, string(b[:]))
}

func (t *tx) Changes(after uint64, fn func(store.Change) bool) error {
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pLog), PrefetchValues: true, PrefetchSize: 100})
	defer it.Close()
	var err error
	for it.Seek(seqKey(after + 1)); it.ValidForPrefix([]byte(pLog)); it.Next() {
		if err = t.interrupted(); err != nil {
			return err
		}
		var c changeRecord
		if err = it.Item().Value(func(b []byte) error { return decode(b, &c) }); err != nil {
			return err
		}
		if !fn(c.change()) {
			break
		}
	}
	return nil
}

func (t *tx) LastSeq() (uint64, error) {
	var seq uint64
	if cerr := t.keys([]byte(pLog), true, func(key []byte, _ valueFn) bool {
		seq = binary.BigEndian.Uint64(key[len(pLog):])
		return false
	}); cerr != nil {
		return 0, cerr
	}
	return seq, nil
}

// Counts is the palace's kept counts (counts.go), as of this view; a
// write transaction's own writes included.
func (t *tx) Counts() (store.Counts, error) {
	if t.countsStale {
		return t.Recount()
	}
	c, _, _, err := readCounts(t.txn)
	if err != nil {
		return c, err
	}
	return addCounts(c, t.counted), nil
}

// Recount counts the palace by scanning its keys: what Counts keeps.
func (t *tx) Recount() (store.Counts, error) {
	var err error
	n := func(prefix string) int {
		n := 0
		if cerr := t.keys([]byte(prefix), false, func([]byte, valueFn) bool { n++; return true }); cerr != nil {
			err = cerr
		}
		return n
	}
	c := store.Counts{Wings: n(pWing), Rooms: n(pRoom), Links: n(pLink)}
	if err != nil {
		return store.Counts{}, err
	}
	if cerr := t.keys([]byte(pDrawerTime), false, func(key []byte, val valueFn) bool {
		c.DrawersStored++
		err = withVal(val, func(b []byte) error {
			if isCurrentFlag(b) {
				c.Drawers++
			}
			return nil
		})
		return err == nil
	}); cerr != nil {
		return store.Counts{}, cerr
	}
	return c, err
}

// Writes.

func (t *tx) PutWing(w *store.Wing) error {
	if err := t.put(k(pWing, w.ID), wingRec(w)); err != nil {
		return err
	}
	return t.set(k(pWingName, w.Name), []byte(w.ID))
}

func (t *tx) DeleteWing(w *store.Wing) error {
	if err := t.del(k(pWing, w.ID)); err != nil {
		return err
	}
	return t.del(k(pWingName, w.Name))
}

func (t *tx) PutRoom(r *store.Room) error {
	if err := t.put(k(pRoom, r.ID), roomRec(r)); err != nil {
		return err
	}
	if err := t.set(k(pRoomName, r.WingID, "/", r.Name), []byte(r.ID)); err != nil {
		return err
	}
	return t.set(k(pWingRoom, r.WingID, "/", r.ID), nil)
}

func (t *tx) DeleteRoom(r *store.Room) error {
	for _, key := range [][]byte{k(pRoom, r.ID), k(pRoomName, r.WingID, "/", r.Name), k(pWingRoom, r.WingID, "/", r.ID)} {
		if err := t.del(key); err != nil {
			return err
		}
	}
	return nil
}

func currentFlag(d *store.Drawer) []byte {
	if d.Current() {
		return []byte{1}
	}
	return []byte{0}
}

func (t *tx) PutDrawer(d *store.Drawer, prev *store.Drawer) error {
	if err := t.put(k(pDrawer, d.ID), drawerRec(d)); err != nil {
		return err
	}
	if err := t.set(timeKey(d.RoomID, d.CreatedAt, d.ID), currentFlag(d)); err != nil {
		return err
	}
	if prev != nil && prev.Name != "" && prev.Current() && !d.Current() {
		// A closed drawer releases its name; a replacement takes it over
		// in its own PutDrawer.
		nk := k(pDrawerName, prev.RoomID, "/", prev.Name)
		if holder, err := t.getRaw(nk); err != nil {
			return err
		} else if string(holder) == d.ID {
			if err := t.del(nk); err != nil {
				return err
			}
		}
	}
	if d.Name != "" && d.Current() {
		return t.set(k(pDrawerName, d.RoomID, "/", d.Name), []byte(d.ID))
	}
	return nil
}

func (t *tx) DeleteDrawer(d *store.Drawer) error {
	if err := t.del(k(pDrawer, d.ID)); err != nil {
		return err
	}
	if err := t.deleteEmbeddings(d.ID); err != nil {
		return err
	}
	if err := t.del(timeKey(d.RoomID, d.CreatedAt, d.ID)); err != nil {
		return err
	}
	if d.Name != "" {
		nk := k(pDrawerName, d.RoomID, "/", d.Name)
		if holder, err := t.getRaw(nk); err != nil {
			return err
		} else if string(holder) == d.ID {
			return t.del(nk)
		}
	}
	return nil
}

// The sketch value: 2-byte count n, n minimums of 2 bytes, then the
// normalised text.
func (t *tx) DedupSketch(drawerID string) ([]uint16, string, error) {
	raw, err := t.getRaw(k(pSketch, drawerID))
	if err != nil || len(raw) < 2 {
		return nil, "", err
	}
	n := int(binary.BigEndian.Uint16(raw))
	if len(raw) < 2+2*n {
		return nil, "", nil
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.BigEndian.Uint16(raw[2+2*i:])
	}
	return out, string(raw[2+2*n:]), nil
}

// sketchValue encodes a sketch value (see DedupSketch).
func sketchValue(mins []uint16, norm string) []byte {
	raw := make([]byte, 2+2*len(mins), 2+2*len(mins)+len(norm))
	binary.BigEndian.PutUint16(raw, uint16(len(mins)))
	for i, m := range mins {
		binary.BigEndian.PutUint16(raw[2+2*i:], m)
	}
	return append(raw, norm...)
}

func (t *tx) PutDedup(r *store.DedupRecord) error {
	if err := t.put(k(pDedup, r.DrawerID), dedupRec(r)); err != nil {
		return err
	}
	if len(r.Mins) > 0 {
		if err := t.set(k(pSketch, r.DrawerID), sketchValue(r.Mins, r.Norm)); err != nil {
			return err
		}
	}
	if err := t.addPosting(hashKey(r.Scope, r.Hash), r.DrawerID, r.NormLen); err != nil {
		return err
	}
	if err := t.addPosting(fingerKey(r.Scope, r.Fingerprint), r.DrawerID, r.NormLen); err != nil {
		return err
	}
	if e, ok := entryOf(r); ok {
		// Load the scope now, so that reads see it from this commit on.
		if _, err := t.nearScope(r.Scope, true); err != nil {
			return err
		}
		if err := t.set(nearKey(r.Scope, e.id), encodeNear(e)); err != nil {
			return err
		}
		t.pending.add(r.Scope, e)
		if t.pending.deferred[r.Scope] {
			t.pending.late = append(t.pending.late, [2]string{r.Scope, r.DrawerID})
		}
	}
	return nil
}

func (t *tx) DeleteDedup(r *store.DedupRecord) error {
	if err := t.del(k(pDedup, r.DrawerID)); err != nil {
		return err
	}
	if err := t.del(k(pSketch, r.DrawerID)); err != nil {
		return err
	}
	if u, err := uuid.Parse(r.DrawerID); err == nil {
		if err := t.del(nearKey(r.Scope, u)); err != nil {
			return err
		}
		t.pending.remove(r.Scope, u)
	}
	keys := [][]byte{hashKey(r.Scope, r.Hash), fingerKey(r.Scope, r.Fingerprint)}
	for _, key := range keys {
		if err := t.removePosting(key, r.DrawerID); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutLink(l *store.Link) error {
	if err := t.put(k(pLink, l.ID), linkRec(l)); err != nil {
		return err
	}
	end := linkEndValue(l)
	if err := t.set(k(pDrawerLink, l.Older, "/", l.ID), end); err != nil {
		return err
	}
	return t.set(k(pDrawerLink, l.Newer, "/", l.ID), end)
}

func (t *tx) DeleteLink(l *store.Link) error {
	for _, key := range [][]byte{k(pLink, l.ID), k(pDrawerLink, l.Older, "/", l.ID), k(pDrawerLink, l.Newer, "/", l.ID)} {
		if err := t.del(key); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Log(kind, action, id string) error {
	// The sequence moves on only once its record is written (counted by
	// set): a failure before leaves nothing to roll back.
	seq := t.seq + 1
	if err := t.put(seqKey(seq), changeRecord{Seq: seq, At: t.now, Kind: kind, Action: action, ID: id}); err != nil {
		return err
	}
	t.seq = seq
	return nil
}

func withVal(val valueFn, fn func([]byte) error) error {
	b, err := val()
	if err != nil {
		return err
	}
	return fn(b)
}

// tooBig reports Badger's transaction size limit as store.ErrTxnTooBig, so
// the writer can split its batch.
func tooBig(err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return store.ErrTxnTooBig
	}
	return err
}

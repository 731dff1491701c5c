package badgerdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// The near-duplicate index: the MinHash bands of every drawer of a dedup
// scope, held in memory. A drawer write looks up its 32 bands; reading them
// from Badger cost two point reads per band (find, then rewrite the posting
// list) and one per candidate (its minimums), which made every write in a
// room of 100,000 drawers spend more than a millisecond in the LSM tree.
//
// The store keeps one record per drawer, xs/<scope>\0<id> (normalised
// length, bands, low bytes of the minimums); a scope is loaded from those
// records by the first write transaction that needs it and kept in step by
// every commit after. Read transactions see loaded scopes only: they are
// advisory (store.Prepare); the writer judges the rest.

// nearRecordSize is the size of an xs/ value: length, bands, low bytes of
// the minimums, character bag.
const nearRecordSize = 4 + dedup.Bands*8 + dedup.Bands*dedup.Rows + dedup.BagSize

type nearIndex struct {
	mu     sync.RWMutex
	scopes map[string]*scopeIndex
	// loading holds the scopes being loaded in the background: the changes
	// committed since the load's snapshot, replayed when it is published,
	// and the drawers written meanwhile, whose near judgment waits for it.
	loading map[string]*scopeLoad
	// big is the size from which a scope loads in the background.
	big int
	// late receives the drawers whose near judgment was deferred, once
	// their scope is loaded. It must not block.
	late func(ids []string)

	bdb      *badger.DB
	log      *slog.Logger
	wg       sync.WaitGroup
	stopping atomic.Bool
}

// scopeLoad is a scope being loaded in the background.
type scopeLoad struct {
	ops  []*nearPending
	late []string
	done chan struct{} // closed when the load ends, published or not
}

// DefaultBigScope is the number of drawers from which a scope's near index
// is loaded in the background instead of inside the write that needs it:
// about 150 ms of loading on this project's benchmark machine.
const DefaultBigScope = 50_000

type scopeIndex struct {
	ids  [][16]byte
	lens []uint32 // 0: removed
	// recs holds each entry's dedup.Bands*dedup.Rows low bytes of its
	// minimums then its dedup.BagSize character bag, recChunk entries a
	// chunk: it grows a chunk at a time, never by copying the whole.
	recs [][]byte
	byID map[[16]byte]int32
	// bands maps each band key to the entries carrying it.
	bands bandIndex
}

const (
	minsLen   = dedup.Bands * dedup.Rows
	recLen    = minsLen + dedup.BagSize
	recChunk  = 4096
	recChunkB = recChunk * recLen
)

// rec is entry o's minimums and bag.
func (s *scopeIndex) rec(o int32) []byte {
	c := s.recs[int(o)/recChunk]
	i := int(o) % recChunk * recLen
	return c[i : i+recLen : i+recLen]
}

// roomFor makes room for entry o's record. The first chunk starts at
// firstRecs records and doubles up to recChunk, so a room of a few drawers
// holds a few records, not a whole chunk (786 KB: a palace of a thousand
// small rooms held 265 KB a drawer); the chunks after it are whole.
func (s *scopeIndex) roomFor(o int32) {
	c, need := int(o)/recChunk, (int(o)%recChunk+1)*recLen
	switch {
	case c == len(s.recs) && c > 0:
		s.recs = append(s.recs, make([]byte, recChunkB))
	case c == len(s.recs):
		s.recs = append(s.recs, make([]byte, firstRecs*recLen))
	case len(s.recs[c]) < need:
		grown := make([]byte, min(recChunkB, max(need, 2*len(s.recs[c]))))
		copy(grown, s.recs[c])
		s.recs[c] = grown
	}
}

// firstRecs is the records the first chunk of a scope starts with.
const firstRecs = 8

// live reports whether entry o is current.
func (s *scopeIndex) live(o int32) bool { return s.lens[o] != 0 }

func newNearIndex() *nearIndex {
	return &nearIndex{scopes: map[string]*scopeIndex{}, loading: map[string]*scopeLoad{}, big: DefaultBigScope, log: slog.New(slog.DiscardHandler)}
}

func newScopeIndex() *scopeIndex {
	return &scopeIndex{byID: map[[16]byte]int32{}}
}

// scopeIndexFor is an empty scope, for a load of about n entries: its
// per-entry arrays hold them without growing, and the band index collects
// their pairs until seal.
func scopeIndexFor(n int) *scopeIndex {
	s := &scopeIndex{ids: make([][16]byte, 0, n), lens: make([]uint32, 0, n),
		recs: make([][]byte, 0, n/recChunk+1), byID: make(map[[16]byte]int32, n)}
	s.bands.startBulk(n * dedup.Bands)
	return s
}

// seal ends the load scopeIndexFor began; s is then ready for lookups.
func (s *scopeIndex) seal() *scopeIndex {
	s.bands.seal()
	return s
}

// nearEntry is one drawer of a scope as the index keeps it.
type nearEntry struct {
	id    [16]byte
	n     uint32
	bands []uint64
	mins  []byte
	bag   []byte
}

func bandWord(b [8]byte) uint64 { return binary.BigEndian.Uint64(b[:]) }

func entryOf(r *store.DedupRecord) (nearEntry, bool) {
	u, err := uuid.Parse(r.DrawerID)
	if err != nil || len(r.Bands) != dedup.Bands || len(r.Mins) != dedup.Bands*dedup.Rows {
		return nearEntry{}, false
	}
	e := nearEntry{id: u, n: uint32(max(r.NormLen, 1)), bands: make([]uint64, len(r.Bands)), mins: make([]byte, len(r.Mins)), bag: append([]byte(nil), r.Bag[:]...)}
	for i, b := range r.Bands {
		e.bands[i] = bandWord(b)
	}
	for i, m := range r.Mins {
		e.mins[i] = byte(m)
	}
	return e, true
}

func encodeNear(e nearEntry) []byte {
	raw := make([]byte, nearRecordSize)
	binary.BigEndian.PutUint32(raw, e.n)
	for i, b := range e.bands {
		binary.BigEndian.PutUint64(raw[4+8*i:], b)
	}
	copy(raw[4+8*dedup.Bands:], e.mins)
	copy(raw[4+8*dedup.Bands+len(e.mins):], e.bag)
	return raw
}

// decodeNear decodes a record into bands (dedup.Bands long, reused by
// the caller: add keeps none of it); the entry's mins and bag alias raw.
func decodeNear(id []byte, raw []byte, bands []uint64) (nearEntry, bool) {
	if len(raw) != nearRecordSize || len(id) != 16 {
		return nearEntry{}, false
	}
	e := nearEntry{n: binary.BigEndian.Uint32(raw), bands: bands, mins: raw[4+8*dedup.Bands : nearRecordSize-dedup.BagSize], bag: raw[nearRecordSize-dedup.BagSize:]}
	copy(e.id[:], id)
	for i := range e.bands {
		e.bands[i] = binary.BigEndian.Uint64(raw[4+8*i:])
	}
	return e, true
}

func nearKey(scope string, id [16]byte) []byte { return k(pNear, scope, "\x00", string(id[:])) }

func (s *scopeIndex) add(e nearEntry) {
	if _, ok := s.byID[e.id]; ok {
		return
	}
	ord := int32(len(s.ids))
	s.ids = append(s.ids, e.id)
	s.lens = append(s.lens, e.n)
	s.roomFor(ord)
	r := s.rec(ord)
	copy(r, e.mins)
	copy(r[minsLen:], e.bag)
	s.byID[e.id] = ord
	for _, w := range e.bands {
		s.bands.add(bandKey32(w), ord, s.live)
	}
}

func (s *scopeIndex) remove(id [16]byte) {
	if ord, ok := s.byID[id]; ok {
		s.lens[ord] = 0
		delete(s.byID, id)
		s.bands.removed++
	}
}

// visit calls fn once for each live entry sharing a band with bands and
// with a length in [lo, hi].
func (s *scopeIndex) visit(bands []uint64, lo, hi int, fn func(ord int32)) {
	// A bitmap of the entries seen, reused across lookups: a fresh one
	// cost 125 KB a write in a room of a million drawers, and a map was
	// slower for the thousands of postings a big room's bands hold. Only
	// the words set are cleared after.
	seen, _ := seenPool.Get().(*seenSet)
	if seen == nil {
		seen = &seenSet{}
	}
	need := (len(s.ids) + 63) / 64
	if cap(seen.bits) < need {
		seen.bits = make([]uint64, need)
	}
	bits := seen.bits[:need]
	defer func() {
		for _, w := range seen.touched {
			bits[w] = 0
		}
		seen.touched = seen.touched[:0]
		seenPool.Put(seen)
	}()
	try := func(o int32) {
		w, b := o/64, uint64(1)<<(o%64)
		if n := int(s.lens[o]); n != 0 && n >= lo && n <= hi && bits[w]&b == 0 {
			if bits[w] == 0 {
				seen.touched = append(seen.touched, w)
			}
			bits[w] |= b
			fn(o)
		}
	}
	for _, w := range bands {
		s.bands.visit(bandKey32(w), try)
	}
}

// nearPending holds a write transaction's index changes until commit.
type nearPending struct {
	adds    []*pendingNear
	byBand  map[string]map[uint64][]int // scope -> band -> index in adds
	byID    map[[16]byte]int
	removed map[[16]byte]string // id -> scope, committed entries removed
	// deferred lists the scopes this transaction found loading; late the
	// drawers it wrote into them (scope, id).
	deferred map[string]bool
	late     [][2]string
}

type pendingNear struct {
	scope string
	e     nearEntry
	gone  bool
}

func newNearPending() *nearPending {
	return &nearPending{byBand: map[string]map[uint64][]int{}, byID: map[[16]byte]int{}, removed: map[[16]byte]string{}, deferred: map[string]bool{}}
}

func (p *nearPending) add(scope string, e nearEntry) {
	if i, ok := p.byID[e.id]; ok && !p.adds[i].gone {
		return
	}
	i := len(p.adds)
	p.adds = append(p.adds, &pendingNear{scope: scope, e: e})
	p.byID[e.id] = i
	m := p.byBand[scope]
	if m == nil {
		m = map[uint64][]int{}
		p.byBand[scope] = m
	}
	for _, b := range e.bands {
		m[b] = append(m[b], i)
	}
}

func (p *nearPending) remove(scope string, id [16]byte) {
	if i, ok := p.byID[id]; ok {
		p.adds[i].gone = true
	}
	p.removed[id] = scope
}

// nearScope returns a loaded scope, loading it from the transaction's
// snapshot when load is set; nil when it is not loaded. A scope of at
// least big drawers is not loaded here: its load starts in the background
// and the transaction records that its near judgment is deferred.
func (t *tx) nearScope(scope string, load bool) (*scopeIndex, error) {
	ix := t.near
	ix.mu.RLock()
	s := ix.scopes[scope]
	_, busy := ix.loading[scope]
	ix.mu.RUnlock()
	if s != nil || !load {
		return s, nil
	}
	if busy {
		t.pending.deferred[scope] = true
		return nil, nil
	}
	// Only write transactions load or start loads, one at a time (DB.Update
	// holds its lock), from the committed state: nothing commits meanwhile.
	prefix := k(pNear, scope, "\x00")
	n := 0 // counted from the keys alone (up to big), to size the scope once
	scan(t.snap, nil, prefix, false, func([]byte, valueFn) bool { n++; return n < ix.big })
	if n >= ix.big && ix.bdb != nil {
		ix.startLoad(scope)
		t.pending.deferred[scope] = true
		return nil, nil
	}
	s, err := loadScope(t.snap, scope, n, nil)
	if err != nil {
		return nil, err
	}
	ix.mu.Lock()
	ix.scopes[scope] = s
	ix.mu.Unlock()
	return s, nil
}

// loadScope reads a scope's records from snap; n sizes it. A load stops
// early (with errStopping) when stop is set.
func loadScope(snap *badger.Txn, scope string, n int, stop *atomic.Bool) (*scopeIndex, error) {
	prefix := k(pNear, scope, "\x00")
	s := scopeIndexFor(n)
	// Each record is decoded in place (add copies what it keeps), one
	// bands slice reused: copying every value left about 70 MB of garbage
	// per 100,000 drawers, which the collector let the heap grow by.
	bands := make([]uint64, dedup.Bands)
	it := snap.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	i := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if i++; stop != nil && i%4096 == 0 && stop.Load() {
			return nil, errStopping
		}
		item := it.Item()
		err := item.Value(func(raw []byte) error {
			if e, ok := decodeNear(item.Key()[len(prefix):], raw, bands); ok {
				s.add(e)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s.seal(), nil
}

var errStopping = errors.New("the store is closing")

// startLoad begins loading a scope in the background from a snapshot taken
// now. The caller holds the writer's lock, so the snapshot and the start
// of change buffering see the same commit.
func (ix *nearIndex) startLoad(scope string) *scopeLoad {
	snap := ix.bdb.NewTransaction(false)
	l := &scopeLoad{done: make(chan struct{})}
	ix.mu.Lock()
	ix.loading[scope] = l
	ix.mu.Unlock()
	ix.wg.Add(1)
	go ix.load(scope, snap)
	return l
}

// load runs a background load: it reads the snapshot, replays the changes
// committed since, publishes the scope and hands the drawers written
// meanwhile to late. A failure (or a panic) drops the load; the next write
// into the scope starts another.
func (ix *nearIndex) load(scope string, snap *badger.Txn) {
	defer ix.wg.Done()
	defer snap.Discard()
	t0 := time.Now()
	var s *scopeIndex
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		n := 0
		scan(snap, nil, k(pNear, scope, "\x00"), false, func([]byte, valueFn) bool { n++; return true })
		s, err = loadScope(snap, scope, n, &ix.stopping)
		return err
	}()
	ix.mu.Lock()
	l := ix.loading[scope]
	delete(ix.loading, scope)
	defer close(l.done)
	size := 0
	if err == nil {
		for _, p := range l.ops {
			p.applyTo(s, scope)
		}
		ix.scopes[scope] = s
		size = len(s.byID)
	}
	ix.mu.Unlock()
	if err != nil {
		if !errors.Is(err, errStopping) {
			ix.log.Error("loading a near-duplicate index failed; the next write into its room retries", "scope", scope, "err", err)
		}
		return
	}
	ix.log.Info("near-duplicate index loaded in the background", "scope", scope, "drawers", size,
		"took", time.Since(t0).Round(time.Millisecond), "deferred", len(l.late))
	if len(l.late) > 0 && ix.late != nil {
		ix.late(l.late)
	}
}

// applyTo applies a committed transaction's changes of one scope to s.
func (p *nearPending) applyTo(s *scopeIndex, scope string) {
	for id, sc := range p.removed {
		if sc == scope {
			s.remove(id)
		}
	}
	for _, a := range p.adds {
		if !a.gone && a.scope == scope {
			s.add(a.e)
		}
	}
}

// touches reports whether p changes scope.
func (p *nearPending) touches(scope string) bool {
	if p.byBand[scope] != nil {
		return true
	}
	for _, sc := range p.removed {
		if sc == scope {
			return true
		}
	}
	return false
}

// preload starts a background load of every scope of at least big drawers
// that is not loaded yet, one after another, so that the first writes
// after a start find them loaded or loading. lock is the writer's lock.
func (ix *nearIndex) preload(lock sync.Locker) {
	ix.wg.Add(1)
	go func() {
		defer ix.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				ix.log.Error("preloading near-duplicate indexes failed", "panic", p)
			}
		}()
		var big []string
		err := ix.bdb.View(func(txn *badger.Txn) error {
			counts := map[string]int{}
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pNear)})
			defer it.Close()
			for it.Rewind(); it.Valid() && !ix.stopping.Load(); it.Next() {
				key := it.Item().Key()[len(pNear):]
				if i := bytes.IndexByte(key, 0); i >= 0 {
					counts[string(key[:i])]++
				}
			}
			for sc, n := range counts {
				if n >= ix.big {
					big = append(big, sc)
				}
			}
			return nil
		})
		if err != nil {
			ix.log.Error("preloading near-duplicate indexes failed", "err", err)
			return
		}
		for _, sc := range big {
			if ix.stopping.Load() {
				return
			}
			lock.Lock()
			ix.mu.RLock()
			_, loaded := ix.scopes[sc]
			l := ix.loading[sc]
			ix.mu.RUnlock()
			if !loaded && l == nil {
				l = ix.startLoad(sc)
			}
			lock.Unlock()
			// One at a time: wait for this load before the next (a
			// closing store ends it early).
			if l != nil {
				<-l.done
			}
		}
	}()
}

// DedupNear visits the current drawers of a scope that share a band with
// bands and whose normalised length is within [lo, hi].
func (t *tx) DedupNear(scope string, bands [][8]byte, lo, hi int, fn func(store.NearCandidate)) error {
	words := make([]uint64, len(bands))
	for i, b := range bands {
		words[i] = bandWord(b)
	}
	s, err := t.nearScope(scope, t.write)
	if err != nil {
		return err
	}
	if s != nil {
		if !t.write {
			t.near.mu.RLock()
			defer t.near.mu.RUnlock()
		}
		s.visit(words, lo, hi, func(o int32) {
			id := s.ids[o]
			if t.pending != nil {
				if _, gone := t.pending.removed[id]; gone {
					return
				}
			}
			r := s.rec(o)
			fn(store.NearCandidate{ID: id, NormLen: int(s.lens[o]), Mins: r[:minsLen], Bag: r[minsLen:]})
		})
	}
	if t.pending == nil {
		return nil
	}
	m := t.pending.byBand[scope]
	done := map[int]bool{}
	for _, b := range words {
		for _, i := range m[b] {
			a := t.pending.adds[i]
			if done[i] || a.gone || int(a.e.n) < lo || int(a.e.n) > hi {
				continue
			}
			done[i] = true
			fn(store.NearCandidate{ID: a.e.id, NormLen: int(a.e.n), Mins: a.e.mins, Bag: a.e.bag})
		}
	}
	return nil
}

// applyNear publishes a committed transaction's index changes to the
// loaded scopes.
func (db *DB) applyNear(p *nearPending) {
	if p == nil || (len(p.adds) == 0 && len(p.removed) == 0 && len(p.late) == 0) {
		return
	}
	db.near.mu.Lock()
	var now []string
	defer func() {
		db.near.mu.Unlock()
		if len(now) > 0 && db.near.late != nil {
			db.near.late(now)
		}
	}()
	for scope, l := range db.near.loading {
		if p.touches(scope) {
			l.ops = append(l.ops, p)
		}
	}
	for _, sl := range p.late {
		if l := db.near.loading[sl[0]]; l != nil {
			l.late = append(l.late, sl[1])
		} else {
			// Loaded while this transaction ran: judge it now.
			now = append(now, sl[1])
		}
	}
	for id, scope := range p.removed {
		if s := db.near.scopes[scope]; s != nil {
			s.remove(id)
		}
	}
	for _, a := range p.adds {
		if a.gone {
			continue
		}
		if s := db.near.scopes[a.scope]; s != nil {
			s.add(a.e)
		}
	}
}

// seenSet is visit's reusable bitmap with the words it set.
type seenSet struct {
	bits    []uint64
	touched []int32
}

var seenPool sync.Pool

// bandTable maps 32-bit band keys to an int32 (in bandIndex, the newest
// recent pair of the key) with open addressing: eight bytes a slot, where a Go map spent about thirty;
// a slot's key and value sit side by side, so a probe misses the cache
// once, not twice. Key 0 marks an empty slot, so keys are stored with their
// low bit set; two band keys that agree in their other 31 bits share a
// slot, which only adds candidates that the filters after it drop.
type bandTable struct {
	slots []bandSlot
	n     int
}

type bandSlot struct {
	key uint32
	val int32
}

func bandKey32(w uint64) uint32 { return (uint32(w) ^ uint32(w>>32)*0x9e3779b1) | 1 }

func (t *bandTable) slot(k uint32) int {
	mask := len(t.slots) - 1
	i := int(k*0x85ebca6b) & mask
	for t.slots[i].key != 0 && t.slots[i].key != k {
		i = (i + 1) & mask
	}
	return i
}

func (t *bandTable) get(k uint32) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	s := t.slots[t.slot(k)]
	return s.val, s.key == k
}

func (t *bandTable) put(k uint32, v int32) {
	sl := t.at(k)
	if sl.key == 0 {
		t.n++
	}
	*sl = bandSlot{k, v}
}

// at is k's slot, growing the table first if one more key would fill it
// beyond three quarters; an empty slot (key 0) is k's to take, and the
// caller that fills it counts it in n. The pointer is valid until the next
// at or put.
func (t *bandTable) at(k uint32) *bandSlot {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow(2 * len(t.slots))
	}
	return &t.slots[t.slot(k)]
}

// minBandSlots is a band table's least size: a room of a few drawers
// holds a few hundred band pairs.
const minBandSlots = 128

func (t *bandTable) grow(size int) {
	old := t.slots
	t.slots, t.n = make([]bandSlot, max(minBandSlots, size)), 0
	for _, s := range old {
		if s.key != 0 {
			t.put(s.key, s.val)
		}
	}
}

package badgerdb

import (
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/dgraph-io/badger/v4"
)

// entityKeys is a Bloom filter over the entity index keys (enn/, enk/,
// ena/, end/). Resolving a name asks for a dozen lists that mostly do not
// exist (a new name, each deletion of a key); the filter answers those
// without a read of Badger's memtable and tables, and lets a new
// entity's lists be written without reading them first.
//
// It holds every key ever written, so it never answers "absent" for a
// present key: a write transaction adds a key before setting it, a
// discarded transaction leaves only false positives, and a key whose
// list empties stays in. The filter is built from the committed keys by
// the first write transaction that touches an entity (the writer lock is
// held, so nothing commits meanwhile), and rebuilt four times larger once
// the keys added outgrow it. Until then every lookup reads the store.
type entityKeys struct {
	mu       sync.RWMutex
	f        *bloom.BloomFilter
	capacity uint
	added    uint
}

// entityFilterMin is the smallest filter's capacity in keys (1.2 MB at a
// 1% false-positive rate); a palace has about a dozen keys per entity.
var entityFilterMin = 1 << 20

var entityIndexPrefixes = []string{pEntityName, pEntityKey, pEntityAlias, pEntityDeletion}

// mayHave reports whether key may exist: false only when it surely does
// not. A transaction without a filter (nil) reads every key.
func (e *entityKeys) mayHave(key []byte) bool {
	if e == nil {
		return true
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.f == nil || e.f.Test(key)
}

// add records a key about to be written.
func (e *entityKeys) add(key []byte) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f != nil {
		e.f.Add(key)
		e.added++
	}
}

// ready builds the filter, or rebuilds it larger, from a write
// transaction's snapshot before that transaction writes an entity key.
func (e *entityKeys) ready(t *tx) {
	if e == nil || !t.write || t.entityReady {
		return
	}
	t.entityReady = true
	e.mu.RLock()
	ok := e.f != nil && e.added <= e.capacity
	e.mu.RUnlock()
	if ok {
		return
	}
	var keys [][]byte
	for _, p := range entityIndexPrefixes {
		it := t.snap.NewIterator(badger.IteratorOptions{Prefix: []byte(p)})
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		it.Close()
	}
	capacity := max(uint(entityFilterMin), 4*uint(len(keys)))
	f := bloom.NewWithEstimates(capacity, 0.01)
	for _, k := range keys {
		f.Add(k)
	}
	e.mu.Lock()
	e.f, e.capacity, e.added = f, capacity, uint(len(keys))
	e.mu.Unlock()
}

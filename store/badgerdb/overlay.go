package badgerdb

import (
	"bytes"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/btree"
)

// Badger sorts every pending write of a read-write transaction each time
// an iterator opens on it, which makes prefix scans in a large group-commit
// batch quadratic. So a write transaction scans a read-only snapshot taken
// at the same instant and merges an ordered overlay of its own pending
// writes; point reads still go to the write transaction, which keeps them
// in a hash map.

type ovItem struct {
	key     string
	val     []byte
	deleted bool
}

func ovLess(a, b ovItem) bool { return a.key < b.key }

type overlay struct{ t *btree.BTreeG[ovItem] }

func newOverlay() *overlay { return &overlay{t: btree.NewG(32, ovLess)} }

func (o *overlay) set(key, val []byte) {
	o.t.ReplaceOrInsert(ovItem{key: string(key), val: append([]byte(nil), val...)})
}

func (o *overlay) del(key []byte) { o.t.ReplaceOrInsert(ovItem{key: string(key), deleted: true}) }

// prefixEnd is the first key after every key with the prefix, or nil.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// valueFn reads a value lazily.
type valueFn func() ([]byte, error)

// scan visits keys under prefix in order (reverse when asked), merging the
// snapshot with the overlay, until fn returns false.
func scan(snap *badger.Txn, ov *overlay, prefix []byte, reverse bool, fn func(key []byte, val valueFn) bool) {
	it := snap.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: reverse})
	defer it.Close()
	if reverse {
		it.Seek(append(append([]byte{}, prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	} else {
		it.Seek(prefix)
	}
	var pend []ovItem
	if ov != nil {
		visit := func(i ovItem) bool { pend = append(pend, i); return true }
		lo := ovItem{key: string(prefix)}
		if end := prefixEnd(prefix); end != nil {
			if reverse {
				ov.t.DescendLessOrEqual(ovItem{key: string(end)}, func(i ovItem) bool {
					if i.key == string(end) {
						return true
					}
					if i.key < lo.key {
						return false
					}
					return visit(i)
				})
			} else {
				ov.t.AscendRange(lo, ovItem{key: string(end)}, visit)
			}
		} else if reverse {
			ov.t.Descend(func(i ovItem) bool { return i.key >= lo.key && visit(i) })
		} else {
			ov.t.AscendGreaterOrEqual(lo, visit)
		}
	}
	before := func(a, b []byte) bool { // a comes first in the scan order
		if reverse {
			return bytes.Compare(a, b) > 0
		}
		return bytes.Compare(a, b) < 0
	}
	p := 0
	for {
		var snapKey []byte
		if it.ValidForPrefix(prefix) {
			snapKey = it.Item().Key()
		}
		if snapKey == nil && p >= len(pend) {
			return
		}
		if p < len(pend) && (snapKey == nil || !before(snapKey, []byte(pend[p].key))) {
			item := pend[p]
			p++
			if snapKey != nil && bytes.Equal(snapKey, []byte(item.key)) {
				it.Next()
			}
			if item.deleted {
				continue
			}
			if !fn([]byte(item.key), func() ([]byte, error) { return item.val, nil }) {
				return
			}
			continue
		}
		bi := it.Item()
		if !fn(snapKey, func() ([]byte, error) { return bi.ValueCopy(nil) }) {
			return
		}
		it.Next()
	}
}

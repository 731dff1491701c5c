package badgerdb

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/loci-dev/loci/store/dedup"
)

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func randomEntry(r *rand.Rand, i int) nearEntry {
	e := nearEntry{n: uint32(20 + r.IntN(200)), mins: make([]byte, dedup.Bands*dedup.Rows), bag: make([]byte, dedup.BagSize)}
	e.id[0], e.id[1], e.id[2] = byte(i), byte(i>>8), byte(i>>16)
	for range dedup.Bands {
		e.bands = append(e.bands, r.Uint64())
	}
	return e
}

// bytesPerEntry is the live heap the scopes cost per entry, scopes scopes
// of per entries each, added one at a time as commits add them.
func bytesPerEntry(scopes, per int) int64 {
	r := rand.New(rand.NewPCG(uint64(scopes), uint64(per)))
	entries := make([]nearEntry, scopes*per)
	for i := range entries {
		entries[i] = randomEntry(r, i)
	}
	before := heapInUse()
	kept := make([]*scopeIndex, scopes)
	for s := range kept {
		kept[s] = newScopeIndex()
		for _, e := range entries[s*per : (s+1)*per] {
			kept[s].add(e)
		}
	}
	after := heapInUse()
	runtime.KeepAlive(kept)
	runtime.KeepAlive(entries)
	return (after - before) / int64(scopes*per)
}

// The near-duplicate index costs little per drawer (issue 38: a heap
// profile put 38 MB in scopeIndex.add for 3,000 drawers). Each entry holds
// its id, length, minimums and character bag (212 bytes) and its band
// pairs (8 bytes a band); the bound leaves room for the id map and the
// band index's recent table. A room of a few drawers costs about as much
// per drawer as a big one: a scope no longer takes a whole chunk of 4,096
// records (786 KB) for its first drawer.
func TestNearIndexBytesPerDrawer(t *testing.T) {
	const bound = 1000
	if b := bytesPerEntry(1, 20000); b > bound {
		t.Errorf("one room of 20,000 drawers: %d bytes a drawer, want at most %d", b, bound)
	} else {
		t.Logf("one room of 20,000 drawers: %d bytes a drawer", b)
	}
	if b := bytesPerEntry(1000, 3); b > 3*bound {
		t.Errorf("1,000 rooms of 3 drawers: %d bytes a drawer, want at most %d", b, 3*bound)
	} else {
		t.Logf("1,000 rooms of 3 drawers: %d bytes a drawer", b)
	}
}

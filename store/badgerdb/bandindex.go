package badgerdb

import (
	"math/bits"
	"slices"
)

// bandIndex maps the 32-bit band keys of a scope's entries to the entries
// carrying them. It holds each (key, entry) pair once, in eight bytes: a
// sorted run of key<<32|entry words, stored in fixed-size chunks with a
// directory of the keys' top bits, and the pairs added since the run was
// last rebuilt in a small hash table chained through them. When the recent
// pairs reach a sixteenth of the run they are sorted and merged into it,
// chunk by chunk, each chunk of the old run given back as it is consumed.
//
// An open-addressing table of keys with per-key lists cost 256 MB at 800,000
// drawers (at most three quarters full, so up to half of it slack), doubled
// with a copy as it grew, and a list for each shared key; the run is 8 bytes
// a pair whatever the scope's size and never grows by copying.
//
// A key whose live entries reach MaxBandPostings is capped: an
// uninformative band, neither extended nor read again.
type bandIndex struct {
	run    pairRun
	dir    []uint32 // dir[b]: the first run index whose key's top dirBits bits are >= b
	shift  uint     // 32 - dirBits
	recent bandTable
	rpairs []uint64 // recent pairs in the order added
	rprev  []int32  // the previous recent pair of the same key, or -1
	capped map[uint32]struct{}
	// removed counts the entries removed since the last merge: a merge
	// drops their pairs only when there are some.
	removed int
	// bulk collects the pairs of a scope being loaded, sorted once by
	// seal: loading a million drawers pair by pair through the recent
	// table and its merges took half as long again.
	bulk []uint64
}

// startBulk makes the next adds collect their pairs for seal; n is about
// how many.
func (x *bandIndex) startBulk(n int) { x.bulk = make([]uint64, 0, n) }

// seal ends a bulk load: the collected pairs, sorted, become the run (its
// chunks slices of the one array, so nothing is copied), less the keys
// with more than MaxBandPostings entries, which are capped.
func (x *bandIndex) seal() {
	rp := x.bulk
	if rp == nil {
		return
	}
	x.bulk = nil
	slices.Sort(rp)
	w := 0
	for i := 0; i < len(rp); {
		k := uint32(rp[i] >> 32)
		j := i + 1
		for j < len(rp) && uint32(rp[j]>>32) == k {
			j++
		}
		if j-i > MaxBandPostings {
			if x.capped == nil {
				x.capped = map[uint32]struct{}{}
			}
			x.capped[k] = struct{}{}
		} else {
			w += copy(rp[w:], rp[i:j])
		}
		i = j
	}
	rp = rp[:w]
	x.run = pairRun{n: len(rp)}
	for i := 0; i < len(rp); i += chunkLen {
		end := min(i+chunkLen, len(rp))
		x.run.chunks = append(x.run.chunks, rp[i:end:end])
	}
	x.dir, x.shift = buildDir(x.dir, rp)
}

// buildDir is the directory of a sorted run held in one slice.
func buildDir(dir []uint32, rp []uint64) ([]uint32, uint) {
	dirBits := dirBitsFor(len(rp))
	shift := uint(32 - dirBits)
	dir = dir[:0]
	for i, p := range rp {
		for b := uint32(p>>32) >> shift; len(dir) <= int(b); {
			dir = append(dir, uint32(i))
		}
	}
	for len(dir) < 1<<dirBits+1 {
		dir = append(dir, uint32(len(rp)))
	}
	return dir, shift
}

// dirBitsFor sizes a directory for a run of n pairs: about sixteen pairs a
// bucket, so a lookup reads one or two cache lines of the run.
func dirBitsFor(n int) int { return min(max(bits.Len(uint(n/16)), 4), 24) }

const (
	chunkBits = 15
	chunkLen  = 1 << chunkBits
	// minMerge is the fewest recent pairs worth a merge.
	minMerge = 1 << 16
)

// pairRun is a sequence of words in chunks of chunkLen.
type pairRun struct {
	chunks [][]uint64
	n      int
}

func (r *pairRun) at(i int) uint64 { return r.chunks[i>>chunkBits][i&(chunkLen-1)] }

// push appends w, taking a new chunk from spare (or a fresh one) when the
// last is full.
func (r *pairRun) push(w uint64, spare *[][]uint64) {
	if r.n&(chunkLen-1) == 0 {
		var c []uint64
		if k := len(*spare); k > 0 {
			c, *spare = (*spare)[k-1], (*spare)[:k-1]
		} else {
			c = make([]uint64, chunkLen)
		}
		r.chunks = append(r.chunks, c)
	}
	r.chunks[r.n>>chunkBits][r.n&(chunkLen-1)] = w
	r.n++
}

// each calls fn with the entry of every pair of key k, oldest first, and
// reports how many there are; fn may be nil.
func (x *bandIndex) each(k uint32, fn func(ord int32)) int {
	n := 0
	if x.run.n > 0 {
		b := k >> x.shift
		lo, hi := int(x.dir[b]), int(x.dir[b+1])
		want := uint64(k) << 32
		for lo < hi { // the first pair >= want
			m := int(uint(lo+hi) >> 1)
			if x.run.at(m) < want {
				lo = m + 1
			} else {
				hi = m
			}
		}
		for i := lo; i < x.run.n; i++ {
			p := x.run.at(i)
			if uint32(p>>32) != k {
				break
			}
			if fn != nil {
				fn(int32(uint32(p)))
			}
			n++
		}
	}
	if v, ok := x.recent.get(k); ok {
		// The chain runs newest first; visit it oldest first, as added.
		var stack [64]int32
		chain := stack[:0]
		for i := v; i >= 0; i = x.rprev[i] {
			chain = append(chain, i)
		}
		n += len(chain)
		if fn != nil {
			for j := len(chain) - 1; j >= 0; j-- {
				fn(int32(uint32(x.rpairs[chain[j]])))
			}
		}
	}
	return n
}

// add records that entry ord carries key k, unless k is capped; live
// tells which entries are still current when a key reaches the cap.
func (x *bandIndex) add(k uint32, ord int32, live func(int32) bool) {
	if x.bulk != nil {
		x.bulk = append(x.bulk, uint64(k)<<32|uint64(uint32(ord)))
		return
	}
	if _, ok := x.capped[k]; ok {
		return
	}
	if x.each(k, nil) >= MaxBandPostings {
		n := 0
		x.each(k, func(o int32) {
			if live(o) {
				n++
			}
		})
		if n >= MaxBandPostings {
			if x.capped == nil {
				x.capped = map[uint32]struct{}{}
			}
			x.capped[k] = struct{}{}
			return
		}
	}
	i := int32(len(x.rpairs))
	x.rpairs = append(x.rpairs, uint64(k)<<32|uint64(uint32(ord)))
	sl := x.recent.at(k)
	if sl.key == 0 {
		x.rprev = append(x.rprev, -1)
		*sl = bandSlot{k, i}
		x.recent.n++
	} else {
		x.rprev = append(x.rprev, sl.val)
		sl.val = i
	}
	if len(x.rpairs) >= max(minMerge, x.run.n/16) {
		x.merge(live)
	}
}

// visit calls fn with the entries of key k unless it is capped.
func (x *bandIndex) visit(k uint32, fn func(ord int32)) {
	if _, ok := x.capped[k]; !ok {
		x.each(k, fn)
	}
}

// merge sorts the recent pairs into the run, dropping the pairs of entries
// no longer live, and rebuilds the directory.
func (x *bandIndex) merge(live func(int32) bool) {
	rp := x.rpairs
	slices.Sort(rp)
	total := x.run.n + len(rp)
	dirBits := dirBitsFor(total)
	shift := uint(32 - dirBits)
	dir := x.dir[:0]
	if cap(dir) < 1<<dirBits+1 {
		dir = make([]uint32, 0, 1<<dirBits+1)
	}
	old := x.run
	var out pairRun
	out.chunks = make([][]uint64, 0, total/chunkLen+1)
	var spare [][]uint64
	filter := x.removed > 0
	emit := func(p uint64) {
		if filter && !live(int32(uint32(p))) {
			return
		}
		for b := uint32(p>>32) >> shift; len(dir) <= int(b); {
			dir = append(dir, uint32(out.n))
		}
		out.push(p, &spare)
	}
	i, j := 0, 0
	for i < old.n || j < len(rp) {
		if j == len(rp) || (i < old.n && old.at(i) < rp[j]) {
			emit(old.at(i))
			if i++; i&(chunkLen-1) == 0 {
				// A consumed chunk of the old run holds the next ones.
				c := i>>chunkBits - 1
				spare = append(spare, old.chunks[c])
				old.chunks[c] = nil
			}
		} else {
			emit(rp[j])
			j++
		}
	}
	for len(dir) < 1<<dirBits+1 {
		dir = append(dir, uint32(out.n))
	}
	x.run, x.dir, x.shift = out, dir, shift
	x.rpairs, x.rprev, x.removed = rp[:0], x.rprev[:0], 0
	clear(x.recent.slots)
	x.recent.n = 0
}

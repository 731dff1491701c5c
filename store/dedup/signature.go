package dedup

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf8"
)

// Candidate pruning. A room may hold 100,000 drawers, so a new drawer is not
// compared with every one of them. Each drawer of at least MinNearRunes
// normalised characters is indexed under Bands band keys of a MinHash
// signature over its Q-character runs; a new drawer is verified only
// against drawers sharing at least one band key and whose normalised length
// could reach the threshold. With Rows rows per band, a pair whose run
// overlap is J becomes a candidate with probability 1-(1-J^Rows)^Bands.
//
// Runs of four characters, not three: unrelated prose shares about twice as
// many three-character runs as four-character ones, and with 4 rows that is
// some twenty times as many candidates, each costing an exact comparison.
// With 40 bands of 4 rows, pairs at the edge of the 0.9 threshold are still
// found about 98 times in 100, pairs with fewer edits always
// (TestBandKeysRecall).
const (
	Q     = 4
	Bands = 40
	Rows  = 4
	bins  = Bands * Rows
)

// Sketch is what pruning keeps of a text: its band keys, its MinHash
// minimums cut to 16 bits (to estimate run overlap without reading the
// text), and its number of distinct runs (counted only up to LongText
// characters, where MinOverlap's edit bound needs it).
type Sketch struct {
	Bands    [][8]byte
	Mins     []uint16
	Distinct int
	// Bag is the text's character histogram (see MakeBag).
	Bag Bag
}

// BandKeys returns the band keys of normalised text, or nil when the text is
// too short to be a near duplicate. Each key is 8 bytes: band number and a
// hash of that band's minimums. Keys are stable across processes.
func BandKeys(norm string) [][8]byte { return MakeSketch(norm).Bands }

// MakeSketch sketches normalised text; a text too short to be a near
// duplicate has an empty sketch.
//
// The signature is a one-permutation MinHash: each run is hashed once and
// kept in one of Bands*Rows bins if it is that bin's least, and a bin no
// run fell in borrows the value of the first filled bin of its own fixed
// sequence of bins ("optimal densification", Shrivastava 2017). It
// estimates overlap like Bands*Rows independent hash functions at the cost
// of one, so sketching stays a small part of filing a long text.
func MakeSketch(norm string) Sketch {
	n := utf8.RuneCountInString(norm)
	if n < MinNearRunes {
		return Sketch{}
	}
	var mins [bins]uint64
	for i := range mins {
		mins[i] = empty
	}
	var grams map[uint64]struct{}
	if n <= LongText {
		grams = make(map[uint64]struct{}, n)
	}
	eachRun(norm, func(h uint64) {
		if grams != nil {
			grams[h] = struct{}{}
		}
		b := (h >> 32) * bins >> 32
		if v := h & 0xffffffff; v < mins[b] {
			mins[b] = v
		}
	})
	densify(&mins)
	out := make([][8]byte, Bands)
	short := make([]uint16, bins)
	for i, m := range mins {
		short[i] = uint16(m >> 16)
	}
	for b := range Bands {
		h := uint64(b) * 0x9e3779b97f4a7c15
		for k := range Rows {
			h = mix(h ^ mins[b*Rows+k])
		}
		// The top byte carries the band number, so equal minimums in
		// different bands never collide.
		binary.BigEndian.PutUint64(out[b][:], h)
		out[b][0] = byte(b)
	}
	return Sketch{Bands: out, Mins: short, Distinct: len(grams), Bag: MakeBag(norm)}
}

// empty marks a bin no run fell in (bin values are 32-bit).
const empty = math.MaxUint64

// runHash hashes one run of Q runes (21 bits each).
func runHash(w [Q]rune) uint64 {
	x := uint64(w[0]) | uint64(w[1])<<21 | uint64(w[2])<<42
	return mix(x ^ uint64(w[3])*0x9e3779b97f4a7c15)
}

// densify fills each empty bin with the value of the first filled bin of
// its own fixed pseudo-random sequence of bins, so that two texts with the
// same filled bins fill their empty ones alike.
func densify(mins *[bins]uint64) {
	filled := 0
	for _, m := range mins {
		if m != empty {
			filled++
		}
	}
	if filled == 0 || filled == bins {
		return
	}
	orig := *mins
	for i := range mins {
		if orig[i] != empty {
			continue
		}
		for a := uint64(1); ; a++ {
			if j := mix(uint64(i)<<32|a) % bins; orig[j] != empty {
				mins[i] = orig[j]
				break
			}
		}
	}
}

// BagSize is the number of buckets of a Bag.
const BagSize = 32

// Bag is a character histogram in BagSize buckets (ASCII letters each
// their own, other characters folded), counts saturating at 255. An edit
// changes the histogram by at most 2 (a substitution), 1 (an insertion or
// deletion) or 0 (an adjacent swap), and folding buckets or saturating
// counts only shrinks differences, so half the L1 distance of two bags is a
// lower bound of the edit distance of their texts.
type Bag [BagSize]byte

// MakeBag counts the characters of normalised text.
func MakeBag(norm string) Bag {
	var counts [BagSize]int
	for _, r := range norm {
		counts[uint32(r)%BagSize]++
	}
	var b Bag
	for i, c := range counts {
		b[i] = byte(min(c, 255))
	}
	return b
}

// BagDistance is the L1 distance of two bags.
func BagDistance(a, b []byte) int {
	d := 0
	for i := range min(len(a), len(b)) {
		if a[i] > b[i] {
			d += int(a[i] - b[i])
		} else {
			d += int(b[i] - a[i])
		}
	}
	return d
}

// BagCannotReach reports that texts of na and nb runes with these bags
// cannot reach the edit-similarity threshold: their edit distance, at least
// half the bag distance, is more than a near duplicate allows. Above
// LongText similarity is run overlap, which the bags do not bound.
func BagCannotReach(a, b []byte, na, nb int, threshold float64) bool {
	longest := max(na, nb)
	if longest > LongText || len(a) != BagSize || len(b) != BagSize {
		return false
	}
	bound := int((1-threshold)*float64(longest) + 1e-9)
	return (BagDistance(a, b)+1)/2 > bound
}

// Estimate is the share of equal minimums of two sketches: an estimate of
// the overlap (Jaccard) of their Q-character runs.
func Estimate(a, b []uint16) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 1
	}
	eq := 0
	for i := range a {
		if a[i] == b[i] {
			eq++
		}
	}
	return float64(eq) / float64(len(a))
}

// EstimateLow is Estimate against minimums of which only the low byte is
// kept. Two equal minimums have equal low bytes, so it is never below
// Estimate of the full minimums: a floor that Estimate may safely skip
// under, EstimateLow may too.
func EstimateLow(a []uint16, low []byte) float64 { return EstimateBytes(Low(a), low) }

// Low is the low byte of each minimum.
func Low(mins []uint16) []byte {
	out := make([]byte, len(mins))
	for i, m := range mins {
		out[i] = byte(m)
	}
	return out
}

// EstimateBytes is EstimateLow of two sketches' low bytes, compared eight
// at a time: a write in a big room estimates thousands of candidates.
func EstimateBytes(a, b []byte) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 1
	}
	const lo7 = 0x7f7f7f7f7f7f7f7f
	eq, i := 0, 0
	for ; i+8 <= len(a); i += 8 {
		x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
		// The high bit of each byte of t is set where x's byte is zero.
		t := ^(((x & lo7) + lo7) | x | lo7)
		eq += bits.OnesCount64(t)
	}
	for ; i < len(a); i++ {
		if a[i] == b[i] {
			eq++
		}
	}
	return float64(eq) / float64(len(a))
}

// estimateMargin is three standard deviations of Estimate with 160
// minimums (at most 0.5/sqrt(160) each): a drawer is judged without its text
// only when its estimate is that far below what a near duplicate must reach.
const estimateMargin = 3 * 0.0396

// MinOverlap is the lowest run overlap a near duplicate of a text can
// have, less the estimation margin; candidates estimated below it are
// distinct without reading them. distinct is the text's number of distinct
// runs, hi the longest normalised length in its window. An edit removes at
// most Q+1 runs and adds at most Q+1 (an adjacent swap; Q for a
// substitution), so with d edits the overlap is at least
// (distinct-(Q+1)d)/(distinct+(Q+1)d). Above LongText characters similarity
// is the overlap of three-character runs, t or more of them shared; an edit
// that breaks three-character runs breaks as many four-character runs and
// one more, so the four-character overlap is then at least 2t-1 (measured
// by TestMinOverlapNeverSkipsANearPair on long texts). A result of 0 or
// less means no candidate may be skipped.
func MinOverlap(distinct, normLen, hi int, threshold float64) float64 {
	if normLen > LongText {
		return 2*threshold - 1 - estimateMargin
	}
	d := float64(int((1-threshold)*float64(hi)+1e-9)) * (Q + 1)
	a := float64(distinct)
	if a == 0 {
		return 0
	}
	return (a-d)/(a+d) - estimateMargin
}

// LengthWindow is the range of normalised lengths (in runes) that a text of
// n runes can reach the threshold with: edit similarity 1-d/max needs
// |n-m| <= (1-t)*max(n,m).
func LengthWindow(n int, threshold float64) (lo, hi int) {
	if n > LongText {
		// Trigram overlap J >= t needs the smaller set to be at least t of
		// the larger one.
		return int(float64(n)*threshold) - 3, int(float64(n)/threshold) + 3
	}
	return int(math.Floor(float64(n)*threshold - 1e-9)), int(math.Ceil(float64(n)/threshold + 1e-9))
}

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func mix(z uint64) uint64 {
	z = (z ^ (z >> 33)) * 0xff51afd7ed558ccd
	z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53
	return z ^ (z >> 33)
}

// GramSet is a bitmap of the Q-character runs of one text, to rule out
// candidates before the exact comparison (the q-gram lemma): with d edits,
// of which an adjacent swap changes Q+1 runs and any other edit at most Q,
// at least m-Q+1-(Q+1)d of the other text's m-Q+1 runs occur in this one.
// Counting the other text's runs found in the bitmap over-counts (runs
// repeat, bits collide), so a count short of that proves the pair is not
// near, at a few nanoseconds a run instead of the exact comparison's band
// of cells per character.
type GramSet struct {
	bits  [gramBits / 64]uint64
	runes int
}

const gramBits = 1 << 16

// MakeGramSet records the runs of normalised text.
func MakeGramSet(norm string) *GramSet {
	s := &GramSet{}
	var x uint64
	for _, c := range norm {
		x = x<<16 | uint64(c&0xffff)
		if s.runes++; s.runes >= Q {
			b := gramBit(x)
			s.bits[b/64] |= 1 << (b % 64)
		}
	}
	return s
}

// gramBit is a run's bit: the run's four runes (16 bits each; runes beyond
// the first plane share bits, which only over-counts) in one word, one
// multiplication. The set lives for one write, so its hash need not match
// the sketch's.
func gramBit(x uint64) uint64 { return (x * 0x9e3779b97f4a7c15) >> (64 - 16) }

// CannotReach reports that other (normalised) is provably not a near
// duplicate of the set's text under edit similarity: fewer of its runs occur
// in the set than threshold's edits would leave. Above LongText (run
// overlap instead of edits) it reports false.
func (s *GramSet) CannotReach(other string, threshold float64) bool {
	m := utf8.RuneCountInString(other)
	longest := max(s.runes, m)
	if longest > LongText {
		return false
	}
	d := int((1-threshold)*float64(longest) + 1e-9)
	need := m - Q + 1 - (Q+1)*d
	if need <= 0 {
		return false
	}
	hits, n := 0, 0
	var x uint64
	for _, c := range other {
		x = x<<16 | uint64(c&0xffff)
		if n++; n >= Q {
			b := gramBit(x)
			if s.bits[b/64]&(1<<(b%64)) != 0 {
				if hits++; hits >= need {
					return false
				}
			}
		}
	}
	return true
}

// eachRun calls fn with the hash of each Q-character run of text and
// returns the text's length in runes.
func eachRun(text string, fn func(uint64)) int {
	var w0, w1, w2 rune
	n := 0
	for _, c := range text {
		if n++; n >= Q {
			fn(runHash([Q]rune{w0, w1, w2, c}))
		}
		w0, w1, w2 = w1, w2, c
	}
	return n
}

package dedup

import (
	"encoding/binary"
	"math"
	"unicode/utf8"
)

// Candidate pruning. A room may hold 100,000 drawers, so a new drawer is not
// compared with every one of them. Each drawer of at least MinNearRunes
// normalised characters is indexed under Bands band keys of a MinHash
// signature over its three-character runs; a new drawer is verified only
// against drawers sharing at least one band key and whose normalised length
// could reach the threshold. With Rows rows per band, a pair whose run
// overlap is J becomes a candidate with probability 1-(1-J^Rows)^Bands.
const (
	Bands = 32
	Rows  = 4
)

// seeds for the MinHash functions: a fixed table so that signatures stay
// stable across processes and versions of loci.
var seeds = func() [Bands * Rows]uint64 {
	var s [Bands * Rows]uint64
	x := uint64(0x9e3779b97f4a7c15)
	for i := range s {
		// splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		s[i] = z ^ (z >> 31)
	}
	return s
}()

// Sketch is what pruning keeps of a text: its band keys, its MinHash
// minimums cut to 16 bits (to estimate run overlap without reading the
// text), and its number of distinct three-character runs.
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
func MakeSketch(norm string) Sketch {
	if utf8.RuneCountInString(norm) < MinNearRunes {
		return Sketch{}
	}
	var mins [Bands * Rows]uint64
	for i := range mins {
		mins[i] = math.MaxUint64
	}
	r := []rune(norm)
	var buf [12]byte
	// Hash each distinct run once: repetitive long texts cost no more
	// than their distinct runs.
	grams := make(map[uint64]struct{}, len(r))
	for i := 0; i+3 <= len(r); i++ {
		binary.LittleEndian.PutUint32(buf[0:], uint32(r[i]))
		binary.LittleEndian.PutUint32(buf[4:], uint32(r[i+1]))
		binary.LittleEndian.PutUint32(buf[8:], uint32(r[i+2]))
		grams[fnv64(buf[:])] = struct{}{}
	}
	for g := range grams {
		for k, s := range seeds {
			if h := mix(g ^ s); h < mins[k] {
				mins[k] = h
			}
		}
	}
	out := make([][8]byte, Bands)
	short := make([]uint16, len(mins))
	for i, m := range mins {
		short[i] = uint16(m >> 48)
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

// Estimate is the share of equal minimums of two sketches: an unbiased
// estimate of the overlap (Jaccard) of their three-character runs.
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
func EstimateLow(a []uint16, low []byte) float64 {
	if len(a) == 0 || len(a) != len(low) {
		return 1
	}
	eq := 0
	for i := range a {
		if byte(a[i]) == low[i] {
			eq++
		}
	}
	return float64(eq) / float64(len(a))
}

// estimateMargin is three standard deviations of Estimate with 128
// minimums (at most 0.5/sqrt(128) each): a drawer is judged without its text
// only when its estimate is that far below what a near duplicate must reach.
const estimateMargin = 3 * 0.0442

// MinOverlap is the lowest run overlap a near duplicate of a text can
// have, less the estimation margin; candidates estimated below it are
// distinct without reading them. distinct is the text's number of distinct
// runs, hi the longest normalised length in its window. An edit (an adjacent
// swap included) removes at most four runs and adds at most four, so with d
// edits the overlap is at least (distinct-4d)/(distinct+4d). Above LongText
// characters similarity is the overlap itself. A result of 0 or less means
// no candidate may be skipped.
func MinOverlap(distinct, normLen, hi int, threshold float64) float64 {
	if normLen > LongText {
		return threshold - estimateMargin
	}
	d := float64(int((1-threshold)*float64(hi) + 1e-9))
	a := float64(distinct)
	if a == 0 {
		return 0
	}
	return (a-4*d)/(a+4*d) - estimateMargin
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

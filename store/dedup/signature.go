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
	return Sketch{Bands: out, Mins: short, Distinct: len(grams)}
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

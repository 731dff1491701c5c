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

// BandKeys returns the band keys of normalised text, or nil when the text is
// too short to be a near duplicate. Each key is 8 bytes: band number and a
// hash of that band's minimums. Keys are stable across processes.
func BandKeys(norm string) [][8]byte {
	if utf8.RuneCountInString(norm) < MinNearRunes {
		return nil
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
	return out
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

// Package dedup holds the pure rules of duplicate detection: text
// normalisation, the similarity measure, the verdict and the signatures used
// to prune candidates before the exact rule is applied. It does no I/O.
//
// The rules (spec "Deduplication records"):
//   - exact: the same bytes;
//   - normalized: the same words once case, punctuation and whitespace are
//     ignored (accents are not folded);
//   - near: similarity at or above the threshold, where similarity is edit
//     similarity on normalised text with an adjacent swap counted as one
//     edit, or, above LongText characters, the overlap (Jaccard) of
//     three-character runs; texts under MinNearRunes normalised characters
//     are never near;
//   - distinct: anything less alike.
package dedup

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Thresholds of the rules.
const (
	// MinNearRunes is the normalised length under which texts are only
	// ever exact or normalized duplicates.
	MinNearRunes = 12
	// LongText is the normalised length above which similarity is the
	// overlap of three-character runs instead of edit similarity.
	LongText = 2000
	// DefaultThreshold is dedup.near_threshold's default.
	DefaultThreshold = 0.9
)

// Verdict is the outcome of comparing two texts.
type Verdict string

// The verdicts, strongest first.
const (
	Exact      Verdict = "exact"
	Normalized Verdict = "normalized"
	Near       Verdict = "near"
	Distinct   Verdict = "distinct"
)

// Normalize lower-cases text, deletes punctuation and collapses every run
// of whitespace into one space. Accents and symbols are kept.
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			// Invalid bytes are kept as the replacement rune.
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsPunct(r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Hash is the hex SHA-256 of the exact bytes.
func Hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Fingerprint is the hex SHA-256 of the normalised text.
func Fingerprint(norm string) string { return Hash(norm) }

// Signals explain a verdict, as stored on a similar_to link.
type Signals struct {
	SameHash        bool    `json:"same_hash"`
	SameFingerprint bool    `json:"same_fingerprint"`
	Similarity      float64 `json:"similarity"`
	Threshold       float64 `json:"threshold"`
}

// Compare judges text a against text b with the given near threshold.
func Compare(a, b string, threshold float64) (Verdict, Signals) {
	sig := Signals{Threshold: threshold}
	if a == b {
		sig.SameHash, sig.SameFingerprint, sig.Similarity = true, true, 1
		return Exact, sig
	}
	return CompareNormalized(Normalize(a), Normalize(b), threshold)
}

// CompareNormalized judges two texts already normalised, when their bytes
// are known to differ.
func CompareNormalized(na, nb string, threshold float64) (Verdict, Signals) {
	sig := Signals{Threshold: threshold}
	if na == nb {
		sig.SameFingerprint, sig.Similarity = true, 1
		return Normalized, sig
	}
	sig.Similarity = Similarity(na, nb, threshold)
	ra, rb := utf8.RuneCountInString(na), utf8.RuneCountInString(nb)
	if ra < MinNearRunes || rb < MinNearRunes {
		return Distinct, sig
	}
	if sig.Similarity >= threshold-1e-12 {
		return Near, sig
	}
	return Distinct, sig
}

// Similarity of two normalised texts in [0, 1]. Below cutoff the exact value
// is not needed: the result is then some value under cutoff, found without
// finishing the computation. Pass 0 for the exact value.
func Similarity(na, nb string, cutoff float64) float64 {
	a, b := []rune(na), []rune(nb)
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	longest := max(len(a), len(b))
	if longest > LongText {
		return TrigramOverlap(a, b)
	}
	// d <= (1-cutoff)*longest is needed to reach cutoff.
	bound := longest
	if cutoff > 0 {
		bound = int((1-cutoff)*float64(longest) + 1e-9)
	}
	d := OSA(a, b, bound)
	if d > bound {
		return min(1-float64(bound+1)/float64(longest), cutoff-1e-9)
	}
	return 1 - float64(d)/float64(longest)
}

// OSA is the optimal string alignment distance (Levenshtein with an
// adjacent transposition counted as one edit). When the distance exceeds
// bound, some value greater than bound is returned early.
func OSA(a, b []rune, bound int) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	n, m := len(a), len(b)
	if n-m > bound {
		return bound + 1
	}
	if m == 0 {
		return n
	}
	const inf = 1 << 30
	// Three rows from a pool, not cleared: each row writes every cell the
	// next two rows read (its band and one cell either side).
	buf := rowPool.Get().(*[]int32)
	defer rowPool.Put(buf)
	if cap(*buf) < 3*(m+1) {
		*buf = make([]int32, 3*(m+1))
	}
	rows := (*buf)[:3*(m+1)]
	prev2, prev, cur := rows[:m+1], rows[m+1:2*(m+1)], rows[2*(m+1):]
	for j := range prev {
		prev[j] = int32(j)
	}
	for i := 1; i <= n; i++ {
		// Only cells with |i-j| <= bound can lie on a path within bound.
		lo, hi := max(1, i-bound), min(m, i+bound)
		if lo > 1 {
			cur[lo-1] = inf
		} else {
			cur[0] = int32(i)
		}
		rowMin := int32(inf)
		if lo == 1 {
			rowMin = cur[0]
		}
		for j := lo; j <= hi; j++ {
			cost := int32(1)
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if hi < m {
			cur[hi+1] = inf
		}
		if int(rowMin) > bound {
			return bound + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return int(prev[m])
}

// rowPool keeps OSA's rows between calls: a write verifies up to 40
// candidates, each needing three rows of its text's length.
var rowPool = sync.Pool{New: func() any { return new([]int32) }}

// TrigramOverlap is the Jaccard overlap of the sets of three-character runs.
func TrigramOverlap(a, b []rune) float64 {
	sa, sb := trigrams(a), trigrams(b)
	if len(sa) == 0 && len(sb) == 0 {
		return 1
	}
	inter := 0
	for g := range sa {
		if _, ok := sb[g]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

type trigram [3]rune

func trigrams(r []rune) map[trigram]struct{} {
	out := make(map[trigram]struct{}, len(r))
	for i := 0; i+3 <= len(r); i++ {
		out[trigram{r[i], r[i+1], r[i+2]}] = struct{}{}
	}
	return out
}

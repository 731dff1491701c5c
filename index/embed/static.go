package embed

import (
	"context"
	"math"
	"strings"
	"sync"
	"unicode"

	"github.com/loci-dev/loci/index/embed/glove"
)

// StaticDim is the static provider's dimension: the table's 100 and one
// more, set only in the vector of a text with no known word (the
// zero-information vector: orthogonal to every other text's, so it is
// never found semantically, only lexically).
const StaticDim = 101

// NoInformation reports the static provider's vector of a text with no
// known word.
func NoInformation(v []float32) bool {
	return len(v) == StaticDim && v[StaticDim-1] == 1
}

// StaticPipeline names the static provider's text preparation: lower
// case, letter-and-digit words, each weighted by its inverse document
// frequency in the palace when the text is embedded.
const StaticPipeline = "idf-v1"

// DocFreqs gives a palace's document frequencies: how many documents it
// holds and, per word, in how many the word occurs (the lexical index
// keeps both). Words it does not index (stop words) count as in every
// document.
type DocFreqs interface {
	DocFreqs(words []string) (n uint64, df []uint64)
}

// Settler is a DocFreqs that can first let its frequencies reach the
// palace's last write (the lexical index catching up), waiting a bounded
// time. Only stored drawers are embedded after it (ForStored): a query
// is weighed with the frequencies as they are, and never waits.
type Settler interface {
	Settle(ctx context.Context)
}

type forStoredKey struct{}

// ForStored marks ctx as embedding stored drawers (an embed job's batch):
// a provider that weighs words by the palace's document frequencies lets
// them settle first (Settler), so that a burst of filings is embedded
// with the frequencies of the palace that holds it. Without it (a search's
// query, a hit's sentences) the frequencies are read as they are.
func ForStored(ctx context.Context) context.Context {
	return context.WithValue(ctx, forStoredKey{}, true)
}

func forStored(ctx context.Context) bool {
	b, _ := ctx.Value(forStoredKey{}).(bool)
	return b
}

// Static is the built-in provider: the sum of the GloVe vectors of a
// text's words, each weighted by its inverse document frequency in the
// palace (BM25's, positive even for a word in every drawer of a tiny
// palace), without the table's common direction,
// normalised. Pure
// Go, offline, about a hundred thousand sentences a second on a core.
type Static struct {
	Table *glove.Table
	// DF is the palace's document frequencies; nil weighs every word
	// alike. Set it before the first Embed.
	DF DocFreqs

	common []float32 // commonDirection

	mu    sync.Mutex
	cache map[int32]dfEntry // by table row
}

type dfEntry struct {
	df, n uint64 // the word's frequency and the palace's size when read
}

// NewStatic loads the embedded table.
func NewStatic() (*Static, error) {
	t, err := glove.Load()
	if err != nil {
		return nil, err
	}
	return &Static{Table: t, cache: map[int32]dfEntry{}, common: commonDirection(t, commonWords)}, nil
}

// commonWords is how many of the most frequent words define the common
// direction.
const commonWords = 10000

// commonDirection is the mean of the unit vectors of the table's n most
// frequent words, normalised. Averaged word vectors all lean along it
// (it carries frequency, not meaning), so every text's vector has its
// part along it removed: on LoCoMo's public half, exact cosine R@10 0.473
// without, 0.515 with (the mean of the top 1,000 words 0.498, of all
// 50,000 0.472).
func commonDirection(t *glove.Table, n int) []float32 {
	c := make([]float64, t.Dim)
	row := make([]float32, t.Dim)
	for r := range min(n, t.Len()) {
		clear(row)
		t.AddTo(row, r, 1)
		var nn float64
		for _, x := range row {
			nn += float64(x) * float64(x)
		}
		if nn == 0 {
			continue
		}
		for j, x := range row {
			c[j] += float64(x) / math.Sqrt(nn)
		}
	}
	var nn float64
	for _, x := range c {
		nn += x * x
	}
	out := make([]float32, t.Dim)
	for j, x := range c {
		out[j] = float32(x / math.Sqrt(nn))
	}
	return out
}

// Words splits text as the static provider does: lower-case runs of
// letters and digits.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Embed implements Provider. Under ForStored it first lets the
// frequencies settle (DF's Settle, when it has one) and weighs the words
// with the cached frequencies (weights); any other text (a search's
// query, a hit's sentences) is weighed with the palace's frequencies as
// they are now (current), so that its vector depends on the palace alone,
// not on what the provider embedded before.
func (s *Static) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	stored := forStored(ctx)
	if st, ok := s.DF.(Settler); ok && stored {
		st.Settle(ctx)
	}
	rows := make([][]int32, len(texts))
	need := map[int32]bool{}
	for i, t := range texts {
		for _, w := range Words(t) {
			if r := s.Table.Index(w); r >= 0 {
				rows[i] = append(rows[i], int32(r))
				need[int32(r)] = true
			}
		}
	}
	var idf map[int32]float32
	if stored || s.DF == nil {
		idf = s.weights(need)
	} else {
		idf = s.current(need)
	}
	out := make([][]float32, len(texts))
	for i, rs := range rows {
		out[i] = s.vector(rs, idf)
	}
	return out, nil
}

// vector is the weighted sum of rows without its part along the
// table's common direction, normalised.
func (s *Static) vector(rows []int32, idf map[int32]float32) []float32 {
	v := make([]float32, StaticDim)
	for _, r := range rows {
		s.Table.AddTo(v[:s.Table.Dim], int(r), idf[r])
	}
	var dot float32
	for j, c := range s.common {
		dot += v[j] * c
	}
	for j, c := range s.common {
		v[j] -= dot * c
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 || math.IsNaN(n) {
		clear(v)
		v[StaticDim-1] = 1
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	for j := range v {
		v[j] *= inv
	}
	return v
}

// weights are the IDF of each row, from the cached document frequencies,
// read again for a word once the palace has grown a quarter since. The
// lock guards the cache only, never a read of the frequencies: an
// embedding never waits for another's read of a slow index.
func (s *Static) weights(need map[int32]bool) map[int32]float32 {
	out := make(map[int32]float32, len(need))
	if s.DF == nil {
		for r := range need {
			out[r] = 1
		}
		return out
	}
	n, _ := s.DF.DocFreqs(nil)
	entries := make(map[int32]dfEntry, len(need))
	var stale []int32
	var words []string
	s.mu.Lock()
	for r := range need {
		e, ok := s.cache[r]
		if !ok || n > e.n+e.n/4+16 {
			stale = append(stale, r)
			words = append(words, s.Table.Word(int(r)))
		} else {
			entries[r] = e
		}
	}
	s.mu.Unlock()
	if len(stale) > 0 {
		nn, dfs := s.DF.DocFreqs(words)
		s.mu.Lock()
		for i, r := range stale {
			entries[r] = dfEntry{df: dfs[i], n: nn}
			s.cache[r] = entries[r]
		}
		s.mu.Unlock()
	}
	for r := range need {
		out[r] = idfOf(entries[r])
	}
	return out
}

// current are the IDF of each row from the palace's frequencies read now,
// in one read, leaving the cache as it is. A query weighed with the cache
// had the frequencies of the palace when an embed job last read them (up
// to a quarter smaller): a daemon restored from a backup, whose cache was
// empty, embedded the same query otherwise than the original and its
// semantic leg ranked otherwise (issue 37). A query has a few words; the
// read costs a term lookup each.
func (s *Static) current(need map[int32]bool) map[int32]float32 {
	out := make(map[int32]float32, len(need))
	if len(need) == 0 {
		return out
	}
	rows := make([]int32, 0, len(need))
	words := make([]string, 0, len(need))
	for r := range need {
		rows = append(rows, r)
		words = append(words, s.Table.Word(int(r)))
	}
	n, dfs := s.DF.DocFreqs(words)
	for i, r := range rows {
		out[r] = idfOf(dfEntry{df: dfs[i], n: n})
	}
	return out
}

// idfOf is BM25's IDF of a word's frequency in a palace.
func idfOf(e dfEntry) float32 {
	df := float64(min(e.df, e.n))
	return float32(math.Log(1 + (float64(e.n)-df+0.5)/(df+0.5)))
}

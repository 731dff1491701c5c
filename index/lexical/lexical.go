// Package lexical is loci's BM25 index over drawer text, built on Bleve:
// English stemming, case ignored, no synonyms. It is derived data: it
// records the last change-log sequence it applied and is rebuilt from the
// store when its directory is missing or unreadable.
//
// Bleve's BM25 takes the average field length as the number of distinct
// terms over the number of documents (about 1 for any large index), which
// punishes long drawers. The index counts the tokens it indexes and hands
// Bleve the true total with every search.
package lexical

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	ranking "github.com/loci-dev/loci/search/rank"
)

// Field names.
const (
	fContent = "content"
	fWing    = "wing"
	fRoom    = "room"
	fTags    = "tags"
	fKind    = "kind"
	fLen     = "n" // stored token count
)

// Doc is a drawer as the index sees it.
// Validity is not indexed: the caller checks it on the drawer, in rank
// order (Search's keep), which was cheaper than Bleve's numeric range
// filters and halves the work of indexing a drawer.
type Doc struct {
	ID      string
	Content string
	WingID  string
	RoomID  string
	Tags    []string
	Kind    string
}

type bleveDoc struct {
	Content string   `json:"content"`
	Wing    string   `json:"wing"`
	Room    string   `json:"room"`
	Tags    []string `json:"tags"`
	Kind    string   `json:"kind"`
	N       float64  `json:"n"`
}

// Index is the lexical index of one palace.
type Index struct {
	idx bleve.Index
	dir string
	// Rebuilt reports that Open found no usable index and made an empty
	// one: the caller fills it from the store.
	Rebuilt bool

	// mu admits one writer (Apply, Close). Readers never take it: a batch
	// of 2,000 drawers holds it for hundreds of milliseconds, and every
	// search of a palace catching up after a burst waited for it. The
	// sequence and the token total are published atomically once the
	// batch is in.
	mu     sync.Mutex
	seq    atomic.Uint64
	tokens atomic.Uint64
}

var (
	keySeq    = []byte("loci/seq")
	keyTokens = []byte("loci/tokens")
)

// storedLength is an indexed drawer's token count, kept as a stored field
// (not in Bleve's internal store, which scorch rewrites whole at every
// persist).
func (x *Index) storedLength(id string) (uint64, bool) {
	doc, err := x.idx.Document(id)
	if err != nil || doc == nil {
		return 0, false
	}
	var n uint64
	found := false
	doc.VisitFields(func(f index.Field) {
		if nf, ok := f.(index.NumericField); ok && f.Name() == fLen {
			if v, err := nf.Number(); err == nil {
				n, found = uint64(v), true
			}
		}
	})
	return n, found
}

// runtimeConfig: batches are not waited for on disk (the index records its
// sequence in the same batch as its documents, so a crash only loses the
// latest batches, which the change log replays), and the persister naps so
// that small batches merge in memory rather than as files: a daemon under
// write load spent a fifth of its CPU merging segment files.
func runtimeConfig() map[string]interface{} {
	return map[string]interface{}{
		"unsafe_batch":           true,
		"scorchPersisterOptions": map[string]interface{}{"PersisterNapTimeMSec": 1000},
	}
}

func newMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store, text.IncludeTermVectors, text.DocValues, text.IncludeInAll = false, false, false, false
	kw := bleve.NewKeywordFieldMapping()
	kw.Analyzer = keyword.Name
	kw.Store, kw.IncludeInAll, kw.DocValues = false, false, false
	num := bleve.NewNumericFieldMapping()
	num.Index, num.Store, num.DocValues, num.IncludeInAll = false, true, false, false
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fLen, num)
	doc.AddFieldMappingsAt(fContent, text)
	for _, f := range []string{fWing, fRoom, fTags, fKind} {
		doc.AddFieldMappingsAt(f, kw)
	}
	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultAnalyzer = en.AnalyzerName
	m.ScoringModel = index.BM25Scoring
	m.StoreDynamic, m.IndexDynamic, m.DocValuesDynamic = false, false, false
	return m
}

// Open opens the index in dir, or creates an empty one (Rebuilt set) when
// it is missing or cannot be read.
func Open(dir string) (*Index, error) {
	x := &Index{dir: dir}
	idx, err := bleve.OpenUsing(dir, runtimeConfig())
	if err == nil {
		x.idx = idx
		if err = x.loadMeta(); err == nil {
			return x, nil
		}
		_ = idx.Close()
	}
	// Missing or unreadable: start over.
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	idx, err = bleve.NewUsing(dir, newMapping(), scorch.Name, bleve.Config.DefaultKVStore, runtimeConfig())
	if err != nil {
		return nil, fmt.Errorf("create the lexical index: %w", err)
	}
	x.idx, x.Rebuilt = idx, true
	return x, nil
}

func (x *Index) loadMeta() error {
	b, err := x.idx.GetInternal(keySeq)
	if err != nil {
		return err
	}
	if len(b) != 8 {
		return errors.New("lexical index has no sequence")
	}
	x.seq.Store(binary.BigEndian.Uint64(b))
	if t, err := x.idx.GetInternal(keyTokens); err == nil && len(t) == 8 {
		x.tokens.Store(binary.BigEndian.Uint64(t))
	}
	return nil
}

// Close persists what batches have not yet reached the disk (they are
// not waited for), then closes the index.
func (x *Index) Close() error {
	x.mu.Lock()
	b := x.idx.NewBatch()
	b.SetInternal(keySeq, u64(x.seq.Load()))
	b.SetInternal(keyTokens, u64(x.tokens.Load()))
	x.mu.Unlock()
	persisted := make(chan error, 1)
	b.SetPersistedCallback(func(err error) { persisted <- err })
	if err := x.idx.Batch(b); err == nil {
		select {
		case <-persisted:
		case <-time.After(10 * time.Second):
		}
	}
	return x.idx.Close()
}

// Seq is the last change-log sequence applied (it never waits for a
// batch in progress).
func (x *Index) Seq() uint64 { return x.seq.Load() }

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// tokenCount is the number of tokens content has in the index: the en
// analyzer's count, found by its steps that drop tokens (tokenizer,
// possessive, lowercase, stop words) without the stemmer, which changes
// tokens but never their number and cost as much as the rest.
func (x *Index) tokenCount(content string) uint64 {
	return uint64(len(counter.Analyze([]byte(content))))
}

// counter is the en analyzer without its stemmer (tokenCount).
var counter = func() analysis.Analyzer {
	c := registry.NewCache()
	tok, err1 := c.TokenizerNamed(unicode.Name)
	poss, err2 := c.TokenFilterNamed(en.PossessiveName)
	lower, err3 := c.TokenFilterNamed(lowercase.Name)
	stop, err4 := c.TokenFilterNamed(en.StopName)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		panic("the en analyzer's parts are not registered: " + err.Error())
	}
	return &analysis.DefaultAnalyzer{Tokenizer: tok, TokenFilters: []analysis.TokenFilter{poss, lower, stop}}
}()

// Apply indexes docs, removes deletes and records seq, in one batch.
func (x *Index) Apply(docs []Doc, deletes []string, seq uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	b := x.idx.NewBatch()
	tokens := x.tokens.Load()
	for _, id := range deletes {
		if n, ok := x.storedLength(id); ok {
			tokens -= min(tokens, n)
		}
		b.Delete(id)
	}
	for _, d := range docs {
		tags := d.Tags
		if tags == nil {
			tags = []string{}
		}
		// Content never changes: a drawer indexed before keeps its length.
		n, indexed := x.storedLength(d.ID)
		if !indexed {
			n = x.tokenCount(d.Content)
			tokens += n
		}
		if err := b.Index(d.ID, bleveDoc{Content: d.Content, Wing: d.WingID, Room: d.RoomID, Tags: tags, Kind: d.Kind, N: float64(n)}); err != nil {
			return err
		}
	}
	b.SetInternal(keySeq, u64(seq))
	b.SetInternal(keyTokens, u64(tokens))
	if err := x.idx.Batch(b); err != nil {
		return err
	}
	x.tokens.Store(tokens)
	x.seq.Store(seq)
	return nil
}

// Filter is the scope of a search, applied before ranking.
type Filter struct {
	WingID string
	RoomID string
	Tags   []string
	Kind   string
}

// Hit is one ranked drawer id.
type Hit struct {
	ID    string
	Score float64 // BM25
	Rank  int
	// AllWords: the drawer matches every word of the query.
	AllWords bool
}

func (f Filter) queries() []query.Query {
	var qs []query.Query
	term := func(field, v string) {
		t := bleve.NewTermQuery(v)
		t.SetField(field)
		qs = append(qs, t)
	}
	if f.WingID != "" {
		term(fWing, f.WingID)
	}
	if f.RoomID != "" {
		term(fRoom, f.RoomID)
	}
	for _, t := range f.Tags {
		term(fTags, t)
	}
	if f.Kind != "" {
		term(fKind, f.Kind)
	}
	return qs
}

// BM25 parameters.
var (
	K1 = 1.2
	B  = 0.75
)

// Search ranks the drawers in scope by BM25, those matching every word of
// the query first; a drawer matching only some words is ranked only when
// no drawer matching every word is left (so a query no drawer matches
// whole is ranked on any single word). Ties are broken by drawer id. keep, when set, is a further scope check made in rank order
// (the caller's validity test, cheaper than Bleve's range filters).
//
// Scoring is done here on Bleve's postings: Bleve's own BM25 weighs each
// term by its idf twice (once in the query weight) and multiplies a
// disjunction by the share of terms matched, which cost 0.05 MAP on
// Cranfield against a plain BM25.
func (x *Index) Search(ctx context.Context, text string, f Filter, limit int, keep ranking.Keep) ([]Hit, error) {
	return x.search(ctx, text, f, limit, keep, true)
}

// SearchBM25 ranks by BM25 alone: a drawer matching every word has no
// precedence over one matching fewer but rarer words (the auto ranking's
// lexical leg, which fusion and context then order).
func (x *Index) SearchBM25(ctx context.Context, text string, f Filter, limit int, keep ranking.Keep) ([]Hit, error) {
	return x.search(ctx, text, f, limit, keep, false)
}

func (x *Index) search(ctx context.Context, text string, f Filter, limit int, keep ranking.Keep, allFirst bool) ([]Hit, error) {
	a := x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	qtf := map[string]int{}
	var terms []string
	for _, t := range a.Analyze([]byte(text)) {
		if qtf[string(t.Term)] == 0 {
			terms = append(terms, string(t.Term))
		}
		qtf[string(t.Term)]++
	}
	if len(terms) == 0 {
		return nil, nil
	}
	adv, err := x.idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	n, err := r.DocCount()
	if err != nil || n == 0 {
		return nil, err
	}
	avg := float64(x.tokens.Load()) / float64(n)
	if avg <= 0 {
		avg = 1
	}
	// Every term's reader first: their document counts size the
	// accumulator once (growing it was a fifth of a broad query's time).
	readers := make([]index.TermFieldReader, 0, len(terms))
	defer func() {
		for _, tfr := range readers {
			_ = tfr.Close()
		}
	}()
	total := uint64(0)
	for _, t := range terms {
		tfr, err := r.TermFieldReader(ctx, []byte(t), fContent, true, true, false)
		if err != nil {
			return nil, err
		}
		readers = append(readers, tfr)
		total += tfr.Count()
	}
	// A drawer's place in cands; matched counts its words in cands' all
	// field's stead until the end.
	pos := make(map[uint64]int32, min(total, n))
	cands := make([]cand, 0, min(total, n))
	matched := make([]int32, 0, min(total, n))
	for i, t := range terms {
		tfr := readers[i]
		df := float64(tfr.Count())
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		w := float64(qtf[t]) * idf
		var pd index.TermFieldDoc
		for {
			d, err := tfr.Next(&pd)
			if err != nil {
				return nil, err
			}
			if d == nil {
				break
			}
			id := binary.BigEndian.Uint64(d.ID)
			length := 1.0
			if d.Norm > 0 {
				length = math.Round(1 / (d.Norm * d.Norm))
			}
			tf := float64(d.Freq)
			sc := w * tf * (K1 + 1) / (tf + K1*(1-B+B*length/avg))
			if p, ok := pos[id]; ok {
				cands[p].score += sc
				matched[p]++
			} else {
				pos[id] = int32(len(cands))
				cands = append(cands, cand{id: id, score: sc})
				matched = append(matched, 1)
			}
		}
	}
	anyAll := false
	for i := range cands {
		cands[i].all = int(matched[i]) == len(terms)
		anyAll = anyAll || cands[i].all
	}
	// Scope: walk the filter's matches in document order alongside the
	// candidates.
	if fq := f.queries(); len(fq) > 0 {
		slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.id, b.id) })
		fs, err := bleve.NewConjunctionQuery(fq...).Searcher(ctx, r, x.idx.Mapping(), search.SearcherOptions{Score: "none"})
		if err != nil {
			return nil, err
		}
		sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(fs.DocumentMatchPoolSize(), 0)}
		kept := cands[:0]
		anyAll = false
		var key [8]byte
		var cur *search.DocumentMatch
		var curID uint64
		for _, c := range cands {
			if cur == nil || curID < c.id {
				// Only ever forward: the searcher stays on a match until
				// a later candidate passes it.
				binary.BigEndian.PutUint64(key[:], c.id)
				if cur, err = fs.Advance(sctx, index.IndexInternalID(key[:])); err != nil {
					_ = fs.Close()
					return nil, err
				}
				if cur == nil {
					break
				}
				curID = binary.BigEndian.Uint64(cur.IndexInternalID)
			}
			if curID == c.id {
				kept = append(kept, c)
				anyAll = anyAll || c.all
			}
		}
		_ = fs.Close()
		cands = kept
	}
	ids := make(map[uint64]string, 4*limit)
	extID := func(id uint64) string {
		if s, ok := ids[id]; ok {
			return s
		}
		var key [8]byte
		binary.BigEndian.PutUint64(key[:], id)
		s, _ := r.ExternalID(index.IndexInternalID(key[:]))
		ids[id] = s
		return s
	}
	if !anyAll || !allFirst {
		return rank(cands, limit, keep, extID), nil
	}
	// Every word must match first; the drawers matching only some words
	// follow, once no drawer matching every word is left.
	all := slices.DeleteFunc(slices.Clone(cands), func(c cand) bool { return !c.all })
	hits := rank(all, limit, keep, extID)
	if len(hits) < limit {
		some := slices.DeleteFunc(cands, func(c cand) bool { return c.all })
		for _, h := range rank(some, limit-len(hits), keep, extID) {
			h.Rank = len(hits) + 1
			hits = append(hits, h)
		}
	}
	return hits, nil
}

type cand struct {
	id    uint64
	score float64
	all   bool
}

// rank returns the best limit candidates that keep accepts (nil: all),
// best first, ties by drawer id. Only a prefix of the candidates is
// sorted: those at or above the k-th best score, k doubling while keep
// refuses too many.
func rank(cands []cand, limit int, keep ranking.Keep, extID func(uint64) string) []Hit {
	better := func(a, b cand) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		return strings.Compare(extID(a.id), extID(b.id))
	}
	for k := 2 * limit; ; k *= 2 {
		pool := cands
		if len(cands) > k {
			scores := make([]float64, len(cands))
			for i, c := range cands {
				scores[i] = c.score
			}
			cut := nthLargest(scores, k)
			pool = slices.DeleteFunc(slices.Clone(cands), func(c cand) bool { return c.score < cut })
		}
		slices.SortFunc(pool, better)
		kept := ranking.KeepInOrder(len(pool), limit, func(i int) string { return extID(pool[i].id) }, keep)
		if len(kept) == limit || len(pool) == len(cands) {
			out := make([]Hit, len(kept))
			for r, i := range kept {
				c := pool[i]
				out[r] = Hit{ID: extID(c.id), Score: c.score, Rank: r + 1, AllWords: c.all}
			}
			return out
		}
	}
}

// DocCount is the number of indexed drawers.
func (x *Index) DocCount() (uint64, error) { return x.idx.DocCount() }

// nthLargest is the k-th largest value of v (k >= 1), by quickselect; v is
// reordered.
func nthLargest(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	k = min(k, len(v)) - 1
	for lo < hi {
		p := v[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for v[i] > p {
				i++
			}
			for v[j] < p {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// DocFreqs gives the number of documents and each word's document
// frequency as the index analyses it (embed.DocFreqs); a word the
// analyser drops (a stop word) counts as in every document. Without
// words it answers only the count.
func (x *Index) DocFreqs(words []string) (uint64, []uint64) {
	n, _ := x.idx.DocCount()
	out := make([]uint64, len(words))
	if len(words) == 0 {
		return n, out
	}
	adv, err := x.idx.Advanced()
	if err != nil {
		return n, out
	}
	r, err := adv.Reader()
	if err != nil {
		return n, out
	}
	defer r.Close()
	a := x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	for i, w := range words {
		toks := a.Analyze([]byte(w))
		if len(toks) == 0 {
			out[i] = n
			continue
		}
		tfr, err := r.TermFieldReader(context.Background(), toks[0].Term, fContent, false, false, false)
		if err != nil {
			continue
		}
		out[i] = tfr.Count()
		_ = tfr.Close()
	}
	return n, out
}

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
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Field names.
const (
	fContent = "content"
	fWing    = "wing"
	fRoom    = "room"
	fTags    = "tags"
	fKind    = "kind"
	fFrom    = "vfrom"
	fTo      = "vto"
)

// Forever stands for "no end of validity": the latest instant Bleve's
// date fields hold.
var Forever = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)

// Doc is a drawer as the index sees it.
type Doc struct {
	ID        string
	Content   string
	WingID    string
	RoomID    string
	Tags      []string
	Kind      string
	ValidFrom time.Time
	ValidTo   *time.Time
}

type bleveDoc struct {
	Content string    `json:"content"`
	Wing    string    `json:"wing"`
	Room    string    `json:"room"`
	Tags    []string  `json:"tags"`
	Kind    string    `json:"kind"`
	From    time.Time `json:"vfrom"`
	To      time.Time `json:"vto"`
}

// Index is the lexical index of one palace.
type Index struct {
	idx bleve.Index
	dir string
	// Rebuilt reports that Open found no usable index and made an empty
	// one: the caller fills it from the store.
	Rebuilt bool

	mu     sync.Mutex // one writer
	seq    uint64
	tokens uint64
}

var (
	keySeq    = []byte("loci/seq")
	keyTokens = []byte("loci/tokens")
)

func lenKey(id string) []byte { return []byte("loci/len/" + id) }

func newMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store, text.IncludeTermVectors, text.DocValues, text.IncludeInAll = false, false, false, false
	kw := bleve.NewKeywordFieldMapping()
	kw.Analyzer = keyword.Name
	kw.Store, kw.IncludeInAll, kw.DocValues = false, false, false
	date := bleve.NewDateTimeFieldMapping()
	date.Store, date.IncludeInAll = false, false
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fContent, text)
	for _, f := range []string{fWing, fRoom, fTags, fKind} {
		doc.AddFieldMappingsAt(f, kw)
	}
	doc.AddFieldMappingsAt(fFrom, date)
	doc.AddFieldMappingsAt(fTo, date)
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
	idx, err := bleve.Open(dir)
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
	idx, err = bleve.New(dir, newMapping())
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
	x.seq = binary.BigEndian.Uint64(b)
	if t, err := x.idx.GetInternal(keyTokens); err == nil && len(t) == 8 {
		x.tokens = binary.BigEndian.Uint64(t)
	}
	return nil
}

// Close closes the index.
func (x *Index) Close() error { return x.idx.Close() }

// Seq is the last change-log sequence applied.
func (x *Index) Seq() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.seq
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// tokenCount is the number of tokens content has in the index.
func (x *Index) tokenCount(content string) uint64 {
	a := x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	if a == nil {
		return 0
	}
	return uint64(len(a.Analyze([]byte(content))))
}

// Apply indexes docs, removes deletes and records seq, in one batch.
func (x *Index) Apply(docs []Doc, deletes []string, seq uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	b := x.idx.NewBatch()
	tokens := x.tokens
	for _, id := range deletes {
		if raw, err := x.idx.GetInternal(lenKey(id)); err == nil && len(raw) == 8 {
			tokens -= min(tokens, binary.BigEndian.Uint64(raw))
			b.DeleteInternal(lenKey(id))
		}
		b.Delete(id)
	}
	for _, d := range docs {
		to := Forever
		if d.ValidTo != nil {
			to = *d.ValidTo
		}
		tags := d.Tags
		if tags == nil {
			tags = []string{}
		}
		if err := b.Index(d.ID, bleveDoc{Content: d.Content, Wing: d.WingID, Room: d.RoomID, Tags: tags, Kind: d.Kind, From: d.ValidFrom, To: to}); err != nil {
			return err
		}
		if raw, err := x.idx.GetInternal(lenKey(d.ID)); err != nil || len(raw) != 8 {
			n := x.tokenCount(d.Content)
			tokens += n
			b.SetInternal(lenKey(d.ID), u64(n))
		}
	}
	b.SetInternal(keySeq, u64(seq))
	b.SetInternal(keyTokens, u64(tokens))
	if err := x.idx.Batch(b); err != nil {
		return err
	}
	x.seq, x.tokens = seq, tokens
	return nil
}

// Filter is the scope of a search, applied before ranking.
type Filter struct {
	WingID string
	RoomID string
	Tags   []string
	Kind   string
	// Validity window [From, Until): a drawer is found when it is valid at
	// some moment of it. Zero From and Until: no time filter.
	From, Until time.Time
}

// Hit is one ranked drawer id.
type Hit struct {
	ID    string
	Score float64
	Rank  int
}

func boolPtr(b bool) *bool { return &b }

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
	if !f.From.IsZero() || !f.Until.IsZero() {
		// valid_from < Until and valid_to > From.
		vf := bleve.NewDateRangeInclusiveQuery(time.Time{}, f.Until, nil, boolPtr(false))
		vf.SetField(fFrom)
		vt := bleve.NewDateRangeInclusiveQuery(f.From, time.Time{}, boolPtr(false), nil)
		vt.SetField(fTo)
		qs = append(qs, vf, vt)
	}
	return qs
}

// Search ranks the drawers in scope by BM25: every word must match; only
// when nothing matches does any single word suffice. Ties are broken by
// drawer id.
func (x *Index) Search(ctx context.Context, text string, f Filter, limit int) ([]Hit, error) {
	hits, err := x.search(ctx, text, f, limit, query.MatchQueryOperatorAnd)
	if err != nil || len(hits) > 0 {
		return hits, err
	}
	return x.search(ctx, text, f, limit, query.MatchQueryOperatorOr)
}

func (x *Index) search(ctx context.Context, text string, f Filter, limit int, op query.MatchQueryOperator) ([]Hit, error) {
	mq := bleve.NewMatchQuery(text)
	mq.SetField(fContent)
	mq.Analyzer = en.AnalyzerName
	mq.SetOperator(op)
	bq := bleve.NewBooleanQuery()
	bq.AddMust(mq)
	if fq := f.queries(); len(fq) > 0 {
		bq.AddFilter(bleve.NewConjunctionQuery(fq...))
	}
	req := bleve.NewSearchRequestOptions(bq, limit, 0, false)
	req.SortBy([]string{"-_score", "_id"})
	x.mu.Lock()
	tokens := x.tokens
	x.mu.Unlock()
	docs, err := x.idx.DocCount()
	if err != nil {
		return nil, err
	}
	if docs > 0 {
		// Every field searched needs an entry (filters do not score, any
		// value serves); content gets the true token total.
		card := map[string]int{fContent: int(min(tokens, math.MaxInt32))}
		for _, f := range []string{fWing, fRoom, fTags, fKind, fFrom, fTo, "*"} { // "*": scorch's optimised disjunctions
			card[f] = int(docs)
		}
		req.PreSearchData = map[string]interface{}{search.BM25PreSearchDataKey: &search.BM25Stats{
			DocCount: float64(docs), FieldCardinality: card}}
	}
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]Hit, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = Hit{ID: h.ID, Score: h.Score, Rank: i + 1}
	}
	return out, nil
}

// DocCount is the number of indexed drawers.
func (x *Index) DocCount() (uint64, error) { return x.idx.DocCount() }

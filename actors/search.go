package actors

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/fault"
)

// Search limits (spec: default 10, max 200, 0 means the default).
const (
	SearchLimit    = 10
	SearchMaxLimit = 200
)

// Ranking modes.
const (
	RankAuto     = "auto"
	RankLexical  = "lexical"
	RankSemantic = "semantic"
	RankHybrid   = "hybrid"
)

// SearchQuery is a search as every interface asks it.
type SearchQuery struct {
	Text       string
	Ranking    string
	Limit      int
	Wing, Room string
	Tags       []string
	SourceKind string
	// Time: at most one of AsOf, From+Until, Historical.
	AsOf        *time.Time
	From, Until *time.Time
	Historical  bool
	Profile     string
	Embedding   []float32
	Expand      bool
}

// Hit is a drawer found, verbatim, with its score and the legs that found
// it.
type Hit struct {
	store.Drawer
	Score   float64        `json:"score"`
	Signals map[string]any `json:"signals,omitempty"`
}

// SearchResult is a search answer.
type SearchResult struct {
	Query   string `json:"query"`
	Ranking string `json:"ranking"`
	Hits    []Hit  `json:"hits"`
}

// Search is the search service over the palace's indexes.
type Search struct {
	DB      store.DB
	Indexer *Indexer
	Log     interface{ Warn(string, ...any) }
}

// CheckSearch validates a query and returns its limit and validity window
// (zero times: no time filter). now is the instant "valid now" means.
func CheckSearch(q *SearchQuery, now time.Time) (limit int, from, until time.Time, err error) {
	if strings.TrimSpace(q.Text) == "" {
		return 0, from, until, fault.Invalid("text", "is required: the words to search for")
	}
	switch q.Ranking {
	case "":
		q.Ranking = RankAuto
	case RankAuto, RankLexical, RankSemantic, RankHybrid:
	default:
		return 0, from, until, fault.Invalid("ranking", fmt.Sprintf("%q is not one of auto, lexical, semantic, hybrid", q.Ranking))
	}
	switch {
	case q.Limit < 0 || q.Limit > SearchMaxLimit:
		return 0, from, until, fault.Invalid("limit", fmt.Sprintf("%d is outside 0 to %d (0 means the default, %d)", q.Limit, SearchMaxLimit, SearchLimit))
	case q.Limit == 0:
		limit = SearchLimit
	default:
		limit = q.Limit
	}
	if q.SourceKind != "" {
		if err := store.CheckSourceKind(q.SourceKind); err != nil {
			return 0, from, until, fault.Invalid("source_kind", fault.As(err).Msg)
		}
	}
	if len(q.Embedding) > 0 && q.Profile == "" {
		return 0, from, until, fault.Invalid("profile", "is required with query_embedding: name the configured embedding profile the vector comes from")
	}
	if q.Profile != "" {
		return 0, from, until, fault.Invalid("profile", fmt.Sprintf("%q is not a configured embedding profile (none is configured)", q.Profile))
	}
	asked := 0
	for _, given := range []bool{q.AsOf != nil, q.From != nil || q.Until != nil, q.Historical} {
		if given {
			asked++
		}
	}
	if asked > 1 {
		field := "as_of"
		if q.AsOf == nil {
			field = "include_historical"
		}
		return 0, from, until, fault.Invalid(field, "as_of, the pair from and until, and include_historical cannot be combined")
	}
	switch {
	case q.AsOf != nil:
		from, until = *q.AsOf, q.AsOf.Add(time.Nanosecond)
	case q.From != nil || q.Until != nil:
		if q.From == nil {
			return 0, from, until, fault.Invalid("from", "is required with until")
		}
		if q.Until == nil {
			return 0, from, until, fault.Invalid("until", "is required with from")
		}
		if !q.From.Before(*q.Until) {
			return 0, from, until, fault.Invalid("from", "must be before until")
		}
		from, until = *q.From, *q.Until
	case q.Historical:
	default:
		from, until = now, now.Add(time.Nanosecond)
	}
	return limit, from, until, nil
}

// Search runs a search; recall ignores the room.
func (s *Search) Search(ctx context.Context, q SearchQuery, recall bool) (*SearchResult, error) {
	if recall {
		q.Room = ""
	}
	limit, from, until, err := CheckSearch(&q, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	ranking := q.Ranking
	switch ranking {
	case RankSemantic, RankHybrid:
		return nil, fault.New(fault.SearchSemanticUnavail,
			ranking+" search needs a query vector, and no embedding profile is configured",
			"use ranking lexical or auto, or configure an embedding provider")
	case RankAuto:
		ranking = RankLexical // no embedding profile: auto is lexical
	}
	f := lexical.Filter{Tags: q.Tags, Kind: q.SourceKind}
	out := &SearchResult{Query: q.Text, Ranking: ranking, Hits: []Hit{}}
	s.Indexer.Sync(ctx, 2*time.Second)
	err = s.DB.View(ctx, func(r store.Reader) error {
		if q.Wing != "" {
			w, err := store.FindWing(r, q.Wing)
			if err != nil {
				return err
			}
			f.WingID = w.ID
			if q.Room != "" {
				rm, err := store.FindRoom(r, w, q.Room)
				if err != nil {
					return err
				}
				f.RoomID = rm.ID
			}
		} else if q.Room != "" {
			return fault.Invalid("room", "needs wing: rooms are looked up inside a wing")
		}
		// Validity is checked on the stored drawer, in rank order, before
		// the limit: the same view serves the hits verbatim.
		found := map[string]*store.Drawer{}
		keep := func(id string) bool {
			d, err := r.Drawer(id)
			if err != nil || d == nil {
				return false // deleted since the index saw it
			}
			if (!from.IsZero() || !until.IsZero()) && !d.ValidIn(from, until) {
				return false
			}
			found[id] = d
			return true
		}
		lex, err := s.Indexer.Lex.Search(ctx, q.Text, f, limit, keep)
		if err != nil {
			return fault.Wrap(fault.ServerFailed, err, "the lexical index failed: "+err.Error(), "see the daemon log")
		}
		for _, h := range lex {
			out.Hits = append(out.Hits, Hit{Drawer: *found[h.ID], Score: h.Score,
				Signals: map[string]any{"lexical": map[string]any{"rank": h.Rank, "score": h.Score}}})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

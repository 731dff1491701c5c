package transport

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/search"
)

// temporal reads filter.temporal: "current", "all", {as_of} or
// {between: {from, until}}.
func temporal(f *api.SearchFilter, q *search.SearchQuery) error {
	raw := bytes.TrimSpace(f.Temporal)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "current":
			return nil
		case "all":
			q.Historical = true
			return nil
		}
		return fault.Invalid("filter.temporal", `is "current", "all", {"as_of": ...} or {"between": {"from": ..., "until": ...}}`)
	}
	var o struct {
		AsOf    *string `json:"as_of"`
		Between *struct {
			From  *string `json:"from"`
			Until *string `json:"until"`
		} `json:"between"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil || (o.AsOf == nil) == (o.Between == nil) {
		return fault.Invalid("filter.temporal", `is "current", "all", {"as_of": ...} or {"between": {"from": ..., "until": ...}}`)
	}
	if o.AsOf != nil {
		t, err := ParseInstant("as_of", *o.AsOf)
		if err != nil {
			return err
		}
		q.AsOf = &t
		return nil
	}
	if o.Between.From == nil {
		return fault.Invalid("from", "is required with until")
	}
	if o.Between.Until == nil {
		return fault.Invalid("until", "is required with from")
	}
	from, err := ParseInstant("from", *o.Between.From)
	if err != nil {
		return err
	}
	until, err := ParseInstant("until", *o.Between.Until)
	if err != nil {
		return err
	}
	q.From, q.Until = &from, &until
	return nil
}

func (s *Server) searchPost(recall bool) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		var b api.SearchRequest
		if err := decodeBody(r, &b, false); err != nil {
			return err
		}
		if b.Text != "" && b.Query != "" && b.Text != b.Query {
			return fault.Invalid("text", "give text or query, not both")
		}
		q := search.SearchQuery{Text: b.Text, Ranking: b.Ranking, Limit: b.Limit, Profile: b.Profile,
			Embedding: b.QueryEmbedding, Expand: b.Expand}
		if b.KnownAt != "" {
			t, err := ParseInstant("known_at", b.KnownAt)
			if err != nil {
				return err
			}
			q.KnownAt = &t
		}
		if q.Text == "" {
			q.Text = b.Query
		}
		if b.Filter != nil {
			q.Wing, q.Room, q.Tags, q.SourceKind = b.Filter.Wing, b.Filter.Room, b.Filter.Tags, b.Filter.SourceKind
			if err := temporal(b.Filter, &q); err != nil {
				return err
			}
		}
		bud, err := searchBudget(b.MaxBytes, b.MaxHitBytes, "no bound")
		if err != nil {
			return err
		}
		return s.runSearch(w, r, q, recall, bud)
	}
}

func (s *Server) searchGet(recall bool) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		v := r.URL.Query()
		q := search.SearchQuery{Text: v.Get("q"), Ranking: v.Get("ranking"), Wing: v.Get("wing"), Room: v.Get("room"),
			SourceKind: v.Get("source_kind"), Profile: v.Get("profile")}
		if t := v.Get("query"); t != "" {
			if q.Text != "" && q.Text != t {
				return fault.Invalid("q", "give q or query, not both")
			}
			q.Text = t
		}
		// The ranges are the search's and the budget's.
		whole := func(name string) (int, error) {
			n, _, err := queryWhole(r, name)
			return n, err
		}
		var err error
		if q.Limit, err = whole("limit"); err != nil {
			return err
		}
		maxBytes, err := whole("max_bytes")
		if err != nil {
			return err
		}
		maxHitBytes, err := whole("max_hit_bytes")
		if err != nil {
			return err
		}
		bud, err := searchBudget(maxBytes, maxHitBytes, "no bound")
		if err != nil {
			return err
		}
		if t := v.Get("tags"); t != "" {
			for _, tag := range strings.Split(t, ",") {
				if tag = strings.TrimSpace(tag); tag != "" {
					q.Tags = append(q.Tags, tag)
				}
			}
		}
		instant := func(name string) (*time.Time, error) { return queryInstant(r, name) }
		if q.AsOf, err = instant("as_of"); err != nil {
			return err
		}
		if q.From, err = instant("from"); err != nil {
			return err
		}
		if q.Until, err = instant("until"); err != nil {
			return err
		}
		if q.Historical, err = queryBool(r, "include_historical"); err != nil {
			return err
		}
		if q.Expand, err = queryBool(r, "expand"); err != nil {
			return err
		}
		if q.KnownAt, err = instant("known_at"); err != nil {
			return err
		}
		return s.runSearch(w, r, q, recall, bud)
	}
}

// runSearch answers a search: verbatim, or fitted to the budget asked.
func (s *Server) runSearch(w http.ResponseWriter, r *http.Request, q search.SearchQuery, recall bool, b budget) error {
	res, err := s.Search.Search(r.Context(), q, recall)
	if err != nil {
		return err
	}
	out, err := restSearch(r.Context(), res, b)
	if err != nil {
		return fault.Wrap(fault.SerializationFailed, err, "cannot encode the answer", "report it")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(out)
	return err
}

func (s *Server) putEmbedding(w http.ResponseWriter, r *http.Request) error {
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	var b api.EmbeddingPut
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	if s.Search.Vectors == nil {
		return fault.New(fault.EmbedNotConfigured, "no embedding profile is configured",
			"add [embedding.profiles.<name>] to the configuration and restart")
	}
	if len(b.Embedding) == 0 {
		return fault.Invalid("embedding", "is required: the vector, with the profile's dimension")
	}
	e, err := s.Search.Vectors.PutEmbedding(r.Context(), id, b.Profile, b.Embedding)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Embedding{DrawerID: e.DrawerID, Profile: e.Profile, Provider: e.Provider,
		Model: e.Model, Dimension: e.Dimension, Pipeline: e.Pipeline, CreatedAt: e.CreatedAt})
}

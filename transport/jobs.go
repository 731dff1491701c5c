package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Job list limits (spec: default 50, max 200).
const (
	JobsLimit    = 50
	JobsMaxLimit = 200
)

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 0
	if q.Has("limit") || q.Get("kind") != "" {
		var err error
		if limit, err = queryLimit(r, "limit", JobsLimit, JobsMaxLimit); err != nil {
			return err
		}
	}
	f := actors.JobFilter{Status: q.Get("status"), Kind: q.Get("kind"), Limit: limit}
	if q.Has("automatic") {
		auto, err := queryBool(r, "automatic")
		if err != nil {
			return err
		}
		f.Automatic = &auto
	}
	jobs, err := s.Jobs.ListFiltered(r.Context(), f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiJobs(jobs))
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	job, err := s.Jobs.Get(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiJob(job))
}

func (s *Server) submitJob(w http.ResponseWriter, r *http.Request) error {
	var body json.RawMessage
	if err := decodeBody(r, &body, false); err != nil {
		return err
	}
	// The kind decodes its own fields from the whole body.
	var head struct {
		Type        string `json:"type"`
		RequestedBy string `json:"requested_by"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fault.Invalid(te.Field, "must be a string")
		}
		return fault.Invalid("body", "must be a JSON object")
	}
	if head.Type == "mine" {
		if err := s.refreshSources(r); err != nil {
			return err
		}
	}
	job, err := s.Jobs.Submit(r.Context(), actors.Submission{Type: head.Type, RequestedBy: head.RequestedBy, Channel: store.ByHTTP, Params: body})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, apiJob(job))
}

// jobAction serves a job control route with one of the runtime's actions.
func (s *Server) jobAction(action func(*actors.Jobs, context.Context, string) (*store.Job, error)) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := param(r, "id")
		if err != nil {
			return err
		}
		job, err := action(s.Jobs, r.Context(), id)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, apiJob(job))
	}
}

func (s *Server) forceCancel(w http.ResponseWriter, r *http.Request) error {
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	res, err := s.Jobs.ForceCancel(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.ForceCancel{Status: res.Status, Job: apiJob(res.Job)})
}

func (s *Server) wakeUp(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	num := func(name string) (int, error) {
		n, _, err := queryWhole(r, name)
		if err == nil && n < 0 {
			err = fault.Invalid(name, fmt.Sprintf("%d is negative: give 0 or more (0 means the default)", n))
		}
		return n, err
	}
	items, err := num("max_items")
	if err != nil {
		return err
	}
	bytes, err := num("max_bytes")
	if err != nil {
		return err
	}
	res, err := s.Palace.WakeUp(r.Context(), q.Get("agent_identity"), q.Get("wing"), items, bytes)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiWakeUp(res))
}

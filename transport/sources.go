package transport

import (
	"net/http"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/sources"
)

// listSources is GET /api/sources: {adapters, sources}.
func (s *Server) listSources(w http.ResponseWriter, r *http.Request) error {
	if s.Sources == nil {
		return fault.New(fault.ServerFailed, "this server has no sources", "report it")
	}
	entries, mined, err := s.Sources.List(r.Context())
	if err != nil {
		return err
	}
	out := apiSources(entries, mined)
	if out.Warnings, err = s.Sources.Warnings(r.Context(), mined, time.Now()); err != nil {
		return err
	}
	if out.Warnings == nil {
		out.Warnings = []api.SourceWarning{}
	}
	return writeJSON(w, http.StatusOK, out)
}

func apiSources(entries []sources.Entry, mined []services.MinedSource) api.SourceList {
	out := api.SourceList{Adapters: make([]api.SourceAdapter, len(entries)), Sources: make([]api.MinedSource, len(mined))}
	for i, e := range entries {
		in := e.Adapter.Info()
		c := in.Capabilities
		triggers := append([]string{}, c.Triggers...)
		out.Adapters[i] = api.SourceAdapter{Name: in.Name, State: e.State, Origin: e.Origin, Reason: e.Reason, Options: append([]string{}, in.Options...),
			Capabilities: api.SourceCapabilities{Incremental: c.Incremental, KeepsRaw: c.KeepsRaw, NeedsCredentials: c.NeedsCredentials, Triggers: triggers},
			Format:       in.Format, DefaultLocator: in.DefaultLocator}
	}
	for i, m := range mined {
		out.Sources[i] = api.MinedSource{Key: m.Key, Adapter: m.Identity.Adapter, Account: m.Identity.Account, Locator: m.Identity.Locator,
			Wing: m.Wing, WingID: m.WingID, Documents: m.Documents, LastJob: m.LastJob, LastRun: m.LastRun}
	}
	return out
}

package transport

import (
	"net/http"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
)

// The source registry routes, like the source package routes, are
// authenticated, not gated by the memory mode, and have no MCP tool: the
// daemon fetches, the CLI asks it.

func (s *Server) registriesOr() (*services.Registries, error) {
	if s.Registries == nil {
		return nil, fault.New(fault.ServerFailed, "source registries are not available on this daemon", "see the log")
	}
	return s.Registries, nil
}

// searchRegistry is GET /api/source-registry/search?q=&registry=:
// {entries, warnings}.
func (s *Server) searchRegistry(w http.ResponseWriter, r *http.Request) error {
	reg, err := s.registriesOr()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	out, err := reg.Search(r.Context(), q.Get("q"), q.Get("registry"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// showRegistrySource is GET /api/source-registry/sources/{name}
// ?version=&registry=: the release fetched and verified, with its
// permissions and digests; nothing installed.
func (s *Server) showRegistrySource(w http.ResponseWriter, r *http.Request) error {
	reg, err := s.registriesOr()
	if err != nil {
		return err
	}
	name, err := param(r, "name")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	out, err := reg.Show(r.Context(), name, q.Get("version"), q.Get("registry"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// installFromRegistry is POST /api/source-registry/install {name,
// version?, registry?, archive_digest?, consent?, enable?}: {source,
// replaced} (201 new, 200 replaced).
func (s *Server) installFromRegistry(w http.ResponseWriter, r *http.Request) error {
	reg, err := s.registriesOr()
	if err != nil {
		return err
	}
	var in api.RegistryInstall
	if err := decodeBody(r, &in, false); err != nil {
		return err
	}
	out, err := reg.Install(r.Context(), in)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if out.Replaced != "" {
		status = http.StatusOK
	}
	return writeJSON(w, status, out)
}

// registryUpdates is GET /api/source-registry/updates: {updates,
// warnings}.
func (s *Server) registryUpdates(w http.ResponseWriter, r *http.Request) error {
	reg, err := s.registriesOr()
	if err != nil {
		return err
	}
	out, err := reg.Updates(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// updateFromRegistry is POST /api/source-registry/update {name?,
// consent?}: a list of {name, from, to, status} (updated, current,
// needs_consent with permissions and digest, failed with message).
func (s *Server) updateFromRegistry(w http.ResponseWriter, r *http.Request) error {
	reg, err := s.registriesOr()
	if err != nil {
		return err
	}
	var in api.RegistryUpdate
	if err := decodeBody(r, &in, true); err != nil {
		return err
	}
	out, err := reg.Update(r.Context(), in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

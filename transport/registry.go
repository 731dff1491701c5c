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
func searchRegistry(reg *services.Registries, _ string, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	out, err := reg.Search(r.Context(), q.Get("q"), q.Get("registry"))
	return answerOK(w, out, err)
}

// showRegistrySource is GET /api/source-registry/sources/{name}
// ?version=&registry=: the release fetched and verified, with its
// permissions and digests; nothing installed.
func showRegistrySource(reg *services.Registries, name string, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	out, err := reg.Show(r.Context(), name, q.Get("version"), q.Get("registry"))
	return answerOK(w, out, err)
}

// installFromRegistry is POST /api/source-registry/install {name,
// version?, registry?, archive_digest?, consent?, enable?}: {source,
// replaced} (201 new, 200 replaced).
func installFromRegistry(reg *services.Registries, _ string, w http.ResponseWriter, r *http.Request) error {
	var in api.RegistryInstall
	if err := decodeBody(r, &in, false); err != nil {
		return err
	}
	out, err := reg.Install(r.Context(), in)
	return answerInstalled(w, out, out.Replaced, err)
}

// registryUpdates is GET /api/source-registry/updates: {updates,
// warnings}.
func registryUpdates(reg *services.Registries, _ string, w http.ResponseWriter, r *http.Request) error {
	out, err := reg.Updates(r.Context())
	return answerOK(w, out, err)
}

// updateFromRegistry is POST /api/source-registry/update {name?,
// consent?}: a list of {name, from, to, status} (updated, current,
// needs_consent with permissions and digest, failed with message).
func updateFromRegistry(reg *services.Registries, _ string, w http.ResponseWriter, r *http.Request) error {
	var in api.RegistryUpdate
	if err := decodeBody(r, &in, true); err != nil {
		return err
	}
	out, err := reg.Update(r.Context(), in)
	return answerOK(w, out, err)
}

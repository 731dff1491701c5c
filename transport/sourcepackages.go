package transport

import (
	"net/http"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
)

// The source package routes are authenticated like every route but not
// gated by the memory mode (installing code is not a memory write), and
// have no MCP tool: an agent never installs code.

// packageUpload reports POST /api/source-packages: its body is a package
// archive of up to 64 MiB, not a JSON body of up to 4 MiB.
func packageUpload(r *http.Request) bool {
	return r.Method == http.MethodPost && routedPath(r) == "/api/source-packages"
}

func (s *Server) packagesOr() (*services.Packages, error) {
	if s.Packages == nil {
		return nil, fault.New(fault.ServerFailed, "source packages are not available on this daemon", "see the log")
	}
	return s.Packages, nil
}

// installPackage is POST /api/source-packages[?consent=DIGEST&enable=true]
// with a package archive (.tar.gz) as the body: {source, replaced}.
func (s *Server) installPackage(p *services.Packages, _ string, w http.ResponseWriter, r *http.Request) error {
	enable, err := queryBool(r, "enable")
	if err != nil {
		return err
	}
	body, done, err := s.archiveBody(w, r, services.MaxPackageBytes, "source package", "package archive")
	if err != nil {
		return err
	}
	defer done()
	out, err := p.Install(r.Context(), body, services.InstallOptions{Consent: r.URL.Query().Get("consent"), Enable: enable})
	return answerInstalled(w, out, out.Replaced, err)
}

// listPackages is GET /api/source-packages: every source with its state,
// origin and permissions.
func listPackages(p *services.Packages, _ string, w http.ResponseWriter, r *http.Request) error {
	list, err := p.List(r.Context())
	return answerOK(w, api.SourcePackageList{Sources: list}, err)
}

// showPackage is GET /api/source-packages/{name}.
func showPackage(p *services.Packages, name string, w http.ResponseWriter, r *http.Request) error {
	v, err := p.Show(r.Context(), name)
	return answerOK(w, v, err)
}

// removePackage is DELETE /api/source-packages/{name}: {removed, miners}
// (the miners naming the source, now unavailable).
func removePackage(p *services.Packages, name string, w http.ResponseWriter, r *http.Request) error {
	out, err := p.RemoveSource(r.Context(), name)
	return answerOK(w, out, err)
}

// enablePackage is POST /api/source-packages/{name}/enable or /disable
// (idempotent): the source as it is now.
func enablePackage(enable bool) func(*services.Packages, string, http.ResponseWriter, *http.Request) error {
	return func(p *services.Packages, name string, w http.ResponseWriter, r *http.Request) error {
		v, err := p.SetEnabled(r.Context(), name, enable)
		return answerOK(w, v, err)
	}
}

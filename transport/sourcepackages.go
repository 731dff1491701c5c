package transport

import (
	"net/http"
	"time"

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
func (s *Server) installPackage(w http.ResponseWriter, r *http.Request) error {
	p, err := s.packagesOr()
	if err != nil {
		return err
	}
	enable, err := queryBool(r, "enable")
	if err != nil {
		return err
	}
	if r.ContentLength > services.MaxPackageBytes {
		return fault.Newf(fault.InputTooLarge, "a source package is at most 64 MiB",
			"the request body declares %d bytes; a source package is at most %d", r.ContentLength, services.MaxPackageBytes)
	}
	if !hasBody(r) {
		return fault.Invalid("body", "is empty; send the package archive (.tar.gz)")
	}
	rc := http.NewResponseController(w)
	body := &stallReader{r: r.Body, rc: rc, wait: s.Limits.body()}
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	out, err := p.Install(r.Context(), body, services.InstallOptions{Consent: r.URL.Query().Get("consent"), Enable: enable})
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if out.Replaced != "" {
		status = http.StatusOK
	}
	return writeJSON(w, status, out)
}

// listPackages is GET /api/source-packages: every source with its state,
// origin and permissions.
func (s *Server) listPackages(w http.ResponseWriter, r *http.Request) error {
	p, err := s.packagesOr()
	if err != nil {
		return err
	}
	list, err := p.List(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.SourcePackageList{Sources: list})
}

// showPackage is GET /api/source-packages/{name}.
func (s *Server) showPackage(w http.ResponseWriter, r *http.Request) error {
	p, err := s.packagesOr()
	if err != nil {
		return err
	}
	name, err := param(r, "name")
	if err != nil {
		return err
	}
	v, err := p.Show(r.Context(), name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

// removePackage is DELETE /api/source-packages/{name}: {removed, miners}
// (the miners naming the source, now unavailable).
func (s *Server) removePackage(w http.ResponseWriter, r *http.Request) error {
	p, err := s.packagesOr()
	if err != nil {
		return err
	}
	name, err := param(r, "name")
	if err != nil {
		return err
	}
	out, err := p.RemoveSource(r.Context(), name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// enablePackage is POST /api/source-packages/{name}/enable or /disable
// (idempotent): the source as it is now.
func (s *Server) enablePackage(enable bool) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.packagesOr()
		if err != nil {
			return err
		}
		name, err := param(r, "name")
		if err != nil {
			return err
		}
		v, err := p.SetEnabled(r.Context(), name, enable)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, v)
	}
}

package transport

import (
	"net/http"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
)

// The sign-in routes (OAuth for a source package, or a source
// configuration) are authenticated like every route, not mode-gated, and
// have no MCP tool. Every answer, errors included, carries
// Cache-Control: no-store; none carries a token.

// signInStart is the optional body of POST .../auth: the flow's kind
// (device or browser; absent: the first the source declares).
type signInStart struct {
	Kind string `json:"kind,omitempty"`
}

func (s *Server) signIn(w http.ResponseWriter) (*services.SignIn, error) {
	w.Header().Set("Cache-Control", "no-store")
	if s.SignIn == nil {
		return nil, fault.New(fault.CredentialStoreFailed, "sign-in is not available on this daemon: its token store could not be opened",
			"see the daemon's log; check credentials.dir and credentials.backend")
	}
	return s.SignIn, nil
}

// packageSource checks that name is a source (loci::source::not_found).
func (s *Server) packageSource(r *http.Request, name string) error {
	p, err := s.packagesOr()
	if err != nil {
		return err
	}
	_, err = p.Show(r.Context(), name)
	return err
}

// startPackageSignIn is POST /api/source-packages/{name}/auth with an
// optional body {kind}: {flow, kind, user_code?, verification_uri?, url?,
// expires_in}.
func (s *Server) startPackageSignIn(w http.ResponseWriter, r *http.Request) error {
	return s.startSignIn(w, r, "name", func(_ *services.SignIn, name string) (string, string, error) {
		if err := s.packageSource(r, name); err != nil {
			return "", "", err
		}
		return services.SourceKey(name), name, nil
	})
}

// startSignIn is the body of POST .../auth: the route's path parameter
// key, the optional body {kind}, then target names the token's key and
// the source to sign in to.
func (s *Server) startSignIn(w http.ResponseWriter, r *http.Request, key string, target func(si *services.SignIn, v string) (string, string, error)) error {
	si, err := s.signIn(w)
	if err != nil {
		return err
	}
	v, err := param(r, key)
	if err != nil {
		return err
	}
	var body signInStart
	if err := decodeBody(r, &body, true); err != nil {
		return err
	}
	tokenKey, source, err := target(si, v)
	if err != nil {
		return err
	}
	out, err := si.Start(r.Context(), tokenKey, source, body.Kind)
	return answerOK(w, out, err)
}

// waitPackageSignIn is POST /api/source-packages/{name}/auth/{flow}/wait
// [?timeout=N] (seconds, at most 30, default 30): {status: pending}, then
// {status: signed_in, source, signed_in, expires_at, scopes, stored_in}.
func (s *Server) waitPackageSignIn(w http.ResponseWriter, r *http.Request) error {
	si, err := s.signIn(w)
	if err != nil {
		return err
	}
	name, err := param(r, "name")
	if err != nil {
		return err
	}
	flow, err := param(r, "flow")
	if err != nil {
		return err
	}
	secs, err := queryRange(r, "timeout", 30, 0, 30)
	if err != nil {
		return err
	}
	return s.waitSignIn(w, r, si, services.SourceKey(name), flow, secs)
}

func (s *Server) waitSignIn(w http.ResponseWriter, r *http.Request, si *services.SignIn, key, flow string, secs int) error {
	out, err := si.Wait(r.Context(), key, flow, time.Duration(secs)*time.Second)
	if err != nil {
		return err
	}
	if out.Status == api.SignInPending {
		// A pending answer says no more than its status.
		out = api.SignInWaited{Status: api.SignInPending}
	}
	return writeJSON(w, http.StatusOK, out)
}

// startConfigSignIn is POST /api/source-configs/{id}/auth with an
// optional body {kind}: a flow for the configuration's source whose token
// is the configuration's (an implicit configuration's is its source's).
func (s *Server) startConfigSignIn(w http.ResponseWriter, r *http.Request) error {
	return s.startSignIn(w, r, "id", func(si *services.SignIn, id string) (string, string, error) {
		return si.ConfigTarget(id)
	})
}

// waitConfigSignIn is GET /api/source-configs/{id}/auth?flow=ID
// [&seconds=N] (at most 30, default 30): as waitPackageSignIn.
func (s *Server) waitConfigSignIn(w http.ResponseWriter, r *http.Request) error {
	si, err := s.signIn(w)
	if err != nil {
		return err
	}
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	flow := r.URL.Query().Get("flow")
	if flow == "" {
		return fault.Invalid("flow", "is required: the flow id POST /api/source-configs/"+id+"/auth answered")
	}
	secs, err := queryRange(r, "seconds", 30, 0, 30)
	if err != nil {
		return err
	}
	key, _, err := si.ConfigTarget(id)
	if err != nil {
		return err
	}
	return s.waitSignIn(w, r, si, key, flow, secs)
}

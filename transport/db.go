package transport

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
)

// dbRoutes registers the database admin endpoint (GET, POST and DELETE
// /api/db; spec: the database admin listener): its state, open (a body of
// api.DBOpen, every field optional) and close. On a shared store it is
// refused with loci::db::unavailable (503): the database is PostgreSQL's
// own, reached with its own tools. Authenticated like every /api route,
// never mode-gated: it reads and writes no memory (the listener's SQL is
// read-only). No MCP tool: the listener is for people and their scripts.
func (s *Server) dbRoutes(r chi.Router) {
	r.Get("/db", s.h(s.dbRoute(func(r *http.Request) (api.DBState, error) { return s.DBAdmin.State(), nil })))
	r.Post("/db", s.h(s.dbRoute(s.openDB)))
	r.Delete("/db", s.h(s.dbRoute(func(r *http.Request) (api.DBState, error) { return s.DBAdmin.Close() })))
}

// dbRoute answers one method of /api/db with the listener's state (200),
// after the refusals every method shares.
func (s *Server) dbRoute(fn func(r *http.Request) (api.DBState, error)) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := s.dbAvailable(); err != nil {
			return err
		}
		st, err := fn(r)
		if err != nil {
			return err
		}
		w.Header().Set("Cache-Control", "no-store")
		return writeJSON(w, http.StatusOK, st)
	}
}

// openDB opens the listener with the request's settings over the
// configuration's db.* values; a body that is not an api.DBOpen (bad JSON,
// an unknown field, a wrong type) is loci::input::invalid and opens
// nothing.
func (s *Server) openDB(r *http.Request) (api.DBState, error) {
	var o api.DBOpen
	if err := decodeBody(r, &o, true); err != nil {
		return api.DBState{}, err
	}
	return s.DBAdmin.Open(o)
}

// dbAvailable refuses the endpoint where no listener can serve: a shared
// store (loci::db::unavailable, saying how to reach the database itself),
// or a server built without one.
func (s *Server) dbAvailable() error {
	if db := s.Palace.DB; db.Shared() {
		where := strings.TrimPrefix(db.Location(), db.Backend()+"://")
		return fault.Newf(fault.DBUnavailable,
			"connect to the database itself, e.g. psql -h HOST -p PORT -d DATABASE as the user in datastore.url ("+where+"); it is served by PostgreSQL, not by loci",
			"the database admin endpoint is not available on a shared store: this daemon's store is the %s database at %s", db.Backend(), where)
	}
	if s.DBAdmin == nil {
		return fault.New(fault.ServerFailed, "the database admin listener is not set up in this daemon", "restart it")
	}
	return nil
}

// passwordFrom says where a shared store's password came from, never the
// password nor the file's path ("" for the embedded store).
func passwordFrom(c config.Config) string {
	if !c.Datastore.Shared() {
		return ""
	}
	if c.Datastore.PasswordFrom != "" {
		return c.Datastore.PasswordFrom
	}
	d := c.Datastore
	d.Forget()
	return d.PasswordFrom
}

package transport

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
)

// dbRoutes registers the database admin endpoint (GET, POST and DELETE
// /api/db; spec: the database admin listener). On a shared store it is
// refused with loci::db::unavailable (503): the database is PostgreSQL's
// own, reached with its own tools. On the embedded store the listener is
// not built in this release: the routes say so (404
// loci::server::route_not_found, what an unknown route answers, with a
// message naming the endpoint), rather than leaving a bare "no route".
// Never mode-gated: it is no memory read or write.
func (s *Server) dbRoutes(r chi.Router) {
	h := s.h(s.dbAdmin)
	r.Get("/db", h)
	r.Post("/db", h)
	r.Delete("/db", h)
}

// dbAdmin answers every method of /api/db.
func (s *Server) dbAdmin(w http.ResponseWriter, r *http.Request) error {
	if db := s.Palace.DB; db.Shared() {
		where := strings.TrimPrefix(db.Location(), db.Backend()+"://")
		return fault.Newf(fault.DBUnavailable,
			"connect to the database itself, e.g. psql -h HOST -p PORT -d DATABASE as the user in datastore.url ("+where+"); it is served by PostgreSQL, not by loci",
			"the database admin endpoint is not available on a shared store: this daemon's store is the %s database at %s", db.Backend(), where)
	}
	return fault.Newf(fault.ServerRouteNotFound,
		"use the REST and MCP interfaces, or `loci export` to read the palace's records; the admin listener is not part of this release",
		"the database admin listener (%s /api/db) is not built in this release", r.Method)
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

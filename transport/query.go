package transport

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/loci-dev/loci/fault"
)

// queryParams is, for every /api route ("METHOD pattern"), the query
// parameters it takes; any other is refused (as an unknown body field
// is). TestEveryRouteDeclaresItsQuery keeps it whole.
var queryParams = map[string][]string{
	"GET /api/health":        nil,
	"GET /api/status":        nil,
	"GET /api/events":        nil,
	"GET /api/config":        nil,
	"POST /api/shutdown":     nil,
	"POST /api/auth/token":   nil,
	"DELETE /api/auth/token": nil,
	"GET /api/db":            nil,
	"POST /api/db":           nil,
	"DELETE /api/db":         nil,

	"GET /api/wings":                                  nil,
	"POST /api/wings":                                 nil,
	"GET /api/wings/{wing}":                           nil,
	"DELETE /api/wings/{wing}":                        nil,
	"GET /api/wings/{wing}/rooms":                     nil,
	"POST /api/wings/{wing}/rooms":                    nil,
	"GET /api/wings/{wing}/rooms/{room}":              nil,
	"DELETE /api/wings/{wing}/rooms/{room}":           nil,
	"GET /api/wings/{wing}/rooms/{room}/drawers":      {"limit", "include_historical", "cursor"},
	"POST /api/wings/{wing}/rooms/{room}/drawers":     nil,
	"GET /api/wings/{wing}/rooms/{room}/drawers/*":    nil,
	"DELETE /api/wings/{wing}/rooms/{room}/drawers/*": nil,
	"POST /api/notes":                                 nil,
	"GET /api/diary":                                  {"agent_identity", "wing", "limit"},
	"POST /api/diary":                                 nil,
	"POST /api/drawers/{id}/supersede":                nil,
	"GET /api/stats/filed":                            {"buckets", "step_secs", "since"},
	"GET /api/drawers/{id}/history":                   nil,
	"PUT /api/drawers/{id}/embedding":                 nil,
	"GET /api/drawers/{id}/duplicates":                nil,
	"DELETE /api/drawers/{id}/duplicates/{link}":      nil,
	"POST /api/drawers/{id}/mentions":                 nil,
	"GET /api/entities":                               {"name", "kind", "limit"},
	"GET /api/entities/{id}":                          nil,
	"GET /api/entities/{id}/mentions":                 nil,
	"GET /api/entities/{id}/candidates":               nil,
	"POST /api/entities/{id}/aliases":                 nil,
	"GET /api/entities/{id}/relationships":            {"include_expired", "as_of", "known_at"},
	"GET /api/relationships/{id}/history":             {"as_of", "known_at"},
	"GET /api/graph":                                  {"entity", "depth", "limit", "known_at"},

	"GET /api/sources":                                  nil,
	"GET /api/source-packages":                          nil,
	"POST /api/source-packages":                         {"consent", "enable"},
	"GET /api/source-packages/{name}":                   nil,
	"DELETE /api/source-packages/{name}":                nil,
	"POST /api/source-packages/{name}/enable":           nil,
	"POST /api/source-packages/{name}/disable":          nil,
	"POST /api/source-packages/{name}/auth":             nil,
	"POST /api/source-packages/{name}/auth/{flow}/wait": {"timeout"},
	"POST /api/source-configs/{id}/auth":                nil,
	"GET /api/source-configs/{id}/auth":                 {"flow", "seconds"},
	"GET /api/source-registry/search":                   {"q", "registry"},
	"GET /api/source-registry/sources/{name}":           {"version", "registry"},
	"POST /api/source-registry/install":                 nil,
	"GET /api/source-registry/updates":                  nil,
	"POST /api/source-registry/update":                  nil,
	"GET /api/plugins":                                  nil,
	"POST /api/plugins":                                 nil,
	"POST /api/plugins/preview":                         nil,
	"GET /api/plugins/{id}":                             nil,
	"DELETE /api/plugins/{id}":                          nil,
	"GET /api/plugin-registry/search":                   {"q", "registry"},
	"GET /api/plugin-registry/plugins/{id}":             {"version", "registry"},
	"POST /api/plugin-registry/install":                 nil,
	"GET /api/source-configs":                           nil,
	"GET /api/source-configs/{id}":                      nil,
	"PUT /api/source-configs/{id}":                      nil,
	"DELETE /api/source-configs/{id}":                   nil,
	"GET /api/miners":                                   nil,
	"POST /api/miners/reload":                           nil,
	"GET /api/miners/{name}":                            nil,
	"PUT /api/miners/{name}":                            nil,
	"DELETE /api/miners/{name}":                         nil,
	"POST /api/miners/{name}/run":                       nil,
	"POST /api/miners/{name}/enable":                    nil,
	"POST /api/miners/{name}/disable":                   nil,
	"POST /api/miners/{name}/schedule/enable":           nil,
	"POST /api/miners/{name}/schedule/disable":          nil,
	"GET /api/triggers":                                 nil,
	"POST /api/triggers/reload":                         nil,
	"GET /api/triggers/{name}":                          nil,
	"PUT /api/triggers/{name}":                          nil,
	"DELETE /api/triggers/{name}":                       nil,
	"POST /api/triggers/{name}/enable":                  nil,
	"POST /api/triggers/{name}/disable":                 nil,
	"POST /api/triggers/{name}/fire":                    nil,

	"GET /api/wake-up": {"agent_identity", "wing", "max_items", "max_bytes"},
	"GET /api/search":  searchQuery,
	"POST /api/search": nil,
	"GET /api/recall":  searchQuery,
	"POST /api/recall": nil,

	"GET /api/jobs":                    {"status", "kind", "limit", "automatic"},
	"POST /api/jobs":                   nil,
	"GET /api/jobs/{id}":               nil,
	"POST /api/jobs/{id}/pause":        nil,
	"POST /api/jobs/{id}/resume":       nil,
	"POST /api/jobs/{id}/cancel":       nil,
	"POST /api/jobs/{id}/retry":        nil,
	"POST /api/jobs/{id}/force-cancel": nil,

	"GET /api/backups":  nil,
	"POST /api/backups": nil,
	"GET /api/export":   {"wing", "since", "vectors"},
	"GET /api/backup":   {"since", "palace"},
	"POST /api/imports": {"wing_map", "dry_run", "skip_unknown"},
}

// repeatable is, for a route, the query parameters it takes more than
// once (one value each, as the CLI's repeated flag: a wing's name may
// hold a comma).
var repeatable = map[string][]string{
	"GET /api/export":   {"wing"},
	"POST /api/imports": {"wing_map"},
}

// searchQuery is what GET /api/search and /api/recall take.
var searchQuery = []string{"q", "query", "limit", "wing", "room", "ranking", "profile", "tags", "source_kind",
	"as_of", "from", "until", "known_at", "include_historical", "expand", "max_bytes", "max_hit_bytes"}

// checkQuery refuses a query string that is not valid percent-encoding,
// a parameter the route does not take (queryParams) and one given more
// than once. Every route has its line in queryParams
// (TestEveryRouteDeclaresItsQuery); a request that matched none is left to
// the 404.
func checkQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	rc := chi.RouteContext(r.Context())
	if rc == nil || !strings.HasPrefix(rc.RoutePattern(), "/api/") {
		return nil
	}
	route := r.Method + " " + rc.RoutePattern()
	allowed, ok := queryParams[route]
	if !ok {
		return nil // no route (a 404 answers it); every route has a line
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fault.Newf(fault.InputInvalid, "percent-encode the query string's names and values (%XX) and separate them with &",
			"query: %q is not a valid query string", r.URL.RawQuery)
	}
	for name, vs := range q {
		if !slices.Contains(allowed, name) {
			help := route + " takes no query parameters; leave " + name + " out"
			if len(allowed) > 0 {
				help = route + " takes " + strings.Join(allowed, ", ") + "; correct or leave out " + name
			}
			return fault.Newf(fault.InputInvalid, help, "%s: is not a query parameter of %s", name, route)
		}
		if len(vs) > 1 && !slices.Contains(repeatable[route], name) {
			return fault.Newf(fault.InputInvalid, "give "+name+" once", "%s: is given %d times", name, len(vs))
		}
	}
	return nil
}

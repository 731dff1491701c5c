package transport

import (
	"fmt"
	"html"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// routesHelp is the help of an unknown route: where each interface lives.
const routesHelp = "the REST routes are under /api (see the README's table), MCP is at /mcp, the dashboard at /ui/ when it is on"

// root is GET / : the dashboard when it is on, else a short page that
// names the interfaces and how to turn the dashboard on. It shows nothing
// of the palace, so it is open like /api/health.
func (s *Server) root(w http.ResponseWriter, r *http.Request) {
	if s.Config.Web.Enable {
		http.Redirect(w, r, "/ui/", http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	addr := html.EscapeString(s.Address)
	fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>loci</title></head>
<body>
<h1>loci %s</h1>
<p>This is the loci memory daemon. It answers:</p>
<ul>
<li>REST under <code>/api</code>, for example <code>GET /api/status</code> (the routes are in the README);</li>
<li>MCP (streamable HTTP) at <code>/mcp</code>: connect an agent with <code>http://%s/mcp</code>;</li>
<li>the web dashboard at <code>/ui/</code>, which is off: start the daemon with <code>loci serve --web</code> (or <code>loci daemon start --web</code>), or set <code>web.enable = true</code> in the configuration file.</li>
</ul>
</body></html>
`, html.EscapeString(s.Version), addr)
}

// allowedMethods lists the methods the router answers on the request's
// path, for a 405's Allow header.
func allowedMethods(router chi.Router, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if router.Match(chi.NewRouteContext(), m, r.URL.Path) {
			out = append(out, m)
		}
	}
	return out
}

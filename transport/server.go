package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/dbadmin"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/search"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/transport/client"
	"github.com/loci-dev/loci/ui"
)

// Server holds what the handlers need.
type Server struct {
	Palace *services.Palace
	Jobs   *actors.Jobs
	Search *search.Search
	// Sources lists the source adapters and mined sources.
	Sources *services.Sources
	// Miners are the configuration file's miners.
	Miners *services.Miners
	// Triggers is the trigger supervisor (nil: the trigger routes answer
	// that there are none).
	Triggers *services.Triggers
	// Graph is the knowledge graph's service.
	Graph *services.Graph
	// Imports takes export files (POST /api/imports).
	Imports *services.Imports
	// Packages installs and lists source packages (nil: refused).
	Packages *services.Packages
	// Registries searches and installs from source registries, Plugins
	// installs plugins, SignIn signs sources in (nil: refused).
	Registries *services.Registries
	Plugins    *services.Plugins
	SignIn     *services.SignIn
	Config     config.Config
	Version    string
	Started    time.Time
	Address    string
	Log        *slog.Logger
	Migrator   store.Migrator
	Shutdown   func() // starts a graceful stop
	// Auth holds the credentials; nil only when authentication is off.
	Auth *services.Auth
	// Events is the change-notice bus of GET /api/events.
	Events *actors.Bus
	// Reporter builds the status report; nil makes one from the fields
	// above.
	Reporter *services.Reporter
	// Limits are the HTTP timeouts (defaults when zero).
	Limits Limits
	// AuthThrottle shapes the answers to refused tokens per client address
	// (DefaultThrottle where zero); read at the first refusal.
	AuthThrottle ThrottleLimits

	// MCPIdle and MCPMax override the MCP session limits (MCPSessionIdle,
	// MCPMaxSessions) when set.
	// Store is the palace's store, for GET /api/backup (nil: refused).
	Store store.DB

	MCPIdle time.Duration
	MCPMax  int
	// StreamStall is how long an event or MCP stream may stay behind
	// before it is dropped (StreamStall where zero).
	StreamStall time.Duration

	// Backups is the daemon's own backups (nil: the backup routes answer
	// that there are none).
	Backups *services.Backups

	// DBAdmin is the database admin listener behind /api/db (nil on a
	// shared store, whose routes answer loci::db::unavailable).
	DBAdmin *dbadmin.Admin

	busyWarned atomic.Int64 // when a refused stream was last logged, Unix ns

	thrOnce   sync.Once
	thr       *throttle
	mcpModes  sync.Map // MCP session id -> Mode
	mcpServer *mcp.Server
	mcpCreds  mcpCreds
}

// Handler builds the router.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.recoverer, s.pathGuard, s.limits, s.hostGuard, s.auth, s.palaceGuard, s.mode)
	r.NotFound(s.h(func(w http.ResponseWriter, r *http.Request) error {
		if p := r.URL.Path; p == "/ui" || strings.HasPrefix(p, "/ui/") {
			return fault.Newf(fault.ServerRouteNotFound, "the dashboard is off: start the daemon with --web (loci daemon restart --web, loci serve --web) or set web.enable = true in the configuration file",
				"no route %s", p)
		}
		return fault.Newf(fault.ServerRouteNotFound, routesHelp, "no route %s", r.URL.Path)
	}))
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		allowed := allowedMethods(r, req)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		renderError(s.Log, w, req, fault.Newf(fault.ServerMethodNotAllowed, "use one of "+strings.Join(allowed, ", "),
			"method %s is not allowed on %s", req.Method, req.URL.Path))
	})
	r.Get("/", s.root)
	r.Head("/", s.root)
	r.Handle("/mcp", s.mcpHandler())
	if s.Config.Web.Enable {
		// The dashboard's files; every other request it makes goes through
		// the ordinary authenticated, mode-gated routes.
		dash := ui.Handler()
		r.Get("/ui", dash.ServeHTTP)
		r.Head("/ui", dash.ServeHTTP)
		r.Get("/ui/*", dash.ServeHTTP)
		r.Head("/ui/*", dash.ServeHTTP)
	}
	r.Route("/api", func(r chi.Router) {
		r.Get("/health", s.h(s.health))
		r.Get("/status", s.h(s.status))
		r.Get("/events", s.read(s.events))
		r.Get("/config", s.h(s.config))
		r.Post("/shutdown", s.h(s.shutdown))
		r.Post("/auth/token", s.h(s.generateToken))
		r.Delete("/auth/token", s.h(s.revokeToken))

		r.Get("/wings", s.read(s.listWings))
		r.Post("/wings", s.write(s.createWing))
		r.Get("/wings/{wing}", s.read(s.getWing))
		r.Delete("/wings/{wing}", s.write(s.deleteWing))
		r.Get("/wings/{wing}/rooms", s.read(s.listRooms))
		r.Post("/wings/{wing}/rooms", s.write(s.createRoom))
		r.Get("/wings/{wing}/rooms/{room}", s.read(s.getRoom))
		r.Delete("/wings/{wing}/rooms/{room}", s.write(s.deleteRoom))
		r.Get("/wings/{wing}/rooms/{room}/drawers", s.read(s.listDrawers))
		r.Post("/wings/{wing}/rooms/{room}/drawers", s.write(s.createDrawer))
		r.Get("/wings/{wing}/rooms/{room}/drawers/*", s.read(s.getDrawer))
		r.Delete("/wings/{wing}/rooms/{room}/drawers/*", s.write(s.deleteDrawer))

		r.Post("/notes", s.write(s.createNote))
		r.Get("/diary", s.read(s.readDiary))
		r.Post("/diary", s.write(s.writeDiary))

		r.Post("/drawers/{id}/supersede", s.write(s.supersede))
		r.Get("/stats/filed", s.read(s.filed))
		r.Get("/drawers/{id}/history", s.read(s.history))
		r.Put("/drawers/{id}/embedding", s.write(s.putEmbedding))
		r.Get("/drawers/{id}/duplicates", s.read(s.duplicates))
		r.Delete("/drawers/{id}/duplicates/{link}", s.write(s.deleteDuplicate))
		r.Post("/drawers/{id}/mentions", s.write(s.linkMention))
		r.Get("/entities", s.read(s.listEntities))
		r.Get("/entities/{id}", s.read(s.getEntity))
		r.Get("/entities/{id}/mentions", s.read(s.entityMentions))
		r.Get("/entities/{id}/candidates", s.read(s.entityCandidates))
		r.Post("/entities/{id}/aliases", s.write(s.addAlias))
		r.Get("/entities/{id}/relationships", s.read(s.entityRelationships))
		r.Get("/relationships/{id}/history", s.read(s.relationshipHistory))
		r.Get("/graph", s.read(s.graphRead))

		r.Get("/sources", s.read(s.listSources))
		// Source packages: authenticated, never mode-gated (installing
		// code is not a memory write), no MCP tool.
		r.Get("/source-packages", s.h(serviceRoute(s.packagesOr, "", listPackages)))
		r.Post("/source-packages", s.h(serviceRoute(s.packagesOr, "", s.installPackage)))
		r.Get("/source-packages/{name}", s.h(serviceRoute(s.packagesOr, "name", showPackage)))
		r.Delete("/source-packages/{name}", s.h(serviceRoute(s.packagesOr, "name", removePackage)))
		r.Post("/source-packages/{name}/enable", s.h(serviceRoute(s.packagesOr, "name", enablePackage(true))))
		r.Post("/source-packages/{name}/disable", s.h(serviceRoute(s.packagesOr, "name", enablePackage(false))))
		r.Post("/source-packages/{name}/auth", s.h(s.startPackageSignIn))
		r.Post("/source-packages/{name}/auth/{flow}/wait", s.h(s.waitPackageSignIn))
		r.Post("/source-configs/{id}/auth", s.h(s.startConfigSignIn))
		r.Get("/source-configs/{id}/auth", s.h(s.waitConfigSignIn))
		r.Get("/source-registry/search", s.h(serviceRoute(s.registriesOr, "", searchRegistry)))
		r.Get("/source-registry/sources/{name}", s.h(serviceRoute(s.registriesOr, "name", showRegistrySource)))
		r.Post("/source-registry/install", s.h(serviceRoute(s.registriesOr, "", installFromRegistry)))
		r.Get("/source-registry/updates", s.h(serviceRoute(s.registriesOr, "", registryUpdates)))
		r.Post("/source-registry/update", s.h(serviceRoute(s.registriesOr, "", updateFromRegistry)))
		r.Get("/plugins", s.h(serviceRoute(s.pluginsOr, "", listPlugins)))
		r.Post("/plugins", s.h(serviceRoute(s.pluginsOr, "", s.installPlugin)))
		r.Post("/plugins/preview", s.h(serviceRoute(s.pluginsOr, "", s.previewPlugin)))
		r.Get("/plugins/{id}", s.h(serviceRoute(s.pluginsOr, "id", showPlugin)))
		r.Delete("/plugins/{id}", s.h(serviceRoute(s.pluginsOr, "id", removePlugin)))
		r.Get("/plugin-registry/search", s.h(serviceRoute(s.pluginsOr, "", searchPluginRegistry)))
		r.Get("/plugin-registry/plugins/{id}", s.h(serviceRoute(s.pluginsOr, "id", showRegistryPlugin)))
		r.Post("/plugin-registry/install", s.h(serviceRoute(s.pluginsOr, "", installPluginFromRegistry)))
		r.Get("/source-configs", s.read(s.minersRoute("", listSourceConfigs)))
		r.Get("/source-configs/{id}", s.read(s.minersRoute("id", getSourceConfig)))
		r.Put("/source-configs/{id}", s.h(s.minersRoute("id", putSourceConfig)))
		r.Delete("/source-configs/{id}", s.h(s.minersRoute("id", deleteSourceConfig)))
		r.Get("/miners", s.read(s.minersRoute("", listMiners)))
		r.Post("/miners/reload", s.h(s.minersRoute("", reloadMiners)))
		r.Get("/miners/{name}", s.read(s.minersRoute("name", getMiner)))
		r.Put("/miners/{name}", s.h(s.minersRoute("name", putMiner)))
		r.Delete("/miners/{name}", s.h(s.minersRoute("name", deleteMiner)))
		r.Post("/miners/{name}/run", s.write(s.minersRoute("name", runMiner)))
		r.Post("/miners/{name}/enable", s.h(s.minersRoute("name", enableMiner(true))))
		r.Post("/miners/{name}/disable", s.h(s.minersRoute("name", enableMiner(false))))
		r.Post("/miners/{name}/schedule/enable", s.h(s.minersRoute("name", scheduleMiner(true))))
		r.Post("/miners/{name}/schedule/disable", s.h(s.minersRoute("name", scheduleMiner(false))))
		r.Get("/triggers", s.read(s.triggersRoute("", listTriggers)))
		r.Post("/triggers/reload", s.h(s.triggersRoute("", reloadTriggers)))
		r.Get("/triggers/{name}", s.read(s.triggersRoute("name", getTrigger)))
		r.Put("/triggers/{name}", s.h(s.triggersRoute("name", putTrigger)))
		r.Delete("/triggers/{name}", s.h(s.triggersRoute("name", deleteTrigger)))
		r.Post("/triggers/{name}/enable", s.h(s.triggersRoute("name", enableTrigger(true))))
		r.Post("/triggers/{name}/disable", s.h(s.triggersRoute("name", enableTrigger(false))))
		r.Post("/triggers/{name}/fire", s.write(s.triggersRoute("name", fireTrigger)))

		r.Get("/wake-up", s.read(s.wakeUp))
		r.Get("/search", s.read(s.searchGet(false)))
		r.Post("/search", s.read(s.searchPost(false)))
		r.Get("/recall", s.read(s.searchGet(true)))
		r.Post("/recall", s.read(s.searchPost(true)))

		// Job control is never mode-gated; submitting a job that writes
		// memories is a write.
		r.Get("/jobs", s.h(s.listJobs))
		r.Post("/jobs", s.write(s.submitJob))
		r.Get("/jobs/{id}", s.h(s.getJob))
		r.Post("/jobs/{id}/pause", s.h(s.jobAction((*actors.Jobs).Pause)))
		r.Post("/jobs/{id}/resume", s.h(s.jobAction((*actors.Jobs).Resume)))
		r.Post("/jobs/{id}/cancel", s.h(s.jobAction((*actors.Jobs).Cancel)))
		r.Post("/jobs/{id}/retry", s.h(s.jobAction((*actors.Jobs).Retry)))
		r.Post("/jobs/{id}/force-cancel", s.h(s.forceCancel))

		r.Get("/export", s.read(s.exportRoute))
		// Backups into backup.dir: never a path a request chose.
		r.Get("/backups", s.h(s.listBackups))
		r.Post("/backups", s.h(s.runBackup))
		r.Get("/backup", s.read(s.getBackup))
		r.Post("/imports", s.write(s.submitImport))
		s.dbRoutes(r)
	})
	return r
}

// h adapts a handler that returns its error, after refusing a query
// string the route does not take (checkQuery).
func (s *Server) h(fn handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := checkQuery(r)
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			renderError(s.Log, w, r, err)
		}
	}
}

// read and write gate a handler by the request's memory mode.
func (s *Server) read(fn handler) http.HandlerFunc  { return s.gated(false, fn) }
func (s *Server) write(fn handler) http.HandlerFunc { return s.gated(true, fn) }

func (s *Server) gated(write bool, fn handler) http.HandlerFunc {
	return s.h(func(w http.ResponseWriter, r *http.Request) error {
		if err := modeOf(r).Allow(write); err != nil {
			return err
		}
		return fn(w, r)
	})
}

// recoverer turns a handler panic into a 500 with the error body.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.Log.Error("handler panic", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				renderError(s.Log, w, r, fault.New(fault.ServerFailed, "internal error", "see the daemon log; report it if it repeats"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// hostGuard refuses requests a browser makes on behalf of another site.
// While the daemon listens on loopback only, a Host naming another machine
// is refused: a web page can point its own name at 127.0.0.1 (DNS
// rebinding) and read and write an unauthenticated daemon through the
// visitor's browser. Bound beyond loopback, any name is served
// (authentication is expected there); /mcp checks its Host itself in every
// case (the spec's rule). And on every bind, a request whose Origin is not
// the daemon's own (same Host) is refused: tools send no Origin.
func (s *Server) hostGuard(next http.Handler) http.Handler {
	bind := s.Config.Server.Bind
	ip := net.ParseIP(bind)
	loopback := bind == "localhost" || (ip != nil && ip.IsLoopback())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopback && !localHost(r.Host) {
			renderError(s.Log, w, r, fault.Newf(fault.InputInvalid,
				"reach loci as localhost, 127.0.0.1 or [::1]; to serve other names, bind it beyond loopback with authentication on",
				"Host %q is refused while loci listens on loopback only (DNS rebinding protection)", r.Host))
			return
		}
		// A browser names the page behind a request in Origin; a page of
		// another site could otherwise make the visitor's browser write
		// memories or stop the daemon (a plain-text POST needs no
		// preflight). Only pages loci serves itself may call it; tools
		// send no Origin.
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				renderError(s.Log, w, r, fault.Newf(fault.InputInvalid,
					"call loci from a program, or from a page loci serves; browsers may not call it from other sites",
					"a request from the web page %q is refused (cross-site request protection)", o))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// auth checks the bearer token when authentication is enabled: every
// route, an unknown path too (401 before any 404), except GET /api/health
// and, with the dashboard on, GET and HEAD of /ui. A missing, malformed or
// wrong token get the same answer. The token is checked first: a valid one
// is never slowed or refused. A request that sent an Authorization header
// and was refused counts against its client address (throttle): past the
// free ones its answer waits, then becomes 429 loci::auth::throttled.
func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Config.Auth.Enabled || open(r, s.Config.Web.Enable) {
			next.ServeHTTP(w, r)
			return
		}
		got, ok := bearer(r)
		if !ok || s.Auth == nil || !s.Auth.Check(got) {
			if _, sent := r.Header["Authorization"]; sent {
				v := s.throttle().refused(clientKey(r))
				if !throttleRefusal(w, r, v) {
					return
				}
				if v.throttled {
					renderError(s.Log, w, r, fault.New(fault.AuthThrottled, "too many refused tokens from this address",
						fmt.Sprintf("wait %d s (Retry-After) and send a valid token; a valid token is never throttled", v.retryAfter)))
					return
				}
			}
			w.Header().Set("WWW-Authenticate", "Bearer")
			renderError(s.Log, w, r, fault.New(fault.AuthUnauthorized, "a valid bearer token is required",
				"send Authorization: Bearer <token>; the CLI reads it from LOCI_AUTH_TOKEN or auth.token"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, services.Digest(got))))
	})
}

// throttle is the record of refused tokens, made at its first use.
func (s *Server) throttle() *throttle {
	s.thrOnce.Do(func() { s.thr = newThrottle(s.AuthThrottle, s.Log) })
	return s.thr
}

// palaceGuard refuses a request meant for another palace (the CLI names
// the palace it means in X-Loci-Palace), before anything is read or
// changed. Without the header, any client may use the daemon.
func (s *Server) palaceGuard(next http.Handler) http.Handler {
	own := filepath.Clean(s.Config.Palace.Path)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.Header.Get(client.PalaceHeader)
		if raw == "" {
			next.ServeHTTP(w, r)
			return
		}
		want, err := url.PathUnescape(raw)
		if err != nil || !samePath(want, own) {
			renderError(s.Log, w, r, fault.Newf(fault.PalaceMismatch,
				"the address this client used belongs to another palace's daemon (a stale registry file?); start loci on your palace, or pass --addr to use this one",
				"the daemon at %s serves the palace %s, not %s", s.Address, own, want))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// samePath compares two palace paths, cleaned, then with symbolic links
// resolved.
func samePath(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// bearer is the token of an Authorization header; the scheme is matched
// in any case (RFC 7235).
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimLeft(tok, " ")
	return tok, ok && strings.EqualFold(scheme, "Bearer") && tok != ""
}

// open reports the requests authentication never guards, decided on the
// path as routed (escaped), so /api/h%65alth is not open.
func open(r *http.Request, dashboard bool) bool {
	p := routedPath(r)
	if (r.Method == http.MethodGet && p == "/api/health") || ((r.Method == http.MethodGet || r.Method == http.MethodHead) && p == "/") {
		return true
	}
	ui := p == "/ui" || strings.HasPrefix(p, "/ui/")
	return dashboard && ui && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// mode parses X-Loci-Mode for every route that takes it.
func (s *Server) mode(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values(ModeHeader)
		m, err := ParseMode(r.Header.Get(ModeHeader))
		if len(vals) > 1 {
			// A proxy may add a restrictive mode to a client's own: taking
			// either one would be a guess.
			m, err = "", fault.Newf(fault.InputInvalid, "send "+ModeHeader+" once", "%s was sent %d times", ModeHeader, len(vals))
		}
		if err != nil {
			switch routedPath(r) {
			case "/api/health", "/api/shutdown", "/api/config", "/mcp":
				// Never mode-gated: the header is ignored.
				m = ModeFull
			default:
				renderError(s.Log, w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(withMode(r.Context(), m)))
	})
}

// generateToken makes a new token, shown once; the previous one stops
// working at once.
func (s *Server) generateToken(w http.ResponseWriter, r *http.Request) error {
	if s.Auth == nil {
		return fault.New(fault.ServerFailed, "authentication is not set up in this daemon", "restart it")
	}
	tok, err := s.Auth.Generate(r.Context())
	if err != nil {
		return err
	}
	s.dropStaleMCPSessions()
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusOK, api.GeneratedToken{Token: tok.Token, Algorithm: tok.Algorithm, Version: tok.Version, CreatedAt: tok.CreatedAt})
}

// revokeToken removes the generated token (a configured secret stays).
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	if s.Auth == nil {
		return fault.New(fault.ServerFailed, "authentication is not set up in this daemon", "restart it")
	}
	if err := s.Auth.Revoke(r.Context()); err != nil {
		return err
	}
	s.dropStaleMCPSessions()
	return writeJSON(w, http.StatusOK, api.TokenRevoked{Revoked: true})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, api.DaemonState{Status: "ok"})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, s.statusReport(r.Context(), modeOf(r)))
}

// statusReport is the status of REST and MCP; mode is the caller's.
func (s *Server) statusReport(ctx context.Context, mode Mode) api.Status {
	return s.reporter().Status(ctx, string(mode))
}

// reporter is the status service: the one the daemon gave, or one made
// from the server's own description (tests build servers without one).
func (s *Server) reporter() *services.Reporter {
	if s.Reporter != nil {
		return s.Reporter
	}
	return &services.Reporter{Palace: s.Palace, Search: s.Search, Migrator: s.Migrator, Version: s.Version, Started: s.Started,
		Address: s.Address, PalacePath: s.Config.Palace.Path, AuthEnabled: s.Config.Auth.Enabled, Dashboard: s.Config.Web.Enable}
}

func (s *Server) config(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, s.configReport())
}

// configReport is the effective configuration as GET /api/config shows it.
// Its file is the one the daemon reads now: a daemon that read none at
// start has created one since with its first change of a miner, trigger
// or source configuration (the settings shown are those it started with,
// as always).
func (s *Server) configReport() api.Config {
	c := s.Config
	if s.Miners != nil && c.File == "" {
		_, c.File, _ = s.Miners.Snapshot()
	}
	return api.Config{
		Listener:  api.Listener{Bind: c.Server.Bind, Port: c.Server.Port, Address: s.Address},
		Palace:    c.Palace.Path,
		Datastore: api.ConfigStore{Backend: s.Palace.DB.Backend(), Location: s.Palace.DB.Location(), Password: passwordFrom(c)},
		Auth:      api.ConfigAuth{Enabled: c.Auth.Enabled, TokenConfigured: s.Auth != nil && s.Auth.SecretConfigured()},
		Dashboard: api.Enabled{Enabled: c.Web.Enable},
		Assets:    api.Assets{Origin: assetsOrigin(c)},
		DB:        api.Endpoint{Bind: c.DB.Bind, Port: c.DB.Port, AllowRemote: c.DB.AllowRemote},
		Webhook:   api.Webhook{Enable: c.Webhook.Enable, Bind: c.Webhook.Bind, Port: c.Webhook.Port, AllowRemote: c.Webhook.AllowRemote},
		Dedup:     api.ConfigDedup{Enabled: c.Dedup.Enabled, NearThreshold: c.Dedup.NearThreshold, EntityFuzzy: c.Dedup.EntityFuzzy},
		Jobs: api.ConfigJobs{MaxConcurrency: c.Jobs.MaxConcurrency, BackgroundConcurrency: c.Jobs.BackgroundConcurrency,
			LeaseTTLSecs: c.Jobs.LeaseTTLSecs, DrainTimeoutSecs: c.Jobs.DrainTimeoutSecs},
		Mining: api.ConfigMining{ChunkChars: c.Mining.ChunkChars, MaxFileBytes: c.Mining.MaxFileBytes, MaxDocuments: c.Mining.MaxDocuments,
			SourceTimeoutSecs: c.Mining.SourceTimeoutSecs, Secrets: string(c.Mining.Secrets)},
		Providers:  api.Providers{Embedding: embeddingProviders(c.Embedding)},
		ConfigFile: c.File,
	}
}

// embeddingProviders names each profile's provider and model: never its
// URL, key or command line.
func embeddingProviders(e config.Embedding) *api.EmbeddingProviders {
	if len(e.Profiles) == 0 {
		return nil
	}
	out := &api.EmbeddingProviders{Default: e.Default, Profiles: map[string]api.EmbeddingProfile{}, SaveSecs: e.SaveSecs}
	for name := range e.Profiles {
		p, _ := e.ProfileNamed(name)
		out.Profiles[name] = api.EmbeddingProfile{Provider: p.Provider, Model: p.Model, Dimension: p.Dimension, Pipeline: p.Pipeline}
	}
	return out
}

func assetsOrigin(c config.Config) string {
	if c.Assets.Dir != "" {
		return "override"
	}
	return "built-in"
}

func (s *Server) shutdown(w http.ResponseWriter, r *http.Request) error {
	err := writeJSON(w, http.StatusAccepted, api.DaemonState{Status: "shutting_down"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if s.Shutdown != nil {
		// After the answer is written: the graceful stop waits for this
		// request to finish.
		go s.Shutdown()
	}
	return err
}

// channel is the provenance channel of a REST write: the body's
// requested_by when given, else http.
func channel(v string) (string, error) { return store.CheckRequestedBy(v, store.ByHTTP) }

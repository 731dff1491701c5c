package dbadmin

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/loci-dev/loci/fault"
)

// listener is one open listener: its server, its connections and the
// session tokens its sign-ins issued.
type listener struct {
	admin    *Admin
	set      settings
	ln       net.Listener
	srv      *http.Server
	addr     string
	port     int
	openedAt time.Time
	// ctx is the listener's lifetime: the queries run under it, and
	// shutdown cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	served chan struct{}

	mu sync.Mutex
	// closing refuses new requests once shutdown began.
	closing bool
	// inflight counts the requests being served (each HTTP request, and a
	// WebSocket connection for its whole life); shutdown waits for it.
	inflight sync.WaitGroup
	conns    map[*conn]struct{}
	// signedConns and pendingConns are how many connections hold a slot
	// among the signed-in ones (MaxConnections) and among those not yet
	// signed in (MaxPending), counting upgrades under way.
	signedConns, pendingConns int
	sessions                  int
	tokens                    map[string]tokenGrant
	// tokenOrder is the tokens by age, oldest first (MaxTokens bounds it).
	tokenOrder []string
}

// counts is how many connections and sessions the listener holds.
func (l *listener) counts() (conns, sessions int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns), l.sessions
}

// enter admits a request unless shutdown began; leave ends it.
func (l *listener) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.inflight.Add(1)
	return true
}

func (l *listener) leave() { l.inflight.Done() }

// shutdown closes the listener, cancels the queries running, closes every
// WebSocket connection with 1001 (going away) and waits for every request.
func (l *listener) shutdown() {
	l.mu.Lock()
	l.closing = true
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()

	l.cancel()
	// Close closes the listening socket and the connections still
	// speaking HTTP; the WebSocket ones were hijacked and are closed here.
	_ = l.srv.Close()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.ws.Close(websocket.StatusGoingAway, "the database admin listener is closing")
		}()
	}
	wg.Wait()
	l.inflight.Wait()
	<-l.served
	l.mu.Lock()
	clear(l.tokens)
	l.tokenOrder = nil
	l.mu.Unlock()
}

// ServeHTTP checks the Origin of every request, then routes it.
func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !l.enter() {
		writeError(w, fault.New(fault.DBNotOpen, "the database admin listener is closing", "open it again with `loci db serve` (POST /api/db)"))
		return
	}
	defer l.leave()
	if origin := r.Header.Get("Origin"); origin != "" && !l.originAllowed(origin) {
		l.admin.log.Warn("database admin request refused: origin not allowed",
			"origin", fault.Clip(origin, fault.MaxQuoted), "remote", r.RemoteAddr, "path", fault.Clip(r.URL.Path, fault.MaxQuoted))
		writeError(w, fault.Newf(fault.DBOriginRefused,
			"a page from another site may not use the database admin listener; if you trust it, add it to db.allowed_origins: in the configuration, or `loci db serve --allowed-origin ORIGIN` (POST /api/db, field allowed_origins)",
			"origin %s is not allowed to use the database admin listener", origin))
		return
	}
	if !l.hostAllowed(r.Host) {
		l.admin.log.Warn("database admin request refused: host not this machine's",
			"host", fault.Clip(r.Host, fault.MaxQuoted), "remote", r.RemoteAddr, "path", fault.Clip(r.URL.Path, fault.MaxQuoted))
		writeError(w, fault.Newf(fault.DBOriginRefused,
			"the listener is bound to loopback: reach it as localhost, 127.0.0.1 or [::1] (a page naming another host may be a DNS rebinding attack)",
			"host %q is not this machine's: the database admin listener answers only requests for localhost", fault.Clip(r.Host, fault.MaxQuoted)))
		return
	}
	switch path := r.URL.Path; {
	case path == "/rpc":
		l.serveRPC(w, r)
	case path == "/health":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, notAllowed(r, "GET"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	case path == "/version":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, notAllowed(r, "GET"))
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(l.admin.version()))
	case path == "/sql" || strings.HasPrefix(path, "/sql/"):
		writeError(w, fault.New(fault.DBUnsupported,
			"HTTP /sql is not served by this listener",
			"open a WebSocket to /rpc (subprotocol json or cbor), sign in, and send the SQL with the query method"))
	default:
		writeError(w, fault.Newf(fault.ServerRouteNotFound,
			"the database admin listener answers /rpc (WebSocket), GET /health and GET /version; the REST API is on the daemon's own port",
			"no route %s %s on the database admin listener", r.Method, path))
	}
}

// version is the daemon's version as GET /version and `version` answer it.
func (a *Admin) version() string {
	if strings.HasPrefix(a.cfg.Version, "loci-") {
		return a.cfg.Version
	}
	return "loci-" + a.cfg.Version
}

// notAllowed is a route's answer to a method it does not serve.
func notAllowed(r *http.Request, allow string) *fault.Error {
	return fault.Newf(fault.ServerMethodNotAllowed, "use "+allow+" "+r.URL.Path,
		"%s %s is not served; this route answers %s", r.Method, r.URL.Path, allow)
}

// writeError writes the house's error body {error, code, help} with the
// code's status.
func writeError(w http.ResponseWriter, e *fault.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.HTTPStatus())
	_ = json.NewEncoder(w).Encode(e.Body())
}

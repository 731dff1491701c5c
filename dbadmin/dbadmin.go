// Package dbadmin is the database admin listener: a separate HTTP listener,
// opened only on request (POST /api/db, `loci db serve`), that speaks
// JSON-RPC over WebSocket at /rpc (encodings json and cbor, chosen by the
// WebSocket subprotocol) and answers GET /health and GET /version. Each
// connection holds sessions signed in as user `loci` with the daemon's
// token as password (the word `loci` when authentication is off); a
// session's `query` runs read-only SQL through dbadmin/sqlview. The
// listener checks the token and the browser Origin itself.
//
// Life of a listener:
//
//	a := dbadmin.New(cfg)        // closed
//	st, err := a.Open(api.DBOpen{}) // listening on st.Address, /rpc at st.URL
//	st = a.State()               // connections, sessions
//	st, err = a.Close()          // listener and every connection closed, goroutines waited for
package dbadmin

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// User is the one user name a session signs in as.
const User = "loci"

// Bounds of the listener: what one client may hold.
const (
	// MaxConnections is how many signed-in WebSocket connections the
	// listener holds at once; one more is refused with loci::server::busy
	// (503).
	MaxConnections = 64
	// MaxPending is how many connections not yet signed in the listener
	// holds at once, apart from the signed-in ones (so they can never take
	// their places); one more upgrade is refused with loci::server::busy.
	MaxPending = 16
	// SignInDeadline is how long a connection may stay without a signed-in
	// session; past it the connection is closed with status 1008.
	SignInDeadline = 10 * time.Second
	// IdleTimeout is how long a signed-in connection may stay without a
	// request; past it the connection is closed with status 1001 (going
	// away), its slot freed. A query running counts as activity: a
	// connection is never closed while its query runs.
	IdleTimeout = 5 * time.Minute
	// RefusalLogEvery is how often, at most, the log warns of connections
	// closed after refused sign-ins from one client address: the first
	// such connection is logged at once, the next ones within the interval
	// are counted and carried by the address's next line.
	RefusalLogEvery = time.Minute
	// MaxAnswerBytes bounds one encoded answer: a query's statements share
	// it (rows past it are cut, truncated_by "bytes"; a statement with no
	// room left answers loci::db::too_large), and no message larger is
	// ever sent.
	MaxAnswerBytes = 64 << 20
	// MaxVariableBytes bounds one `let` value (encoded; a message holds
	// at most MaxMessageBytes anyway), and MaxSessionVariableBytes a
	// session's values together.
	MaxVariableBytes        = 1 << 20
	MaxSessionVariableBytes = 4 << 20
	// MaxMessageBytes is the largest /rpc message read; a larger one
	// closes the connection with status 1009 (message too big).
	MaxMessageBytes = 1 << 20
	// MaxSessions is how many sessions one connection holds (its default
	// one and those attach made).
	MaxSessions = 16
	// MaxVariables is how many `let` variables one session holds.
	MaxVariables = 256
	// MaxTokens is how many session tokens the listener remembers; past
	// it the oldest is forgotten (its holder signs in again).
	MaxTokens = 4096
	// MaxRefusals is how many refused sign-ins close a connection.
	MaxRefusals = 5
)

// Timeouts of the HTTP server and of one answer's write.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	httpIdleTimeout   = 60 * time.Second
	answerTimeout     = 30 * time.Second
)

// Config is what the listener is built with.
type Config struct {
	// Settings are the db.* settings: the defaults of Open and the limits.
	Settings config.DB
	// ServerPort and WebhookPort are the daemon's other listeners' ports
	// (0: none); an open on either is refused.
	ServerPort, WebhookPort int
	// AuthEnabled reports auth.enabled; CheckToken whether a token is the
	// daemon's current one (checked at each sign-in, so a revoked token
	// signs in no more; a signed-in session stays).
	AuthEnabled func() bool
	CheckToken  func(token string) bool
	// Engine runs the SQL.
	Engine *sqlview.Engine
	// Version is the daemon's version (`version`, GET /version).
	Version string
	// Log receives the listener's events (opened, closed, refused
	// sign-ins and origins), never a token or a password.
	Log *slog.Logger
	// Throttle, when set, counts refused sign-ins per client address
	// across connections (the daemon hands the REST API's throttle, so a
	// brute force on either port slows both); nil counts them per
	// connection only.
	Throttle Throttle
}

// Throttle is the record of refused credentials per client address that
// the daemon's REST API keeps (transport's throttle): consulted only after
// a sign-in was refused, so a valid password is never slowed or refused.
type Throttle interface {
	// Refused records a refused sign-in from remote (the connection's
	// host:port) and says how long its answer waits and, once the address
	// is throttled, after how many seconds it may try again (0: not
	// throttled).
	Refused(remote string) (wait time.Duration, retryAfter int)
}

// Admin is the listener, closed until Open. Safe for concurrent use.
type Admin struct {
	cfg Config
	log *slog.Logger
	// mu serialises Open and Close (a Close returns once the port is
	// free, so an Open after it can take the same port).
	mu  sync.Mutex
	run *listener
	// maxConns, maxPending, signInDeadline, idle, refusalLogEvery,
	// maxAnswer, maxVar and maxSessionVars are MaxConnections, MaxPending,
	// SignInDeadline, IdleTimeout, RefusalLogEvery, MaxAnswerBytes,
	// MaxVariableBytes and MaxSessionVariableBytes (tests lower them).
	maxConns, maxPending   int
	signInDeadline, idle   time.Duration
	refusalLogEvery        time.Duration
	maxAnswer              int
	maxVar, maxSessionVars int
	// query runs SQL: the engine's Query (tests put their own in).
	query func(ctx context.Context, sql string, vars map[string]any) ([]sqlview.Result, error)
	// refusals is the refused sign-ins' log record per client address.
	refusals refusalLog
}

// New is a closed listener.
func New(c Config) *Admin {
	if c.AuthEnabled == nil {
		c.AuthEnabled = func() bool { return false }
	}
	if c.CheckToken == nil {
		c.CheckToken = func(string) bool { return false }
	}
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Admin{cfg: c, log: log.With("component", "dbadmin"), maxConns: MaxConnections, maxPending: MaxPending,
		signInDeadline: SignInDeadline, idle: IdleTimeout, refusalLogEvery: RefusalLogEvery, maxAnswer: MaxAnswerBytes, maxVar: MaxVariableBytes, maxSessionVars: MaxSessionVariableBytes}
	if c.Engine != nil {
		a.query = c.Engine.Query
	}
	return a
}

// settings are what a listener opens with: Open's body over the
// configuration, normalised (the bind as netip prints it, the origins as
// given, in order).
type settings struct {
	bind        string
	port        int
	allowRemote bool
	origins     []string
}

// same says whether an Open asking for o is answered by a listener opened
// with s on port bound (the OS's port when s.port is 0).
func (s settings) same(o settings, bound int) bool {
	if s.bind != o.bind || s.allowRemote != o.allowRemote || (o.port != s.port && o.port != bound) {
		return false
	}
	a, b := slices.Clone(s.origins), slices.Clone(o.origins)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// merge lays o over the configuration's db.* settings.
func (a *Admin) merge(o api.DBOpen) settings {
	d := a.cfg.Settings
	s := settings{bind: d.Bind, port: d.Port, allowRemote: d.AllowRemote, origins: slices.Clone(d.AllowedOrigins)}
	if o.Bind != nil {
		s.bind = *o.Bind
	}
	if o.Port != nil {
		s.port = *o.Port
	}
	if o.AllowRemote != nil {
		s.allowRemote = *o.AllowRemote
	}
	if o.AllowedOrigins != nil {
		s.origins = slices.Clone(*o.AllowedOrigins)
	}
	if s.origins == nil {
		s.origins = []string{}
	}
	return s
}

// check refuses settings the listener must not open with, in the
// contract's order: the bind, the bind beyond loopback, the port, the
// origins.
func (a *Admin) check(s *settings) error {
	if s.bind == "" {
		s.bind = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(s.bind)
	if err != nil || ip.Zone() != "" {
		return fault.Newf(fault.ConfigInvalid,
			"give an IP address: 127.0.0.1 or ::1 for this machine only (the default), 0.0.0.0 or a host's address beyond it (with auth.enabled and allow_remote)",
			"db.bind: %q is not an IP address", s.bind)
	}
	s.bind = ip.Unmap().String()
	if !ip.IsLoopback() && !(a.cfg.AuthEnabled() && s.allowRemote) {
		var need string
		switch {
		case !a.cfg.AuthEnabled() && !s.allowRemote:
			need = "authentication is off and allow_remote is not set"
		case !a.cfg.AuthEnabled():
			need = "authentication is off"
		default:
			need = "allow_remote is not set"
		}
		return fault.Newf(fault.DBUnsafeBind,
			"beyond loopback the listener needs both auth.enabled = true (clients sign in with the daemon's token) and allow_remote (`loci db serve --allow-remote`, or \"allow_remote\": true); or bind 127.0.0.1",
			"the admin listener may not bind %s, beyond loopback: %s", s.bind, need)
	}
	if s.port < 0 || s.port > 65535 {
		return fault.Newf(fault.ConfigInvalid, "give a port from 1 to 65535, or 0 to let the system choose one",
			"db.port: %d is not a port", s.port)
	}
	for _, other := range []struct {
		name string
		port int
	}{{"server.port", a.cfg.ServerPort}, {"webhook.port", a.cfg.WebhookPort}} {
		if s.port != 0 && s.port == other.port {
			return fault.Newf(fault.DBBindFailed,
				"choose another db.port (0 lets the system choose a free one)",
				"the admin listener cannot use port %d: it is %s, the daemon's own listener", s.port, other.name)
		}
	}
	for i, o := range s.origins {
		n, err := parseOrigin(o)
		if err != nil {
			return fault.Newf(fault.ConfigInvalid,
				"list origins as a browser sends them: scheme://host[:port], e.g. https://console.example.com or http://192.168.1.20:3000 (no path, no wildcard)",
				"db.allowed_origins: %q is not an origin: %s", o, err.Error())
		}
		s.origins[i] = n
	}
	return nil
}

// Open opens the listener with o over the configuration's defaults; open
// already with the same settings it reports its state, with other
// settings it is loci::db::already_running. A non-loopback bind needs
// auth.enabled and allow_remote (loci::db::unsafe_bind); a port taken is
// loci::db::bind_failed.
func (a *Admin) Open(o api.DBOpen) (api.DBState, error) {
	s := a.merge(o)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(&s); err != nil {
		return a.stateLocked(), err
	}
	if l := a.run; l != nil {
		if l.set.same(s, l.port) {
			return a.stateLocked(), nil
		}
		return a.stateLocked(), fault.Newf(fault.DBAlreadyRunning,
			"close it first with `loci db stop` (DELETE /api/db), then open it with the new settings; or open it with the settings it has",
			"the admin listener is already open on %s with other settings", l.addr)
	}
	addr := net.JoinHostPort(s.bind, strconv.Itoa(s.port))
	ln, err := net.Listen(network(s.bind), addr)
	if err != nil {
		return a.stateLocked(), fault.Wrap(fault.DBBindFailed, err,
			fmt.Sprintf("the admin listener cannot listen on %s: the address is taken or not this machine's", addr),
			"choose another db.port (0 lets the system choose a free one) or bind an address of this machine; `loci db status` shows whether loci already listens there")
	}
	a.run = a.start(s, ln)
	a.log.Info("database admin listener open", "address", a.run.addr, "allow_remote", s.allowRemote, "allowed_origins", s.origins)
	return a.stateLocked(), nil
}

// network is the network a bind listens on: 0.0.0.0 every IPv4 address
// only ("tcp4", not IPv6 too as "tcp" would), :: every IPv6 one only.
func network(bind string) string {
	ip, err := netip.ParseAddr(bind)
	switch {
	case err != nil || !ip.IsUnspecified():
		return "tcp"
	case ip.Is4():
		return "tcp4"
	}
	return "tcp6"
}

// start serves ln.
func (a *Admin) start(s settings, ln net.Listener) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{
		admin:    a,
		set:      s,
		ln:       ln,
		addr:     net.JoinHostPort(s.bind, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)),
		port:     ln.Addr().(*net.TCPAddr).Port,
		openedAt: time.Now().UTC(),
		ctx:      ctx,
		cancel:   cancel,
		conns:    map[*conn]struct{}{},
		tokens:   map[string]tokenGrant{},
		served:   make(chan struct{}),
	}
	l.srv = &http.Server{
		Handler:           l,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		defer close(l.served)
		defer func() {
			if p := recover(); p != nil {
				a.log.Error("database admin listener failed", "panic", fmt.Sprint(p))
			}
		}()
		if err := l.srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			a.log.Error("database admin listener stopped", "err", err)
		}
	}()
	return l
}

// Close closes the listener and every connection (status 1001, going
// away), cancels the queries running and waits for the connections'
// goroutines; closing a closed listener succeeds.
func (a *Admin) Close() (api.DBState, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.run
	if l == nil {
		return a.stateLocked(), nil
	}
	l.shutdown()
	a.run = nil
	a.log.Info("database admin listener closed", "address", l.addr)
	return a.stateLocked(), nil
}

// resultBytes is the size past which a statement's rows are cut: the
// engine's limit, within the answer's.
func (a *Admin) resultBytes() int64 {
	n := int64(sqlview.DefaultResultBytes)
	if a.cfg.Engine != nil && a.cfg.Engine.Limits().ResultBytes > 0 {
		n = a.cfg.Engine.Limits().ResultBytes
	}
	return min(n, int64(a.maxAnswer))
}

// State is the listener's state.
func (a *Admin) State() api.DBState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stateLocked()
}

func (a *Admin) stateLocked() api.DBState {
	d := a.cfg.Settings
	st := api.DBState{
		Encodings: []string{encJSON, encCBOR},
		User:      User,
		Auth:      a.cfg.AuthEnabled(),
		Limits: api.DBLimits{
			QueryTimeoutSecs: d.QueryTimeoutSecs,
			MaxScanRows:      d.MaxScanRows,
			MaxResultRows:    d.MaxResultRows,
			MaxResultBytes:   a.resultBytes(),
		},
	}
	l := a.run
	if l == nil {
		s := a.merge(api.DBOpen{})
		if s.bind == "" {
			s.bind = "127.0.0.1"
		}
		st.Bind, st.Port, st.AllowRemote, st.AllowedOrigins = s.bind, s.port, s.allowRemote, s.origins
		return st
	}
	st.Open = true
	st.Address = l.addr
	st.URL = "ws://" + l.addr + "/rpc"
	// The port bound (the OS's choice when the settings asked for 0).
	st.Bind, st.Port, st.AllowRemote = l.set.bind, l.port, l.set.allowRemote
	st.AllowedOrigins = slices.Clone(l.set.origins)
	at := l.openedAt
	st.OpenedAt = &at
	st.Connections, st.Sessions = l.counts()
	return st
}

// Package dbadmin is the database admin listener: a separate HTTP listener,
// opened only on request (POST /api/db, `loci db serve`), that speaks
// JSON-RPC over WebSocket at /rpc (encodings json and cbor, chosen by the
// WebSocket subprotocol) and answers GET /health and GET /version. Each
// connection holds sessions signed in as user `loci` with the daemon's
// token as password (the word `loci` when authentication is off); a
// session's `query` runs read-only SQL through dbadmin/sqlview. The
// listener checks the token and the browser Origin itself.
package dbadmin

import (
	"log/slog"
	"sync"

	_ "github.com/coder/websocket"   // the WebSocket server (skeleton: wired by the implementation)
	_ "github.com/fxamacker/cbor/v2" // the cbor encoding

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// User is the one user name a session signs in as.
const User = "loci"

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
	Log     *slog.Logger
}

// Admin is the listener, closed until Open.
type Admin struct {
	cfg Config
	mu  sync.Mutex
}

// New is a closed listener.
func New(c Config) *Admin { return &Admin{cfg: c} }

// Open opens the listener with o over the configuration's defaults; open
// already with the same settings it reports its state, with other
// settings it is loci::db::already_running. A non-loopback bind needs
// auth.enabled and allow_remote (loci::db::unsafe_bind); a port taken is
// loci::db::bind_failed.
func (a *Admin) Open(o api.DBOpen) (api.DBState, error) {
	return a.State(), fault.New(fault.DBUnsupported, "the admin listener is not wired yet", "")
}

// Close closes the listener and every connection; closing a closed
// listener succeeds.
func (a *Admin) Close() (api.DBState, error) { return a.State(), nil }

// State is the listener's state.
func (a *Admin) State() api.DBState { return api.DBState{User: User} }

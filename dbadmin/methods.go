package dbadmin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// conn is one WebSocket connection: its sessions and its count of
// refused sign-ins. Only its own goroutine touches them (State reads the
// listener's counters).
type conn struct {
	l      *listener
	ws     *websocket.Conn
	codec  codec
	remote string
	// ctx is the connection's lifetime within the listener's: its queries
	// run under it.
	ctx    context.Context
	cancel context.CancelFunc
	// def is the default session; sessions every one by id, order by age.
	def      *session
	sessions map[string]*session
	order    []*session
	refused  int
}

// session is what a request acts on: signed in or not, its namespace and
// database (`use`) and its variables (`let`).
type session struct {
	id       string
	signedIn bool
	ns, db   string
	vars     map[string]any
	// issued are the session tokens its signin calls issued, forgotten at
	// invalidate and reset.
	issued []string
}

func newSession(signedIn bool) *session {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &session{id: hex.EncodeToString(b[:]), signedIn: signedIn, ns: sqlview.Namespace, db: sqlview.Database, vars: map[string]any{}}
}

func newConn(l *listener, ws *websocket.Conn, cd codec, remote string, signedIn bool) *conn {
	ctx, cancel := context.WithCancel(l.ctx)
	s := newSession(signedIn)
	return &conn{l: l, ws: ws, codec: cd, remote: remote, ctx: ctx, cancel: cancel,
		def: s, sessions: map[string]*session{s.id: s}, order: []*session{s}}
}

// The methods that work before sign-in (the handshake).
var handshake = map[string]bool{
	"ping": true, "version": true, "signin": true, "authenticate": true,
	"use": true, "invalidate": true, "reset": true,
}

// unsupported are the protocol's methods this listener does not serve,
// each with what to do instead.
var unsupported = map[string][2]string{
	"live":   {"live queries are not served", "poll with query, or follow the daemon's GET /api/events for changes as they happen"},
	"kill":   {"live queries are not served, so there is none to kill", "poll with query, or follow the daemon's GET /api/events for changes as they happen"},
	"begin":  {"transactions are not served", "send the statements in one query: each query already reads one consistent snapshot, and nothing here writes"},
	"commit": {"transactions are not served", "send the statements in one query: each query already reads one consistent snapshot, and nothing here writes"},
	"cancel": {"transactions are not served", "send the statements in one query: each query already reads one consistent snapshot, and nothing here writes"},
	"select": {"the per-record shorthand select is not served", "use query with SQL SELECT (e.g. SELECT * FROM drawers WHERE id = @id)"},
	"create": {"the per-record shorthand create is not served: the admin listener only reads", "change memory through the REST API, MCP or the CLI (loci add, ...)"},
	"update": {"the per-record shorthand update is not served: the admin listener only reads", "change memory through the REST API, MCP or the CLI"},
	"insert": {"the per-record shorthand insert is not served: the admin listener only reads", "change memory through the REST API, MCP or the CLI (loci add, loci mine, ...)"},
	"signup": {"signup is not served: there are no users to create", "sign in as loci with signin (the password is the daemon's token, or loci with authentication off)"},
}

// methods are the methods served, for the help of an unknown one.
const methods = "query, use, let, unset, info, version, ping, signin, authenticate, invalidate, reset, attach, detach, sessions"

// varName is a `let` variable's name (after an optional @).
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// handle answers one message; closeWhy, when set, is why the connection
// closes after the answer.
func (c *conn) handle(msg []byte) (out any, closeWhy string) {
	v, err := c.codec.decode(msg)
	if err != nil {
		return fail(codeParse, fault.Newf(fault.DBInvalidRequest,
			"send one "+c.codec.name+" request per message: {id, method, params}",
			"the message is not %s: %s", c.codec.name, fault.Clip(err.Error(), 200))).wire(nil), ""
	}
	req, f := parse(v)
	if f != nil {
		return f.wire(req.id), ""
	}
	res, f := c.call(req)
	if f != nil {
		if f.err.Code == fault.DBSignInRefused {
			c.refused++
			c.l.admin.log.Warn("database admin sign-in refused", "remote", c.remote, "method", req.method, "refused", c.refused)
			if c.refused >= MaxRefusals {
				c.l.admin.log.Warn("database admin connection closed: too many refused sign-ins", "remote", c.remote, "refused", c.refused)
				return f.wire(req.id), fmt.Sprintf("%d refused sign-ins: connect again to retry", c.refused)
			}
			f.err.Help += fmt.Sprintf(" (%d more refused sign-ins close this connection)", MaxRefusals-c.refused)
		}
		return f.wire(req.id), ""
	}
	return answer{ID: req.id, Result: res}, ""
}

// call runs a request's method on its session.
func (c *conn) call(req request) (any, *rpcFail) {
	if why, ok := unsupported[req.method]; ok {
		return nil, fail(codeFailed, fault.New(fault.DBUnsupported, req.method+": "+why[0], why[1]))
	}
	run, ok := served[req.method]
	if !ok {
		return nil, fail(codeNoMethod, fault.Newf(fault.DBInvalidRequest, "the methods are "+methods,
			"unknown method %q", req.method))
	}
	s := c.def
	if req.named {
		if s, ok = c.sessions[req.session]; !ok {
			return nil, fail(codeInvalidRequest, fault.Newf(fault.DBInvalidRequest,
				"attach makes a session and sessions lists this connection's; leave session out for the connection's default one",
				"no session %q on this connection", req.session))
		}
	}
	if !s.signedIn && !handshake[req.method] {
		return nil, fail(codeFailed, fault.Newf(fault.DBSignInRequired,
			`sign in first: signin [{"user": "loci", "pass": PASSWORD}] (the daemon's token, or loci with authentication off), or authenticate [TOKEN]`,
			"%s needs a signed-in session", req.method))
	}
	return run(c, s, req.params)
}

// served are the methods that work, by name.
var served = map[string]func(*conn, *session, []any) (any, *rpcFail){
	"ping":         (*conn).ping,
	"version":      (*conn).versionM,
	"signin":       (*conn).signin,
	"authenticate": (*conn).authenticate,
	"invalidate":   (*conn).invalidate,
	"reset":        (*conn).reset,
	"use":          (*conn).use,
	"info":         (*conn).info,
	"let":          (*conn).let,
	"unset":        (*conn).unset,
	"query":        (*conn).query,
	"attach":       (*conn).attach,
	"detach":       (*conn).detach,
	"sessions":     (*conn).list,
}

// arity checks a method's count of parameters.
func arity(method string, p []any, min, max int, usage string) *rpcFail {
	if len(p) < min || len(p) > max {
		return invalidParams(method, "call it as "+method+" "+usage, "takes %s, not %d parameters", countWord(min, max), len(p))
	}
	return nil
}

func countWord(min, max int) string {
	switch {
	case min == max:
		return fmt.Sprint(min)
	default:
		return fmt.Sprintf("%d to %d", min, max)
	}
}

func (c *conn) ping(_ *session, p []any) (any, *rpcFail) {
	return nil, nil
}

func (c *conn) versionM(_ *session, p []any) (any, *rpcFail) {
	return c.l.admin.version(), nil
}

// refusedErr is the error of a sign-in that does not sign in.
func (c *conn) refusedErr(msg string) *rpcFail {
	help := "sign in as loci with the daemon's token as password (the one clients send as LOCI_AUTH_TOKEN)"
	if !c.l.admin.cfg.AuthEnabled() {
		help = "sign in as loci with the password loci (authentication is off)"
	}
	return fail(codeFailed, fault.New(fault.DBSignInRefused, msg, help))
}

func (c *conn) signin(s *session, p []any) (any, *rpcFail) {
	const usage = `[{"user": "loci", "pass": PASSWORD}]`
	if f := arity("signin", p, 1, 1, usage); f != nil {
		return nil, f
	}
	m, ok := p[0].(map[string]any)
	if !ok {
		return nil, invalidParams("signin", "call it as signin "+usage, "give an object with user and pass")
	}
	user, uok := m["user"].(string)
	pass, pok := m["pass"].(string)
	if !uok || !pok {
		return nil, invalidParams("signin", "call it as signin "+usage, "user and pass are strings")
	}
	if user != User {
		return nil, c.refusedErr(fmt.Sprintf("sign-in refused: the one user is %s", User))
	}
	g, ok := c.l.admin.password(pass)
	if !ok {
		return nil, c.refusedErr("sign-in refused: wrong password")
	}
	tok := c.l.issue(g)
	s.signedIn = true
	s.issued = append(s.issued, tok)
	c.l.admin.log.Info("database admin sign-in", "remote", c.remote, "session", s.id, "method", "signin")
	return tok, nil
}

func (c *conn) authenticate(s *session, p []any) (any, *rpcFail) {
	if f := arity("authenticate", p, 1, 1, "[TOKEN]"); f != nil {
		return nil, f
	}
	tok, ok := p[0].(string)
	if !ok {
		return nil, invalidParams("authenticate", "call it as authenticate [TOKEN]", "the token is a string")
	}
	if !c.l.authenticates(tok) {
		return nil, c.refusedErr("authentication refused: the token is not (or no longer) valid")
	}
	s.signedIn = true
	c.l.admin.log.Info("database admin sign-in", "remote", c.remote, "session", s.id, "method", "authenticate")
	return nil, nil
}

func (c *conn) invalidate(s *session, p []any) (any, *rpcFail) {
	if f := arity("invalidate", p, 0, 0, "[]"); f != nil {
		return nil, f
	}
	s.signedIn = false
	c.l.forget(s.issued)
	s.issued = nil
	return nil, nil
}

func (c *conn) reset(s *session, p []any) (any, *rpcFail) {
	if f := arity("reset", p, 0, 0, "[]"); f != nil {
		return nil, f
	}
	s.signedIn = false
	c.l.forget(s.issued)
	s.issued = nil
	s.vars = map[string]any{}
	s.ns, s.db = sqlview.Namespace, sqlview.Database
	return nil, nil
}

func (c *conn) use(s *session, p []any) (any, *rpcFail) {
	const usage = `["loci", "palace"] (null keeps the current)`
	if f := arity("use", p, 1, 2, usage); f != nil {
		return nil, f
	}
	names := [2]any{nil, nil}
	copy(names[:], p)
	want := [2]string{sqlview.Namespace, sqlview.Database}
	what := [2]string{"namespace", "database"}
	for i, n := range names {
		if n == nil {
			continue
		}
		name, ok := n.(string)
		if !ok {
			return nil, invalidParams("use", "call it as use "+usage, "the %s is a string or null", what[i])
		}
		if name != want[i] {
			return nil, invalidParams("use", fmt.Sprintf("use %q, the one %s (namespace loci, database palace)", want[i], what[i]),
				"no %s %q", what[i], name)
		}
	}
	if names[0] != nil {
		s.ns = sqlview.Namespace
	}
	if names[1] != nil {
		s.db = sqlview.Database
	}
	return nil, nil
}

// sessionInfo is what info answers.
type sessionInfo struct {
	User      string `json:"user"`
	Session   string `json:"session"`
	Namespace string `json:"namespace"`
	Database  string `json:"database"`
	SignedIn  bool   `json:"signed_in"`
	Auth      bool   `json:"auth"`
}

func (c *conn) info(s *session, p []any) (any, *rpcFail) {
	if f := arity("info", p, 0, 0, "[]"); f != nil {
		return nil, f
	}
	return sessionInfo{User: User, Session: s.id, Namespace: s.ns, Database: s.db, SignedIn: s.signedIn, Auth: c.l.admin.cfg.AuthEnabled()}, nil
}

// variable checks a variable's name (an optional leading @ dropped).
func variable(method string, v any) (string, *rpcFail) {
	name, ok := v.(string)
	if ok {
		name = strings.TrimPrefix(name, "@")
	}
	if !ok || !varName.MatchString(name) {
		return "", invalidParams(method, "name it with letters, digits and _ (not starting with a digit, at most 64), e.g. let [\"since\", \"2026-01-01\"]; the SQL reads it as @since",
			"the variable's name is not a name: %v", fault.Clip(fmt.Sprint(v), fault.MaxQuoted))
	}
	return name, nil
}

func (c *conn) let(s *session, p []any) (any, *rpcFail) {
	if f := arity("let", p, 2, 2, "[NAME, VALUE]"); f != nil {
		return nil, f
	}
	name, f := variable("let", p[0])
	if f != nil {
		return nil, f
	}
	v, err := value(p[1])
	if err != nil {
		return nil, invalidParams("let", "give a number, string, boolean, null, time, array or object", "%s", err.Error())
	}
	if _, has := s.vars[name]; !has && len(s.vars) >= MaxVariables {
		return nil, invalidParams("let", "unset one first (unset [NAME]), or reset the session", "a session holds at most %d variables", MaxVariables)
	}
	s.vars[name] = v
	return nil, nil
}

func (c *conn) unset(s *session, p []any) (any, *rpcFail) {
	if f := arity("unset", p, 1, 1, "[NAME]"); f != nil {
		return nil, f
	}
	name, f := variable("unset", p[0])
	if f != nil {
		return nil, f
	}
	delete(s.vars, name)
	return nil, nil
}

// column is a result's column as /rpc answers it.
type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// stmtOK is a statement's answer; stmtErr a failed statement's.
type stmtOK struct {
	Status    string   `json:"status"`
	Time      string   `json:"time"`
	Columns   []column `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated"`
	RowsRead  int      `json:"rows_read"`
}

type stmtErr struct {
	Status string `json:"status"`
	Time   string `json:"time"`
	Result string `json:"result"`
	Code   string `json:"code"`
	Help   string `json:"help"`
}

func (c *conn) query(s *session, p []any) (any, *rpcFail) {
	const usage = `["SELECT ...", {"name": value} (optional)]`
	if f := arity("query", p, 1, 2, usage); f != nil {
		return nil, f
	}
	sql, ok := p[0].(string)
	if !ok {
		return nil, invalidParams("query", "call it as query "+usage, "the SQL is a string")
	}
	vars := maps.Clone(s.vars)
	if len(p) == 2 && p[1] != nil {
		m, ok := p[1].(map[string]any)
		if !ok {
			return nil, invalidParams("query", "call it as query "+usage, "the variables are an object")
		}
		for k, v := range m {
			name, f := variable("query", k)
			if f != nil {
				return nil, f
			}
			x, err := value(v)
			if err != nil {
				return nil, invalidParams("query", "give a number, string, boolean, null, time, array or object", "variable %s: %s", name, err.Error())
			}
			vars[name] = x
		}
	}
	run := c.l.admin.query
	if run == nil {
		return nil, fail(codeFailed, fault.New(fault.DBUnavailable, "no SQL engine serves this listener", "see the daemon log"))
	}
	start := time.Now()
	results, err := run(c.ctx, sql, vars)
	c.l.admin.log.Debug("database admin query", "remote", c.remote, "session", s.id,
		"sql", fault.Clip(sql, 200), "statements", len(results), "took", time.Since(start), "failed", err != nil)
	if err != nil {
		return nil, fail(codeFailed, fault.As(err))
	}
	return statements(results), nil
}

// shortDuration keeps three significant figures or so of a statement's
// time: "1.77ms", "498ms", "2.43s", "850µs", not "1.769184ms".
func shortDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d < time.Second:
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// statements is a query's answer: one entry per statement run.
func statements(results []sqlview.Result) []any {
	out := make([]any, 0, len(results))
	for _, r := range results {
		t := shortDuration(r.Duration).String()
		if r.Err != nil {
			b := r.Err.Body()
			out = append(out, stmtErr{Status: "ERR", Time: t, Result: b.Error, Code: b.Code, Help: b.Help})
			continue
		}
		cols := make([]column, len(r.Columns))
		for i, col := range r.Columns {
			cols[i] = column{Name: col.Name, Type: col.Type}
		}
		rows := r.Rows
		if rows == nil {
			rows = [][]any{}
		}
		out = append(out, stmtOK{Status: "OK", Time: t, Columns: cols, Rows: rows, Truncated: r.Truncated, RowsRead: r.RowsRead})
	}
	return out
}

func (c *conn) attach(_ *session, p []any) (any, *rpcFail) {
	if f := arity("attach", p, 0, 0, "[]"); f != nil {
		return nil, f
	}
	if len(c.sessions) >= MaxSessions {
		return nil, fail(codeFailed, fault.Newf(fault.ServerBusy, "detach one first (detach [ID])",
			"a connection holds at most %d sessions", MaxSessions))
	}
	s := newSession(false)
	c.sessions[s.id] = s
	c.order = append(c.order, s)
	c.l.mu.Lock()
	c.l.sessions++
	c.l.mu.Unlock()
	return s.id, nil
}

func (c *conn) detach(_ *session, p []any) (any, *rpcFail) {
	if f := arity("detach", p, 1, 1, "[ID]"); f != nil {
		return nil, f
	}
	id, ok := p[0].(string)
	if !ok {
		return nil, invalidParams("detach", "call it as detach [ID] with an id from attach", "the session id is a string")
	}
	s, ok := c.sessions[id]
	switch {
	case !ok:
		return nil, invalidParams("detach", "sessions lists this connection's sessions", "no session %q on this connection", id)
	case s == c.def:
		return nil, invalidParams("detach", "detach the sessions attach made; the default one lasts as long as the connection", "the connection's default session cannot be detached")
	}
	delete(c.sessions, id)
	for i, o := range c.order {
		if o == s {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.l.mu.Lock()
	c.l.sessions--
	c.l.mu.Unlock()
	return nil, nil
}

// sessionItem is one entry of sessions.
type sessionItem struct {
	ID        string `json:"id"`
	SignedIn  bool   `json:"signed_in"`
	Namespace string `json:"namespace"`
	Database  string `json:"database"`
}

func (c *conn) list(_ *session, p []any) (any, *rpcFail) {
	if f := arity("sessions", p, 0, 0, "[]"); f != nil {
		return nil, f
	}
	out := make([]sessionItem, len(c.order))
	for i, s := range c.order {
		out[i] = sessionItem{ID: s.id, SignedIn: s.signedIn, Namespace: s.ns, Database: s.db}
	}
	return out, nil
}

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

	"github.com/loci-dev/loci/api"
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
	// promoted says the connection holds a signed-in slot (a session of
	// it signed in once); signed is closed then, stopping the sign-in
	// deadline; expired says the deadline passed first. The listener's mu
	// guards promoted and expired.
	promoted, expired bool
	signed            chan struct{}
	// active is when its last request was read or answered, serving says
	// one is being served (a query running), idled that the idle timeout
	// closed it; the listener's mu guards them.
	active         time.Time
	serving, idled bool
}

// session is what a request acts on: signed in or not, its namespace and
// database (`use`) and its variables (`let`).
type session struct {
	id       string
	signedIn bool
	ns, db   string
	vars     map[string]any
	// varBytes is each variable's encoded size (MaxSessionVariableBytes
	// bounds their sum).
	varBytes map[string]int
	// issued are the session tokens its signin calls issued, forgotten at
	// invalidate and reset.
	issued []string
}

func newSession(signedIn bool) *session {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &session{id: hex.EncodeToString(b[:]), signedIn: signedIn, ns: sqlview.Namespace, db: sqlview.Database,
		vars: map[string]any{}, varBytes: map[string]int{}}
}

// init readies a connection upgraded to ws (its slot taken already). Its
// queries are cancelled (context.Canceled) when it or the listener closes.
func (c *conn) init(ws *websocket.Conn, cd codec, signedIn bool) {
	c.ws, c.codec = ws, cd
	c.ctx, c.cancel = context.WithCancel(c.l.ctx)
	s := newSession(signedIn)
	c.def, c.sessions, c.order = s, map[string]*session{s.id: s}, []*session{s}
	c.signed = make(chan struct{})
	c.active = time.Now()
	if signedIn {
		close(c.signed)
	}
}

// promote moves the connection to a signed-in slot at its first sign-in:
// loci::server::busy when those are all taken, or when its sign-in
// deadline passed already.
func (c *conn) promote() *rpcFail {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case c.promoted:
		return nil
	case c.expired:
		return fail(codeFailed, fault.Newf(fault.ServerBusy, "connect again and sign in first",
			"this connection was not signed in within %s and is closing", l.admin.signInDeadline))
	case l.signedConns >= l.admin.maxConns:
		e := fault.Newf(fault.ServerBusy, "close a console or wait for one to close, then sign in again",
			"the database admin listener holds its most signed-in connections (%d)", l.admin.maxConns)
		e.RetryAfter = 5
		return fail(codeFailed, e)
	}
	l.pendingConns--
	l.signedConns++
	c.promoted = true
	close(c.signed)
	return nil
}

// expire marks the connection past its sign-in deadline unless it signed
// in meanwhile (false).
func (c *conn) expire() bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.promoted {
		return false
	}
	c.expired = true
	return true
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
	"create": {"the per-record shorthand create is not served: the admin listener only reads", helpWrite},
	"update": {"the per-record shorthand update is not served: the admin listener only reads", helpWrite},
	"insert": {"the per-record shorthand insert is not served: the admin listener only reads", helpWrite},
	"signup": {"signup is not served: there are no users to create", "sign in as loci with signin (the password is the daemon's token, or loci with authentication off)"},
}

// helpWrite says where memory is changed, by the real names of the CLI's
// commands, the REST routes and the MCP tools.
const helpWrite = "change memory through the CLI (`loci drawer add`, `loci note add`, `loci mine PATH`), the REST API (POST /api/wings/{wing}/rooms/{room}/drawers) or MCP (the loci_diary_write tool)"

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
			if t := c.l.admin.cfg.Throttle; t != nil {
				wait, retry := t.Refused(c.remote)
				if !sleep(c.ctx, wait) {
					return f.wire(req.id), ""
				}
				if retry > 0 {
					f = fail(codeFailed, throttled(retry))
				}
			}
			if c.refused >= MaxRefusals {
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
	// The optional ns and db are checked as use checks them.
	var names []any
	for _, k := range []string{"ns", "db"} {
		v, has := m[k]
		if !has {
			v = nil
		}
		names = append(names, v)
	}
	if err := checkUse("signin", names, `[{"user": "loci", "pass": PASSWORD, "ns": "loci", "db": "palace"}] (ns and db optional)`); err != nil {
		return nil, err
	}
	if user != User {
		return nil, c.refusedErr(fmt.Sprintf("sign-in refused: the one user is %s", User))
	}
	g, ok := c.l.admin.password(pass)
	if !ok {
		return nil, c.refusedErr("sign-in refused: wrong password")
	}
	if f := c.promote(); f != nil {
		return nil, f
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
	if f := c.promote(); f != nil {
		return nil, f
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
	s.vars, s.varBytes = map[string]any{}, map[string]int{}
	s.ns, s.db = sqlview.Namespace, sqlview.Database
	return nil, nil
}

func (c *conn) use(s *session, p []any) (any, *rpcFail) {
	const usage = `["loci", "palace"] (null keeps the current)`
	if f := arity("use", p, 1, 2, usage); f != nil {
		return nil, f
	}
	if f := checkUse("use", p, usage); f != nil {
		return nil, f
	}
	names := [2]any{nil, nil}
	copy(names[:], p)
	if names[0] != nil {
		s.ns = sqlview.Namespace
	}
	if names[1] != nil {
		s.db = sqlview.Database
	}
	return nil, nil
}

// checkUse checks a namespace and a database (use's parameters, signin's
// ns and db): each null (keep the current) or the one there is.
func checkUse(method string, names []any, usage string) *rpcFail {
	want := [2]string{sqlview.Namespace, sqlview.Database}
	what := [2]string{"namespace", "database"}
	for i, n := range names {
		if n == nil || i > 1 {
			continue
		}
		name, ok := n.(string)
		if !ok {
			return invalidParams(method, "call it as "+method+" "+usage, "the %s is a string or null", what[i])
		}
		if name != want[i] {
			return invalidParams(method, fmt.Sprintf("use %q, the one %s (namespace loci, database palace)", want[i], what[i]),
				"no %s %q", what[i], name)
		}
	}
	return nil
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
	enc, err := c.codec.encode(v)
	if err != nil {
		return nil, invalidParams("let", "give a number, string, boolean, null, time, array or object", "the value cannot be kept: %s", err.Error())
	}
	lim := c.l.admin
	if len(enc) > lim.maxVar {
		return nil, fail(codeInvalidParams, fault.Newf(fault.DBTooLarge,
			"keep a smaller value; a larger text belongs in the palace (read it with a query) rather than in a variable",
			"let: the value of %s is %d bytes; a variable holds at most %d bytes", name, len(enc), lim.maxVar))
	}
	total := len(enc)
	for k, n := range s.varBytes {
		if k != name {
			total += n
		}
	}
	if total > lim.maxSessionVars {
		return nil, fail(codeInvalidParams, fault.Newf(fault.DBTooLarge, "unset some (unset [NAME]) or reset the session first",
			"let: the session's variables would hold %d bytes; a session holds at most %d bytes of values in all", total, lim.maxSessionVars))
	}
	s.vars[name] = v
	s.varBytes[name] = len(enc)
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
	delete(s.varBytes, name)
	return nil, nil
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
	return c.statements(results), nil
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

// answerSlack is what an answer's envelope (id, result) and the
// statements' separators are allowed within MaxAnswerBytes before the
// rows; serve still checks the whole message.
const answerSlack = 64 << 10

// statements is a query's answer: one entry per statement run, their
// rows together within the answer's size limit: the rows past it are cut
// (truncated_by "bytes"), and a statement with no room left (and those
// after it, not listed) answers loci::db::too_large.
func (c *conn) statements(results []sqlview.Result) []any {
	limit := c.l.admin.maxAnswer
	budget := limit - min(answerSlack, limit/4)
	out := make([]any, 0, len(results))
	size := func(v any) int {
		b, err := c.codec.encode(v)
		if err != nil {
			return 0 // the whole answer's encoding says what is wrong
		}
		return len(b) + 1
	}
	for _, r := range results {
		t := shortDuration(r.Duration).String()
		if r.Err != nil {
			b := r.Err.Body()
			out = append(out, api.DBStatementErr{Status: "ERR", Time: t, Result: b.Error, Code: b.Code, Help: b.Help})
			continue
		}
		cols := make([]api.DBColumn, len(r.Columns))
		for i, col := range r.Columns {
			cols[i] = api.DBColumn{Name: col.Name, Type: col.Type}
		}
		st := api.DBStatementOK{Status: "OK", Time: t, Columns: cols, Rows: [][]any{}, Truncated: r.Truncated, TruncatedBy: truncatedBy(r), RowsRead: r.RowsRead}
		budget -= size(st) + len(`"truncated_by":"bytes",`)
		cut := -1
		for i, row := range r.Rows {
			n := size(row)
			if n > budget {
				cut = i
				break
			}
			budget -= n
		}
		if budget < 0 || cut == 0 {
			out = append(out, tooLarge(t, limit))
			break
		}
		if r.Rows != nil {
			st.Rows = r.Rows
		}
		if cut > 0 {
			st.Rows = r.Rows[:cut]
			st.Truncated, st.TruncatedBy = true, "bytes"
			out = append(out, st)
			// Nothing more fits: a statement after it answers too_large.
			budget = -1
			continue
		}
		out = append(out, st)
	}
	return out
}

// tooLarge is a statement's answer when the answer has no room left for
// its rows.
func tooLarge(t string, limit int) api.DBStatementErr {
	e := fault.Newf(fault.DBTooLarge,
		"select fewer rows or columns (LIMIT, WHERE, SUBSTRING of long texts), or send the statements in separate queries",
		"the answer would exceed %d bytes (the size one answer holds)", limit)
	b := e.Body()
	return api.DBStatementErr{Status: "ERR", Time: t, Result: b.Error, Code: b.Code, Help: b.Help}
}

// truncatedBy says what cut a result's rows: "rows" or "bytes" ("" when
// nothing was cut; "rows" for a cut result that does not say).
func truncatedBy(r sqlview.Result) string {
	if r.TruncatedBy != "" || !r.Truncated {
		return r.TruncatedBy
	}
	return "rows"
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

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Issue 32: the database admin listener wired into the daemon, its REST
// routes and the CLI, against a real daemon and a real WebSocket client.

// rpcClient is a JSON-RPC client of the admin listener's /rpc (json).
type rpcClient struct {
	t    *testing.T
	ws   *websocket.Conn
	next int
}

// rpcError is a JSON-RPC error answer with the listener's {error, code,
// help} in data.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Error string `json:"error"`
		Code  string `json:"code"`
		Help  string `json:"help"`
	} `json:"data"`
}

// statement is one statement's answer to query.
type statement struct {
	Status  string `json:"status"`
	Time    string `json:"time"`
	Columns []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"columns"`
	Rows      [][]any `json:"rows"`
	Truncated bool    `json:"truncated"`
	RowsRead  int     `json:"rows_read"`
	Result    string  `json:"result"`
	Code      string  `json:"code"`
	Help      string  `json:"help"`
}

// dialDB connects to the listener's URL with the json subprotocol and the
// headers given; a refused upgrade answers its response (its body the
// listener's error).
func dialDB(t *testing.T, url string, header ...string) (*rpcClient, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"json"}, HTTPHeader: h})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &rpcClient{t: t, ws: ws}, resp, nil
}

// mustDialDB is dialDB failing the test on a refusal.
func mustDialDB(t *testing.T, url string, header ...string) *rpcClient {
	t.Helper()
	c, resp, err := dialDB(t, url, header...)
	if err != nil {
		t.Fatalf("connecting to %s: %v %s", url, err, refusal(resp))
	}
	return c
}

// refusal is a refused upgrade's status and body.
func refusal(resp *http.Response) string {
	if resp == nil {
		return "(no answer)"
	}
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// try sends one request and reads its answer: the result, the listener's
// error, or the connection's failure.
func (c *rpcClient) try(method string, params ...any) (json.RawMessage, *rpcError, error) {
	c.next++
	id := c.next
	if params == nil {
		params = []any{}
	}
	req, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, req); err != nil {
		return nil, nil, err
	}
	for {
		_, msg, err := c.ws.Read(ctx)
		if err != nil {
			return nil, nil, err
		}
		var ans struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(msg, &ans); err != nil {
			c.t.Fatalf("%s: not JSON-RPC: %s", method, msg)
		}
		if string(ans.ID) != strconv.Itoa(id) {
			continue
		}
		return ans.Result, ans.Error, nil
	}
}

// call is try failing the test when the connection fails.
func (c *rpcClient) call(method string, params ...any) (json.RawMessage, *rpcError) {
	c.t.Helper()
	res, rerr, err := c.try(method, params...)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return res, rerr
}

// ok is call failing the test on an error answer.
func (c *rpcClient) ok(method string, params ...any) json.RawMessage {
	c.t.Helper()
	res, rerr := c.call(method, params...)
	if rerr != nil {
		c.t.Fatalf("%s: %+v", method, *rerr)
	}
	return res
}

// query runs SQL and answers its statements.
func (c *rpcClient) query(sql string) []statement {
	c.t.Helper()
	var out []statement
	dec := json.NewDecoder(bytes.NewReader(c.ok("query", sql)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		c.t.Fatalf("query %q: %v", sql, err)
	}
	return out
}

// rows runs one statement that must succeed and answers its rows.
func (c *rpcClient) rows(sql string) [][]any {
	c.t.Helper()
	res := c.query(sql)
	if len(res) != 1 || res[0].Status != "OK" {
		c.t.Fatalf("query %q: %+v", sql, res)
	}
	if res[0].Truncated {
		c.t.Fatalf("query %q: truncated", sql)
	}
	return res[0].Rows
}

// signedIn reports info's signed_in.
func (c *rpcClient) signedIn() bool {
	c.t.Helper()
	var info struct {
		SignedIn bool `json:"signed_in"`
		Auth     bool `json:"auth"`
	}
	if err := json.Unmarshal(c.ok("info"), &info); err != nil {
		c.t.Fatal(err)
	}
	return info.SignedIn
}

// closedByServer waits for the listener to close the connection with a
// close frame (the listener closed it, not a process that died): a read
// ends with a WebSocket close status, before this side's deadline.
func (c *rpcClient) closedByServer(within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		_, _, err := c.ws.Read(ctx)
		if err == nil {
			continue
		}
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return fmt.Errorf("the connection was not closed within %s", within)
		}
		if websocket.CloseStatus(err) == -1 {
			return fmt.Errorf("the connection ended without a close frame: %v", err)
		}
		return nil
	}
}

// dbOpen is a decoded api.DBState.
type dbOpen struct {
	Open           bool     `json:"open"`
	Address        string   `json:"address"`
	URL            string   `json:"url"`
	Bind           string   `json:"bind"`
	Port           int      `json:"port"`
	AllowRemote    bool     `json:"allow_remote"`
	AllowedOrigins []string `json:"allowed_origins"`
	Connections    int      `json:"connections"`
	User           string   `json:"user"`
	Auth           bool     `json:"auth"`
}

func dbStateOf(t *testing.T, r response) dbOpen {
	t.Helper()
	var st dbOpen
	if err := json.Unmarshal([]byte(r.raw), &st); err != nil {
		t.Fatalf("not a DBState: %d %s", r.status, r.raw)
	}
	return st
}

// portOf is the port of host:port.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	if err != nil || n == 0 {
		t.Fatalf("no port in %q", addr)
	}
	return n
}

// With authentication off: `loci db serve` opens the listener and prints
// its URL, the user and the password to use; `loci db status` and GET
// /api/db show it open with its URL; a client signs in as loci/loci
// (before that only the handshake works); a second open with the same
// settings reports the listener, other settings are 409
// already_running; an open on the daemon's own port is 409 bind_failed
// naming server.port, and a bind beyond loopback is 400 unsafe_bind
// (authentication is off), neither opening anything; `loci db stop`
// closes it and the connected client sees the close; the routes are not
// mode-gated; a bad body is loci::input::invalid.
func TestDBServeStatusStop(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	serverPort := portOf(t, d.addr)

	out, errOut, code := d.cli("", "db", "status")
	if code != 0 || !strings.Contains(out, "closed") {
		t.Fatalf("loci db status while closed: %d %s %s", code, out, errOut)
	}
	// loci status names the listener only while it is open.
	if out, errOut, code := d.cli("", "status"); code != 0 || strings.Contains(out, "sql:") {
		t.Fatalf("loci status while closed: %d %s %s", code, out, errOut)
	}
	if out, _, _ := d.cli("", "--json", "status"); strings.Contains(out, "db_url") {
		t.Fatalf("loci status --json while closed: %s", out)
	}
	// Refusals while closed open nothing.
	for _, c := range []struct {
		body   any
		status int
		code   string
		says   string
	}{
		{map[string]any{"port": serverPort}, 409, "loci::db::bind_failed", "server.port"},
		{map[string]any{"bind": "0.0.0.0", "port": 0, "allow_remote": true}, 400, "loci::db::unsafe_bind", ""},
		{map[string]any{"bind": "0.0.0.0", "port": 0}, 400, "loci::db::unsafe_bind", ""},
		{`{"port":`, 400, "loci::input::invalid", "body"},
		{map[string]any{"adress": "x"}, 400, "loci::input::invalid", "adress"},
	} {
		r := d.do("POST", "/api/db", c.body)
		if r.status != c.status || r.code() != c.code || !strings.Contains(r.raw, c.says) || get[string](r.body, "help") == "" {
			t.Fatalf("POST /api/db %v: %d %s", c.body, r.status, r.raw)
		}
		if st := dbStateOf(t, d.do("GET", "/api/db", nil)); st.Open {
			t.Fatalf("POST /api/db %v opened the listener", c.body)
		}
	}
	_, errOut, code = d.cli("", "db", "serve", "--port", strconv.Itoa(serverPort))
	if code == 0 || !strings.Contains(errOut, "loci::db::bind_failed") || !strings.Contains(errOut, "help:") {
		t.Fatalf("loci db serve on the daemon's port: %d %s", code, errOut)
	}

	port := freePort(t)
	out, errOut, code = d.cli("", "db", "serve", "--port", strconv.Itoa(port))
	url := fmt.Sprintf("ws://127.0.0.1:%d/rpc", port)
	if code != 0 || !strings.Contains(out, url) || !strings.Contains(out, "user:        loci") || !strings.Contains(out, "password:    loci") {
		t.Fatalf("loci db serve: %d %s %s", code, out, errOut)
	}
	st := dbStateOf(t, d.do("GET", "/api/db", nil, "X-Loci-Mode", "disabled"))
	if !st.Open || st.URL != url || st.User != "loci" || st.Auth || st.Port != port {
		t.Fatalf("GET /api/db (disabled mode): %+v", st)
	}
	out, _, code = d.cli("", "db", "status")
	if code != 0 || !strings.Contains(out, "is open") || !strings.Contains(out, url) {
		t.Fatalf("loci db status while open: %d %s", code, out)
	}
	if out, errOut, code := d.cli("", "status"); code != 0 || !strings.Contains(out, "\nsql:        "+url+" ") {
		t.Fatalf("loci status while open: %d %s %s", code, out, errOut)
	}
	if out, _, _ := d.cli("", "--json", "status"); !strings.Contains(out, `"db_url": "`+url+`"`) {
		t.Fatalf("loci status --json while open: %s", out)
	}
	// The console's table: NULL apart from 'NULL'; after a failed
	// statement, how many were not run (and the exit is non-zero).
	if out, errOut, code := d.cli("", "db", "query", "SELECT NULL AS nothing, 'NULL' AS word"); code != 0 || !strings.Contains(out, "\n∅       | NULL\n") {
		t.Fatalf("loci db query NULL and 'NULL': %d %q %s", code, out, errOut)
	}
	out, errOut, code = d.cli("", "db", "query", "SELECT 1 AS one; SELECT nope FROM nowhere; SELECT 'a;b'; SELECT 3")
	if code == 0 || !strings.Contains(out, "one") || !strings.Contains(out, "statement 2 of 4 failed: the 2 statements after it were not run") ||
		!strings.Contains(errOut, "loci::db::query_invalid") {
		t.Fatalf("loci db query with a failing statement: %d %s %s", code, out, errOut)
	}

	// No origin is admitted beyond this machine's without db.allowed_origins.
	if _, resp, err := dialDB(t, url, "Origin", "https://console.example"); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("an origin of another site: %v %s", err, refusal(resp))
	}
	c := mustDialDB(t, url)
	if _, rerr := c.call("query", "SELECT 1"); rerr == nil || rerr.Data.Code != "loci::db::signin_required" {
		t.Fatalf("query before signin: %+v", rerr)
	}
	if _, rerr := c.call("signin", map[string]string{"user": "loci", "pass": "wrong"}); rerr == nil || rerr.Data.Code != "loci::db::signin_refused" {
		t.Fatalf("signin with a wrong password: %+v", rerr)
	}
	var session string
	if err := json.Unmarshal(c.ok("signin", map[string]string{"user": "loci", "pass": "loci"}), &session); err != nil || !strings.HasPrefix(session, "loci_dbs_") {
		t.Fatalf("signin: %q %v", session, err)
	}
	if !c.signedIn() {
		t.Fatal("info: not signed in after signin")
	}
	if rows := c.rows("SELECT 1"); len(rows) != 1 || fmt.Sprint(rows[0][0]) != "1" {
		t.Fatalf("SELECT 1: %v", rows)
	}
	if st := dbStateOf(t, d.do("GET", "/api/db", nil)); st.Connections != 1 {
		t.Fatalf("connections: %+v", st)
	}

	// Same settings: the listener as it is; others: already_running.
	if r := d.do("POST", "/api/db", map[string]any{"port": port}); r.status != 200 || dbStateOf(t, r).URL != url {
		t.Fatalf("POST /api/db again, same settings: %d %s", r.status, r.raw)
	}
	if out, errOut, code := d.cli("", "db", "serve", "--port", strconv.Itoa(port)); code != 0 || !strings.Contains(out, url) {
		t.Fatalf("loci db serve again, same settings: %d %s %s", code, out, errOut)
	}
	other := freePort(t)
	if r := d.do("POST", "/api/db", map[string]any{"port": other}); r.status != 409 || r.code() != "loci::db::already_running" {
		t.Fatalf("POST /api/db, another port: %d %s", r.status, r.raw)
	}
	// Its help is whole at the CLI: the REST route left out with its "or".
	if _, errOut, code := d.cli("", "db", "serve", "--port", strconv.Itoa(other)); code == 0 || !strings.Contains(errOut, "loci::db::already_running") ||
		!strings.Contains(errOut, "`loci db stop`") || strings.Contains(errOut, "( or") || strings.Contains(errOut, "/api/db") {
		t.Fatalf("loci db serve, another port: %d %s", code, errOut)
	}

	out, errOut, code = d.cli("", "db", "stop")
	if code != 0 || !strings.Contains(out, "closed") {
		t.Fatalf("loci db stop: %d %s %s", code, out, errOut)
	}
	if err := c.closedByServer(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if st := dbStateOf(t, d.do("GET", "/api/db", nil)); st.Open || st.URL != "" {
		t.Fatalf("GET /api/db after stop: %+v", st)
	}
	if _, _, err := dialDB(t, url); err == nil {
		t.Fatal("the stopped listener still accepts connections")
	}
	if r := d.do("DELETE", "/api/db", nil); r.status != 200 || dbStateOf(t, r).Open {
		t.Fatalf("DELETE /api/db when closed: %d %s", r.status, r.raw)
	}
	if out, errOut, code := d.cli("", "db", "query", "SELECT 1"); code == 0 || !strings.Contains(errOut, "loci::db::not_open") || !strings.Contains(errOut, "loci db serve") {
		t.Fatalf("loci db query while closed: %d %s %s", code, out, errOut)
	}
}

// With authentication on: /api/db needs the token; a bind beyond loopback
// is refused without allow_remote and admitted with it (reached through
// 127.0.0.1); a bearer on the upgrade starts the connection signed in, a
// wrong one is 401 before the upgrade; signin takes the token, not
// "loci"; `loci db serve` never prints the token. A token revoked
// (`loci auth revoke`) leaves a connection signed in with it working,
// while a new upgrade, signin or authenticate with it (or a session token
// issued under it) is refused.
func TestDBAuthOn(t *testing.T) {
	t.Parallel()
	const secret = "db-admin-configured-secret-0042"
	home, palace := newPalace(t)
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+secret, "LOCI_DB_PORT=0")
	bearer := []string{"Authorization", "Bearer " + secret}
	withToken := []string{"LOCI_AUTH_TOKEN=" + secret}
	for _, m := range []string{"GET", "POST", "DELETE"} {
		if r := d.do(m, "/api/db", nil); r.status != 401 || r.code() != "loci::auth::unauthorized" {
			t.Fatalf("%s /api/db without the token: %d %s", m, r.status, r.raw)
		}
	}
	if r := d.do("POST", "/api/db", map[string]any{"bind": "0.0.0.0"}, bearer...); r.status != 400 || r.code() != "loci::db::unsafe_bind" {
		t.Fatalf("remote bind without allow_remote: %d %s", r.status, r.raw)
	}
	r := d.do("POST", "/api/db", map[string]any{"bind": "0.0.0.0", "allow_remote": true}, bearer...)
	st := dbStateOf(t, r)
	if r.status != 200 || !st.Open || !st.Auth || !st.AllowRemote || st.Bind != "0.0.0.0" {
		t.Fatalf("remote bind with auth and allow_remote: %d %s", r.status, r.raw)
	}
	c := mustDialDB(t, fmt.Sprintf("ws://127.0.0.1:%d/rpc", portOf(t, st.Address)), bearer...)
	if !c.signedIn() || len(c.rows("SELECT 1")) != 1 {
		t.Fatal("a bearer on the upgrade did not sign the connection in")
	}
	if r := d.do("DELETE", "/api/db", nil, bearer...); r.status != 200 || dbStateOf(t, r).Open {
		t.Fatalf("DELETE /api/db: %d %s", r.status, r.raw)
	}
	if err := c.closedByServer(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "db", "serve"}, withToken)
	if code != 0 || !strings.Contains(out, "ws://127.0.0.1:") || !strings.Contains(out, "the daemon's token") || strings.Contains(out+errOut, secret) {
		t.Fatalf("loci db serve: %d %s %s", code, out, errOut)
	}
	st = dbStateOf(t, d.do("GET", "/api/db", nil, bearer...))
	// The console signs in with the CLI's token (a bearer on the upgrade).
	out, errOut, code = runCLI(home, "", []string{"--addr", d.addr, "db", "query", "SELECT 41 + 1 AS answer"}, withToken)
	if code != 0 || !strings.Contains(out, "answer\n------\n42\n(1 row, ") || strings.Contains(out+errOut, secret) {
		t.Fatalf("loci db query with the token: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "db", "query", "SELECT 1"}, nil); code == 0 || !strings.Contains(errOut, "401") {
		t.Fatalf("loci db query without a token: %d %s", code, errOut)
	}
	if _, resp, err := dialDB(t, st.URL, "Authorization", "Bearer not-the-token-at-all-0000"); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("a wrong bearer: %v %s", err, refusal(resp))
	}
	c = mustDialDB(t, st.URL)
	if _, rerr := c.call("query", "SELECT 1"); rerr == nil || rerr.Data.Code != "loci::db::signin_required" {
		t.Fatalf("a query without credentials: %+v", rerr)
	}
	if _, rerr := c.call("signin", map[string]string{"user": "loci", "pass": "loci"}); rerr == nil || rerr.Data.Code != "loci::db::signin_refused" {
		t.Fatalf("signin with loci while authentication is on: %+v", rerr)
	}
	c.ok("signin", map[string]string{"user": "loci", "pass": secret})
	if !c.signedIn() {
		t.Fatal("signin with the token did not sign in")
	}

	// A generated token, then revoked.
	tok, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "auth", "generate"}, withToken)
	tok = strings.TrimSpace(tok)
	if code != 0 || !strings.HasPrefix(tok, "loci_") {
		t.Fatalf("auth generate: %d %s", code, errOut)
	}
	held := mustDialDB(t, st.URL, "Authorization", "Bearer "+tok)
	if len(held.rows("SELECT 1")) != 1 {
		t.Fatal("the generated token's connection cannot query")
	}
	other := mustDialDB(t, st.URL)
	var issued string
	if err := json.Unmarshal(other.ok("signin", map[string]string{"user": "loci", "pass": tok}), &issued); err != nil || issued == "" {
		t.Fatalf("signin with the generated token: %q %v", issued, err)
	}
	if _, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "auth", "revoke"}, withToken); code != 0 {
		t.Fatalf("auth revoke: %d %s", code, errOut)
	}
	if len(held.rows("SELECT 1")) != 1 || !held.signedIn() {
		t.Fatal("a connection signed in with the revoked token stopped working")
	}
	if _, resp, err := dialDB(t, st.URL, "Authorization", "Bearer "+tok); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("an upgrade with the revoked token: %v %s", err, refusal(resp))
	}
	fresh := mustDialDB(t, st.URL)
	if _, rerr := fresh.call("signin", map[string]string{"user": "loci", "pass": tok}); rerr == nil || rerr.Data.Code != "loci::db::signin_refused" {
		t.Fatalf("signin with the revoked token: %+v", rerr)
	}
	if _, rerr := fresh.call("authenticate", issued); rerr == nil {
		t.Fatal("authenticate with a session token issued under the revoked token succeeded")
	}
	if _, rerr := fresh.call("query", "SELECT 1"); rerr == nil || rerr.Data.Code != "loci::db::signin_required" {
		t.Fatalf("a query after the revoked token's sign-ins: %+v", rerr)
	}
	if strings.Contains(d.log.String(), secret) || strings.Contains(d.log.String(), tok) {
		t.Fatal("a token reached the daemon's log")
	}
}

// The configuration file's db.* settings reach the listener: a browser
// page of another site is refused on the upgrade (403
// loci::db::origin_refused naming the origin) while pages of this machine
// and an origin listed in db.allowed_origins are admitted; the query
// limits are in its state and bound the statements (db.max_result_rows
// cuts and flags a result, db.max_scan_rows fails a statement with
// loci::db::too_large); webhook.port (webhook.enable) is refused as its
// port, naming it; GET /version is the daemon's version.
func TestDBConfigFile(t *testing.T) {
	t.Parallel()
	hook := freePort(t)
	d, _ := withConfig(t, fmt.Sprintf("[db]\nport = 0\nallowed_origins = [\"https://console.example\"]\nmax_result_rows = 2\nmax_scan_rows = 5\nquery_timeout_secs = 7\n"+
		"[webhook]\nenable = true\nport = %d\n", hook))
	for i := range 6 {
		if _, err := fileDrawer(d.addr, "w", "r", fmt.Sprintf("drawer number %d of six", i)); err != nil {
			t.Fatal(err)
		}
	}
	if r := d.do("POST", "/api/db", map[string]any{"port": hook}); r.status != 409 || r.code() != "loci::db::bind_failed" || !strings.Contains(r.raw, "webhook.port") {
		t.Fatalf("POST /api/db on webhook.port: %d %s", r.status, r.raw)
	}
	r := d.do("POST", "/api/db", nil)
	st := dbStateOf(t, r)
	if r.status != 200 || !st.Open || len(st.AllowedOrigins) != 1 || st.AllowedOrigins[0] != "https://console.example" {
		t.Fatalf("POST /api/db: %d %s", r.status, r.raw)
	}
	if get[float64](r.body, "limits", "max_result_rows") != 2 || get[float64](r.body, "limits", "max_scan_rows") != 5 || get[float64](r.body, "limits", "query_timeout_secs") != 7 {
		t.Fatalf("the limits: %s", r.raw)
	}
	_, resp, err := dialDB(t, st.URL, "Origin", "https://evil.example")
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("an origin of another site: %v %s", err, refusal(resp))
	}
	body, _ := io.ReadAll(resp.Body)
	var b struct{ Error, Code, Help string }
	if json.Unmarshal(body, &b) != nil || b.Code != "loci::db::origin_refused" || !strings.Contains(b.Error, "https://evil.example") || !strings.Contains(b.Help, "allowed_origins") {
		t.Fatalf("the refusal: %s", body)
	}
	for _, o := range []string{"https://console.example", "http://localhost:5173", "http://127.0.0.1:3000"} {
		c := mustDialDB(t, st.URL, "Origin", o)
		c.ok("ping")
	}

	c := mustDialDB(t, st.URL)
	c.ok("signin", map[string]string{"user": "loci", "pass": "loci"})
	res := c.query("SELECT id FROM drawers WHERE wing = 'w' AND room = 'r' LIMIT 4")
	if len(res) != 1 || res[0].Status != "OK" || len(res[0].Rows) != 2 || !res[0].Truncated {
		t.Fatalf("a result past db.max_result_rows: %+v", res)
	}
	res = c.query("SELECT count(*) FROM drawers")
	if len(res) != 1 || res[0].Status != "ERR" || res[0].Code != "loci::db::too_large" || res[0].Help == "" {
		t.Fatalf("a statement reading past db.max_scan_rows: %+v", res)
	}

	version, _, _ := d.cli("", "version")
	vr, err := http.Get("http://" + st.Address + "/version")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(vr.Body)
	vr.Body.Close()
	if want := "loci-" + strings.Fields(version)[1]; vr.StatusCode != 200 || strings.TrimSpace(string(got)) != want {
		t.Fatalf("GET /version: %d %q, want %q", vr.StatusCode, got, want)
	}
}

// The daemon's shutdown (SIGTERM) closes the listener and its
// connections: the client sees the close, and the address refuses
// connections afterwards.
func TestDBClosedAtShutdown(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace, "LOCI_DB_PORT=0")
	r := d.do("POST", "/api/db", map[string]any{})
	st := dbStateOf(t, r)
	if r.status != 200 || !st.Open {
		t.Fatalf("POST /api/db: %d %s", r.status, r.raw)
	}
	c := mustDialDB(t, st.URL)
	c.ok("signin", map[string]string{"user": "loci", "pass": "loci"})
	if len(c.rows("SELECT count(*) FROM wings")) != 1 {
		t.Fatal("no count")
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.closedByServer(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatalf("the daemon's exit: %v\n%s", err, d.log.String())
	}
	if _, _, err := dialDB(t, st.URL); err == nil {
		t.Fatal("the listener accepts connections after the daemon stopped")
	}
}

// db.allowed_origins is held to the listener's rule by the configuration
// too: each origin `loci db serve --allowed-origin` refuses, `loci doctor`
// calls a configuration error naming db.allowed_origins, and the daemon
// does not start with it; each one serve takes, doctor takes.
func TestDBOriginsDoctorAgreesWithServe(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace, "LOCI_DB_PORT=0")
	for _, c := range []struct {
		origin string
		ok     bool
	}{
		{"*", false},
		{"not a url", false},
		{"https://*.example.com", false},
		{"https://console.example/path", false},
		{"https://user@console.example", false},
		{"console.example:8080", false},
		{"null", false},
		{"https://console.example", true},
		{"HTTP://Lan.Example:3000/", true},
		{"http://192.168.1.20:3000", true},
		{"tauri://localhost", true},
	} {
		_, serveErr, serveCode := d.cli("", "db", "serve", "--allowed-origin", c.origin)
		if c.ok != (serveCode == 0) || (!c.ok && !strings.Contains(serveErr, "db.allowed_origins")) {
			t.Fatalf("loci db serve --allowed-origin %q: %d %s (want ok %v)", c.origin, serveCode, serveErr, c.ok)
		}
		if serveCode == 0 {
			if _, errOut, code := d.cli("", "db", "stop"); code != 0 {
				t.Fatalf("loci db stop: %d %s", code, errOut)
			}
		}
		env := []string{"LOCI_DB_ALLOWED_ORIGINS=" + c.origin}
		out, errOut, _ := runCLI(home, "", []string{"--addr", d.addr, "doctor"}, env)
		refused := strings.Contains(out, "ERROR configuration") && strings.Contains(out, "db.allowed_origins: ")
		if refused == c.ok {
			t.Fatalf("loci doctor with db.allowed_origins %q (serve's ok %v): %s %s", c.origin, c.ok, out, errOut)
		}
		if !c.ok {
			// The daemon's start refuses it too, naming the key.
			_, errOut, code := runCLI(home, "", []string{"serve", "--palace", palace, "--port", "0"}, env)
			if code == 0 || !strings.Contains(errOut, "db.allowed_origins") || !strings.Contains(errOut, "loci::config::invalid") {
				t.Fatalf("loci serve with db.allowed_origins %q: %d %s", c.origin, code, errOut)
			}
		}
	}
}

package dbadmin

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// wantFault checks err is a *fault.Error with code, its message holding
// each of says, and a help.
func wantFault(t *testing.T, err error, code fault.Code, says ...string) *fault.Error {
	t.Helper()
	if !fault.Is(err, code) {
		t.Fatalf("want %s, got %v", code, err)
	}
	fe := fault.As(err)
	for _, s := range says {
		if !strings.Contains(fe.Msg+" "+fe.Help, s) {
			t.Errorf("%s: %q (help %q) does not say %q", code, fe.Msg, fe.Help, s)
		}
	}
	if fe.Help == "" {
		t.Errorf("%s has no help", code)
	}
	return fe
}

func TestStateClosedAndOpen(t *testing.T) {
	a, _ := newAdmin(t, true)
	st := a.State()
	if st.Open || st.Address != "" || st.URL != "" || st.OpenedAt != nil {
		t.Fatalf("closed state: %+v", st)
	}
	if st.User != "loci" || !st.Auth || st.Bind != "127.0.0.1" || st.AllowedOrigins == nil ||
		st.Limits != (api.DBLimits{QueryTimeoutSecs: 30, MaxScanRows: 100_000, MaxResultRows: 1_000, MaxResultBytes: sqlview.DefaultResultBytes}) ||
		strings.Join(st.Encodings, ",") != "json,cbor" {
		t.Fatalf("closed state: %+v", st)
	}
	st = open(t, a, api.DBOpen{})
	_, port, _ := net.SplitHostPort(st.Address)
	if !st.Open || !strings.HasPrefix(st.Address, "127.0.0.1:") || port == "0" || st.URL != "ws://"+st.Address+"/rpc" ||
		st.OpenedAt == nil || strconv.Itoa(st.Port) != port || st.Connections != 0 || st.Sessions != 0 {
		t.Fatalf("open state: %+v", st)
	}
	if got := a.State(); got.Address != st.Address || !got.Open {
		t.Fatalf("State after Open: %+v", got)
	}
}

func TestOpenChecks(t *testing.T) {
	t.Run("bind not an IP", func(t *testing.T) {
		a, _ := newAdmin(t, true)
		_, err := a.Open(api.DBOpen{Bind: ptr("localhost")})
		wantFault(t, err, fault.ConfigInvalid, "localhost", "IP address")
		if a.State().Open {
			t.Fatal("opened")
		}
	})
	t.Run("beyond loopback without auth nor allow_remote", func(t *testing.T) {
		a, _ := newAdmin(t, false)
		_, err := a.Open(api.DBOpen{Bind: ptr("0.0.0.0")})
		fe := wantFault(t, err, fault.DBUnsafeBind, "0.0.0.0", "auth.enabled", "allow_remote")
		if fe.HTTPStatus() != http.StatusBadRequest {
			t.Errorf("status %d", fe.HTTPStatus())
		}
	})
	t.Run("beyond loopback with allow_remote, auth off", func(t *testing.T) {
		a, _ := newAdmin(t, false)
		_, err := a.Open(api.DBOpen{Bind: ptr("0.0.0.0"), AllowRemote: ptr(true)})
		wantFault(t, err, fault.DBUnsafeBind, "authentication is off", "auth.enabled")
	})
	t.Run("beyond loopback with auth, no allow_remote", func(t *testing.T) {
		a, _ := newAdmin(t, true)
		_, err := a.Open(api.DBOpen{Bind: ptr("0.0.0.0")})
		wantFault(t, err, fault.DBUnsafeBind, "allow_remote is not set")
		if a.State().Open {
			t.Fatal("opened")
		}
	})
	t.Run("beyond loopback with both", func(t *testing.T) {
		a, _ := newAdmin(t, true)
		st := open(t, a, api.DBOpen{Bind: ptr("0.0.0.0"), Port: ptr(0), AllowRemote: ptr(true)})
		if !st.Open || st.Bind != "0.0.0.0" || !st.AllowRemote {
			t.Fatalf("%+v", st)
		}
		_, port, _ := net.SplitHostPort(st.Address)
		c := dial(t, api.DBState{URL: "ws://127.0.0.1:" + port + "/rpc"}, encJSON, nil)
		if got := c.call("version"); got != "loci-9.8.7" {
			t.Fatalf("version %v", got)
		}
	})
	t.Run("port of the server or the webhook", func(t *testing.T) {
		a, _ := newAdmin(t, true)
		_, err := a.Open(api.DBOpen{Port: ptr(7700)})
		fe := wantFault(t, err, fault.DBBindFailed, "7700", "server.port")
		if fe.HTTPStatus() != http.StatusConflict {
			t.Errorf("status %d", fe.HTTPStatus())
		}
		_, err = a.Open(api.DBOpen{Port: ptr(8787)})
		wantFault(t, err, fault.DBBindFailed, "8787", "webhook.port")
		_, err = a.Open(api.DBOpen{Port: ptr(70000)})
		wantFault(t, err, fault.ConfigInvalid, "70000")
	})
	t.Run("port taken", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		a, _ := newAdmin(t, true)
		_, err = a.Open(api.DBOpen{Port: ptr(port)})
		fe := wantFault(t, err, fault.DBBindFailed, "127.0.0.1:"+strconv.Itoa(port))
		if fe.HTTPStatus() != http.StatusConflict || a.State().Open {
			t.Errorf("status %d, open %v", fe.HTTPStatus(), a.State().Open)
		}
	})
	t.Run("allowed origin not an origin", func(t *testing.T) {
		a, _ := newAdmin(t, true)
		for _, o := range []string{"*", "https://ex.com/path", "example.com", "null", "https://*.ex.com"} {
			_, err := a.Open(api.DBOpen{AllowedOrigins: &[]string{o}})
			wantFault(t, err, fault.ConfigInvalid, "db.allowed_origins")
		}
	})
}

func TestOpenAgain(t *testing.T) {
	a, _ := newAdmin(t, true)
	st := open(t, a, api.DBOpen{AllowedOrigins: &[]string{"https://b.example", "https://A.example"}})
	_, port, _ := net.SplitHostPort(st.Address)
	p, _ := strconv.Atoi(port)
	for name, o := range map[string]api.DBOpen{
		"empty body":         {AllowedOrigins: &[]string{"https://a.example", "https://b.example"}},
		"the port it chose":  {Port: &p, AllowedOrigins: &[]string{"https://b.example", "https://a.example"}},
		"same bind spelled":  {Bind: ptr("127.0.0.1"), AllowedOrigins: &[]string{"https://a.example/", "https://b.example"}},
		"same allow_remote ": {AllowRemote: ptr(false), AllowedOrigins: &[]string{"https://a.example", "https://b.example"}},
	} {
		again, err := a.Open(o)
		if err != nil || again.Address != st.Address || !again.OpenedAt.Equal(*st.OpenedAt) {
			t.Fatalf("%s: %v %+v", name, err, again)
		}
	}
	for name, o := range map[string]api.DBOpen{
		"other origins": {},
		"other port":    {Port: ptr(p + 1), AllowedOrigins: &[]string{"https://a.example", "https://b.example"}},
		"other bind":    {Bind: ptr("::1"), AllowedOrigins: &[]string{"https://a.example", "https://b.example"}},
	} {
		still, err := a.Open(o)
		fe := wantFault(t, err, fault.DBAlreadyRunning, st.Address, "DELETE /api/db", "loci db stop")
		if fe.HTTPStatus() != http.StatusConflict || still.Address != st.Address {
			t.Fatalf("%s: %d %+v", name, fe.HTTPStatus(), still)
		}
	}
}

func TestCloseClosesConnections(t *testing.T) {
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{})
	c1 := dial(t, st, encJSON, nil)
	c2 := dial(t, st, encCBOR, nil)
	c1.call("ping")
	c2.call("ping")
	done := make(chan api.DBState)
	go func() {
		st, err := a.Close()
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	for _, c := range []*client{c1, c2} {
		if code, reason := c.closeStatus(); code != websocket.StatusGoingAway || reason == "" {
			t.Fatalf("close status %v %q, want going away", code, reason)
		}
	}
	var closed api.DBState
	select {
	case closed = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return")
	}
	if closed.Open || closed.Connections != 0 || closed.Address != "" {
		t.Fatalf("after close: %+v", closed)
	}
	if _, err := net.DialTimeout("tcp", st.Address, time.Second); err == nil {
		t.Fatal("the port still accepts")
	}
	if again, err := a.Close(); err != nil || again.Open {
		t.Fatalf("second close: %v %+v", err, again)
	}
	// The port is free: it opens again on it.
	_, port, _ := net.SplitHostPort(st.Address)
	p, _ := strconv.Atoi(port)
	re := open(t, a, api.DBOpen{Port: &p})
	if re.Address != st.Address {
		t.Fatalf("reopened on %s, want %s", re.Address, st.Address)
	}
}

func TestStateCounts(t *testing.T) {
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{})
	c1 := dial(t, st, encJSON, nil)
	c2 := dial(t, st, encCBOR, nil)
	c1.call("signin", map[string]any{"user": "loci", "pass": "loci"})
	c2.call("ping")
	if got := a.State(); got.Connections != 2 || got.Sessions != 2 {
		t.Fatalf("two connections: %+v", got)
	}
	id := c1.call("attach").(string)
	c1.call("attach")
	if got := a.State(); got.Connections != 2 || got.Sessions != 4 {
		t.Fatalf("two attached: %+v", got)
	}
	c1.call("detach", id)
	if got := a.State(); got.Sessions != 3 {
		t.Fatalf("one detached: %+v", got)
	}
	_ = c1.ws.Close(websocket.StatusNormalClosure, "")
	eventually(t, "the closed connection leaves the counts", func() bool {
		got := a.State()
		return got.Connections == 1 && got.Sessions == 1
	})
}

func TestConnectionCap(t *testing.T) {
	a, _ := newAdmin(t, false)
	a.maxConns = 2
	st := open(t, a, api.DBOpen{})
	bearer := http.Header{"Authorization": {"Bearer loci"}}
	c1 := dial(t, st, encJSON, bearer)
	dial(t, st, encJSON, bearer)
	_, resp, err := tryDial(t, st, encJSON, bearer)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third connection: %v %v", err, resp)
	}
	if b := errBody(t, resp); b["code"] != string(fault.ServerBusy) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("busy body %v", b)
	}
	// A connection not signed in still connects (its own slots), but
	// its sign-in finds the signed-in slots taken.
	c3 := dial(t, st, encJSON, nil)
	if e := c3.fails("", "signin", signin("loci", "loci")); e.lcode != string(fault.ServerBusy) {
		t.Fatalf("a sign-in past the cap: %+v", e)
	}
	_ = c1.ws.Close(websocket.StatusNormalClosure, "")
	eventually(t, "a slot frees", func() bool { return a.State().Connections == 2 })
	c3.call("signin", signin("loci", "loci"))
	c3.call("query", "SELECT 1")
}

// TestPendingCap: connections that never sign in hold their own slots
// (MaxPending), so they cannot lock a signed-in client out; past them an
// upgrade answers 503 loci::server::busy; a signed-in connection frees
// its pending slot.
func TestPendingCap(t *testing.T) {
	a, _ := newAdmin(t, true)
	a.maxPending = 3
	st := open(t, a, api.DBOpen{})
	var idle []*client
	for range 3 {
		idle = append(idle, dial(t, st, encJSON, nil))
	}
	_, resp, err := tryDial(t, st, encJSON, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a fourth connection not signed in: %v %v", err, resp)
	}
	if b := errBody(t, resp); b["code"] != string(fault.ServerBusy) || !strings.Contains(b["error"], "not yet signed in") {
		t.Fatalf("busy body %v", b)
	}
	// The signed-in places are not taken: a bearer connects.
	dial(t, st, encJSON, http.Header{"Authorization": {"Bearer " + token1}}).call("query", "SELECT 1")
	// One of the idle ones signs in: its pending slot frees for another.
	idle[0].call("signin", signin("loci", token1))
	c := dial(t, st, encCBOR, nil)
	c.call("ping")
	// The upgrades' answers reach the clients before the listener
	// counts the connections.
	eventually(t, "5 connections", func() bool { return a.State().Connections == 5 })
}

// TestSignInDeadline: a connection with no session signed in within the
// deadline is closed with 1008 and a reason; one that signed in stays.
func TestSignInDeadline(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			t.Parallel()
			a, _ := newAdmin(t, true)
			a.signInDeadline = time.Second
			a.maxPending = 1
			st := open(t, a, api.DBOpen{})
			idle := dial(t, st, enc, nil)
			idle.call("ping") // the handshake methods do not count
			code, reason := idle.closeStatus()
			if code != websocket.StatusPolicyViolation || !strings.Contains(reason, "not signed in within 1s") {
				t.Fatalf("close %v %q, want 1008 with a reason", code, reason)
			}
			// Its slot is free again; a connection that signs in in time stays.
			eventually(t, "the idle connection leaves", func() bool { return a.State().Connections == 0 })
			c := dial(t, st, enc, nil)
			c.call("signin", signin("loci", token1))
			// A bearer connection has no deadline either.
			b := dial(t, st, enc, http.Header{"Authorization": {"Bearer " + token1}})
			time.Sleep(1500 * time.Millisecond)
			c.call("query", "SELECT 1")
			b.call("ping")
		})
	}
}

func TestHTTPRoutes(t *testing.T) {
	a, _ := newAdmin(t, true)
	st := open(t, a, api.DBOpen{})
	resp, b := get(t, st, "GET", "/health", nil)
	if resp.StatusCode != 200 || strings.TrimSpace(b) != `{"status":"ok"}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/health: %d %q", resp.StatusCode, b)
	}
	resp, b = get(t, st, "GET", "/version", nil)
	if resp.StatusCode != 200 || b != "loci-9.8.7" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/version: %d %q", resp.StatusCode, b)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		code         fault.Code
	}{
		{"GET", "/sql", 400, fault.DBUnsupported},
		{"POST", "/sql", 400, fault.DBUnsupported},
		{"PUT", "/sql/x", 400, fault.DBUnsupported},
		{"GET", "/nope", 404, fault.ServerRouteNotFound},
		{"GET", "/api/status", 404, fault.ServerRouteNotFound},
		{"POST", "/health", 405, fault.ServerMethodNotAllowed},
		{"DELETE", "/version", 405, fault.ServerMethodNotAllowed},
		{"POST", "/rpc", 405, fault.ServerMethodNotAllowed},
		{"GET", "/rpc", 400, fault.DBInvalidRequest},
		{"GET", "/rpc (no key)", 400, fault.DBInvalidRequest},
		{"GET", "/rpc (version 8)", 400, fault.DBInvalidRequest},
	} {
		var h http.Header
		path := tc.path
		if p, what, ok := strings.Cut(tc.path, " "); ok {
			path = p
			h = http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-WebSocket-Version": {"13"}}
			if what == "(version 8)" {
				h["Sec-WebSocket-Version"] = []string{"8"}
				h["Sec-WebSocket-Key"] = []string{"dGhlIHNhbXBsZSBub25jZQ=="}
			}
		}
		resp, b := get(t, st, tc.method, path, h)
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %q", tc.method, tc.path, resp.StatusCode, b)
			continue
		}
		m := errBody(t, &http.Response{Body: ioNop(b)})
		if m["code"] != string(tc.code) {
			t.Errorf("%s %s: code %s, want %s", tc.method, tc.path, m["code"], tc.code)
		}
		if tc.code == fault.DBUnsupported && !strings.Contains(m["help"], "query") {
			t.Errorf("/sql help does not point at query: %q", m["help"])
		}
	}
}

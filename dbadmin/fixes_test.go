package dbadmin

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// countThrottle is a Throttle that throttles an address after free
// refusals, recording the addresses it was told of.
type countThrottle struct {
	mu    sync.Mutex
	free  int
	byKey map[string]int
	wait  time.Duration
}

func (t *countThrottle) Refused(remote string) (time.Duration, int) {
	host, _, _ := net.SplitHostPort(remote)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byKey[host]++
	if t.byKey[host] > t.free {
		return t.wait, 60
	}
	return t.wait, 0
}

func (t *countThrottle) count(host string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[host]
}

// TestThrottleAcrossConnections: refused sign-ins count against the
// client's address across connections (the daemon's shared throttle);
// past its free ones a refusal answers loci::auth::throttled with the
// retry time, while the valid password still signs in; the log has one
// warning per connection closed, with the count and the address.
func TestThrottleAcrossConnections(t *testing.T) {
	thr := &countThrottle{free: 3, byKey: map[string]int{}, wait: 20 * time.Millisecond}
	a, d := newAdmin(t, true, func(c *Config) { c.Throttle = thr })
	st := open(t, a, api.DBOpen{})
	for i := range 3 {
		c := dial(t, st, encJSON, nil)
		t0 := time.Now()
		if e := c.fails("", "signin", signin("loci", "wrong")); e.lcode != string(fault.DBSignInRefused) {
			t.Fatalf("refusal %d: %+v", i, e)
		}
		if time.Since(t0) < thr.wait {
			t.Fatal("the refusal did not wait as the throttle said")
		}
		_ = c.ws.Close(websocket.StatusNormalClosure, "")
	}
	c := dial(t, st, encCBOR, nil)
	e := c.fails("", "authenticate", "loci_dbs_guess")
	if e.lcode != string(fault.AuthThrottled) || !strings.Contains(e.msg, "60 s") || !strings.Contains(e.help, "60 s") {
		t.Fatalf("a refusal past the free ones: %+v", e)
	}
	if thr.count("127.0.0.1") != 4 {
		t.Fatalf("the throttle was told of %d refusals, want 4", thr.count("127.0.0.1"))
	}
	// A valid password is never slowed or refused.
	c.call("signin", signin("loci", token1))
	if thr.count("127.0.0.1") != 4 {
		t.Fatal("a valid sign-in was counted")
	}
	// A wrong bearer on the upgrade counts too, and is throttled as well.
	_, resp, err := tryDial(t, st, encJSON, http.Header{"Authorization": {"Bearer wrong"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("a wrong bearer from a throttled address: %v %v", err, resp)
	}
	if b := errBody(t, resp); b["code"] != string(fault.AuthThrottled) {
		t.Fatalf("body %v", b)
	}
	_ = c.ws.Close(websocket.StatusNormalClosure, "")
	eventually(t, "the connections leave", func() bool { return a.State().Connections == 0 })
	log := d.log.String()
	// Connections closed after refusals warn once per address per
	// interval (the first one), the others are held for the next line.
	if n := strings.Count(log, "level=WARN"); n != 2 {
		t.Fatalf("%d warnings, want one for the first connection with refusals and one for the bearer:\n%s", n, log)
	}
	if strings.Count(log, "connections closed after refused sign-ins") != 1 || !strings.Contains(log, "refused=1 connections=1") ||
		!strings.Contains(log, "remote=127.0.0.1 ") || strings.Contains(log, "wrong") || strings.Contains(log, "guess") {
		t.Fatalf("the log:\n%s", log)
	}
	a.refusals.mu.Lock()
	held := *a.refusals.addrs[refusedConn+"\x00127.0.0.1"]
	a.refusals.mu.Unlock()
	if held.refused != 3 || held.con != 3 {
		t.Fatalf("held for the next warning: %d refusals on %d connections, want 3 on 3", held.refused, held.con)
	}
}

// TestAnswerSizeCap: a query's statements share one answer's size
// limit: rows past it are cut with truncated_by "bytes", a statement with
// no room left answers loci::db::too_large (and ends the list), and no
// message over the limit is ever sent.
func TestAnswerSizeCap(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			big := strings.Repeat("x", 100_000)
			rows := make([][]any, 20)
			for i := range rows {
				rows[i] = []any{big}
			}
			results := []sqlview.Result{
				{Columns: []sqlview.Column{{Name: "s", Type: "TEXT"}}, Rows: rows[:5], RowsRead: 5},
				{Columns: []sqlview.Column{{Name: "s", Type: "TEXT"}}, Rows: rows, RowsRead: 20},
				{Columns: []sqlview.Column{{Name: "n", Type: "BIGINT"}}, Rows: [][]any{{int64(1)}}, RowsRead: 1},
			}
			c, _ := signedIn(t, enc, func(a *Admin) {
				a.maxAnswer = 1 << 20
				a.query = func(context.Context, string, map[string]any) ([]sqlview.Result, error) { return results, nil }
			})
			b, typ := c.encode(map[string]any{"id": 1, "method": "query", "params": []any{"SELECT ..."}})
			c.send(typ, b)
			_, raw, err := c.ws.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) > 1<<20 {
				t.Fatalf("an answer of %d bytes, over the cap", len(raw))
			}
			m := decodeAnswer(t, c, raw)
			res, _ := m["result"].([]any)
			if len(res) != 3 {
				t.Fatalf("%d statements, want 3: %v", len(res), m)
			}
			s0, s1, s2 := res[0].(map[string]any), res[1].(map[string]any), res[2].(map[string]any)
			if len(s0["rows"].([]any)) != 5 || s0["truncated"] != false || s0["truncated_by"] != nil {
				t.Fatalf("the first statement fits whole: %v", s0["truncated"])
			}
			n := len(s1["rows"].([]any))
			if n == 0 || n >= 20 || s1["truncated"] != true || s1["truncated_by"] != "bytes" {
				t.Fatalf("the second: %d rows, truncated %v by %v", n, s1["truncated"], s1["truncated_by"])
			}
			if s2["status"] != "ERR" || s2["code"] != string(fault.DBTooLarge) || !strings.Contains(str(s2["result"]), "exceed 1048576 bytes") {
				t.Fatalf("the third: %v", s2)
			}
			// One row bigger than the whole cap: too_large, not sent.
			results = []sqlview.Result{{Columns: []sqlview.Column{{Name: "s", Type: "TEXT"}}, Rows: [][]any{{strings.Repeat("y", 2<<20)}}, RowsRead: 1}}
			r := c.call("query", "SELECT REPEAT('y', 2097152)").([]any)
			if len(r) != 1 || r[0].(map[string]any)["code"] != string(fault.DBTooLarge) {
				t.Fatalf("a row over the cap: %v", r)
			}
		})
	}
}

// decodeAnswer decodes a raw answer in c's encoding.
func decodeAnswer(t *testing.T, c *client, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if c.enc == encCBOR {
		if err := clientCBOR.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	v, err := decodeJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// TestAnswerCapWholeMessage: an answer that would still exceed the cap
// once encoded (the guard after the statements' budget) is replaced by a
// too_large error.
func TestAnswerCapWholeMessage(t *testing.T) {
	c, _ := signedIn(t, encJSON, func(a *Admin) {
		a.maxAnswer = 4096
		// An id as large as the cap: the budget cannot know it.
	})
	id := strings.Repeat("i", 5000)
	b, typ := c.encode(map[string]any{"id": id, "method": "version", "params": []any{}})
	c.send(typ, b)
	_, raw, err := c.ws.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 4096 || !strings.Contains(string(raw), string(fault.DBTooLarge)) {
		t.Fatalf("%d bytes: %.300s", len(raw), raw)
	}
}

// TestTruncatedByRows: a result cut by the row limit says so.
func TestTruncatedByRows(t *testing.T) {
	c, _ := signedIn(t, encJSON, func(a *Admin) {
		a.query = func(context.Context, string, map[string]any) ([]sqlview.Result, error) {
			return []sqlview.Result{{Columns: []sqlview.Column{{Name: "n", Type: "BIGINT"}}, Rows: [][]any{{int64(1)}}, Truncated: true, RowsRead: 9}}, nil
		}
	})
	r := c.call("query", "SELECT n").([]any)[0].(map[string]any)
	if r["truncated"] != true || r["truncated_by"] != "rows" {
		t.Fatalf("%v", r)
	}
}

// TestLetCaps: one value holds at most MaxVariableBytes, a session's
// values MaxSessionVariableBytes, each refusal saying so; replacing a
// value counts its new size only.
func TestLetCaps(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			c, _ := signedIn(t, enc, func(a *Admin) { a.maxVar, a.maxSessionVars = 500_000, 2_000_000 })
			part := strings.Repeat("v", 100_000)
			e := c.fails("", "let", "big", []any{part, part, part, part, part, part})
			if e.lcode != string(fault.DBTooLarge) || !strings.Contains(e.msg, "at most 500000 bytes") {
				t.Fatalf("a value over the cap: %+v", e)
			}
			four := []any{part, part, part, part} // 400 KB
			for _, name := range []string{"a", "b", "c", "d"} {
				c.call("let", name, four)
			}
			e = c.fails("", "let", "e", four)
			if e.lcode != string(fault.DBTooLarge) || !strings.Contains(e.msg, "at most 2000000 bytes") || !strings.Contains(e.help, "unset") {
				t.Fatalf("past the session's cap: %+v", e)
			}
			c.call("let", "a", []any{part}) // replacing a value counts its new size
			c.call("let", "f", []any{part})
			c.call("unset", "b")
			c.call("let", "g", four)
			c.call("reset")
			c.call("signin", signin("loci", "loci"))
			c.call("let", "h", four)
		})
	}
	if MaxVariableBytes != 1<<20 || MaxSessionVariableBytes != 4<<20 {
		t.Fatal("the defaults")
	}
}

// TestHostCheck: bound to loopback, a request naming another host (DNS
// rebinding) is refused 403 with the house's error, on /rpc and every
// route; localhost, 127.0.0.0/8 and [::1] pass with any port.
func TestHostCheck(t *testing.T) {
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{})
	for _, host := range []string{"evil.example", "evil.example:" + strings.Split(st.Address, ":")[1], "192.168.1.5", "localhost.evil.example", "[::2]:80"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+st.Address+"/health", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("host %s: %d", host, resp.StatusCode)
		}
		if b := errBody(t, resp); b["code"] != string(fault.DBOriginRefused) || !strings.Contains(b["error"], "host") {
			t.Fatalf("host %s: %v", host, b)
		}
		resp.Body.Close()
	}
	// The upgrade to /rpc is refused the same way.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+st.Address+"/rpc", nil)
	req.Host = "rebound.example:" + strings.Split(st.Address, ":")[1]
	req.Header = http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
		"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Protocol": {"json"}}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden || errBody(t, resp)["code"] != string(fault.DBOriginRefused) {
		t.Fatalf("/rpc with another host: %d", resp.StatusCode)
	}
	resp.Body.Close()
	// Beyond loopback any host is this machine's name for it.
	a2, _ := newAdmin(t, true)
	st2 := open(t, a2, api.DBOpen{Bind: ptr("0.0.0.0"), AllowRemote: ptr(true)})
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1:"+strings.Split(st2.Address, ":")[1]+"/health", nil)
	req.Host = "db.example.lan"
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a named host beyond loopback: %v %v", err, resp)
	}
	resp.Body.Close()
	for _, host := range []string{"localhost", "localhost:1234", "LOCALHOST.", "127.0.0.1", "127.1.2.3:9", "[::1]:8000", "[::1]"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+st.Address+"/health", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("host %s: %d", host, resp.StatusCode)
		}
	}
}

// TestOriginDefaultPorts: an origin's default port (https 443, http 80)
// is dropped on the setting and on the request's Origin.
func TestOriginDefaultPorts(t *testing.T) {
	for in, want := range map[string]string{
		"https://Console.Example:443":  "https://console.example",
		"HTTP://console.example:80/":   "http://console.example",
		"http://console.example:443":   "http://console.example:443",
		"https://console.example:80":   "https://console.example:80",
		"https://[::1]:443":            "https://[::1]",
		"https://console.example:8443": "https://console.example:8443",
	} {
		if got, err := parseOrigin(in); err != nil || got != want {
			t.Fatalf("%s: %q %v, want %q", in, got, err, want)
		}
	}
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{AllowedOrigins: &[]string{"https://console.example:443", "http://other.example"}})
	if strings.Join(st.AllowedOrigins, ",") != "https://console.example,http://other.example" {
		t.Fatalf("stored %v", st.AllowedOrigins)
	}
	for _, o := range []string{"https://console.example", "https://console.example:443", "http://other.example:80"} {
		if resp, b := get(t, st, http.MethodGet, "/health", http.Header{"Origin": {o}}); resp.StatusCode != http.StatusOK {
			t.Fatalf("origin %s: %d %s", o, resp.StatusCode, b)
		}
	}
}

// TestBindUnspecified: 0.0.0.0 listens on IPv4 only and the state names
// 0.0.0.0 (the CLI puts the daemon's host in its place); :: IPv6 only.
func TestBindUnspecified(t *testing.T) {
	a, _ := newAdmin(t, true)
	st := open(t, a, api.DBOpen{Bind: ptr("0.0.0.0"), AllowRemote: ptr(true)})
	_, port, _ := net.SplitHostPort(st.Address)
	if !strings.HasPrefix(st.Address, "0.0.0.0:") || st.URL != "ws://0.0.0.0:"+port+"/rpc" {
		t.Fatalf("state %s %s", st.Address, st.URL)
	}
	if c, err := net.Dial("tcp4", "127.0.0.1:"+port); err != nil {
		t.Fatalf("IPv4: %v", err)
	} else {
		c.Close()
	}
	if c, err := net.Dial("tcp6", "[::1]:"+port); err == nil {
		c.Close()
		t.Fatal("a 0.0.0.0 bind answers on IPv6 too")
	}
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if network("::") != "tcp6" || network("0.0.0.0") != "tcp4" || network("127.0.0.1") != "tcp" || network("::1") != "tcp" {
		t.Fatal("network")
	}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil { // IPv6 here
		ln.Close()
		st = open(t, a, api.DBOpen{Bind: ptr("::"), AllowRemote: ptr(true)})
		_, port, _ = net.SplitHostPort(st.Address)
		if !strings.HasPrefix(st.Address, "[::]:") {
			t.Fatalf("state %s", st.Address)
		}
		if c, err := net.Dial("tcp4", "127.0.0.1:"+port); err == nil {
			c.Close()
			t.Fatal("a :: bind answers on IPv4 too")
		}
	}
}

// TestSignInNamespace: signin's optional ns and db are checked as use
// checks them; the right ones sign in.
func TestSignInNamespace(t *testing.T) {
	a, _ := newAdmin(t, false)
	c := dial(t, open(t, a, api.DBOpen{}), encJSON, nil)
	for _, p := range []map[string]any{
		{"user": "loci", "pass": "loci", "ns": "x"},
		{"user": "loci", "pass": "loci", "db": "y"},
		{"user": "loci", "pass": "loci", "ns": "loci", "db": 5},
	} {
		e := c.fails("", "signin", p)
		if e.code != codeInvalidParams || e.lcode != string(fault.DBInvalidRequest) {
			t.Fatalf("%v: %+v", p, e)
		}
	}
	if e := c.fails("", "query", "SELECT 1"); e.lcode != string(fault.DBSignInRequired) {
		t.Fatalf("signed in with a wrong namespace: %+v", e)
	}
	c.call("signin", map[string]any{"user": "loci", "pass": "loci", "ns": "loci", "db": "palace"})
}

// TestCloseCancelsWithCanceled: Close stops a running query with
// context.Canceled (the engine answers loci::db::canceled), never a
// deadline.
func TestCloseCancelsWithCanceled(t *testing.T) {
	started := make(chan struct{})
	got := make(chan error, 1)
	c, a := signedIn(t, encJSON, func(a *Admin) {
		a.query = func(ctx context.Context, _ string, _ map[string]any) ([]sqlview.Result, error) {
			close(started)
			<-ctx.Done()
			got <- ctx.Err()
			return nil, ctx.Err()
		}
	})
	b, typ := c.encode(map[string]any{"id": 1, "method": "query", "params": []any{"SELECT SLEEP(60)"}})
	c.send(typ, b)
	<-started
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != context.Canceled {
		t.Fatalf("the query's context ended with %v, want context.Canceled", err)
	}
}

// TestHelpNamesRealThings: the help of refused writes names real
// commands, routes and tools, and a help naming a REST route reads whole
// once the CLI leaves the route out.
func TestHelpNamesRealThings(t *testing.T) {
	for _, m := range []string{"create", "insert", "update"} {
		h := unsupported[m][1]
		if strings.Contains(h, "loci add") || !strings.Contains(h, "`loci drawer add`") || !strings.Contains(h, "loci_diary_write") {
			t.Fatalf("%s: %s", m, h)
		}
	}
	a, _ := newAdmin(t, false)
	open(t, a, api.DBOpen{})
	_, err := a.Open(api.DBOpen{Port: ptr(1)})
	e := wantFault(t, err, fault.DBAlreadyRunning)
	if !strings.Contains(e.Help, "close it first with `loci db stop` (DELETE /api/db), then") {
		t.Fatalf("help %q", e.Help)
	}
}

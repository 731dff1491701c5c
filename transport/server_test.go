package transport

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/search"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/services/kinds"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// testServer is the REST/MCP server on real components: a Badger palace,
// the writer, jobs, the lexical index, the event bus and credentials.
type testServer struct {
	*Server
	http *httptest.Server
	log  *bytes.Buffer
}

func newTestServer(t testing.TB, auth bool, secret string) *testServer {
	t.Helper()
	dir := t.TempDir()
	logBuf := &bytes.Buffer{}
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logBuf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	db, err := badgerdb.Open(filepath.Join(dir, "palace"), log)
	if err != nil {
		t.Fatal(err)
	}
	lex, err := lexical.Open(filepath.Join(dir, "lex"))
	if err != nil {
		t.Fatal(err)
	}
	sys := actors.Start(db, log, slog.LevelInfo)
	indexer := actors.NewIndexer(db, lex, log)
	bus := actors.NewBus(db, log)
	if err := bus.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sys.OnCommit(func() { indexer.Kick(); bus.Kick() })
	indexer.Start()
	palace := &services.Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	jobs := actors.NewJobs(db, sys, log, actors.JobConfig{MaxConcurrency: 2, BackgroundConcurrency: 1,
		LeaseTTL: 30 * time.Second, DrainTimeout: 2 * time.Second})
	cfg0 := config.Default(func(string) (string, bool) { return "", false })
	srcs := sources.NewRegistry(sources.Directory{MaxFileBytes: cfg0.Mining.MaxFileBytes})
	jobs.Register(kinds.All(jobs, kinds.Settings{Dedup: palace.Dedup, Mining: kinds.Mining{Sources: srcs,
		ChunkChars: cfg0.Mining.ChunkChars, MaxDocuments: cfg0.Mining.MaxDocuments, Secrets: cfg0.Mining.Secrets}})...)
	palace.Locked = jobs.Busy
	if err := jobs.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, err := services.NewAuth(context.Background(), db, sys, secret)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(func(string) (string, bool) { return "", false })
	cfg.Auth.Enabled, cfg.Auth.Token = auth, secret
	cfg.Palace.Path = filepath.Join(dir, "palace")
	s := &Server{Palace: palace, Jobs: jobs, Search: &search.Search{DB: db, Indexer: indexer, Log: log}, Sources: &services.Sources{DB: db, Registry: srcs}, Config: cfg,
		Version: "test", Started: time.Now(), Address: "127.0.0.1:0", Log: log, Migrator: db.Migrator(store.Steps()),
		Shutdown: func() {}, Auth: a, Events: bus}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		bus.Close()
		hs.Close()
		jobs.Stop(context.Background())
		sys.Stop(context.Background())
		indexer.Stop(context.Background())
		lex.Close()
		db.Close()
	})
	return &testServer{Server: s, http: hs, log: logBuf}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// request sends method path with an Authorization header (none when
// authz is ""), and returns the status, the WWW-Authenticate header and
// the body. A streaming answer is cut after its status line.
func (ts *testServer) request(t *testing.T, method, path, authz string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, ts.http.URL+path, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var body []byte
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ = io.ReadAll(resp.Body)
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
}

// TestAuthGuardsEveryRoute walks the router itself: every registered route
// with no token, a wrong one, a malformed header and a revoked token is
// 401 (bar GET /api/health), and the valid credentials pass.
func TestAuthGuardsEveryRoute(t *testing.T) {
	const secret = "configured-secret-0123456789"
	ts := newTestServer(t, true, secret)
	// Every route is refused nine ways from one address: here each is
	// answered 401 (the throttle's answers are TestAuthThrottle's).
	ts.AuthThrottle = ThrottleLimits{Free: 1 << 30}
	gen, err := ts.Auth.Generate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	revoked := gen.Token
	if _, err := ts.Auth.Generate(context.Background()); err != nil { // rotation: the first one stops working
		t.Fatal(err)
	}
	current, err := ts.Auth.Generate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type route struct{ method, path string }
	var routes []route
	err = chi.Walk(ts.Handler().(chi.Routes), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		p := strings.NewReplacer("{wing}", "w", "{room}", "r", "{id}", "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a", "{link}", "l", "*", "x").Replace(pattern)
		routes = append(routes, route{method, p})
		return nil
	})
	if err != nil || len(routes) < 30 {
		t.Fatalf("walk: %d routes, %v", len(routes), err)
	}
	routes = append(routes, route{"GET", "/no/such/path"}, route{"DELETE", "/api/nothing"})
	refused := map[string]string{
		"no token":         "",
		"wrong token":      "Bearer not-the-token-at-all-000",
		"malformed":        "Basic " + secret,
		"bearer, no token": "Bearer ",
		"lower-case, none": "bearer ",
		"scheme only":      "Bearer",
		"token, no scheme": secret,
		"revoked":          "Bearer " + revoked,
		"revoked, upper":   "BEARER " + revoked,
	}
	for _, rt := range routes {
		if rt.method == "POST" && (rt.path == "/api/shutdown" || rt.path == "/api/auth/token") || rt.method == "DELETE" && rt.path == "/api/auth/token" {
			continue // walked below, once the others are done
		}
		for name, h := range refused {
			status, www, body := ts.request(t, rt.method, rt.path, h)
			if rt.method == "GET" && rt.path == "/api/health" || (rt.method == "GET" || rt.method == "HEAD") && rt.path == "/" {
				if status != 200 {
					t.Errorf("%s %s (%s): %d, want 200 (always open)", rt.method, rt.path, name, status)
				}
				continue
			}
			if status != 401 || www != "Bearer" || (rt.method != "HEAD" && !strings.Contains(body, "loci::auth::unauthorized")) {
				t.Errorf("%s %s (%s): %d %q %s", rt.method, rt.path, name, status, www, body)
			}
		}
		// The scheme is matched in any case (RFC 7235).
		for _, h := range []string{"Bearer " + secret, "Bearer " + current.Token, "bearer " + secret, "BEARER " + current.Token} {
			if status, _, body := ts.request(t, rt.method, rt.path, h); status == 401 {
				t.Errorf("%s %s with a valid token (%s...): 401 %s", rt.method, rt.path, h[:8], body)
			}
		}
	}
	// Token routes: generating needs the current credential; the answer
	// is not cached; revoking leaves the configured secret working.
	if status, _, _ := ts.request(t, "POST", "/api/auth/token", "Bearer "+revoked); status != 401 {
		t.Fatalf("generate with a revoked token: %d", status)
	}
	if status, _, body := ts.request(t, "DELETE", "/api/auth/token", "Bearer "+current.Token); status != 200 || !strings.Contains(body, `"revoked": true`) {
		t.Fatalf("revoke: %d %s", status, body)
	}
	if status, _, _ := ts.request(t, "GET", "/api/status", "Bearer "+current.Token); status != 401 {
		t.Fatalf("a revoked token still works: %d", status)
	}
	if status, _, _ := ts.request(t, "GET", "/api/status", "Bearer "+secret); status != 200 {
		t.Fatalf("revoking touched the configured secret: %d", status)
	}
	if status, _, _ := ts.request(t, "POST", "/api/shutdown", "Bearer "+secret); status != 202 {
		t.Fatalf("shutdown with the secret: %d", status)
	}
	// Nothing of the secret or the tokens reached the log or the status.
	_, _, status := ts.request(t, "GET", "/api/status", "Bearer "+secret)
	_, _, cfg := ts.request(t, "GET", "/api/config", "Bearer "+secret)
	for _, s := range []string{secret, revoked, current.Token, strings.TrimPrefix(current.Token, "loci_")} {
		if strings.Contains(ts.log.String(), s) || strings.Contains(status, s) || strings.Contains(cfg, s) {
			t.Fatalf("a credential leaked into the log, status or config")
		}
	}
}

// TestAuthOffLeavesEverythingOpen: authentication is off by default.
func TestAuthOffLeavesEverythingOpen(t *testing.T) {
	ts := newTestServer(t, false, "")
	if status, _, _ := ts.request(t, "GET", "/api/status", ""); status != 200 {
		t.Fatalf("status without auth: %d", status)
	}
	if status, _, body := ts.request(t, "POST", "/api/auth/token", ""); status != 200 || !strings.Contains(body, `"token": "loci_`) {
		t.Fatalf("token generation with auth off: %d %s", status, body)
	}
}

// blockingWriter is a response writer whose writes wait until released: a
// subscriber that reads nothing.
type blockingWriter struct {
	h       http.Header
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Header() http.Header { return w.h }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}
func (w *blockingWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestSlowSubscriberGetsResync: a subscriber that stops reading misses
// frames and is sent resync once it reads again; the writer goes on at
// full speed meanwhile, and a reading subscriber sees every frame.
func TestSlowSubscriberGetsResync(t *testing.T) {
	ts := newTestServer(t, false, "")
	slow := &blockingWriter{h: http.Header{}, release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/api/events", nil)
	done := make(chan struct{})
	go func() { ts.events(slow, req); close(done) }()
	// A reading subscriber over HTTP.
	resp, err := http.Get(ts.http.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := make(chan string, 10000)
	go func() {
		b := make([]byte, 64<<10)
		var acc strings.Builder
		for {
			n, err := resp.Body.Read(b)
			acc.Write(b[:n])
			for {
				s := acc.String()
				i := strings.Index(s, "\n\n")
				if i < 0 {
					break
				}
				frames <- s[:i]
				acc.Reset()
				acc.WriteString(s[i+2:])
			}
			if err != nil {
				close(frames)
				return
			}
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ts.Events.Subscribers() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 streams subscribed", ts.Events.Subscribers())
		}
	}
	const writes = actors.SubscriptionBuffer + 20
	t0 := time.Now()
	for i := range writes {
		in := store.NewDrawer{Wing: "w", Room: "r", Content: fmt.Sprintf("note %d about the slow subscriber", i),
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}
		if _, err := ts.Palace.CreateDrawer(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(t0)
	// Every write is announced to the reading subscriber (after the open
	// frame, the wing and room creation).
	seen := 0
	for deadline := time.After(20 * time.Second); seen < writes; {
		select {
		case f := <-frames:
			if strings.HasPrefix(f, "event: resync") {
				t.Fatalf("the reading subscriber was sent resync")
			}
			if strings.HasPrefix(f, "event: drawer") {
				seen++
			}
		case <-deadline:
			t.Fatalf("the reading subscriber saw %d of %d drawer frames", seen, writes)
		}
	}
	close(slow.release)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(slow.String(), "event: resync"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow subscriber got no resync: %.300s", slow.String())
		}
	}
	if strings.Count(slow.String(), "event: drawer") >= writes {
		t.Fatalf("the slow subscriber missed nothing")
	}
	cancel()
	<-done
	t.Logf("%d writes in %s with a stalled subscriber", writes, took)
}

// TestMCPSessionModeForgotten: a session's mode is dropped when the
// session ends.
func TestMCPSessionModeForgotten(t *testing.T) {
	ts := newTestServer(t, false, "")
	cl := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sess, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.http.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "loci_set_mode", Arguments: map[string]any{"mode": "read_only"}})
	if err != nil || res.IsError {
		t.Fatalf("set mode: %v %v", res, err)
	}
	id := sess.ID()
	if _, ok := ts.mcpModes.Load(id); !ok {
		t.Fatal("the mode was not remembered")
	}
	sess.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := ts.mcpModes.Load(id); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the mode outlived its session")
		}
	}
}

// On a loopback daemon a request naming another Host is refused on every
// route (DNS rebinding); bound beyond loopback, any name is served.
func TestHostGuard(t *testing.T) {
	ts := newTestServer(t, false, "")
	do := func(h http.Handler, host, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req.Host = host
		h.ServeHTTP(rec, req)
		return rec
	}
	h := ts.Handler()
	for _, host := range []string{"localhost:8420", "127.0.0.1:8420", "[::1]:8420", "localhost"} {
		t.Run(host, func(t *testing.T) {
			if rec := do(h, host, "/api/wings"); rec.Code != 200 {
				t.Errorf("Host %s: %d %s", host, rec.Code, rec.Body)
			}
		})
	}
	for _, host := range []string{"evil.example:8420", "evil.example", "127.0.0.2:8420", "localhost.evil.example"} {
		t.Run(host, func(t *testing.T) {
			for _, path := range []string{"/api/wings", "/api/health", "/api/nope"} {
				rec := do(h, host, path)
				if rec.Code != 400 || !strings.Contains(rec.Body.String(), "loci::input::invalid") || !strings.Contains(rec.Body.String(), "DNS rebinding") {
					t.Errorf("Host %s %s: %d %s", host, path, rec.Code, rec.Body)
				}
			}
		})
	}
	ts.Config.Server.Bind = "0.0.0.0"
	if rec := do(ts.Handler(), "evil.example:8420", "/api/wings"); rec.Code != 200 {
		t.Errorf("bound beyond loopback: %d %s", rec.Code, rec.Body)
	}
}

// A request a browser sends for a page of another site (its Origin) is
// refused, a write included; pages loci serves and tools (no Origin) pass.
func TestOriginGuard(t *testing.T) {
	ts := newTestServer(t, false, "")
	h := ts.Handler()
	ct := "text/plain" // what a page can send without a preflight
	do := func(origin string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/api/wings/w/rooms/r/drawers", strings.NewReader(`{"content":"Written from a web page."}`))
		req.Host = "127.0.0.1:8420"
		req.Header.Set("Content-Type", ct)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, o := range []string{"https://evil.example", "http://localhost:3000", "null", "http://127.0.0.1:8421"} {
		t.Run(o, func(t *testing.T) {
			if rec := do(o); rec.Code != 400 || !strings.Contains(rec.Body.String(), "cross-site") {
				t.Errorf("Origin %s: %d %s", o, rec.Code, rec.Body)
			}
		})
	}
	if c, _ := ts.Palace.Counts(context.Background()); c.Drawers != 0 {
		t.Fatalf("a refused cross-site write stored %d drawers", c.Drawers)
	}
	// A body that is not declared JSON is refused even without an Origin
	// (point 16 of issue 11): form and plain text are what a browser sends
	// without a preflight.
	for _, ct = range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/json"} {
		if rec := do(""); rec.Code != 400 || !strings.Contains(rec.Body.String(), "application/json") {
			t.Errorf("Content-Type %s: %d %s", ct, rec.Code, rec.Body)
		}
	}
	if c, _ := ts.Palace.Counts(context.Background()); c.Drawers != 0 {
		t.Fatalf("a body not declared JSON stored %d drawers", c.Drawers)
	}
	ct = "application/json; charset=utf-8"
	if rec := do("http://127.0.0.1:8420"); rec.Code != 201 {
		t.Errorf("same origin: %d %s", rec.Code, rec.Body)
	}
	if rec := do(""); rec.Code != 200 && rec.Code != 201 {
		t.Errorf("no Origin (a tool): %d %s", rec.Code, rec.Body)
	}
}

// GET /api/stats/filed counts the drawers filed per span over every room:
// by default the last 14 UTC days, the newest last; bad bounds are refused
// naming the parameter.
func TestFiledCountsDrawersBySpan(t *testing.T) {
	ts := newTestServer(t, false, "")
	ts.call(t, "POST", "/api/wings", `{"name":"w"}`)
	for _, room := range []string{"a", "b"} {
		if st, out := ts.call(t, "POST", "/api/wings/w/rooms", fmt.Sprintf(`{"name":%q}`, room)); st != 201 {
			t.Fatalf("room %s: %d %v", room, st, out)
		}
	}
	for i, room := range []string{"a", "b", "b"} {
		if st, out := ts.call(t, "POST", "/api/wings/w/rooms/"+room+"/drawers", fmt.Sprintf(`{"content":"drawer number %d of the count"}`, i)); st != 201 {
			t.Fatalf("drawer %d: %d %v", i, st, out)
		}
	}
	st, out := ts.call(t, "GET", "/api/stats/filed", "")
	var f api.Filed
	roundTrip(t, out, &f)
	if st != 200 || len(f.Counts) != 14 || f.Counts[13] != 3 || f.Total != 3 || f.StepSecs != 86400 || !f.Since.Equal(time.Now().UTC().Truncate(24*time.Hour).Add(-13*24*time.Hour)) {
		t.Fatalf("default: %d %+v", st, f)
	}
	since := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if st, out := ts.call(t, "GET", "/api/stats/filed?buckets=3&step_secs=60&since="+since, ""); st != 200 || fmt.Sprint(out["counts"]) != "[0 0 0]" {
		t.Errorf("a window in the future: %d %v", st, out)
	}
	for query, param := range map[string]string{"buckets=367": "buckets", "step_secs=59": "step_secs", "step_secs=x": "step_secs", "since=yesterday": "since"} {
		t.Run(query, func(t *testing.T) {
			st, out := ts.call(t, "GET", "/api/stats/filed?"+query, "")
			if st != 400 || out["code"] != "loci::input::invalid" || !strings.HasPrefix(fmt.Sprint(out["error"]), param+":") {
				t.Errorf("%d %v", st, out)
			}
		})
	}
	sameAnswer(t, "filed", apiFiled(time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC), 24*time.Hour, []int{0, 2, 5}))
}

// An unknown path is 404 and a route asked with a method it does not
// take is 405 with Allow, both with the error body; GET / names the
// interfaces when the dashboard is off (issue 36, point 13).
func TestUnknownRoutesAndMethods(t *testing.T) {
	ts := newTestServer(t, false, "")
	status, _, body := ts.request(t, "GET", "/no/such/path", "")
	if status != 404 || !strings.Contains(body, "loci::server::route_not_found") || !strings.Contains(body, "/mcp") {
		t.Fatalf("unknown path: %d %s", status, body)
	}
	req, _ := http.NewRequest("PATCH", ts.http.URL+"/api/wings", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, POST" || !strings.Contains(string(raw), "loci::server::method_not_allowed") {
		t.Fatalf("PATCH /api/wings: %d Allow=%q %s", resp.StatusCode, resp.Header.Get("Allow"), raw)
	}
	status, _, body = ts.request(t, "GET", "/", "")
	if status != 200 || !strings.Contains(body, "/mcp") || !strings.Contains(body, "--web") {
		t.Fatalf("GET / with the dashboard off: %d %s", status, body)
	}
	ts.Config.Web.Enable = true
	h := ts.Handler()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "127.0.0.1"
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("GET / with the dashboard on: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

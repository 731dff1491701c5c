package transport

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// withBearer adds a bearer token to every request of an HTTP client.
type withBearer struct{ token string }

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpConnect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: withBearer{token}}
	}
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		// A session a test keeps open would leave the client's
		// reading goroutines running after it.
		t.Cleanup(func() { _ = sess.Close() })
	}
	return sess, err
}

// Sessions beyond the cap are refused with {error, code, help}; an idle
// session expires, its mode with it, and frees its place.
func TestMCPSessionLimits(t *testing.T) {
	ts := newTestServer(t, false, "")
	ts.MCPMax, ts.MCPIdle = 2, 400*time.Millisecond
	hs := httptest.NewServer(ts.Handler())
	defer hs.Close()
	a, err := mcpConnect(t, hs.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if res, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "loci_set_mode", Arguments: map[string]any{"mode": "read_only"}}); err != nil || res.IsError {
		t.Fatalf("set mode: %v %v", res, err)
	}
	if _, err := mcpConnect(t, hs.URL, ""); err != nil {
		t.Fatal(err)
	}
	// The third: refused, in loci's form.
	resp, err := http.Post(hs.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error, Code, Help string }
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || json.Unmarshal(b, &e) != nil || e.Code != "loci::server::busy" || e.Help == "" {
		t.Fatalf("session over the cap: %d %s", resp.StatusCode, b)
	}
	// Idle sessions expire, and their modes go with them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		for range ts.mcpServer.Sessions() {
			n++
		}
		_, moded := ts.mcpModes.Load(a.ID())
		if n == 0 && !moded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions and the mode (%v) outlived the idle timeout", n, moded)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "loci_status"}); err == nil {
		t.Error("an expired session still answers")
	}
	if _, err := mcpConnect(t, hs.URL, ""); err != nil {
		t.Fatalf("a new session after expiry: %v", err)
	}
}

// What the SDK answers in plain text reaches the client as {error, code,
// help} with the SDK's status.
func TestMCPPlainErrorsWrapped(t *testing.T) {
	ts := newTestServer(t, false, "")
	cases := []struct {
		name, method, ctype, accept, session, body string
		status                                     int
	}{
		{"wrong content type", "POST", "text/plain", "application/json, text/event-stream", "", `{}`, 415},
		{"unknown session", "POST", "application/json", "application/json, text/event-stream", "no-such-session", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 404},
		{"bad JSON", "POST", "application/json", "application/json, text/event-stream", "", `{"jsonrpc":`, 400},
		{"GET without a session", "GET", "", "text/event-stream", "", "", 400},
		{"DELETE without a session", "DELETE", "", "", "", "", 400},
		{"PUT", "PUT", "application/json", "", "", `{}`, 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, _ := http.NewRequest(c.method, ts.http.URL+"/mcp", body)
			for k, v := range map[string]string{"Content-Type": c.ctype, "Accept": c.accept, "Mcp-Session-Id": c.session} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct{ Error, Code, Help string }
			if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
				json.Unmarshal(b, &e) != nil || e.Error == "" || e.Code == "" || e.Help == "" {
				t.Errorf("%d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
		})
	}
}

// A revoked or rotated token ends the event streams and MCP sessions it
// opened; those of the configured secret go on.
func TestRevokedTokenEndsStreams(t *testing.T) {
	const secret = "configured-secret-0123456789"
	ts := newTestServer(t, true, secret)
	gen, err := ts.Auth.Generate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	open := func(token string) <-chan string {
		req, _ := http.NewRequest("GET", ts.http.URL+"/api/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("events: %v %v", resp, err)
		}
		done := make(chan string, 1)
		go func() { b, _ := io.ReadAll(resp.Body); resp.Body.Close(); done <- string(b) }()
		return done
	}
	byToken, bySecret := open(gen.Token), open(secret)
	sessToken, err := mcpConnect(t, ts.http.URL, gen.Token)
	if err != nil {
		t.Fatal(err)
	}
	sessSecret, err := mcpConnect(t, ts.http.URL, secret)
	if err != nil {
		t.Fatal(err)
	}
	defer sessSecret.Close()
	// Rotation through the route, authenticated by the secret.
	req, _ := http.NewRequest("POST", ts.http.URL+"/api/auth/token", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("rotate: %v %v", resp, err)
	}
	resp.Body.Close()
	select {
	case <-byToken:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream of the rotated token is still open")
	}
	// Absence can only be shown by waiting: the rotation ended the token's
	// stream (seen above) and would have ended the secret's in the same
	// pass; 200ms after it is ample.
	select {
	case s := <-bySecret:
		t.Fatalf("the secret's stream ended: %q", s)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := sessToken.CallTool(context.Background(), &mcp.CallToolParams{Name: "loci_status"}); err == nil {
		t.Error("the MCP session of the rotated token still answers")
	}
	if res, err := sessSecret.CallTool(context.Background(), &mcp.CallToolParams{Name: "loci_status"}); err != nil || res.IsError {
		t.Errorf("the secret's MCP session: %v %v", res, err)
	}
}

// Arguments that are not UTF-8 are refused naming the argument, before the
// JSON decoder would replace them.
func TestMCPArgumentsNotUTF8(t *testing.T) {
	ts := newTestServer(t, false, "")
	sess, err := mcpConnect(t, ts.http.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "loci_diary_write",
		Arguments: json.RawMessage("{\"agent_identity\":\"a\",\"wing\":\"w\",\"content\":\"raw \xff\xfe bytes\"}")})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "content: is not valid UTF-8") {
		t.Fatalf("got %v %s", res.IsError, text)
	}
	if c, _ := ts.Palace.Counts(context.Background()); c.Drawers != 0 {
		t.Fatal("a refused drawer was stored")
	}
}

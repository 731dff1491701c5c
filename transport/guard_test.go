package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/transport/client"
)

// call sends a JSON request to the test server's real socket and decodes
// the answer into a map.
func (ts *testServer) call(t *testing.T, method, path, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.http.URL+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// Names are percent-decoded exactly once, through the real router: each
// name reaches itself and nothing else, and a delete removes only it.
func TestNamesDecodedOnce(t *testing.T) {
	ts := newTestServer(t, false, "")
	places := []string{"a%41", "aA", "100%", "50%zz", "%", "my wing", "%2F", "a+b", "ünï cödé"}
	for _, w := range places {
		if st, out := ts.call(t, "POST", "/api/wings", fmt.Sprintf(`{"name":%q}`, w)); st != 201 {
			t.Fatalf("create wing %q: %d %v", w, st, out)
		}
	}
	for _, w := range places {
		st, out := ts.call(t, "GET", "/api/wings/"+client.Esc(w), "")
		if st != 200 || out["name"] != w {
			t.Errorf("GET wing %q: %d %v", w, st, out["name"])
		}
		if st, out := ts.call(t, "POST", "/api/wings/"+client.Esc(w)+"/rooms", fmt.Sprintf(`{"name":%q}`, w)); st != 201 {
			t.Errorf("create room %q in wing %q: %d %v", w, w, st, out)
		}
		st, out = ts.call(t, "GET", "/api/wings/"+client.Esc(w)+"/rooms/"+client.Esc(w), "")
		if st != 200 || out["name"] != w {
			t.Errorf("GET room %q: %d %v", w, st, out)
		}
	}
	drawers := []string{"a%2Fb", "a/b", "a%252Fb", "100%", "50%zz", "%", "dir/sub file.txt", "x/%41/y"}
	for _, d := range drawers {
		body := fmt.Sprintf(`{"name":%q,"content":"the drawer called %s"}`, d, d)
		if st, out := ts.call(t, "POST", "/api/wings/aA/rooms/aA/drawers", body); st != 201 {
			t.Fatalf("create drawer %q: %d %v", d, st, out)
		}
	}
	for _, d := range drawers {
		st, out := ts.call(t, "GET", "/api/wings/aA/rooms/aA/drawers/"+client.EscPath(d), "")
		if st != 200 || out["name"] != d {
			t.Errorf("GET drawer %q: %d %v", d, st, out["name"])
		}
		// A name with '/' may also be sent with the slash encoded.
		st, out = ts.call(t, "GET", "/api/wings/aA/rooms/aA/drawers/"+client.Esc(d), "")
		if st != 200 || out["name"] != d {
			t.Errorf("GET drawer %q (one segment): %d %v", d, st, out["name"])
		}
	}
	// The deletes of the issue: each removes its own target only.
	if st, out := ts.call(t, "DELETE", "/api/wings/aA/rooms/aA/drawers/"+client.Esc("a%2Fb"), ""); st != 200 {
		t.Fatalf("delete drawer a%%2Fb: %d %v", st, out)
	}
	for _, d := range drawers {
		st, _ := ts.call(t, "GET", "/api/wings/aA/rooms/aA/drawers/"+client.EscPath(d), "")
		if want := map[bool]int{true: 404, false: 200}[d == "a%2Fb"]; st != want {
			t.Errorf("after deleting a%%2Fb, drawer %q: %d, want %d", d, st, want)
		}
	}
	if st, out := ts.call(t, "DELETE", "/api/wings/"+client.Esc("a%41"), ""); st != 200 {
		t.Fatalf("delete wing a%%41: %d %v", st, out)
	}
	if st, _ := ts.call(t, "GET", "/api/wings/aA", ""); st != 200 {
		t.Errorf("deleting wing a%%41 removed wing aA (%d)", st)
	}
	if st, _ := ts.call(t, "GET", "/api/wings/"+client.Esc("a%41"), ""); st != 404 {
		t.Errorf("wing a%%41 still there (%d)", st)
	}
}

// Dot segments and encoded slashes outside a drawer name are refused
// before authentication; encoded spellings of the open routes are not
// open.
func TestPathGuard(t *testing.T) {
	ts := newTestServer(t, true, "configured-secret-0123456789")
	raw := func(path string) (int, string) {
		conn, err := net.Dial("tcp", ts.http.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/ui/%2e%2e/api/status", "/ui/../api/status", "/api/./status", "/api/wings/%2E%2e", "/api/wings/a%2Fb", "/api/jobs/x%2fy", "/%61pi/health/.."} {
		t.Run(p, func(t *testing.T) {
			if st, body := raw(p); st != 400 || !strings.Contains(body, "loci::palace::path_invalid") {
				t.Errorf("%d %s", st, body)
			}
		})
	}
	for _, p := range []string{"/api/h%65alth", "/%61pi/health", "/api/health%2F"} {
		t.Run(p, func(t *testing.T) {
			if st, body := raw(p); st != 401 && st != 400 {
				t.Errorf("%d %s (must not pass as the open health route)", st, body)
			} else if st == 200 {
				t.Errorf("%s answered as open", p)
			}
		})
	}
	if st, _ := raw("/api/health"); st != 200 {
		t.Errorf("/api/health: %d", st)
	}
}

// Two X-Loci-Mode headers are refused; a refused name is quoted by a
// bounded prefix; bodies not UTF-8 are refused naming the field and
// change nothing.
func TestHeaderAndBodyEdges(t *testing.T) {
	ts := newTestServer(t, false, "")
	st, out := ts.call(t, "POST", "/api/wings", `{"name":"w"}`, ModeHeader, "full", ModeHeader, "read_only")
	if st != 400 || !strings.Contains(fmt.Sprint(out["error"]), "2 times") {
		t.Errorf("two mode headers: %d %v", st, out)
	}
	st, out = ts.call(t, "GET", "/api/wings", "", ModeHeader, "read_only", ModeHeader, "read_only")
	if st != 400 {
		t.Errorf("two equal mode headers: %d %v", st, out)
	}
	long := strings.Repeat("n", 100_000)
	st, out = ts.call(t, "POST", "/api/wings", fmt.Sprintf(`{"name":%q}`, long+"/"))
	if msg := fmt.Sprint(out["error"]); st != 400 || len(msg) > 1100 {
		t.Errorf("100 KB name: %d, message of %d bytes", st, len(msg))
	}
	st, out = ts.call(t, "GET", "/api/wings/"+long, "")
	if msg := fmt.Sprint(out["error"]); (st != 404 && st != 400) || len(msg) > 1100 {
		t.Errorf("100 KB path: %d, message of %d bytes", st, len(msg))
	}
	for _, body := range []string{
		"{\"content\":\"raw bytes \xff\xfe end\"}",
		`{"content":"lone \udc00"}`,
	} {
		st, out = ts.call(t, "POST", "/api/wings/w/rooms/r/drawers", body)
		if st != 400 || !strings.HasPrefix(fmt.Sprint(out["error"]), "content:") {
			t.Errorf("%q: %d %v", body, st, out)
		}
	}
	st, out = ts.call(t, "POST", "/api/wings", "{\"name\":\"w\",\"description\":\"d\xc3\"}")
	if st != 400 || !strings.HasPrefix(fmt.Sprint(out["error"]), "description:") {
		t.Errorf("description: %d %v", st, out)
	}
	if c, _ := ts.Palace.Counts(context.Background()); c.Wings != 0 || c.Drawers != 0 {
		t.Fatalf("refused writes changed the palace: %+v", c)
	}
	// Valid UTF-8, a literal U+FFFD included, is stored verbatim.
	const text = "caf\u00e9 \U0001F600 \uFFFD kept"
	st, out = ts.call(t, "POST", "/api/wings/w/rooms/r/drawers", fmt.Sprintf(`{"content":%q}`, text))
	if st != 201 {
		t.Fatalf("valid content: %d %v", st, out)
	}
	d := out["drawer"].(map[string]any)
	if st, got := ts.call(t, "GET", "/api/wings/w/rooms/r/drawers/"+d["id"].(string), ""); st != 200 || got["content"] != text {
		t.Errorf("stored %q, want %q", got["content"], text)
	}
}

// A declared body over the limit is refused at once; a slow or stalled
// body loses its connection after the body timeout, with or without
// authentication, and idle keep-alive connections are closed.
func TestSlowClients(t *testing.T) {
	for _, auth := range []bool{true, false} {
		t.Run(fmt.Sprint("auth=", auth), func(t *testing.T) {
			ts := newTestServer(t, auth, "configured-secret-0123456789")
			ts.Limits = Limits{Body: 300 * time.Millisecond, Idle: 300 * time.Millisecond}
			hs := httptest.NewUnstartedServer(nil)
			hs.Config = ts.HTTPServer()
			hs.Start()
			defer hs.Close()
			addr := hs.Listener.Addr().String()
			dial := func() net.Conn {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			// 1. Declared oversize: 413 before any of it is sent.
			c := dial()
			start := time.Now()
			fmt.Fprintf(c, "POST /api/wings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer configured-secret-0123456789\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 10<<20)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 413 || !resp.Close {
				t.Fatalf("oversize declared: %v %v", resp, err)
			}
			if time.Since(start) > 2*time.Second {
				t.Errorf("413 took %v", time.Since(start))
			}
			c.Close()
			// 2. Declares 1,000 bytes, sends one: answered and closed
			// within the body timeout (401 first when auth is on).
			c = dial()
			start = time.Now()
			fmt.Fprintf(c, "POST /api/wings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("stalled body: no answer: %v", err)
			}
			want := map[bool]int{true: 401, false: 400}[auth]
			if resp.StatusCode != want {
				t.Errorf("stalled body: %d, want %d", resp.StatusCode, want)
			}
			io.Copy(io.Discard, resp.Body)
			if _, err := br.ReadByte(); err == nil {
				t.Errorf("stalled body: connection left open")
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("stalled body held the connection %v", d)
			}
			c.Close()
			// 3. An idle keep-alive connection is closed.
			c = dial()
			fmt.Fprintf(c, "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
			br = bufio.NewReader(c)
			if resp, err = http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
				t.Fatalf("health: %v %v", resp, err)
			}
			io.Copy(io.Discard, resp.Body)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			start = time.Now()
			if _, err := br.ReadByte(); err == nil || time.Since(start) > 3*time.Second {
				t.Errorf("idle connection: %v after %v", err, time.Since(start))
			}
			c.Close()
		})
	}
}

package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	b, _ := io.ReadAll(w.Result().Body)
	return w.Result(), string(b)
}

// The page is never cached and names its assets by version; the assets
// are cached for good under the current version, with their types; every
// answer carries the strict policy; nothing outside the files is served.
func TestHandlerServesThePageAndItsAssets(t *testing.T) {
	h := Handler()
	resp, page := get(t, h, "GET", "/ui/")
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	if strings.Contains(page, "{{V}}") || !strings.Contains(page, "/ui/v/"+Version+"/js/app.js") {
		t.Fatalf("the page does not name its versioned assets: %s", page)
	}
	// No inline script or style anywhere: the policy would refuse them.
	if regexp.MustCompile(`<script(?:[^>]*)>\s*[^<\s]`).MatchString(page) || strings.Contains(page, "<style") || strings.Contains(page, " style=") || strings.Contains(page, "onclick=") {
		t.Fatal("the page has inline script or style")
	}
	for _, c := range []struct{ path, ctype string }{
		{"/ui/v/" + Version + "/js/app.js", "text/javascript"},
		{"/ui/v/" + Version + "/js/views.js", "text/javascript"},
		{"/ui/v/" + Version + "/style.css", "text/css"},
	} {
		resp, body := get(t, h, "GET", c.path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") || body == "" {
			t.Errorf("%s: %d %v", c.path, resp.StatusCode, resp.Header)
		}
		if resp.Header.Get("Content-Security-Policy") != Policy("example.com") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: security headers %v", c.path, resp.Header)
		}
	}
	if resp, _ := get(t, h, "GET", "/ui/v/0000/style.css"); resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("another version's asset: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, body := get(t, h, "HEAD", "/ui/"); resp.StatusCode != 200 || body != "" {
		t.Errorf("HEAD: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, h, "GET", "/ui"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: %d %v", resp.StatusCode, resp.Header)
	}
	for _, p := range []string{"/ui/v/" + Version + "/../ui.go", "/ui/v/" + Version + "/nothing.js", "/ui/secret", "/ui/v/" + Version + "/index.html", "/ui/v/" + Version} {
		if resp, _ := get(t, h, "GET", p); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
	if !strings.Contains(CSP, "script-src 'self'") || strings.Contains(CSP, "unsafe") || strings.Contains(CSP, "http") {
		t.Fatalf("policy: %s", CSP)
	}
}

// The whole payload stays small (the budget: 300 KB).
func TestPayloadIsSmall(t *testing.T) {
	total := 0
	var walk func(dir string)
	walk = func(dir string) {
		es, _ := files.ReadDir(dir)
		for _, e := range es {
			if e.IsDir() {
				walk(dir + "/" + e.Name())
				continue
			}
			b, _ := files.ReadFile(dir + "/" + e.Name())
			total += len(b)
		}
	}
	walk("static")
	if total == 0 || total > 300<<10 {
		t.Fatalf("dashboard payload %d bytes", total)
	}
}

// The policy lets the SQL view open a WebSocket to the admin listener on
// another port of this machine, and of the host the page was reached at;
// never to any host (no bare ws: source), never a host that would break
// out of the directive.
func TestPolicyAdmitsTheListenersWebSocket(t *testing.T) {
	if !strings.Contains(CSP, "connect-src 'self' ws://localhost:* ws://127.0.0.1:*;") || strings.Contains(CSP, " ws: ") || strings.Contains(CSP, "wss:") {
		t.Fatalf("policy: %s", CSP)
	}
	for _, host := range []string{"", "localhost", "127.0.0.1:8420", "LOCALHOST:1", "[::1]:8420", "a b", "x;script-src *", "-x"} {
		if got := Policy(host); got != CSP {
			t.Errorf("Policy(%q) = %s", host, got)
		}
	}
	for host, want := range map[string]string{"box.lan:8420": "ws://box.lan:*", "192.168.1.5:8420": "ws://192.168.1.5:*", "Box.Lan": "ws://box.lan:*"} {
		got := Policy(host)
		if !strings.Contains(got, "connect-src 'self' ws://localhost:* ws://127.0.0.1:* "+want+"; ") || strings.Count(got, "ws://") != 3 {
			t.Errorf("Policy(%q) = %s", host, got)
		}
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/ui/", nil)
	r.Host = "box.lan:8420"
	Handler().ServeHTTP(w, r)
	if got := w.Result().Header.Get("Content-Security-Policy"); got != Policy("box.lan:8420") || !strings.Contains(got, "ws://box.lan:*") {
		t.Fatalf("the page's policy: %s", got)
	}
}

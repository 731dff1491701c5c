package dbadmin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
)

func TestOriginRefused(t *testing.T) {
	a, d := newAdmin(t, false)
	st := open(t, a, api.DBOpen{})
	for _, origin := range []string{
		"https://evil.example",
		"http://localhost.evil.example",
		"http://127.0.0.1.evil.example:8000",
		"null",
		"file://",
		"https://tauri.localhost.evil.example",
		"ftp://localhost",
		"tauri://evil",
	} {
		_, resp, err := tryDial(t, st, encJSON, http.Header{"Origin": {origin}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s: %v %v", origin, err, resp)
		}
		b := errBody(t, resp)
		if b["code"] != string(fault.DBOriginRefused) || !strings.Contains(b["error"], origin) || !strings.Contains(b["help"], "allowed_origins") {
			t.Fatalf("%s: body %v", origin, b)
		}
		if !strings.Contains(d.log.String(), origin) {
			t.Fatalf("%s is not in the log:\n%s", origin, d.log)
		}
		// Every route checks it.
		resp, raw := get(t, st, "GET", "/health", http.Header{"Origin": {origin}})
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(raw, string(fault.DBOriginRefused)) {
			t.Fatalf("/health from %s: %d %s", origin, resp.StatusCode, raw)
		}
	}
	if a.State().Connections != 0 {
		t.Fatal("a refused origin holds a connection")
	}
}

func TestOriginAdmitted(t *testing.T) {
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{AllowedOrigins: &[]string{"https://console.example.com", "HTTP://Lan.Example:3000/"}})
	for _, origin := range []string{
		"http://localhost:5173",
		"https://localhost",
		"http://127.0.0.1:7700",
		"http://127.8.9.1",
		"http://[::1]:3000",
		"tauri://localhost",
		"http://tauri.localhost",
		"https://console.example.com",
		"http://lan.example:3000",
	} {
		c := dial(t, st, encJSON, http.Header{"Origin": {origin}})
		if v := c.call("version"); v != "loci-9.8.7" {
			t.Fatalf("%s: version %v", origin, v)
		}
		if resp, _ := get(t, st, "GET", "/health", http.Header{"Origin": {origin}}); resp.StatusCode != 200 {
			t.Fatalf("/health from %s: %d", origin, resp.StatusCode)
		}
	}
	// No Origin: a client that is no browser.
	dial(t, st, encJSON, nil).call("ping")
	// A listed origin with another port is another origin.
	if _, resp, err := tryDial(t, st, encJSON, http.Header{"Origin": {"https://console.example.com:8443"}}); err == nil || resp.StatusCode != 403 {
		t.Fatalf("another port: %v", err)
	}
}

func TestOriginAllowedBySetting(t *testing.T) {
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{})
	h := http.Header{"Origin": {"https://evil.example"}}
	if _, resp, err := tryDial(t, st, encJSON, h); err == nil || resp.StatusCode != 403 {
		t.Fatalf("before: %v", err)
	}
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	st = open(t, a, api.DBOpen{AllowedOrigins: &[]string{"https://evil.example"}})
	dial(t, st, encJSON, h).call("ping")
}

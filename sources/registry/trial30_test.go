package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
)

// brokenServer answers every request 502, counting them.
func brokenServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// Trial 30: a name the readable registries do not list is
// loci::source::not_in_registry even when another registry cannot be
// read (the message names it); registry_unavailable only when no
// registry asked could be read. A named registry not listing it says
// "does not list".
func TestNotFoundWhileAnotherRegistryIsDown(t *testing.T) {
	ctx := context.Background()
	dir := folder(t, map[string][]byte{"notes-1.0.0.tar.gz": archive(t, "notes", "1.0.0", 1, "")}, nil, nil)
	srv, _ := brokenServer(t)
	c := client(t, Options{Registries: []Spec{{Name: "dot", URL: srv.URL + "/"}, {Name: "tc", URL: dir}}})
	for _, tc := range []struct{ name, version string }{{"nosuchpkg", ""}, {"notes", "7.7.7"}} {
		_, err := c.Find(ctx, Sources, tc.name, tc.version, "")
		wantCode(t, err, fault.SourceNotInRegistry, "no registry lists the source "+tc.name, "could not be read: dot")
	}
	if r, err := c.Find(ctx, Sources, "notes", "", ""); err != nil || r.Registry != "tc" {
		t.Fatalf("find = %+v %v", r, err)
	}
	_, err := c.Find(ctx, Sources, "notes", "0.1.0", "tc")
	wantCode(t, err, fault.SourceNotInRegistry, "the tc registry does not list the source notes 0.1.0")
	_, err = c.Find(ctx, Sources, "notes", "", "dot")
	wantCode(t, err, fault.SourceRegistryUnavailable, "the dot registry cannot be read")
	only := client(t, Options{Registries: []Spec{{Name: "dot", URL: srv.URL + "/"}}})
	_, err = only.Find(ctx, Sources, "notes", "", "")
	wantCode(t, err, fault.SourceRegistryUnavailable, "the dot registry cannot be read")
}

// Trial 30: a warning does not repeat the registry's name (it is in its
// own field); a failing registry is remembered for FailureMemory, so a
// second search does not ask it again and says the failure is
// remembered; the HTTP client bounds dialing and headers.
func TestAFailingRegistryIsRememberedBriefly(t *testing.T) {
	ctx := context.Background()
	dir := folder(t, map[string][]byte{"notes-1.0.0.tar.gz": archive(t, "notes", "1.0.0", 1, "")}, nil, nil)
	srv, hits := brokenServer(t)
	now := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	c := client(t, Options{Registries: []Spec{{Name: "dot", URL: srv.URL + "/"}, {Name: "tc", URL: dir}}})
	c.now = func() time.Time { return now }
	_, warns, err := c.Search(ctx, Sources, "", "")
	if err != nil || len(warns) != 1 || warns[0].Registry != "dot" {
		t.Fatalf("search = %+v %v", warns, err)
	}
	if strings.Contains(warns[0].Message, "dot") || !strings.Contains(warns[0].Message, "cannot be read") {
		t.Fatalf("the warning %q repeats the registry's name or does not say it cannot be read", warns[0].Message)
	}
	now = now.Add(10 * time.Second)
	_, warns, err = c.Search(ctx, Sources, "", "")
	if err != nil || len(warns) != 1 || hits.Load() != 1 || !strings.Contains(warns[0].Message, "remembered") {
		t.Fatalf("a second search within the memory asked the registry again (%d) or did not say so: %+v %v", hits.Load(), warns, err)
	}
	now = now.Add(FailureMemory)
	if _, _, err := c.Search(ctx, Sources, "", ""); err != nil || hits.Load() != 2 {
		t.Fatalf("after the memory the registry is asked again: %d %v", hits.Load(), err)
	}
	tr := newHTTPClient().Transport.(*http.Transport)
	if tr.ResponseHeaderTimeout > 10*time.Second || tr.TLSHandshakeTimeout > 10*time.Second || DialTimeout > 5*time.Second {
		t.Fatalf("the registry client waits too long: headers %v, TLS %v, dial %v", tr.ResponseHeaderTimeout, tr.TLSHandshakeTimeout, DialTimeout)
	}
}

// Trial 30: a name given twice is refused as a duplicate, not as
// "bundled" being reserved.
func TestADuplicateRegistryNameSaysSo(t *testing.T) {
	_, err := ParseSpecs([]string{"a=/srv/x", "a=/srv/y"})
	wantCode(t, err, fault.ConfigInvalid, "mining.registries[1]", "given twice", "mining.registries[0]")
	if strings.Contains(fault.As(err).Msg, Bundled) {
		t.Fatalf("the duplicate's message speaks of the bundled registry: %v", err)
	}
	_, err = ParseSpecs([]string{"bundled=/srv/x"})
	wantCode(t, err, fault.ConfigInvalid, "reserved")
}

// Re-trial 30: a warning says "index" once (not "its index: index:"), a
// registry that does not answer says so in words, not Go's error text,
// and a refused location says what a registry is once (in the help).
func TestWarningsSayItOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	hc := newHTTPClient()
	hc.Transport.(*http.Transport).ResponseHeaderTimeout = 100 * time.Millisecond
	c := client(t, Options{Registries: []Spec{{Name: "bad", URL: dir}, {Name: "slow", URL: slow.URL + "/"}}, HTTP: hc})
	_, warns, err := c.Search(ctx, Sources, "", "")
	if err != nil || len(warns) != 2 {
		t.Fatalf("search = %+v %v", warns, err)
	}
	for _, w := range warns {
		if strings.Count(w.Message, "index") > 1 || strings.Contains(w.Message, "net/http") || strings.Contains(w.Message, "Get") || strings.Contains(w.Message, w.Registry) {
			t.Fatalf("the warning %q repeats itself or shows Go's error text", w.Message)
		}
	}
	if !strings.Contains(warns[1].Message, "did not answer within 10 s") {
		t.Fatalf("the slow registry's warning: %q", warns[1].Message)
	}
	_, err = ParseSpecs([]string{"relative/reg"})
	if err == nil {
		_, err = New(Options{Registries: []Spec{{Name: "r", URL: "relative/reg"}}})
	}
	fe := fault.As(err)
	if all := fe.Msg + " " + fe.Help; strings.Count(all, "a registry is") != 1 || strings.Contains(all, "…") {
		t.Fatalf("a relative location: %q / %q", fe.Msg, fe.Help)
	}
}

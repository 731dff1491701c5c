package main_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources/pack"
)

// Trial 30 (registries, through the daemon): with one registry
// answering 502 beside a readable one, a name the readable one does not
// list is 404 not_in_registry naming the unreadable one, and a second
// search answers the remembered failure; a downgrade narrows the consent,
// so updates say the wider version needs consent and update does not
// take it; show answers the registry's location; a pinned yanked
// version installs with a warning.
func TestTrial30SvcRegistries(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer down.Close()
	reg := t.TempDir()
	const read, wide = "read = [\"locator\"]\n", "read = [\"locator\"]\nnetwork = true\n"
	writeRegistry(t, reg, map[string][]byte{
		"notes-0.1.0.tar.gz": regPackage(t, "notes", "0.1.0", "", read),
		"notes-0.2.0.tar.gz": regPackage(t, "notes", "0.2.0", "", read),
		"notes-0.3.0.tar.gz": regPackage(t, "notes", "0.3.0", "", wide),
		"notes-0.4.0.tar.gz": regPackage(t, "notes", "0.4.0", "", wide),
	}, nil, func(ix *pack.Index) { release(ix, "notes", "0.1.0").Yanked = true })
	d := start(t, home, palace, registryConfig(t, home, []string{"dot=" + down.URL + "/", "tc=file://" + reg}, "optional"))

	for _, c := range []struct{ method, path string }{
		{"POST", "/api/source-registry/install"},
		{"GET", "/api/source-registry/sources/notes?version=7.7.7"},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"name": "nosuchpkg"}
		}
		r := d.do(c.method, c.path, body)
		if r.status != 404 || r.code() != "loci::source::not_in_registry" || !strings.Contains(r.raw, "could not be read: dot") {
			t.Fatalf("%s %s beside an unreadable registry: %d %s", c.method, c.path, r.status, r.raw)
		}
	}
	if r := d.do("GET", "/api/source-registry/sources/notes?registry=dot", nil); r.status != 502 || r.code() != "loci::source::registry_unavailable" {
		t.Fatalf("the unreadable registry named: %d %s", r.status, r.raw)
	}
	// The second of two searches in a row answers the remembered failure.
	d.do("GET", "/api/source-registry/search", nil)
	r := d.do("GET", "/api/source-registry/search", nil)
	ws := get[[]any](r.body, "warnings")
	if r.status != 200 || len(ws) != 1 || strings.Contains(get[string](ws[0].(map[string]any), "message"), "dot") ||
		!strings.Contains(get[string](ws[0].(map[string]any), "message"), "remembered") {
		t.Fatalf("a search after the registry failed: %d %s", r.status, r.raw)
	}

	// Consent follows what is installed.
	if r := d.do("POST", "/api/source-registry/install", map[string]any{"name": "notes", "version": "0.3.0", "consent": consentOf(t, "notes", wide)}); r.status != 201 {
		t.Fatalf("install 0.3.0: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/source-registry/install", map[string]any{"name": "notes", "version": "0.2.0", "consent": consentOf(t, "notes", read)}); r.status != 200 || r.body["downgrade"] != true {
		t.Fatalf("install 0.2.0: %d %s", r.status, r.raw)
	}
	u := d.do("GET", "/api/source-registry/updates", nil)
	ups := get[[]any](u.body, "updates")
	if u.status != 200 || len(ups) != 1 || ups[0].(map[string]any)["to"] != "0.4.0" || ups[0].(map[string]any)["needs_consent"] != true ||
		ups[0].(map[string]any)["registry_location"] != reg+"/index.json" {
		t.Fatalf("updates after the downgrade: %d %s", u.status, u.raw)
	}
	up := d.do("POST", "/api/source-registry/update", map[string]any{"name": "notes"})
	if up.status != 200 || !strings.Contains(up.raw, `"status": "needs_consent"`) {
		t.Fatalf("update after the downgrade: %d %s", up.status, up.raw)
	}
	if s := d.do("GET", "/api/source-packages/notes", nil); get[string](s.body, "version") != "0.2.0" {
		t.Fatalf("the update went through without consent: %s", s.raw)
	}

	// The location in show; a pinned yanked version warns.
	if s := d.do("GET", "/api/source-registry/sources/notes?version=0.1.0", nil); s.status != 200 || s.body["yanked"] != true || s.body["registry_location"] != reg+"/index.json" {
		t.Fatalf("show of the yanked version: %d %s", s.status, s.raw)
	}
	in := d.do("POST", "/api/source-registry/install", map[string]any{"name": "notes", "version": "0.1.0"})
	if in.status != 200 || !strings.Contains(in.raw, "yanked") {
		t.Fatalf("install of a pinned yanked version: %d %s", in.status, in.raw)
	}
}

// Trial 30: loci doctor refuses the registry entries loci serve refuses.
func TestTrial30SvcDoctorChecksRegistries(t *testing.T) {
	t.Parallel()
	for _, loc := range []string{"http://10.1.2.3/reg", "relative/reg", "ftp://x/y", ""} {
		home, _ := newPalace(t)
		out, errOut, code := runCLI(home, "", []string{"doctor"}, []string{registryConfig(t, home, []string{loc}, "optional")})
		if code == 0 || !strings.Contains(out+errOut, "mining.registries[0]") {
			t.Fatalf("loci doctor with the registry %q (%d): %s %s", loc, code, out, errOut)
		}
	}
}

package main_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources/pack"
)

// regPackage is the notes guest packaged as name at version, needing
// loci (a requirement, "" none) and asking for perms.
func regPackage(t *testing.T, name, version, loci, perms string) []byte {
	t.Helper()
	mb := "contract = 1\nname = \"" + name + "\"\nversion = \"" + version + "\"\ndescription = \"the " + name + " source\"\nmodule = \"notes.wasm\"\n"
	if loci != "" {
		mb += "loci = \"" + loci + "\"\n"
	}
	mb += "[source]\nincremental = true\n[permissions]\n" + perms
	m, err := pack.ParseManifest([]byte(mb))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := (&pack.Package{Manifest: m, ManifestBytes: []byte(mb), Module: guestModule(t)}).WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeRegistry writes archives (path below dir → bytes) into dir and
// their index, signed by key when not nil and edited by edit.
func writeRegistry(t *testing.T, dir string, archives map[string][]byte, key ed25519.PrivateKey, edit func(*pack.Index)) {
	t.Helper()
	var as []pack.IndexArchive
	for f, b := range archives {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		as = append(as, pack.IndexArchive{File: f, Bytes: b})
	}
	ix, err := pack.BuildIndex(as, key)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ix)
	}
	if err := os.WriteFile(filepath.Join(dir, pack.IndexFile), ix.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// release is the index release of name at version (for edits).
func release(ix *pack.Index, name, version string) *pack.IndexRelease {
	for i := range ix.Sources {
		if ix.Sources[i].Name != name {
			continue
		}
		for j := range ix.Sources[i].Versions {
			if ix.Sources[i].Versions[j].Version == version {
				return &ix.Sources[i].Versions[j]
			}
		}
	}
	return nil
}

// registryConfig writes a configuration file naming the registries and
// the trust settings; the environment that points the daemon at it.
func registryConfig(t *testing.T, home string, registries []string, policy string, keys ...string) string {
	t.Helper()
	q := func(ss []string) string {
		var out []string
		for _, s := range ss {
			out = append(out, fmt.Sprintf("%q", s))
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	cfg := filepath.Join(home, "config.toml")
	body := fmt.Sprintf("[mining]\nregistries = %s\nsignature_policy = %q\ntrusted_keys = %s\n", q(registries), policy, q(keys))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return "LOCI_CONFIG=" + cfg
}

func entryOf(t *testing.T, r response, name, registry string) map[string]any {
	t.Helper()
	ents, _ := r.body["entries"].([]any)
	for _, e := range ents {
		m := e.(map[string]any)
		if m["name"] == name && m["registry"] == registry {
			return m
		}
	}
	return nil
}

// A folder registry (file://) under the optional policy: search offers
// the newest version that runs here (yanked and incompatible skipped),
// show verifies and installs nothing, install needs consent and records
// the registry, a package naming another source, a wrong SHA-256, an
// unsigned-but-tampered signature and a digest changed since show are
// refused with nothing installed; updates and update move a source
// forward keeping its state, and one asking for more needs consent.
func TestRegistryFolderInstallAndUpdate(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	reg := t.TempDir()
	_, key, _ := pack.GenerateKey()
	notes100 := regPackage(t, "notes", "1.0.0", "", "read = [\"locator\"]\n")
	files := map[string][]byte{
		"notes/notes-1.0.0.tar.gz":  notes100,
		"notes/notes-1.3.0.tar.gz":  regPackage(t, "notes", "1.3.0", "", "read = [\"locator\"]\n"),
		"notes/notes-2.0.0.tar.gz":  regPackage(t, "notes", "2.0.0", ">= 99.0.0", "read = [\"locator\"]\n"),
		"other/mail-1.0.0.tar.gz":   regPackage(t, "mail", "1.0.0", "", "read = [\"locator\"]\n"),
		"other/badsum-1.0.0.tar.gz": regPackage(t, "badsum", "1.0.0", "", "read = [\"locator\"]\n"),
		"other/forged-1.0.0.tar.gz": regPackage(t, "forged", "1.0.0", "", "read = [\"locator\"]\n"),
	}
	edit := func(ix *pack.Index) {
		release(ix, "notes", "1.3.0").Yanked = true
		// mail's entry points at notes' archive: the package inside is
		// another source.
		m := release(ix, "mail", "1.0.0")
		n := release(ix, "notes", "1.0.0")
		m.Archive, m.SHA256, m.Size = n.Archive, n.SHA256, n.Size
		b := release(ix, "badsum", "1.0.0")
		b.SHA256 = strings.Repeat("0", 64)
		// forged is signed by a key nobody trusts, over other bytes: under
		// the optional policy it counts as unsigned.
		f := release(ix, "forged", "1.0.0")
		f.Signature, f.Key = pack.Sign(key, []byte("other")), pack.FormatPublicKey(key.Public().(ed25519.PublicKey))
	}
	writeRegistry(t, reg, files, nil, edit)
	d := start(t, home, palace, registryConfig(t, home, []string{"local=file://" + reg}, "optional"))

	r := d.do("GET", "/api/source-registry/search", nil)
	if r.status != 200 || len(r.body["warnings"].([]any)) != 0 {
		t.Fatalf("search: %d %s", r.status, r.raw)
	}
	notes := entryOf(t, r, "notes", "local")
	if notes == nil || notes["version"] != "1.0.0" || notes["installed"] != nil {
		t.Fatalf("notes in the search: %v (%s)", notes, r.raw)
	}
	if entryOf(t, r, "directory-wasm", "bundled") == nil {
		t.Fatalf("the bundled registry is not searched: %s", r.raw)
	}
	if r := d.do("GET", "/api/source-registry/search?q=NOTES&registry=local", nil); r.status != 200 || len(r.body["entries"].([]any)) != 1 {
		t.Fatalf("search notes: %d %s", r.status, r.raw)
	}

	r = d.do("GET", "/api/source-registry/sources/notes", nil)
	if r.status != 200 || r.body["version"] != "1.0.0" || r.body["origin"] != "registry" || r.body["registry"] != "local" || r.body["signed_by"] != "" ||
		r.body["archive_digest"] != pack.Digest(notes100) || r.body["consent_digest"] != consentOf(t, "notes", "read = [\"locator\"]\n") || r.body["replaces"] != "" {
		t.Fatalf("show: %d %s", r.status, r.raw)
	}
	shown := r.body
	if r := d.do("GET", "/api/source-registry/sources/notes?version=1.3.0", nil); r.status != 200 || r.body["yanked"] != true {
		t.Fatalf("show pinned yanked: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-registry/sources/notes?version=2.0.0", nil); r.status != 409 || r.code() != "loci::source::incompatible" || !strings.Contains(r.raw, "99.0.0") {
		t.Fatalf("show pinned incompatible: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-registry/sources/nothing", nil); r.status != 404 || r.code() != "loci::source::not_in_registry" {
		t.Fatalf("show unknown: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-packages/notes", nil); r.status != 404 {
		t.Fatalf("show installed something: %d %s", r.status, r.raw)
	}

	for _, c := range []struct {
		name, code, says string
		status           int
	}{
		{"mail", "loci::source::integrity", "holds notes", 502},
		{"badsum", "loci::source::integrity", "nothing was read", 502},
	} {
		r := d.do("POST", "/api/source-registry/install", map[string]any{"name": c.name, "consent": "x"})
		if r.status != c.status || r.code() != c.code || !strings.Contains(r.raw, c.says) {
			t.Fatalf("install %s: %d %s", c.name, r.status, r.raw)
		}
		if r := d.do("GET", "/api/source-packages/"+c.name, nil); r.status != 404 {
			t.Fatalf("%s was installed: %d %s", c.name, r.status, r.raw)
		}
	}
	if r := d.do("GET", "/api/source-registry/sources/forged", nil); r.status != 200 || r.body["signed_by"] != "" {
		t.Fatalf("an unknown key's signature under the optional policy: %d %s", r.status, r.raw)
	}

	r = d.do("POST", "/api/source-registry/install", map[string]any{"name": "notes"})
	if r.status != 400 || r.code() != "loci::source::consent_required" || !strings.Contains(r.raw, shown["consent_digest"].(string)) {
		t.Fatalf("install without consent: %d %s", r.status, r.raw)
	}
	r = d.do("POST", "/api/source-registry/install", map[string]any{"name": "notes", "archive_digest": strings.Repeat("1", 64), "consent": shown["consent_digest"]})
	if r.status != 502 || r.code() != "loci::source::integrity" || !strings.Contains(r.raw, "not the one shown") {
		t.Fatalf("install of a digest changed since show: %d %s", r.status, r.raw)
	}
	r = d.do("POST", "/api/source-registry/install", map[string]any{"name": "notes", "archive_digest": shown["archive_digest"], "consent": shown["consent_digest"], "enable": true})
	if r.status != 201 || get[string](r.body, "source", "origin") != "registry" || get[string](r.body, "source", "registry") != "local" ||
		get[string](r.body, "source", "state") != "enabled" || r.body["replaced"] != "" {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-registry/search?q=notes", nil); entryOf(t, r, "notes", "local")["installed"] != "1.0.0" {
		t.Fatalf("search after install: %s", r.raw)
	}

	if r := d.do("GET", "/api/source-registry/updates", nil); r.status != 200 || len(r.body["updates"].([]any)) != 0 {
		t.Fatalf("updates when current: %d %s", r.status, r.raw)
	}
	r = d.do("POST", "/api/source-registry/update", nil)
	if r.status != 200 || !strings.Contains(compact(r.raw), `"status":"current"`) {
		t.Fatalf("update when current: %d %s", r.status, r.raw)
	}

	// 1.1.0 asks for the same: updated, still enabled.
	files["notes/notes-1.1.0.tar.gz"] = regPackage(t, "notes", "1.1.0", "", "read = [\"locator\"]\n")
	writeRegistry(t, reg, files, nil, edit)
	r = d.do("GET", "/api/source-registry/updates", nil)
	if r.status != 200 || !strings.Contains(compact(r.raw), `"from":"1.0.0","to":"1.1.0"`) || !strings.Contains(compact(r.raw), `"needs_consent":false`) {
		t.Fatalf("updates: %d %s", r.status, r.raw)
	}
	r = d.do("POST", "/api/source-registry/update", map[string]any{"name": "notes"})
	if r.status != 200 || !strings.Contains(compact(r.raw), `{"name":"notes","from":"1.0.0","to":"1.1.0","status":"updated"}`) {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-packages/notes", nil); r.body["version"] != "1.1.0" || r.body["state"] != "enabled" || r.body["registry"] != "local" {
		t.Fatalf("after the update: %s", r.raw)
	}

	// 1.2.0 asks for more: needs_consent with its permissions and
	// digest, nothing installed; with the digest, updated.
	wider := "read = [\"locator\"]\nenv = [\"NOTES_TOKEN\"]\n"
	files["notes/notes-1.2.0.tar.gz"] = regPackage(t, "notes", "1.2.0", "", wider)
	writeRegistry(t, reg, files, nil, edit)
	if r := d.do("GET", "/api/source-registry/updates", nil); !strings.Contains(compact(r.raw), `"needs_consent":true`) {
		t.Fatalf("updates: %s", r.raw)
	}
	r = d.do("POST", "/api/source-registry/update", nil)
	digest := consentOf(t, "notes", wider)
	if r.status != 200 || !strings.Contains(compact(r.raw), `"status":"needs_consent"`) || !strings.Contains(r.raw, digest) || !strings.Contains(r.raw, "NOTES_TOKEN") {
		t.Fatalf("update needing consent: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-packages/notes", nil); r.body["version"] != "1.1.0" {
		t.Fatalf("an update needing consent installed: %s", r.raw)
	}
	out, errOut, code := d.cli("", "source", "update", "notes", "--consent", digest)
	if code != 0 || !strings.Contains(out, "notes: updated 1.1.0 -> 1.2.0") {
		t.Fatalf("loci source update --consent: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/source-packages/notes", nil); r.body["version"] != "1.2.0" || r.body["state"] != "enabled" {
		t.Fatalf("after the consented update: %s", r.raw)
	}

	// The CLI: search, show NAME@VERSION, install by name (--yes), updates.
	if out, errOut, code := d.cli("", "source", "search", "notes"); code != 0 || !strings.Contains(out, "notes") || !strings.Contains(out, "installed 1.2.0") {
		t.Fatalf("loci source search: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := d.cli("", "source", "show", "notes@1.0.0"); code != 0 || !strings.Contains(out, "archive sha256: "+pack.Digest(notes100)) || !strings.Contains(out, "replaces version 1.2.0") {
		t.Fatalf("loci source show notes@1.0.0: %d %s %s", code, out, errOut)
	}
	files["other/chat-0.1.0.tar.gz"] = regPackage(t, "chat", "0.1.0", "", "read = [\"locator\"]\n")
	writeRegistry(t, reg, files, nil, edit)
	if out, errOut, code := d.cli("", "source", "install", "chat"); code == 0 || !strings.Contains(errOut, "consent_required") || !strings.Contains(errOut, "asks to") {
		t.Fatalf("loci source install chat without a terminal: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := d.cli("", "source", "install", "chat@0.1.0", "--yes"); code != 0 || !strings.Contains(out, "installed the chat source 0.1.0 from the local registry") {
		t.Fatalf("loci source install chat --yes: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := d.cli("", "--json", "source", "updates"); code != 0 || !strings.Contains(out, `"updates": []`) {
		t.Fatalf("loci source updates: %d %s %s", code, out, errOut)
	}
}

// compact is a JSON answer without its indentation.
func compact(raw string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return raw
	}
	return b.String()
}

// serveRegistry serves dir on loopback HTTP.
func serveRegistry(t *testing.T, dir string) *httptest.Server {
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv
}

// A loopback HTTP registry under the required policy: an archive signed
// by a trusted key installs and records the key; unsigned is untrusted
// (400), tampered (a trusted key's signature over other bytes) is
// integrity (502), an index whose archive climbs out of its folder is
// refused, a redirect to a non-loopback address is refused, and an
// unreadable registry is a warning while the others answer.
func TestRegistryHTTPSigned(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	pub, key, _ := pack.GenerateKey()
	trusted := pack.FormatPublicKey(pub)

	signed := t.TempDir()
	writeRegistry(t, signed, map[string][]byte{"a/notes-1.0.0.tar.gz": regPackage(t, "notes", "1.0.0", "", "read = [\"locator\"]\n"),
		"a/tampered-1.0.0.tar.gz": regPackage(t, "tampered", "1.0.0", "", "read = [\"locator\"]\n")}, key, func(ix *pack.Index) {
		release(ix, "tampered", "1.0.0").Signature = pack.Sign(key, []byte("other bytes"))
	})
	unsigned := t.TempDir()
	writeRegistry(t, unsigned, map[string][]byte{"chat-1.0.0.tar.gz": regPackage(t, "chat", "1.0.0", "", "read = [\"locator\"]\n")}, nil, nil)
	climbing := t.TempDir()
	os.WriteFile(filepath.Join(climbing, pack.IndexFile), []byte(`{"version":1,"sources":[{"name":"escape","versions":[{"version":"1.0.0","archive":"../secret.tar.gz","sha256":"`+
		strings.Repeat("ab", 32)+`","size":10,"contract":1}]}]}`), 0o644)
	redirect := httptest.NewServer(http.RedirectHandler("http://192.0.2.1/index.json", http.StatusFound))
	defer redirect.Close()
	s1, s2, s3 := serveRegistry(t, signed), serveRegistry(t, unsigned), serveRegistry(t, climbing)

	d := start(t, home, palace, registryConfig(t, home, []string{"signed=" + s1.URL + "/", "unsigned=" + s2.URL + "/index.json", "climbing=" + s3.URL,
		"moved=" + redirect.URL + "/index.json"}, "required", trusted))

	r := d.do("GET", "/api/source-registry/search", nil)
	if r.status != 200 || entryOf(t, r, "notes", "signed") == nil || entryOf(t, r, "chat", "unsigned") == nil {
		t.Fatalf("search: %d %s", r.status, r.raw)
	}
	warns := fmt.Sprint(r.body["warnings"])
	if !strings.Contains(warns, "climbing") || !strings.Contains(warns, "moved") || !strings.Contains(warns, "registry_unavailable") || !strings.Contains(warns, "192.0.2.1") {
		t.Fatalf("the unreadable registries are not warned of: %s", r.raw)
	}
	if r := d.do("GET", "/api/source-registry/search?registry=moved", nil); r.status != 502 || r.code() != "loci::source::registry_unavailable" || !strings.Contains(r.raw, "loopback only") {
		t.Fatalf("a redirect beyond loopback: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-registry/search?registry=climbing", nil); r.status != 502 || !strings.Contains(r.raw, "below the index") {
		t.Fatalf("an archive climbing out: %d %s", r.status, r.raw)
	}

	r = d.do("GET", "/api/source-registry/sources/notes", nil)
	if r.status != 200 || r.body["signed_by"] != trusted {
		t.Fatalf("show signed: %d %s", r.status, r.raw)
	}
	r = d.do("POST", "/api/source-registry/install", map[string]any{"name": "notes", "consent": r.body["consent_digest"], "archive_digest": r.body["archive_digest"]})
	if r.status != 201 || get[string](r.body, "source", "signed_by") != trusted || get[string](r.body, "source", "registry") != "signed" {
		t.Fatalf("install signed: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/source-registry/install", map[string]any{"name": "chat", "consent": consentOf(t, "chat", "read = [\"locator\"]\n")}); r.status != 400 || r.code() != "loci::source::untrusted" {
		t.Fatalf("install unsigned under required: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/source-registry/install", map[string]any{"name": "tampered", "consent": consentOf(t, "tampered", "read = [\"locator\"]\n")}); r.status != 502 || r.code() != "loci::source::integrity" || !strings.Contains(r.raw, "changed after signing") {
		t.Fatalf("install tampered: %d %s", r.status, r.raw)
	}
	for _, n := range []string{"chat", "tampered"} {
		if r := d.do("GET", "/api/source-packages/"+n, nil); r.status != 404 {
			t.Fatalf("%s was installed: %s", n, r.raw)
		}
	}
}

// A registry over http:// beyond loopback, or of another scheme, stops
// the daemon at start with loci::config::invalid naming the entry.
func TestRegistryConfigRefused(t *testing.T) {
	t.Parallel()
	for _, loc := range []string{"http://192.0.2.1/index.json", "ftp://example.com/index.json", "relative/folder"} {
		home, palace := newPalace(t)
		cmd := exec.Command(bin, "serve", "--port", "0", "--palace", palace)
		cmd.Env = env(home, registryConfig(t, home, []string{loc}, "optional"))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "loci::config::invalid") || !strings.Contains(string(out), "mining.registries[0]") {
			t.Fatalf("%s: the daemon started or said otherwise: %v\n%s", loc, err, out)
		}
	}
}

// Every registry route needs the token when authentication is on, and
// none is gated by the memory mode (TestNoMCPToolTouchesSourcePackages
// checks that no MCP tool names a registry).
func TestRegistryRoutesNeedAuth(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const token = "a-long-enough-secret-for-tests"
	reg := t.TempDir()
	writeRegistry(t, reg, map[string][]byte{}, nil, nil)
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+token, registryConfig(t, home, []string{reg}, "optional"))
	routes := []struct {
		method, path string
		body         any
		want         int
	}{
		{"GET", "/api/source-registry/search", nil, 200},
		{"GET", "/api/source-registry/sources/notes", nil, 404},
		{"POST", "/api/source-registry/install", map[string]any{"name": "notes"}, 404},
		{"GET", "/api/source-registry/updates", nil, 200},
		{"POST", "/api/source-registry/update", map[string]any{}, 200},
	}
	for _, rt := range routes {
		if r := d.do(rt.method, rt.path, rt.body); r.status != 401 || r.code() != "loci::auth::unauthorized" {
			t.Fatalf("%s %s without a token: %d %s", rt.method, rt.path, r.status, r.raw)
		}
		if r := d.do(rt.method, rt.path, rt.body, "Authorization", "Bearer "+token, "X-Loci-Mode", "read_only"); r.status != rt.want {
			t.Fatalf("%s %s with the token in read_only mode: %d %s", rt.method, rt.path, r.status, r.raw)
		}
	}
	// Bad input: {error, code, help}, 400.
	for _, bad := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/source-registry/sources/Not%20A%20Name", nil},
		{"POST", "/api/source-registry/install", map[string]any{}},
		{"POST", "/api/source-registry/install", map[string]any{"name": "notes", "extra": 1}},
		{"POST", "/api/source-registry/update", map[string]any{"nam": "notes"}},
	} {
		r := d.do(bad.method, bad.path, bad.body, "Authorization", "Bearer "+token)
		if r.status != 400 || r.code() != "loci::input::invalid" || r.body["help"] == nil {
			t.Fatalf("%s %s %v: %d %s", bad.method, bad.path, bad.body, r.status, r.raw)
		}
	}
}

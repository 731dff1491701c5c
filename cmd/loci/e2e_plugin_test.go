package main_test

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/plugin"
)

// notesPlugin is a plugin carrying the given packages, each in
// modules/<name>, and its archive.
func notesPlugin(t *testing.T, id, version string, pkgs ...*pack.Package) (*plugin.Plugin, []byte) {
	t.Helper()
	mb := fmt.Sprintf("id = %q\nversion = %q\ndescription = \"notes, twice\"\nloci = \">= 0.1.0\"\n", id, version)
	for _, p := range pkgs {
		mb += "[[modules]]\nkind = \"source\"\npath = \"modules/" + p.Manifest.Name + "\"\n"
	}
	m, err := plugin.ParseManifest([]byte(mb))
	if err != nil {
		t.Fatal(err)
	}
	plug := &plugin.Plugin{Manifest: m, ManifestBytes: []byte(mb)}
	for _, p := range pkgs {
		plug.Sources = append(plug.Sources, plugin.Source{Path: "modules/" + p.Manifest.Name, Package: p})
	}
	b, err := plug.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return plug, b
}

func jsonHeader(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A plugin whose module is a source installed on its own: the preview
// names the consent its other module needs and the source to adopt; an
// install without the consent, or without the adoption, is refused and
// changes nothing; with both its modules are installed, not enabled, and
// the adopted one is the plugin's. A plugin's source is not removed on
// its own; the plugin is not removed while a module is enabled; once
// disabled it is, with its modules, and what they mined stays.
func TestPluginPreviewInstallAdoptRemove(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	d := start(t, home, palace)
	mod := guestModule(t)
	const readLocator = "read = [\"locator\"]\n"
	_, legacyArc := notesPackage(t, "jotter", "0.9.0", readLocator, mod)
	if r := install(d, legacyArc, "?consent="+consentOf(t, "jotter", readLocator)); r.status != 201 || get[string](r.body, "source", "origin") != "local" {
		t.Fatalf("the legacy source: %d %s", r.status, r.raw)
	}
	jotter, _ := notesPackage(t, "jotter", "1.0.0", readLocator, mod)
	scribe, _ := notesPackage(t, "scribe", "1.0.0", notesPerms, mod)
	_, arc := notesPlugin(t, "notes-suite", "1.0.0", jotter, scribe)
	digest := pack.ConsentDigest("scribe", scribe.Manifest.Permissions)

	pv := d.do("POST", "/api/plugins/preview", string(arc))
	if pv.status != 200 || get[string](pv.body, "consents", "scribe") != digest || len(get[map[string]any](pv.body, "consents")) != 1 ||
		fmt.Sprint(get[[]any](pv.body, "adopt")) != "[jotter]" || get[string](pv.body, "archive_digest") != pack.Digest(arc) ||
		get[string](pv.body, "plugin", "id") != "notes-suite" || len(get[[]any](pv.body, "plugin", "modules")) != 2 {
		t.Fatalf("preview: %d %s", pv.status, pv.raw)
	}
	before := d.do("GET", "/api/source-packages", nil).raw

	r := d.do("POST", "/api/plugins", string(arc), "X-Loci-Adopt-Sources", `["jotter"]`)
	if r.status != 400 || r.code() != "loci::source::consent_required" || !strings.Contains(r.raw, "scribe") || !strings.Contains(r.raw, digest) {
		t.Fatalf("install without consent: %d %s", r.status, r.raw)
	}
	r = d.do("POST", "/api/plugins", string(arc), "X-Loci-Consents", jsonHeader(map[string]string{"scribe": digest}))
	if r.status != 409 || r.code() != "loci::source::adoption_required" || !strings.Contains(r.raw, "jotter") {
		t.Fatalf("install without adoption: %d %s", r.status, r.raw)
	}
	if after := d.do("GET", "/api/source-packages", nil).raw; after != before {
		t.Fatalf("a refused plugin install changed the sources:\n%s\n%s", before, after)
	}
	if l := d.do("GET", "/api/plugins", nil); l.status != 200 || len(get[[]any](l.body, "plugins")) != 0 {
		t.Fatalf("a refused plugin install left a plugin: %d %s", l.status, l.raw)
	}
	if r := d.do("POST", "/api/plugins", string(arc), "X-Loci-Consents", "{not json"); r.status != 400 || r.code() != "loci::input::invalid" || !strings.Contains(r.raw, "X-Loci-Consents") {
		t.Fatalf("a bad consents header: %d %s", r.status, r.raw)
	}

	r = d.do("POST", "/api/plugins", string(arc), "X-Loci-Consents", jsonHeader(map[string]string{"scribe": digest}), "X-Loci-Adopt-Sources", `["jotter"]`)
	if r.status != 201 || get[string](r.body, "plugin", "id") != "notes-suite" || fmt.Sprint(get[[]any](r.body, "adopted")) != "[jotter]" {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	for _, name := range []string{"jotter", "scribe"} {
		s := d.do("GET", "/api/source-packages/"+name, nil)
		if s.status != 200 || get[string](s.body, "state") != "installed" || get[string](s.body, "origin") != "plugin" ||
			get[string](s.body, "plugin") != "notes-suite" || get[string](s.body, "version") != "1.0.0" {
			t.Fatalf("the module %s: %d %s", name, s.status, s.raw)
		}
	}
	show := d.do("GET", "/api/plugins/notes-suite", nil)
	mods := get[[]any](show.body, "modules")
	if show.status != 200 || len(mods) != 2 || get[string](show.body, "origin") != "local" || get[string](show.body, "version") != "1.0.0" {
		t.Fatalf("show: %d %s", show.status, show.raw)
	}
	for _, m := range mods {
		if mm := m.(map[string]any); mm["state"] != "installed" || mm["kind"] != "source" {
			t.Fatalf("a module after install: %v", mm)
		}
	}
	if l := d.do("GET", "/api/plugins", nil); len(get[[]any](l.body, "plugins")) != 1 {
		t.Fatalf("list: %s", l.raw)
	}
	if r := d.do("GET", "/api/plugins/nothing-here", nil); r.status != 404 || r.code() != "loci::plugin::not_found" {
		t.Fatalf("show of no plugin: %d %s", r.status, r.raw)
	}
	if r := d.do("DELETE", "/api/source-packages/scribe", nil); r.status != 409 || r.code() != "loci::source::plugin_provided" ||
		!strings.Contains(r.raw, "remove the plugin") {
		t.Fatalf("removing a plugin's source on its own: %d %s", r.status, r.raw)
	}

	// Enable a module and mine with it: the plugin stays while it is enabled.
	if r := d.do("POST", "/api/source-packages/scribe/enable", nil); r.status != 200 {
		t.Fatalf("enable: %d %s", r.status, r.raw)
	}
	dir := t.TempDir()
	for _, n := range []string{"alpha", "beta"} {
		os.WriteFile(filepath.Join(dir, n+".txt"), []byte("the "+n+" note says the plugin's lease timeout moved to ninety seconds"), 0o600)
	}
	job := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": "scribe", "locator": dir, "wing": "notes"})
	if job.status != 202 {
		t.Fatalf("mine: %d %s", job.status, job.raw)
	}
	if j := waitJob(t, d, get[string](job.body, "id"), time.Minute, finished); j["status"] != "completed" {
		t.Fatalf("the mine: %v", j)
	}
	mined := counts(d)
	if r := d.do("DELETE", "/api/plugins/notes-suite", nil); r.status != 409 || r.code() != "loci::plugin::in_use" || !strings.Contains(r.raw, "scribe") {
		t.Fatalf("removing a plugin with an enabled module: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/source-packages/scribe/disable", nil); r.status != 200 {
		t.Fatalf("disable: %d %s", r.status, r.raw)
	}
	if r := d.do("DELETE", "/api/plugins/notes-suite", nil); r.status != 200 || get[string](r.body, "removed") != "notes-suite" {
		t.Fatalf("remove: %d %s", r.status, r.raw)
	}
	for _, name := range []string{"jotter", "scribe"} {
		if r := d.do("GET", "/api/source-packages/"+name, nil); r.status != 404 {
			t.Fatalf("the module %s after removal: %d %s", name, r.status, r.raw)
		}
		if _, err := os.Stat(filepath.Join(palace, "sources", name)); !os.IsNotExist(err) {
			t.Fatalf("the module %s's files stay: %v", name, err)
		}
	}
	if after := counts(d); after != mined || !strings.Contains(mined, "drawers:2") {
		t.Fatalf("removing the plugin changed what it mined: %s -> %s", mined, after)
	}

	// Bad bodies: 400 naming the problem, 413 past 64 MiB.
	if r := d.do("POST", "/api/plugins/preview", "not a plugin"); r.status != 400 || r.code() != "loci::input::invalid" {
		t.Fatalf("a body that is no plugin: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/plugins", nil); r.status != 400 || r.code() != "loci::input::invalid" {
		t.Fatalf("no body: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/plugins", strings.Repeat("\x00", 64<<20+1)); r.status != 413 || r.code() != "loci::input::too_large" {
		t.Fatalf("a body past 64 MiB: %d %s", r.status, r.raw)
	}
	_, builtin := notesPlugin(t, "bad-suite", "1.0.0", func() *pack.Package { p, _ := notesPackage(t, "directory", "1.0.0", "", mod); return p }())
	if r := d.do("POST", "/api/plugins", string(builtin)); r.status != 400 || r.code() != "loci::source::builtin" {
		t.Fatalf("a plugin carrying a built-in name: %d %s", r.status, r.raw)
	}
}

// Every plugin route needs the token when authentication is on, and none
// is gated by the memory mode (read_only may install and remove).
func TestPluginRoutesNeedAuthNotMode(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const token = "a-long-enough-secret-for-tests"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+token)
	p, _ := notesPackage(t, "notes", "1.0.0", "", guestModule(t))
	_, arc := notesPlugin(t, "suite", "1.0.0", p)
	routes := []authRoute{
		{"GET", "/api/plugins", ""},
		{"POST", "/api/plugins/preview", string(arc)},
		{"POST", "/api/plugins", string(arc)},
		{"GET", "/api/plugins/suite", ""},
		{"DELETE", "/api/plugins/suite", ""},
		{"GET", "/api/plugin-registry/search?q=notes", ""},
		{"GET", "/api/plugin-registry/plugins/suite", ""},
		{"POST", "/api/plugin-registry/install", `{"id":"suite"}`},
	}
	refusedWithoutToken(t, d, routes)
	if ents, _ := os.ReadDir(filepath.Join(palace, "sources")); len(ents) != 0 {
		t.Fatalf("an unauthenticated install left files: %v", ents)
	}
	// With the token, in read_only mode: the local routes work; the
	// registry routes answer as the registries do (none is configured),
	// never 401 or 403.
	for _, rt := range routes {
		r := d.do(rt.method, rt.path, rt.payload(), "Authorization", "Bearer "+token, "X-Loci-Mode", "read_only")
		if r.status == 401 || r.status == 403 || (!strings.Contains(rt.path, "registry") && r.status >= 300) {
			t.Fatalf("%s %s with the token in read_only mode: %d %s", rt.method, rt.path, r.status, r.raw)
		}
	}
	if r := d.do("GET", "/api/plugins/suite", nil, "Authorization", "Bearer "+token); r.status != 404 {
		t.Fatalf("removed: %d %s", r.status, r.raw)
	}
}

// loci plugin package, inspect, sign and test run without a daemon;
// install without a terminal never agrees: it shows what is asked and
// fails; --yes installs, list and show say so, remove removes.
func TestPluginCLI(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	mod := guestModule(t)
	src := t.TempDir()
	manifest := "id = \"notes-suite\"\nversion = \"1.0.0\"\ndescription = \"notes, twice\"\n" +
		"[[modules]]\nkind = \"source\"\npath = \"jotter\"\n[[modules]]\nkind = \"source\"\npath = \"scribe\"\n"
	os.WriteFile(filepath.Join(src, plugin.ManifestFile), []byte(manifest), 0o600)
	// jotter: the go template, built (it passes the conformance cases);
	// scribe: the notes guest (it accepts a cursor it did not write).
	sourceCLI(t, home, 0, "source", "init", filepath.Join(src, "jotter"), "--template", "go")
	sourceCLI(t, home, 0, "source", "build", filepath.Join(src, "jotter"))
	scribe, _ := notesPackage(t, "scribe", "1.0.0", notesPerms, mod)
	os.MkdirAll(filepath.Join(src, "scribe", "testdata", "locator"), 0o700)
	os.WriteFile(filepath.Join(src, "scribe", pack.ManifestFile), scribe.ManifestBytes, 0o600)
	os.WriteFile(filepath.Join(src, "scribe", "notes.wasm"), mod, 0o600)
	for i := range 3 {
		os.WriteFile(filepath.Join(src, "scribe", "testdata", "locator", fmt.Sprintf("note%d.txt", i)), []byte(fmt.Sprintf("note %d", i)), 0o600)
	}
	file := filepath.Join(t.TempDir(), "suite.tar.gz")
	out, errOut, code := runCLI(home, "", []string{"plugin", "package", src, "--out", file}, nil)
	if code != 0 || !strings.Contains(out, "packed notes-suite 1.0.0 into "+file) {
		t.Fatalf("package: %d %s %s", code, out, errOut)
	}
	out, errOut, code = runCLI(home, "", []string{"plugin", "inspect", file, "--json"}, nil)
	var rep struct {
		Digest   string `json:"digest"`
		Signed   bool   `json:"signed"`
		SignedBy string `json:"signed_by"`
		Modules  []struct {
			Name          string `json:"name"`
			ConsentDigest string `json:"consent_digest"`
		} `json:"modules"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Signed || len(rep.Modules) != 2 || rep.Digest == "" {
		t.Fatalf("inspect: %d %s %s", code, out, errOut)
	}
	keys := filepath.Join(t.TempDir(), "keys", "release")
	if _, errOut, code := runCLI(home, "", []string{"source", "keygen", "--out", keys}, nil); code != 0 {
		t.Fatalf("keygen: %s", errOut)
	}
	pub, _ := os.ReadFile(keys + ".pub")
	if out, errOut, code := runCLI(home, "", []string{"plugin", "sign", file, "--key", keys + ".key"}, nil); code != 0 || !strings.Contains(out, "signed notes-suite 1.0.0") {
		t.Fatalf("sign: %d %s %s", code, out, errOut)
	}
	out, errOut, code = runCLI(home, "", []string{"plugin", "inspect", file}, nil)
	if code != 0 || !strings.Contains(out, "signature       good, by "+strings.TrimSpace(string(pub))) || !strings.Contains(out, "content digest  "+rep.Digest) ||
		!strings.Contains(out, "read the environment variable NOTES_TOKEN") {
		t.Fatalf("inspect signed: %d %s %s", code, out, errOut)
	}
	out, errOut, code = runCLI(home, "", []string{"plugin", "test", src}, nil)
	if code == 0 || strings.Count(out, "conformance cases passed") != 1 || !strings.Contains(out, "module scribe: scribe failed 1 of") ||
		!strings.Contains(out, "FAIL  a foreign cursor refused") || !strings.Contains(errOut, "1 of 2 modules failed: scribe") {
		t.Fatalf("test: %d %s %s", code, out, errOut)
	}
	// An archive is tested with --locator.
	loc := filepath.Join(src, "scribe", "testdata", "locator")
	if out, errOut, code := runCLI(home, "", []string{"plugin", "test", file}, nil); code == 0 || !strings.Contains(errOut, "--locator") {
		t.Fatalf("test of an archive without --locator: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := runCLI(home, "", []string{"plugin", "test", file, "--locator", loc}, nil); code == 0 || strings.Count(out, "conformance cases passed") != 1 {
		t.Fatalf("test of an archive: %d %s %s", code, out, errOut)
	}

	d := start(t, home, palace)
	out, errOut, code = d.cli("", "plugin", "install", file)
	if code == 0 || !strings.Contains(errOut, "loci::source::consent_required") || !strings.Contains(errOut, "scribe") || strings.Contains(out, "installed") {
		t.Fatalf("install without a terminal: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/source-packages/scribe", nil); r.status != 404 {
		t.Fatalf("installed without consent: %s", r.raw)
	}
	out, errOut, code = d.cli("", "plugin", "install", file, "--yes")
	if code != 0 || !strings.Contains(out, "installed the plugin notes-suite 1.0.0 (local)") || !strings.Contains(out, "source scribe 1.0.0: installed") ||
		!strings.Contains(errOut, "read the environment variable NOTES_TOKEN") {
		t.Fatalf("install --yes: %d %s %s", code, out, errOut)
	}
	if out, _, code := d.cli("", "plugin", "list"); code != 0 || !strings.Contains(out, "notes-suite 1.0.0 (local)") || !strings.Contains(out, "scribe") {
		t.Fatalf("list: %d %s", code, out)
	}
	if out, errOut, code := d.cli("", "source", "remove", "scribe"); code == 0 || !strings.Contains(errOut, "loci::source::plugin_provided") {
		t.Fatalf("source remove of a plugin's source: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := d.cli("", "plugin", "remove", "notes-suite"); code != 0 || !strings.Contains(out, "removed the plugin notes-suite") {
		t.Fatalf("remove: %d %s %s", code, out, errOut)
	}
}

// signedPluginRegistry writes a registry in dir whose index lists one
// plugin, id 1.0.0 carrying the source package p, signed inside its
// archive by a new key: the key's public half and the archive.
func signedPluginRegistry(t *testing.T, dir, id, description string, p *pack.Package) (ed25519.PublicKey, []byte) {
	t.Helper()
	plug, _ := notesPlugin(t, id, "1.0.0", p)
	pub, key, err := pack.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	plug.Sign(key)
	arc, err := plug.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	file := id + "-1.0.0.tar.gz"
	ib, _ := json.Marshal(map[string]any{"version": pack.IndexFormat, "sources": []any{}, "plugins": []any{map[string]any{
		"id": id, "description": description,
		"versions": []any{map[string]any{"version": "1.0.0", "archive": file, "sha256": pack.Digest(arc), "size": len(arc), "contract": 1}},
	}}})
	for name, b := range map[string][]byte{file: arc, pack.IndexFile: ib} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return pub, arc
}

// The plugin registry routes over a registry in a folder (index.json
// listing the plugin under "plugins", the archive beside it): search
// finds it, show fetches and verifies it and installs nothing (the
// consent digests, the archive digest, the key that vouched), install
// with a stale archive digest is refused, with the shown one it installs
// its modules not enabled, origin registry, signed_by the trusted key.
func TestPluginRegistry(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	reg := t.TempDir()
	p, _ := notesPackage(t, "scribe", "1.0.0", notesPerms, guestModule(t))
	pub, arc := signedPluginRegistry(t, reg, "notes-suite", "notes, twice", p)
	cfg := filepath.Join(home, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[mining]\nregistries = [%q]\ntrusted_keys = [%q]\nsignature_policy = \"required\"\n",
		filepath.Join(reg, pack.IndexFile), pack.FormatPublicKey(pub))), 0o600)
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)

	s := d.do("GET", "/api/plugin-registry/search?q=notes", nil)
	if s.status != 200 || len(get[[]any](s.body, "entries")) != 1 || get[string](get[[]any](s.body, "entries")[0].(map[string]any), "name") != "notes-suite" {
		t.Fatalf("search: %d %s", s.status, s.raw)
	}
	digest := pack.ConsentDigest("scribe", p.Manifest.Permissions)
	show := d.do("GET", "/api/plugin-registry/plugins/notes-suite", nil)
	if show.status != 200 || get[string](show.body, "archive_digest") != pack.Digest(arc) || get[string](show.body, "consents", "scribe") != digest ||
		get[string](show.body, "plugin", "signed_by") != pack.FormatPublicKey(pub) || get[string](show.body, "plugin", "origin") != "registry" {
		t.Fatalf("show: %d %s", show.status, show.raw)
	}
	if l := d.do("GET", "/api/plugins", nil); len(get[[]any](l.body, "plugins")) != 0 {
		t.Fatalf("show installed: %s", l.raw)
	}
	stale := map[string]any{"id": "notes-suite", "consents": map[string]string{"scribe": digest}, "archive_digest": strings.Repeat("0", 64)}
	if r := d.do("POST", "/api/plugin-registry/install", stale); r.status != 502 || r.code() != "loci::source::integrity" {
		t.Fatalf("install with a stale digest: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/plugin-registry/install", map[string]any{"id": "notes-suite"}); r.status != 400 || r.code() != "loci::source::consent_required" {
		t.Fatalf("install without consent: %d %s", r.status, r.raw)
	}
	r := d.do("POST", "/api/plugin-registry/install", map[string]any{"id": "notes-suite", "consents": map[string]string{"scribe": digest}, "archive_digest": pack.Digest(arc)})
	if r.status != 201 || get[string](r.body, "plugin", "origin") != "registry" || get[string](r.body, "plugin", "signed_by") != pack.FormatPublicKey(pub) {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	if sp := d.do("GET", "/api/source-packages/scribe", nil); get[string](sp.body, "state") != "installed" || get[string](sp.body, "plugin") != "notes-suite" {
		t.Fatalf("the module: %s", sp.raw)
	}
}

package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/installed"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/sandbox"
)

var (
	guestOnce sync.Once
	guestWasm []byte
	guestErr  error
)

// guestModule is testdata/notesguest built for wasip1: a real module.
func guestModule(t *testing.T) []byte {
	t.Helper()
	guestOnce.Do(func() {
		dir, err := os.MkdirTemp("", "loci-guest-")
		if err != nil {
			guestErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "notes.wasm")
		cmd := exec.Command("go", "build", "-o", out, "./testdata/notesguest")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b, err := cmd.CombinedOutput(); err != nil {
			guestErr = err
			guestWasm = b
			return
		}
		guestWasm, guestErr = os.ReadFile(out)
	})
	if guestErr != nil {
		t.Fatalf("building the guest: %v\n%s", guestErr, guestWasm)
	}
	return guestWasm
}

// notesPackage is the guest packaged as name at version, asking for perms
// (TOML lines of [permissions]).
func notesPackage(t *testing.T, name, version, perms string, module []byte) (*pack.Package, []byte) {
	t.Helper()
	mb := []byte("contract = 1\nname = \"" + name + "\"\nversion = \"" + version + "\"\ndescription = \"the notes of a folder\"\n" +
		"module = \"notes.wasm\"\n[source]\nincremental = true\n[permissions]\n" + perms)
	m, err := pack.ParseManifest(mb)
	if err != nil {
		t.Fatal(err)
	}
	p := &pack.Package{Manifest: m, ManifestBytes: mb, Module: module}
	var b bytes.Buffer
	if err := p.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	return p, b.Bytes()
}

// needsSandbox skips a test that runs a module while the sandbox and the
// installed adapter are the skeleton's stubs (issue 29's other branches,
// "not built yet"); once they are built it runs, and any other failure
// of theirs fails it.
func needsSandbox(t *testing.T) {
	t.Helper()
	p, _ := notesPackage(t, "notes", "1.0.0", "read = [\"locator\"]\n", guestModule(t))
	stub := func(err error) bool { return err != nil && strings.Contains(err.Error(), "not built yet") }
	call := func(context.Context, sandbox.Grants, *contract.Request) (*contract.Answer, error) {
		return nil, errors.New("not called")
	}
	if _, err := installed.New(p, call, installed.Options{Timeout: time.Second}); stub(err) {
		t.Skipf("needs the installed adapter (sources/installed): %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	rt, err := sandbox.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	if _, err := rt.Compile(context.Background(), p.ModuleDigest(), p.Module); stub(err) {
		t.Skipf("needs the sandbox (sources/sandbox): %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

const notesPerms = "read = [\"locator\"]\nenv = [\"NOTES_TOKEN\"]\n"

func install(d *daemon, archive []byte, query string, headers ...string) response {
	d.t.Helper()
	return d.do("POST", "/api/source-packages"+query, string(archive), headers...)
}

// Installing asks for consent: without it (or with another package's
// digest) 400 consent_required with the digest and the permissions in
// words, nothing installed; with it, installed. An update asking for
// less needs none, one asking for more needs new consent.
func TestSourcePackageConsent(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	mod := guestModule(t)
	p, arc := notesPackage(t, "notes", "1.0.0", notesPerms, mod)
	digest := pack.ConsentDigest("notes", p.Manifest.Permissions)

	r := install(d, arc, "")
	if r.status != 400 || r.code() != "loci::source::consent_required" || !strings.Contains(r.raw, digest) ||
		!strings.Contains(r.raw, "read the folder a miner points it at") || !strings.Contains(r.raw, "read the environment variable NOTES_TOKEN") ||
		!strings.Contains(get[string](r.body, "help"), "--consent "+digest) {
		t.Fatalf("install without consent: %d %s", r.status, r.raw)
	}
	other, _ := notesPackage(t, "other-notes", "1.0.0", notesPerms, mod)
	if r := install(d, arc, "?consent="+pack.ConsentDigest("other-notes", other.Manifest.Permissions)); r.status != 400 || r.code() != "loci::source::consent_required" {
		t.Fatalf("install with another package's digest: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-packages/notes", nil); r.status != 404 || r.code() != "loci::source::not_found" {
		t.Fatalf("a refused install left a source: %d %s", r.status, r.raw)
	}
	if ents, _ := os.ReadDir(filepath.Join(palace, "sources")); len(ents) != 0 {
		t.Fatalf("a refused install left files: %v", ents)
	}

	r = install(d, arc, "?consent="+digest)
	if r.status != 201 || get[string](r.body, "replaced") != "" || get[string](r.body, "source", "name") != "notes" ||
		get[string](r.body, "source", "origin") != "local" || get[string](r.body, "source", "version") != "1.0.0" ||
		get[string](r.body, "source", "consent_digest") != digest || get[string](r.body, "source", "module_sha256") != p.ModuleDigest() {
		t.Fatalf("install with consent: %d %s", r.status, r.raw)
	}
	show := d.do("GET", "/api/source-packages/notes", nil)
	if show.status != 200 || len(get[[]any](show.body, "permission_words")) != 3 || get[string](show.body, "description") != "the notes of a folder" ||
		get[[]any](show.body, "permissions", "env")[0] != "NOTES_TOKEN" {
		t.Fatalf("show: %d %s", show.status, show.raw)
	}
	list := d.do("GET", "/api/source-packages", nil)
	if list.status != 200 || get[string](named(list.body, "sources", "notes"), "origin") != "local" ||
		get[string](named(list.body, "sources", "directory"), "origin") != "built-in" {
		t.Fatalf("list: %d %s", list.status, list.raw)
	}

	// Less: no consent asked.
	_, less := notesPackage(t, "notes", "1.1.0", "read = [\"locator\"]\n", mod)
	if r := install(d, less, ""); r.status != 200 || get[string](r.body, "replaced") != "1.0.0" || get[string](r.body, "source", "version") != "1.1.0" {
		t.Fatalf("an update asking for less: %d %s", r.status, r.raw)
	}
	// More: new consent.
	more, moreArc := notesPackage(t, "notes", "2.0.0", notesPerms+"network = true\n", mod)
	if r := install(d, moreArc, "?consent="+digest); r.status != 400 || r.code() != "loci::source::consent_required" || !strings.Contains(r.raw, "use the network") {
		t.Fatalf("an update asking for more with the old consent: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-packages/notes", nil); get[string](r.body, "version") != "1.1.0" {
		t.Fatalf("a refused update changed the source: %s", r.raw)
	}
	if r := install(d, moreArc, "?consent="+pack.ConsentDigest("notes", more.Manifest.Permissions)); r.status != 200 || get[string](r.body, "replaced") != "1.1.0" {
		t.Fatalf("an update with new consent: %d %s", r.status, r.raw)
	}
	got, err := pack.ReadDir(filepath.Join(palace, "sources", "notes"))
	if err != nil || got.Manifest.Version != "2.0.0" || !bytes.Equal(got.Module, mod) {
		t.Fatalf("the files: %v", err)
	}

	// Bad bodies: 400 naming the problem, 413 past 64 MiB.
	if r := install(d, []byte("not a package"), ""); r.status != 400 || r.code() != "loci::input::invalid" {
		t.Fatalf("a body that is no package: %d %s", r.status, r.raw)
	}
	if r := install(d, nil, ""); r.status != 400 || r.code() != "loci::input::invalid" {
		t.Fatalf("no body: %d %s", r.status, r.raw)
	}
	if r := install(d, bytes.Repeat([]byte{0}, 64<<20+1), ""); r.status != 413 || r.code() != "loci::input::too_large" {
		t.Fatalf("a body past 64 MiB: %d %s", r.status, r.raw)
	}
	if r := install(d, arc, "?enable=maybe"); r.status != 400 || r.code() != "loci::input::invalid" {
		t.Fatalf("a bad enable: %d %s", r.status, r.raw)
	}
	if r := install(d, arc, "?force=true"); r.status != 400 {
		t.Fatalf("an unknown query: %d %s", r.status, r.raw)
	}
}

// A module changed on disk makes its source unavailable at the next read
// and at the next start, with the reason; a mine of it is refused.
func TestSourcePackageTamperedModule(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[miners.jotter]\nsource = \"notes\"\nlocator = %q\nwing = \"notes\"\nenabled = true\n", t.TempDir())), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	_, arc := notesPackage(t, "notes", "1.0.0", "", guestModule(t))
	if r := install(d, arc, "?enable=true"); r.status != 201 {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	mod := filepath.Join(palace, "sources", "notes", "notes.wasm")
	b, _ := os.ReadFile(mod)
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(mod, b, 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		// The mine first: its submission loads the packages again.
		job := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": "notes", "locator": t.TempDir(), "wing": "notes"})
		if job.status != 409 || job.code() != "loci::source::unavailable" || !strings.Contains(job.raw, "changed on disk") {
			t.Fatalf("%s: a mine of a tampered source: %d %s", when, job.status, job.raw)
		}
		r := d.do("GET", "/api/source-packages/notes", nil)
		if r.status != 200 || get[string](r.body, "state") != "unavailable" ||
			!strings.Contains(get[string](r.body, "reason"), "the module changed on disk since it was installed (sha256 "+pack.Digest(b)) {
			t.Fatalf("%s: %d %s", when, r.status, r.raw)
		}
		m := d.do("GET", "/api/miners/jotter", nil)
		if get[string](m.body, "state") != "unavailable" || !strings.Contains(get[string](m.body, "reason"), "the module changed on disk") {
			t.Fatalf("%s: the miner of a tampered source: %s", when, m.raw)
		}
		if run := d.do("POST", "/api/miners/jotter/run", nil); run.status != 409 {
			t.Fatalf("%s: running the miner of a tampered source: %d %s", when, run.status, run.raw)
		}
		l := d.do("GET", "/api/sources", nil)
		if a := named(l.body, "adapters", "notes"); a["state"] != "unavailable" || a["origin"] != "local" || !strings.HasPrefix(get[string](a, "reason"), "the module changed on disk") {
			t.Fatalf("%s: GET /api/sources: %s", when, l.raw)
		}
	}
	check("at the next read")
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	d = start(t, home, palace, "LOCI_CONFIG="+cfg)
	check("after a restart")
}

// Built-in sources are neither removed, disabled nor replaced; enabling
// one changes nothing; show tells its origin.
func TestSourcePackageBuiltIn(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/api/source-packages/directory"},
		{"POST", "/api/source-packages/directory/disable"},
	} {
		if r := d.do(c.method, c.path, nil); r.status != 400 || r.code() != "loci::source::builtin" {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.raw)
		}
	}
	_, arc := notesPackage(t, "directory", "1.0.0", "", guestModule(t))
	if r := install(d, arc, ""); r.status != 400 || r.code() != "loci::source::builtin" {
		t.Fatalf("replacing a built-in: %d %s", r.status, r.raw)
	}
	for _, path := range []string{"/api/source-packages/directory/enable", "/api/source-packages/directory"} {
		method := "GET"
		if strings.HasSuffix(path, "/enable") {
			method = "POST"
		}
		r := d.do(method, path, nil)
		if r.status != 200 || get[string](r.body, "origin") != "built-in" || get[string](r.body, "state") != "enabled" || r.body["permissions"] != nil {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.raw)
		}
	}
	for _, path := range []string{"/api/source-packages/nothing", "/api/source-packages/nothing/enable"} {
		method := "GET"
		if strings.HasSuffix(path, "/enable") {
			method = "POST"
		}
		if r := d.do(method, path, nil); r.status != 404 || r.code() != "loci::source::not_found" {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.raw)
		}
	}
	if r := d.do("DELETE", "/api/source-packages/nothing", nil); r.status != 404 {
		t.Fatalf("remove an unknown source: %d %s", r.status, r.raw)
	}
}

// Every source package route needs the token when authentication is on,
// and none is gated by the memory mode (read_only may install).
func TestSourcePackageRoutesNeedAuthNotMode(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const token = "a-long-enough-secret-for-tests"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+token)
	_, arc := notesPackage(t, "notes", "1.0.0", "", guestModule(t))
	routes := []authRoute{
		{"GET", "/api/source-packages", ""},
		{"POST", "/api/source-packages", string(arc)},
		{"GET", "/api/source-packages/notes", ""},
		{"POST", "/api/source-packages/notes/enable", ""},
		{"POST", "/api/source-packages/notes/disable", ""},
		{"DELETE", "/api/source-packages/notes", ""},
	}
	refusedWithoutToken(t, d, routes)
	if ents, _ := os.ReadDir(filepath.Join(palace, "sources")); len(ents) != 0 {
		t.Fatalf("an unauthenticated install left files: %v", ents)
	}
	want := []int{200, 201, 200, 200, 200, 200}
	for i, rt := range routes {
		r := d.do(rt.method, rt.path, rt.payload(), "Authorization", "Bearer "+token, "X-Loci-Mode", "read_only")
		if r.status != want[i] {
			t.Fatalf("%s %s with the token in read_only mode: %d %s", rt.method, rt.path, r.status, r.raw)
		}
	}
	if r := d.do("GET", "/api/source-packages/notes", nil, "Authorization", "Bearer "+token); r.status != 404 {
		t.Fatalf("removed: %d %s", r.status, r.raw)
	}
}

// authRoute is a route under an authentication test; body "" is none.
type authRoute struct{ method, path, body string }

// payload is rt's body for d.do: nil when it has none.
func (rt authRoute) payload() any {
	if rt.body == "" {
		return nil
	}
	return rt.body
}

// refusedWithoutToken checks that every route answers 401
// loci::auth::unauthorized without a token, and 401 with a wrong one.
func refusedWithoutToken(t *testing.T, d *daemon, routes []authRoute) {
	t.Helper()
	for _, rt := range routes {
		if r := d.do(rt.method, rt.path, rt.payload()); r.status != 401 || r.code() != "loci::auth::unauthorized" {
			t.Fatalf("%s %s without a token: %d %s", rt.method, rt.path, r.status, r.raw)
		}
		if r := d.do(rt.method, rt.path, rt.payload(), "Authorization", "Bearer wrong-token-of-some-length"); r.status != 401 {
			t.Fatalf("%s %s with a wrong token: %d %s", rt.method, rt.path, r.status, r.raw)
		}
	}
}

// No MCP tool installs, changes or removes a source: an agent never
// installs code. The only source tools read source configurations.
func TestNoMCPToolTouchesSourcePackages(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	s := mcpSession(t, d)
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 10 {
		t.Fatalf("tools/list: %v %v", err, tools)
	}
	bad := regexp.MustCompile(`package|install|plugin|registry|consent|enable|disable|remove`)
	for _, tool := range tools.Tools {
		text := tool.Name + " " + tool.Description
		if bad.MatchString(tool.Name) || (strings.Contains(tool.Name, "source") && tool.Name != "loci_source_config_list" && tool.Name != "loci_source_config_get") {
			t.Fatalf("an MCP tool touches sources: %s", text)
		}
	}
}

// Enable and disable are idempotent and what the registry runs follows
// them. Needs the sandbox and the installed adapter.
func TestSourcePackageEnableDisable(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[miners.jotter]\nsource = \"notes\"\nlocator = %q\nwing = \"notes\"\nenabled = true\n", t.TempDir())), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	_, arc := notesPackage(t, "notes", "1.0.0", "read = [\"locator\"]\n", guestModule(t))
	if r := install(d, arc, "?consent="+consentOf(t, "notes", "read = [\"locator\"]\n")); r.status != 201 || get[string](r.body, "source", "state") != "installed" {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	for _, c := range []struct{ action, state, miner string }{{"enable", "enabled", "ready"}, {"enable", "enabled", "ready"}, {"disable", "disabled", "unavailable"}, {"disable", "disabled", "unavailable"}} {
		r := d.do("POST", "/api/source-packages/notes/"+c.action, nil)
		if r.status != 200 || get[string](r.body, "state") != c.state {
			t.Fatalf("%s: %d %s", c.action, r.status, r.raw)
		}
		m := d.do("GET", "/api/miners/jotter", nil)
		if get[string](m.body, "state") != c.miner || (c.miner == "unavailable" && !strings.Contains(get[string](m.body, "reason"), "disabled")) {
			t.Fatalf("the miner after %s: %s", c.action, m.raw)
		}
	}
	job := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": "notes", "locator": t.TempDir(), "wing": "notes"})
	if job.status != 409 || job.code() != "loci::source::not_enabled" {
		t.Fatalf("a mine of a disabled source: %d %s", job.status, job.raw)
	}
}

// A mine with an installed source files drawers; removing the package
// keeps them. Needs the sandbox and the installed adapter.
func TestSourcePackageRemoveKeepsDrawers(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	d := start(t, home, palace)
	_, arc := notesPackage(t, "notes", "1.0.0", "read = [\"locator\"]\n", guestModule(t))
	if r := install(d, arc, "?enable=true&consent="+consentOf(t, "notes", "read = [\"locator\"]\n")); r.status != 201 {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	dir := t.TempDir()
	for _, n := range []string{"alpha", "beta"} {
		os.WriteFile(filepath.Join(dir, n+".txt"), []byte("the "+n+" note says the lease timeout moved to ninety seconds"), 0o600)
	}
	job := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": "notes", "locator": dir, "wing": "notes"})
	if job.status != 202 {
		t.Fatalf("mine: %d %s", job.status, job.raw)
	}
	j := waitJob(t, d, get[string](job.body, "id"), time.Minute, finished)
	if j["status"] != "completed" {
		t.Fatalf("the mine: %v", j)
	}
	before := counts(d)
	if r := d.do("DELETE", "/api/source-packages/notes", nil); r.status != 200 || get[string](r.body, "removed") != "notes" {
		t.Fatalf("remove: %d %s", r.status, r.raw)
	}
	if _, err := os.Stat(filepath.Join(palace, "sources", "notes")); !os.IsNotExist(err) {
		t.Fatalf("the files stay: %v", err)
	}
	if after := counts(d); after != before || !strings.Contains(before, "drawers:2") {
		t.Fatalf("removing the source changed what it mined: %s -> %s", before, after)
	}
}

// named is the object named name in the list at key of body.
func named(body map[string]any, key, name string) map[string]any {
	for _, x := range get[[]any](body, key) {
		if m, ok := x.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

func consentOf(t *testing.T, name, perms string) string {
	t.Helper()
	p, _ := notesPackage(t, name, "1.0.0", perms, guestModule(t))
	return pack.ConsentDigest(name, p.Manifest.Permissions)
}

// loci source install never consents without a terminal: it shows the
// permissions and the digest and fails with consent_required; --yes and
// --consent consent; a folder is packed and sent; show, enable,
// disable, remove and list say what the daemon holds.
func TestSourcePackageCLI(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	mod := guestModule(t)
	p, arc := notesPackage(t, "notes", "1.0.0", notesPerms, mod)
	digest := pack.ConsentDigest("notes", p.Manifest.Permissions)
	file := filepath.Join(t.TempDir(), "notes-1.0.0.tar.gz")
	if err := os.WriteFile(file, arc, 0o600); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := d.cli("", "source", "install", file)
	if code == 0 || !strings.Contains(errOut, "loci::source::consent_required") || !strings.Contains(errOut, digest) ||
		!strings.Contains(errOut, "read the environment variable NOTES_TOKEN") || strings.Contains(out, "installed") {
		t.Fatalf("install without a terminal: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/source-packages/notes", nil); r.status != 404 {
		t.Fatalf("installed without consent: %s", r.raw)
	}
	if out, errOut, code := d.cli("", "source", "install", file, "--consent", pack.ConsentDigest("other", p.Manifest.Permissions)); code == 0 ||
		!strings.Contains(errOut, "loci::source::consent_required") {
		t.Fatalf("install with another digest: %d %s %s", code, out, errOut)
	}
	out, errOut, code = d.cli("", "source", "install", file, "--yes")
	if code != 0 || !strings.Contains(out, "installed the notes source 1.0.0 (local, ") || !strings.Contains(errOut, "read the folder a miner points it at") {
		t.Fatalf("install --yes: %d %s %s", code, out, errOut)
	}

	// A folder (a project's build output), asking for more: --consent.
	more, _ := notesPackage(t, "notes", "1.1.0", notesPerms+"programs = [\"git\"]\n", mod)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, pack.ManifestFile), more.ManifestBytes, 0o600)
	os.WriteFile(filepath.Join(dir, "notes.wasm"), mod, 0o600)
	if out, errOut, code := d.cli("", "source", "install", dir); code == 0 || !strings.Contains(errOut, "run the program git") {
		t.Fatalf("an update asking for more without consent: %d %s %s", code, out, errOut)
	}
	out, errOut, code = d.cli("", "source", "install", dir, "--consent", pack.ConsentDigest("notes", more.Manifest.Permissions), "--enable")
	if code != 0 || !strings.Contains(out, "installed the notes source 1.1.0") || !strings.Contains(out, "it replaced version 1.0.0") {
		t.Fatalf("install DIR --consent: %d %s %s", code, out, errOut)
	}

	out, errOut, code = d.cli("", "source", "show", "notes")
	if code != 0 || !strings.Contains(out, "origin:   local") || !strings.Contains(out, "run the program git as you, with any arguments") ||
		!strings.Contains(out, "consent digest: "+pack.ConsentDigest("notes", more.Manifest.Permissions)) {
		t.Fatalf("show: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := d.cli("", "source", "show", "directory"); code != 0 || !strings.Contains(out, "origin:   built-in") {
		t.Fatalf("show a built-in: %d %s %s", code, out, errOut)
	}
	for _, act := range []string{"disable", "enable"} {
		if out, errOut, code := d.cli("", "source", act, "notes"); code != 0 || !strings.HasPrefix(out, "notes: ") {
			t.Fatalf("%s: %d %s %s", act, code, out, errOut)
		}
	}
	if _, errOut, code := d.cli("", "source", "disable", "directory"); code == 0 || !strings.Contains(errOut, "loci::source::builtin") {
		t.Fatalf("disable a built-in: %d %s", code, errOut)
	}

	// list says why a source cannot run.
	modPath := filepath.Join(palace, "sources", "notes", "notes.wasm")
	os.WriteFile(modPath, append(append([]byte{}, mod...), 0), 0o600)
	out, errOut, code = d.cli("", "source", "list")
	if code != 0 || !regexp.MustCompile(`notes\s+unavailable, local`).MatchString(out) || !strings.Contains(out, "why unavailable: the module changed on disk") {
		t.Fatalf("list: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := d.cli("", "source", "remove", "notes"); code != 0 || !strings.Contains(out, "removed the notes source") {
		t.Fatalf("remove: %d %s %s", code, out, errOut)
	}
	if out, _, _ := d.cli("", "source", "list"); strings.Contains(out, "notes") {
		t.Fatalf("listed after removal: %s", out)
	}
}

// The bundled packages are there from the start, enabled, with origin
// bundled and no consent asked; they may be disabled (kept across a
// restart) but neither removed nor replaced.
func TestSourcePackageBundled(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	var name string
	for _, x := range get[[]any](d.do("GET", "/api/source-packages", nil).body, "sources") {
		if m := x.(map[string]any); m["origin"] == "bundled" {
			name, _ = m["name"].(string)
			if m["state"] != "enabled" || len(get[[]any](m, "permission_words")) == 0 || get[string](m, "module_sha256") == "" {
				t.Fatalf("a bundled source at start: %v", m)
			}
		}
	}
	if name == "" {
		t.Skip("this build bundles no source package yet (sources/bundled.Packages, wired in cmd/loci/bundled.go)")
	}
	if r := d.do("DELETE", "/api/source-packages/"+name, nil); r.status != 400 || r.code() != "loci::source::bundled" {
		t.Fatalf("remove a bundled source: %d %s", r.status, r.raw)
	}
	_, arc := notesPackage(t, name, "9.0.0", "", guestModule(t))
	if r := install(d, arc, ""); r.status != 400 || r.code() != "loci::source::bundled" {
		t.Fatalf("replace a bundled source: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/source-packages/"+name+"/disable", nil); r.status != 200 || get[string](r.body, "state") != "disabled" {
		t.Fatalf("disable a bundled source: %d %s", r.status, r.raw)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	d = start(t, home, palace)
	if r := d.do("GET", "/api/source-packages/"+name, nil); get[string](r.body, "state") != "disabled" || get[string](r.body, "origin") != "bundled" {
		t.Fatalf("a disabled bundled source after a restart: %s", r.raw)
	}
	if r := d.do("POST", "/api/source-packages/"+name+"/enable", nil); r.status != 200 || get[string](r.body, "state") != "enabled" {
		t.Fatalf("enable a bundled source: %d %s", r.status, r.raw)
	}
}

package main_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/pack"
)

// deviceServer is an OAuth 2.0 authorisation server for the device flow
// (RFC 8628) and refresh (RFC 6749 6), written for the tests with each
// flow's documented messages: a device code waits (authorization_pending)
// until the test approves, declines (access_denied) or expires
// (expired_token) it; a refresh is answered with new tokens until the
// test makes it refuse (invalid_grant).
type deviceServer struct {
	*httptest.Server
	mu        sync.Mutex
	codes     map[string]string // user code → device code
	state     map[string]string // device code → pending, approve, deny, expire
	refresh   map[string]bool   // refresh tokens it honours
	refuse    bool
	expiresIn int
	// issued are every access and refresh token it gave, for the tests
	// to look for where none may be.
	issued   []string
	accesses []string
	scope    string
}

func newDeviceServer(t *testing.T) *deviceServer {
	s := &deviceServer{codes: map[string]string{}, state: map[string]string{}, refresh: map[string]bool{}, expiresIn: 3600}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /device", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_id") != "loci-test" {
			oauthError(w, "invalid_client")
			return
		}
		s.mu.Lock()
		dc, uc := random(16), strings.ToUpper(random(4))
		s.codes[uc], s.state[dc], s.scope = dc, "pending", r.FormValue("scope")
		s.mu.Unlock()
		writeJSONTo(w, map[string]any{"device_code": dc, "user_code": uc, "verification_uri": s.URL + "/activate",
			"expires_in": 600, "interval": 1})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch r.FormValue("grant_type") {
		case "urn:ietf:params:oauth:grant-type:device_code":
			switch s.state[r.FormValue("device_code")] {
			case "pending":
				oauthError(w, "authorization_pending")
			case "deny":
				oauthError(w, "access_denied")
			case "expire":
				oauthError(w, "expired_token")
			case "approve":
				delete(s.state, r.FormValue("device_code"))
				s.issue(w)
			default:
				oauthError(w, "invalid_grant")
			}
		case "refresh_token":
			rt := r.FormValue("refresh_token")
			if s.refuse || !s.refresh[rt] {
				oauthError(w, "invalid_grant")
				return
			}
			delete(s.refresh, rt)
			s.issue(w)
		default:
			oauthError(w, "unsupported_grant_type")
		}
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// issue answers new tokens (s.mu held).
func (s *deviceServer) issue(w http.ResponseWriter) {
	at, rt := "at-"+random(24), "rt-"+random(24)
	s.refresh[rt] = true
	s.issued = append(s.issued, at, rt)
	s.accesses = append(s.accesses, at)
	writeJSONTo(w, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": s.expiresIn, "scope": s.scope})
}

// set makes the device code of user code uc approve, deny or expire.
func (s *deviceServer) set(uc, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[s.codes[uc]] = to
}

func (s *deviceServer) tokens() (issued, accesses []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.issued...), append([]string{}, s.accesses...)
}

func oauthError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func writeJSONTo(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// signInDaemon starts a daemon logging at debug with the source notes
// installed and enabled, declaring the sign-in oauth (TOML lines of its
// [oauth] table): the daemon, its answers, and its events as they come.
func signInDaemon(t *testing.T, home, palace, oauth string) (*daemon, *answers, func() string) {
	t.Helper()
	d := start(t, home, palace, "LOCI_LOG=debug")
	rc := &answers{d: d}
	evs := events(t, d)
	digest, arc := signinPackage(t, "notes", oauth)
	if r, _ := rc.do("POST", "/api/source-packages?consent="+digest+"&enable=true", arc); r.status != 201 {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	return d, rc, evs
}

// signinPackage is the notes guest as the source name, declaring the
// sign-in oauth (TOML lines of its [oauth] table).
func signinPackage(t *testing.T, name, oauth string) (digest string, archive []byte) {
	t.Helper()
	mb := []byte("contract = 1\nname = \"" + name + "\"\nversion = \"1.0.0\"\nmodule = \"notes.wasm\"\n[source]\nincremental = true\n" +
		"[permissions]\nread = [\"locator\"]\n[oauth]\n" + oauth)
	m, err := pack.ParseManifest(mb)
	if err != nil {
		t.Fatal(err)
	}
	p := &pack.Package{Manifest: m, ManifestBytes: mb, Module: guestModule(t)}
	var b strings.Builder
	if err := p.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	return pack.ConsentDigest(name, m.Permissions), []byte(b.String())
}

// answers does d.do with the answer's headers, every answer kept
// (bodies to look for tokens in).
type answers struct {
	d      *daemon
	mu     sync.Mutex
	bodies []string
}

func (rc *answers) do(method, path string, body any, headers ...string) (response, http.Header) {
	rc.d.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = strings.NewReader(string(b))
	default:
		j, _ := json.Marshal(b)
		rd = strings.NewReader(string(j))
	}
	req, _ := http.NewRequest(method, "http://"+rc.d.addr+path, rd)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rc.d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	rc.mu.Lock()
	rc.bodies = append(rc.bodies, r.raw)
	rc.mu.Unlock()
	return r, resp.Header
}

// events keeps every event frame the daemon sends from now on.
func events(t *testing.T, d *daemon) func() string {
	resp, err := http.Get("http://" + d.addr + "/api/events")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	var mu sync.Mutex
	var all strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			mu.Lock()
			all.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { resp.Body.Close(); <-done })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return all.String()
	}
}

// noSecretIn fails when any of secrets appears in what (a place named).
func noSecretIn(t *testing.T, place, what string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(what, s) {
			t.Fatalf("a token (%d bytes) is in %s", len(s), place)
		}
	}
}

// noSecretInFiles fails when any of secrets is in a file under dir.
func noSecretInFiles(t *testing.T, dir string, secrets []string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		noSecretIn(t, "the palace file "+p, string(b), secrets)
		return nil
	})
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// receivedToken is the hash the guest filed of the token it was handed
// (its drawer "received-token" in wing), "" when none.
func receivedToken(t *testing.T, rc *answers, wing string) string {
	t.Helper()
	rooms, _ := rc.do("GET", "/api/wings/"+wing+"/rooms", nil)
	hash := regexp.MustCompile(`sha256 ([0-9a-f]{64})`)
	for _, room := range get[[]any](rooms.body, "rooms") {
		name, _ := room.(map[string]any)["name"].(string)
		r, _ := rc.do("GET", "/api/wings/"+wing+"/rooms/"+name+"/drawers?limit=100", nil)
		if m := hash.FindStringSubmatch(r.raw); m != nil {
			return m[1]
		}
	}
	return ""
}

// Sign-in with the device flow against a real (loopback) authorisation
// server: a miner whose credential is oauth is refused at run until the
// source signs in (409 loci::credential::required); the flow's code is
// shown, its wait pending, then signed_in, where the token went said;
// the guest receives a fresh access token (refreshed before expiry: the
// server's tokens last less than the margin), never the refresh token;
// declined and expired flows fail (502 flow_failed); a refused refresh
// fails the run (refresh_failed) and the miner becomes unavailable,
// "sign in again". No token is in a palace file, the log, an event, a
// status answer or an error body; every answer says Cache-Control:
// no-store.
func TestSignInDeviceFlow(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	srv := newDeviceServer(t)
	srv.expiresIn = 60 // within the refresh margin: every run refreshes
	home, palace := newPalace(t)
	d, rc, evs := signInDaemon(t, home, palace, "provider = \"Test Device\"\nclient_id = \"loci-test\"\n"+
		"device_authorization_url = \""+srv.URL+"/device\"\ntoken_url = \""+srv.URL+"/token\"\nscopes = [\"notes.read\"]\n")
	r, _ := rc.do("GET", "/api/source-packages/notes", nil)
	if get[bool](r.body, "auth", "signed_in") || get[string](r.body, "auth", "provider") != "Test Device" || fmt.Sprint(get[[]any](r.body, "auth", "flows")) != "[device]" {
		t.Fatalf("the status before sign-in: %s", r.raw)
	}
	notes := t.TempDir()
	os.WriteFile(filepath.Join(notes, "a.txt"), []byte("a note about sign-in"), 0o600)
	if r, _ := rc.do("PUT", "/api/miners/signed", map[string]any{"source": "notes", "locator": notes, "wing": "signed", "enabled": true,
		"credential": map[string]any{"oauth": true}}); r.status != 201 || get[string](r.body, "miner", "credential", "kind") != "oauth" ||
		get[bool](r.body, "miner", "credential", "available") {
		t.Fatalf("put the miner: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("POST", "/api/miners/signed/run", nil); r.status != 409 || r.code() != "loci::credential::required" ||
		!strings.Contains(get[string](r.body, "help"), "loci source auth notes") {
		t.Fatalf("a run before sign-in: %d %s", r.status, r.raw)
	}
	// A trigger's run is refused the same way, and says so.
	if r, _ := rc.do("PUT", "/api/triggers/daily", map[string]any{"miner": "signed", "type": "schedule", "enabled": true,
		"settings": map[string]any{"every": "24h"}}); r.status != 201 {
		t.Fatalf("put the trigger: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("POST", "/api/triggers/daily/fire", nil); r.status != 409 || r.code() != "loci::credential::required" {
		t.Fatalf("firing the trigger before sign-in: %d %s", r.status, r.raw)
	}
	out, errOut, code := d.cli("", "miner", "run", "signed")
	if code == 0 || !strings.Contains(out+errOut, "loci::credential::required") {
		t.Fatalf("loci miner run before sign-in: %d %s %s", code, out, errOut)
	}

	// Sign in.
	r, h := rc.do("POST", "/api/source-packages/notes/auth", nil)
	uc := get[string](r.body, "user_code")
	if r.status != 200 || get[string](r.body, "kind") != "device" || uc == "" || get[string](r.body, "verification_uri") != srv.URL+"/activate" ||
		get[float64](r.body, "expires_in") < 500 || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("start: %d %v %s", r.status, h, r.raw)
	}
	flow := get[string](r.body, "flow")
	r, h = rc.do("POST", "/api/source-packages/notes/auth/"+flow+"/wait?timeout=1", nil)
	if r.status != 200 || get[string](r.body, "status") != "pending" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("wait while pending: %d %s", r.status, r.raw)
	}
	if r, h := rc.do("POST", "/api/source-packages/notes/auth/"+flow+"/wait?timeout=31", nil); r.status != 400 || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("a wait of 31 s: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("POST", "/api/source-packages/other/auth/"+flow+"/wait?timeout=0", nil); r.status == 200 {
		t.Fatalf("another source's wait finished this flow: %s", r.raw)
	}
	srv.set(uc, "approve")
	r, h = rc.do("POST", "/api/source-packages/notes/auth/"+flow+"/wait?timeout=30", nil)
	credDir := filepath.Join(home, ".config", "loci", "credentials", "oauth")
	if r.status != 200 || get[string](r.body, "status") != "signed_in" || !get[bool](r.body, "signed_in") || get[string](r.body, "source") != "notes" ||
		get[string](r.body, "expires_at") == "" || fmt.Sprint(get[[]any](r.body, "scopes")) != "[notes.read]" ||
		!strings.Contains(get[string](r.body, "stored_in"), credDir) || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("wait once approved: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("POST", "/api/source-packages/notes/auth/"+flow+"/wait?timeout=0", nil); r.status != 502 || r.code() != "loci::credential::flow_failed" {
		t.Fatalf("a flow reported twice: %d %s", r.status, r.raw)
	}
	ents, _ := os.ReadDir(credDir)
	if len(ents) == 0 {
		t.Fatalf("no token file in %s", credDir)
	}
	for _, e := range ents {
		if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
			t.Fatalf("the token file %s is %v", e.Name(), fi.Mode())
		}
	}
	r, _ = rc.do("GET", "/api/source-packages/notes", nil)
	if !get[bool](r.body, "auth", "signed_in") || get[string](r.body, "auth", "expires_at") == "" {
		t.Fatalf("the status once signed in: %s", r.raw)
	}
	if r, _ := rc.do("GET", "/api/miners/signed", nil); !get[bool](r.body, "credential", "available") || get[string](r.body, "state") != "ready" {
		t.Fatalf("the miner once signed in: %s", r.raw)
	}

	// A run: the guest is handed a fresh access token (refreshed: the
	// server's last only a minute), never the refresh token.
	r, _ = rc.do("POST", "/api/miners/signed/run", nil)
	if r.status != 202 {
		t.Fatalf("run once signed in: %d %s", r.status, r.raw)
	}
	job := waitJob(t, d, get[string](r.body, "id"), 60*time.Second, finished)
	if job["status"] != "completed" {
		t.Fatalf("the run: %v", job)
	}
	issued, accesses := srv.tokens()
	if len(accesses) != 2 {
		t.Fatalf("the server issued %d access tokens; want the sign-in's and the refresh's", len(accesses))
	}
	got := receivedToken(t, rc, "signed")
	if got != sha(accesses[1]) {
		t.Fatalf("the guest received a token hashing to %q, not the refreshed access token's", got)
	}

	// A new flow replaces a waiting one: the old one's wait fails.
	first, _ := rc.do("POST", "/api/source-packages/notes/auth", nil)
	second, _ := rc.do("POST", "/api/source-packages/notes/auth", nil)
	if r, _ := rc.do("POST", "/api/source-packages/notes/auth/"+get[string](first.body, "flow")+"/wait?timeout=1", nil); r.status != 502 || r.code() != "loci::credential::flow_failed" {
		t.Fatalf("the replaced flow's wait: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("POST", "/api/source-packages/notes/auth/"+get[string](second.body, "flow")+"/wait?timeout=0", nil); r.status != 200 || get[string](r.body, "status") != "pending" {
		t.Fatalf("the new flow's wait: %d %s", r.status, r.raw)
	}

	// Declined and expired flows: 502 flow_failed.
	for _, to := range []string{"deny", "expire"} {
		r, _ := rc.do("POST", "/api/source-packages/notes/auth", map[string]any{"kind": "device"})
		srv.set(get[string](r.body, "user_code"), to)
		r, h := rc.do("POST", "/api/source-packages/notes/auth/"+get[string](r.body, "flow")+"/wait?timeout=30", nil)
		if r.status != 502 || r.code() != "loci::credential::flow_failed" || h.Get("Cache-Control") != "no-store" {
			t.Fatalf("a flow the server answers %s: %d %s", to, r.status, r.raw)
		}
	}
	if r, _ := rc.do("POST", "/api/source-packages/notes/auth", map[string]any{"kind": "browser"}); r.status != 400 || r.code() != "loci::credential::oauth_unsupported" {
		t.Fatalf("a flow the source does not declare: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("POST", "/api/source-packages/directory/auth", nil); r.status != 400 || r.code() != "loci::credential::oauth_unsupported" {
		t.Fatalf("a source without sign-in: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("POST", "/api/source-packages/nothing/auth", nil); r.status != 404 {
		t.Fatalf("no such source: %d %s", r.status, r.raw)
	}

	// A refused refresh: the run fails (refresh_failed), the miner is
	// unavailable (sign in again), the next run is refused (required).
	srv.mu.Lock()
	srv.refuse = true
	srv.mu.Unlock()
	r, _ = rc.do("POST", "/api/miners/signed/run", map[string]any{"full": true})
	if r.status != 202 {
		t.Fatalf("run before the refused refresh: %d %s", r.status, r.raw)
	}
	job = waitJob(t, d, get[string](r.body, "id"), 60*time.Second, finished)
	if job["status"] != "failed" || !strings.Contains(get[string](job, "error"), "refused to renew the sign-in (invalid_grant); sign in again") {
		t.Fatalf("a run whose refresh is refused: %v", job)
	}
	r, _ = rc.do("GET", "/api/miners/signed", nil)
	if get[string](r.body, "state") != "unavailable" || !strings.Contains(get[string](r.body, "reason"), "sign in again") || get[bool](r.body, "credential", "available") {
		t.Fatalf("the miner after a refused refresh: %s", r.raw)
	}
	r, _ = rc.do("GET", "/api/source-packages/notes", nil)
	if get[bool](r.body, "auth", "signed_in") || !strings.Contains(get[string](r.body, "auth", "reason"), "sign in again") {
		t.Fatalf("the status after a refused refresh: %s", r.raw)
	}
	if r, _ := rc.do("POST", "/api/miners/signed/run", nil); r.status != 409 || r.code() != "loci::credential::required" {
		t.Fatalf("a run after a refused refresh: %d %s", r.status, r.raw)
	}

	// Nowhere a token: the palace's files, the log, the events, the
	// status answers, every answer.
	for _, p := range []string{"/api/status", "/api/source-packages", "/api/miners", "/api/source-configs", "/api/jobs?limit=50"} {
		rc.do("GET", p, nil)
	}
	if out, errOut, code := d.cli("", "backups", "run", "--wait"); code != 0 {
		t.Fatalf("loci backups run: %d %s %s", code, out, errOut)
	}
	if m, _ := filepath.Glob(filepath.Join(home, "backups", "*.backup")); len(m) != 1 {
		t.Fatalf("the backup: %v", m)
	}
	issued, _ = srv.tokens()
	time.Sleep(200 * time.Millisecond) // the last events
	noSecretInFiles(t, palace, issued)
	noSecretInFiles(t, filepath.Join(home, "backups"), issued) // a backup is not compressed: its bytes are the palace's
	noSecretIn(t, "the daemon's log", d.log.String(), issued)
	noSecretIn(t, "an event", evs(), issued)
	rc.mu.Lock()
	noSecretIn(t, "an answer", strings.Join(rc.bodies, "\n"), issued)
	rc.mu.Unlock()
	if !strings.Contains(d.log.String(), "signed in") {
		t.Fatalf("the log does not say the source signed in:\n%s", d.log.String())
	}

	// Removing the source forgets its tokens.
	if r, _ := rc.do("DELETE", "/api/source-packages/notes", nil); r.status != 200 {
		t.Fatalf("remove: %d %s", r.status, r.raw)
	}
	if ents, _ := os.ReadDir(credDir); len(ents) != 0 {
		t.Fatalf("the removed source's token stays: %v", ents)
	}
}

// mockServer is the npm oauth2-mock-server (pinned in .ci/npm) on a
// loopback port, its issued tokens read from its output; skipped with an
// install hint when node or the module is missing.
type mockServer struct {
	url    string
	stdin  io.WriteCloser
	mu     sync.Mutex
	tokens []string
	// accesses are the access tokens it issued, in order.
	accesses []string
}

func startMockServer(t *testing.T) *mockServer {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; the browser flow is tested against the npm oauth2-mock-server")
	}
	mod, _ := filepath.Abs(filepath.Join("..", "..", ".ci", "npm", "node_modules", "oauth2-mock-server", "dist", "index.mjs"))
	if _, err := os.Stat(mod); err != nil {
		t.Skip("oauth2-mock-server is not installed; run: npm install --prefix .ci/npm")
	}
	script := filepath.Join(t.TempDir(), "mock.mjs")
	os.WriteFile(script, []byte(`
const { OAuth2Server } = await import(process.argv[2]);
const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
let refuse = false;
process.stdin.on('data', d => { if (String(d).includes('refuse')) refuse = true; });
server.service.on('beforeResponse', (resp, req) => {
  if (req.body && req.body.grant_type === 'refresh_token' && refuse) {
    resp.statusCode = 400; resp.body = { error: 'invalid_grant' }; return;
  }
  if (resp.body && resp.body.access_token) {
    resp.body.expires_in = 60;
    console.log('token ' + resp.body.access_token + ' ' + (resp.body.refresh_token || '') + ' ' + (resp.body.id_token || ''));
  }
});
await server.start(0, '127.0.0.1');
console.log('url ' + server.issuer.url);
`), 0o600)
	cmd := exec.Command(node, script, mod)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	m := &mockServer{}
	m.stdin, _ = cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "url "); ok {
				ready <- u
			} else if v, ok := strings.CutPrefix(line, "token "); ok {
				m.mu.Lock()
				m.tokens = append(m.tokens, strings.Fields(v)...)
				m.accesses = append(m.accesses, strings.Fields(v)[0])
				m.mu.Unlock()
			}
		}
	}()
	select {
	case m.url = <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("the mock authorisation server did not start")
	}
	return m
}

func (m *mockServer) issued() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string{}, m.tokens...)
}

// Sign-in with the browser flow (PKCE, the daemon's one-shot loopback
// listener) against the npm oauth2-mock-server, which approves every
// authorisation: the browser's visit (here an HTTP client following the
// redirects) ends at the daemon's listener; the wait says signed_in; a
// source configuration signs in on its own key (the configuration
// routes), and its miner's guest gets a fresh (refreshed) access token;
// a refused refresh makes the miner unavailable. No token anywhere.
func TestSignInBrowserFlow(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	mock := startMockServer(t)
	home, palace := newPalace(t)
	d, rc, evs := signInDaemon(t, home, palace, "provider = \"Mock\"\nclient_id = \"loci-test\"\n"+
		"authorization_url = \""+mock.url+"/authorize\"\ntoken_url = \""+mock.url+"/token\"\nscopes = [\"openid\", \"notes\"]\n")
	if r, _ := rc.do("PUT", "/api/source-configs/work", map[string]any{"source": "notes", "credential": map[string]any{"oauth": true}}); r.status != 201 && r.status != 200 {
		t.Fatalf("put the configuration: %d %s", r.status, r.raw)
	}
	notes := t.TempDir()
	os.WriteFile(filepath.Join(notes, "b.txt"), []byte("a note read with a browser sign-in"), 0o600)
	if r, _ := rc.do("PUT", "/api/miners/work-notes", map[string]any{"source": "work", "locator": notes, "wing": "browser", "enabled": true}); r.status != 201 {
		t.Fatalf("put the miner: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("POST", "/api/miners/work-notes/run", nil); r.status != 409 || r.code() != "loci::credential::required" ||
		!strings.Contains(get[string](r.body, "help"), "--source-config work") {
		t.Fatalf("a run before sign-in: %d %s", r.status, r.raw)
	}
	// The source's own sign-in is not the configuration's.
	r, h := rc.do("POST", "/api/source-configs/work/auth", nil)
	u := get[string](r.body, "url")
	if r.status != 200 || get[string](r.body, "kind") != "browser" || !strings.HasPrefix(u, mock.url+"/authorize?") || h.Get("Cache-Control") != "no-store" ||
		!strings.Contains(u, "code_challenge_method=S256") || !strings.Contains(u, "redirect_uri=http%3A%2F%2F127.0.0.1") {
		t.Fatalf("start: %d %s", r.status, r.raw)
	}
	flow := get[string](r.body, "flow")
	if r, h := rc.do("GET", "/api/source-configs/work/auth?flow="+flow+"&seconds=0", nil); get[string](r.body, "status") != "pending" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("wait before the browser: %d %s", r.status, r.raw)
	}
	resp, err := http.Get(u)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the browser's visit: %v %v", resp, err)
	}
	resp.Body.Close()
	r, h = rc.do("GET", "/api/source-configs/work/auth?flow="+flow+"&seconds=30", nil)
	if r.status != 200 || get[string](r.body, "status") != "signed_in" || get[string](r.body, "stored_in") == "" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("wait after the browser: %d %s", r.status, r.raw)
	}
	if r, _ := rc.do("GET", "/api/source-configs/work", nil); !get[bool](r.body, "credential", "available") {
		t.Fatalf("the configuration once signed in: %s", r.raw)
	}
	if r, _ := rc.do("GET", "/api/source-packages/notes", nil); get[bool](r.body, "auth", "signed_in") {
		t.Fatalf("the configuration's sign-in signed the source in: %s", r.raw)
	}
	r, _ = rc.do("POST", "/api/miners/work-notes/run", nil)
	if r.status != 202 {
		t.Fatalf("run: %d %s", r.status, r.raw)
	}
	if job := waitJob(t, d, get[string](r.body, "id"), 60*time.Second, finished); job["status"] != "completed" {
		t.Fatalf("the run: %v", job)
	}
	mock.mu.Lock()
	accesses := append([]string{}, mock.accesses...)
	mock.mu.Unlock()
	// The mock's access tokens are JWTs, the same when issued within the
	// same second for the same claims: the refresh is told by the count.
	if len(accesses) != 2 || !strings.Contains(d.log.String(), "sign-in refreshed") {
		t.Fatalf("the mock issued %d access tokens; want the sign-in's and the refresh's", len(accesses))
	}
	if got := receivedToken(t, rc, "browser"); got != sha(accesses[1]) {
		t.Fatalf("the guest received a token hashing to %q, not the refreshed access token's", got)
	}

	fmt.Fprintln(mock.stdin, "refuse")
	r, _ = rc.do("POST", "/api/miners/work-notes/run", map[string]any{"full": true})
	if job := waitJob(t, d, get[string](r.body, "id"), 60*time.Second, finished); job["status"] != "failed" || !strings.Contains(get[string](job, "error"), "refused to renew the sign-in (invalid_grant); sign in again") {
		t.Fatalf("a refused refresh: %v", job)
	}
	if r, _ := rc.do("GET", "/api/miners/work-notes", nil); get[string](r.body, "state") != "unavailable" || !strings.Contains(get[string](r.body, "reason"), "sign in again") {
		t.Fatalf("the miner after a refused refresh: %s", r.raw)
	}
	for _, p := range []string{"/api/status", "/api/source-packages", "/api/miners", "/api/source-configs", "/api/jobs?limit=50"} {
		rc.do("GET", p, nil)
	}
	toks := mock.issued()
	time.Sleep(200 * time.Millisecond)
	noSecretInFiles(t, palace, toks)
	noSecretIn(t, "the daemon's log", d.log.String(), toks)
	noSecretIn(t, "an event", evs(), toks)
	rc.mu.Lock()
	noSecretIn(t, "an answer", strings.Join(rc.bodies, "\n"), toks)
	rc.mu.Unlock()

	// Removing the source forgets its configurations' tokens too.
	if r, _ := rc.do("DELETE", "/api/source-packages/notes", nil); r.status != 200 {
		t.Fatalf("remove: %d %s", r.status, r.raw)
	}
	if ents, _ := os.ReadDir(filepath.Join(home, ".config", "loci", "credentials", "oauth")); len(ents) != 0 {
		t.Fatalf("the removed source's configuration's token stays: %v", ents)
	}
}

// The CLI signs a source in with the device flow: the code and address
// printed, the wait repeated, where the token went said, no token
// printed; --status and source show show it. No MCP tool signs in.
func TestSignInCLI(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	srv := newDeviceServer(t)
	home, palace := newPalace(t)
	d := start(t, home, palace)
	digest, arc := signinPackage(t, "notes", "provider = \"Test Device\"\nclient_id = \"loci-test\"\n"+
		"device_authorization_url = \""+srv.URL+"/device\"\ntoken_url = \""+srv.URL+"/token\"\n")
	if r := install(d, arc, "?consent="+digest+"&enable=true"); r.status != 201 {
		t.Fatalf("install: %d %s", r.status, r.raw)
	}
	out, _, code := d.cli("", "source", "auth", "notes", "--status")
	if code != 0 || !strings.Contains(out, "not signed in to Test Device") {
		t.Fatalf("status before: %d %s", code, out)
	}
	notes := t.TempDir()
	if out, errOut, code := d.cli("", "miner", "set", "cli-notes", "--source", "notes", "--locator", notes, "--credential-oauth", "--enable"); code != 0 {
		t.Fatalf("loci miner set --credential-oauth: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/miners/cli-notes", nil); get[string](r.body, "credential", "kind") != "oauth" || get[bool](r.body, "credential", "available") {
		t.Fatalf("the miner: %s", r.raw)
	}
	if out, errOut, code := d.cli("", "miner", "run", "cli-notes"); code == 0 || !strings.Contains(errOut, "loci::credential::required") ||
		!strings.Contains(errOut, "loci source auth notes") {
		t.Fatalf("loci miner run before sign-in: %d %s %s", code, out, errOut)
	}
	// Approve whatever code the server hands out, a moment after.
	go func() {
		for range 100 {
			time.Sleep(100 * time.Millisecond)
			srv.mu.Lock()
			for _, dc := range srv.codes {
				if srv.state[dc] == "pending" {
					srv.state[dc] = "approve"
				}
			}
			srv.mu.Unlock()
		}
	}()
	out, errOut, code := d.cli("", "source", "auth", "notes")
	if code != 0 || !strings.Contains(out, "enter the code") || !strings.Contains(out, srv.URL+"/activate") ||
		!strings.Contains(out, "notes is signed in; the daemon keeps its token in file "+filepath.Join(home, ".config", "loci", "credentials", "oauth")) {
		t.Fatalf("loci source auth: %d %s %s", code, out, errOut)
	}
	issued, _ := srv.tokens()
	noSecretIn(t, "the CLI's output", out+errOut, issued)
	if out, errOut, code := d.cli("", "miner", "run", "cli-notes"); code != 0 {
		t.Fatalf("loci miner run once signed in: %d %s %s", code, out, errOut)
	}
	out, _, code = d.cli("", "source", "show", "notes")
	if code != 0 || !strings.Contains(out, "sign-in:  signed in to Test Device") {
		t.Fatalf("source show: %d %s", code, out)
	}
	tools, err := mcpSession(t, d).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if text := strings.ToLower(tool.Name + " " + tool.Description); regexp.MustCompile(`sign[- _]?in|oauth|auth`).MatchString(tool.Name) || regexp.MustCompile(`sign[- ]?in|oauth`).MatchString(text) {
			t.Fatalf("an MCP tool signs in: %s", text)
		}
	}
	out, errOut, code = d.cli("", "source", "auth", "notes", "--kind", "browser")
	if code == 0 || !strings.Contains(errOut, "loci::credential::oauth_unsupported") || !strings.Contains(errOut, "browser") {
		t.Fatalf("a flow the source does not declare: %d %s %s", code, out, errOut)
	}
}

// Every sign-in route needs the token when authentication is on (401
// without).
func TestSignInRoutesNeedAuth(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const token = "a-long-enough-secret-for-tests"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+token)
	for _, rt := range []struct{ method, path string }{
		{"POST", "/api/source-packages/notes/auth"},
		{"POST", "/api/source-packages/notes/auth/abc/wait?timeout=1"},
		{"POST", "/api/source-configs/notes/auth"},
		{"GET", "/api/source-configs/notes/auth?flow=abc&seconds=1"},
	} {
		if r := d.do(rt.method, rt.path, nil); r.status != 401 || r.code() != "loci::auth::unauthorized" {
			t.Fatalf("%s %s without a token: %d %s", rt.method, rt.path, r.status, r.raw)
		}
		if r := d.do(rt.method, rt.path, nil, "Authorization", "Bearer "+token); r.status == 401 {
			t.Fatalf("%s %s with the token: %d %s", rt.method, rt.path, r.status, r.raw)
		}
	}
}

package credentials

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// mockOAuth runs the npm oauth2-mock-server (a real OAuth 2.0
// authorisation server: authorization code with PKCE, refresh tokens)
// on loopback through testdata/mockoauth.mjs in mode (ok, decline,
// refuse-refresh), or skips saying how to install it. It is the
// provider's base URL.
func mockOAuth(t *testing.T, mode string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; the sign-in tests run the npm oauth2-mock-server (install Node.js, then: npm install --prefix .ci/npm)")
	}
	mod, _ := filepath.Abs(filepath.Join("..", ".ci", "npm", "node_modules", "oauth2-mock-server"))
	if _, err := os.Stat(filepath.Join(mod, "dist", "index.mjs")); err != nil {
		t.Skip("the OAuth 2.0 mock server is not installed; run: npm install --prefix .ci/npm")
	}
	cmd := exec.Command(node, filepath.Join("testdata", "mockoauth.mjs"), mod, mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		var v struct{ Port int }
		if err := json.Unmarshal([]byte(s), &v); err != nil || v.Port == 0 {
			t.Fatalf("the mock server said %q", s)
		}
		return fmt.Sprintf("http://127.0.0.1:%d", v.Port)
	case <-time.After(20 * time.Second):
		t.Fatal("the mock server did not start in 20 s")
	}
	return ""
}

// mockProvider is the browser-flow provider the mock server is.
func mockProvider(base string) Provider {
	return Provider{Name: "Mock", ClientID: "loci-test", AuthURL: base + "/authorize", TokenURL: base + "/token",
		Scopes: []string{"read", "offline_access"}, Flows: []string{FlowBrowser}}
}

// deviceServer is an OAuth 2.0 device authorisation server (RFC 8628)
// written for the tests, which the npm mock does not do: its token
// endpoint answers each poll with the next of answers (pending,
// slow_down, access_denied, expired_token, ok; the last repeats).
type deviceServer struct {
	*httptest.Server
	t         *testing.T
	clientID  string
	interval  int
	expiresIn int
	// deviceError, when set, is the device authorisation endpoint's
	// refusal; verificationURI replaces the one it gives; huge makes its
	// answer 2 MiB.
	deviceError     string
	verificationURI string
	huge            bool
	// drop is how many polls it drops (closing the connection unanswered)
	// before answering.
	drop int
	// tokenType is the token_type it issues ("": Bearer).
	tokenType string

	mu      sync.Mutex
	answers []string
	polls   []time.Time
	scope   string
	// Access, Refresh, DeviceCode and UserCode are what it issued.
	Access, Refresh, DeviceCode, UserCode string
}

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

func newDeviceServer(t *testing.T, interval, expiresIn int, answers ...string) *deviceServer {
	d := &deviceServer{t: t, clientID: "loci-device", interval: interval, expiresIn: expiresIn, answers: answers,
		Access: "at-" + randomString(24), Refresh: "rt-" + randomString(24), DeviceCode: "dc-" + randomString(24), UserCode: "WDJB-MJHT"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /device", d.device)
	mux.HandleFunc("POST /token", d.token)
	d.Server = httptest.NewServer(mux)
	t.Cleanup(d.Close)
	return d
}

func (d *deviceServer) provider() Provider {
	return Provider{Name: "Device", ClientID: d.clientID, DeviceAuthURL: d.URL + "/device", TokenURL: d.URL + "/token",
		Scopes: []string{"repo", "read:user"}, Flows: []string{FlowDevice}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// device is RFC 8628 3.1/3.2.
func (d *deviceServer) device(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.PostFormValue("client_id") != d.clientID {
		writeJSON(w, 400, map[string]string{"error": "invalid_client"})
		return
	}
	if d.deviceError != "" {
		writeJSON(w, 400, map[string]string{"error": d.deviceError, "error_description": "no device code for " + d.DeviceCode})
		return
	}
	d.mu.Lock()
	d.scope = r.PostFormValue("scope")
	d.mu.Unlock()
	verify := d.URL + "/activate"
	if d.verificationURI != "" {
		verify = d.verificationURI
	}
	if d.huge {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"device_code": "` + strings.Repeat("x", 2<<20) + `"}`))
		return
	}
	writeJSON(w, 200, map[string]any{
		"device_code": d.DeviceCode, "user_code": d.UserCode,
		"verification_uri": verify, "verification_uri_complete": d.URL + "/activate?user_code=" + d.UserCode,
		"expires_in": d.expiresIn, "interval": d.interval,
	})
}

// token is RFC 8628 3.4/3.5.
func (d *deviceServer) token(w http.ResponseWriter, r *http.Request) {
	if r.PostFormValue("grant_type") != deviceGrant || r.PostFormValue("client_id") != d.clientID {
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	if r.PostFormValue("device_code") != d.DeviceCode {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
		return
	}
	d.mu.Lock()
	if d.drop > 0 {
		d.drop--
		d.mu.Unlock()
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = c.Close()
		}
		return
	}
	d.polls = append(d.polls, time.Now())
	answer := d.answers[min(len(d.polls), len(d.answers))-1]
	scope := d.scope
	d.mu.Unlock()
	if answer != "ok" {
		writeJSON(w, 400, map[string]string{"error": answer, "error_description": "device code " + d.DeviceCode})
		return
	}
	tt := "Bearer"
	if d.tokenType != "" {
		tt = d.tokenType
	}
	writeJSON(w, 200, map[string]any{"access_token": d.Access, "token_type": tt, "expires_in": 3600,
		"refresh_token": d.Refresh, "scope": scope})
}

// pollTimes is when the token endpoint was polled.
func (d *deviceServer) pollTimes() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.polls...)
}

// secretsIn fails t when any of secrets appears in s (what: where s came
// from).
func secretsIn(t *testing.T, what, s string, secrets ...string) {
	t.Helper()
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			t.Errorf("%s holds a secret (%.12s…): %s", what, sec, s)
		}
	}
}

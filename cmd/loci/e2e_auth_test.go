package main_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAuthProvisioningEndToEnd follows the spec's provisioning: enabled
// with no credential refuses to start (after opening and migrating the
// store); with authentication off a token is generated; enabled, the
// daemon accepts it from the CLI's environment and refuses requests
// without it; revoking locks the token out at the next request. The token
// never reaches the log, the registry file or the status.
func TestAuthProvisioningEndToEnd(t *testing.T) {
	// Not parallel: it times answers in milliseconds (250 ms, growing refusal delays).
	home, palace := newPalace(t)
	out, errOut, code := runCLI(home, "", []string{"serve", "--port", "0", "--palace", palace}, []string{"LOCI_AUTH_ENABLED=true"})
	if code == 0 || !strings.Contains(out+errOut, "loci::auth::not_configured") {
		t.Fatalf("start with auth and no credential: %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(palace); err != nil {
		t.Fatalf("the store was not opened and migrated before refusing: %v", err)
	}

	d := start(t, home, palace)
	token, errOut, code := d.cli("", "auth", "generate")
	token = strings.TrimSpace(token)
	if code != 0 || !strings.HasPrefix(token, "loci_") || len(token) != len("loci_")+64 {
		t.Fatalf("auth generate: %d %q %s", code, token, errOut)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	d = start(t, home, palace, "LOCI_AUTH_ENABLED=true")
	if r := d.do("GET", "/api/status", nil); r.status != 401 || r.code() != "loci::auth::unauthorized" {
		t.Fatalf("status without a token: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/health", nil); r.status != 200 {
		t.Fatalf("health is always open: %d", r.status)
	}
	st := d.do("GET", "/api/status", nil, "Authorization", "Bearer "+token)
	if st.status != 200 || get[bool](st.body, "auth_enabled") != true {
		t.Fatalf("status with the token: %d %s", st.status, st.raw)
	}
	_, errOut, code = runCLI(home, "", []string{"--addr", d.addr, "wing", "list"}, nil)
	if code == 0 || !strings.Contains(errOut, "remote_rejected") || !strings.Contains(errOut, "401") {
		t.Fatalf("CLI without the token: %d %s", code, errOut)
	}
	if _, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "wing", "list"}, []string{"LOCI_AUTH_TOKEN=" + token}); code != 0 {
		t.Fatalf("CLI with the token: %d %s", code, errOut)
	}
	reg, _ := os.ReadFile(filepath.Join(palace, "daemon.json"))
	for what, text := range map[string]string{"log": d.log.String(), "registry": string(reg), "status": st.raw} {
		if strings.Contains(text, token) || strings.Contains(text, strings.TrimPrefix(token, "loci_")) {
			t.Fatalf("the token leaked into the %s", what)
		}
	}
	if _, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "auth", "revoke"}, []string{"LOCI_AUTH_TOKEN=" + token}); code != 0 {
		t.Fatalf("auth revoke: %d %s", code, errOut)
	}
	if r := d.do("GET", "/api/status", nil, "Authorization", "Bearer "+token); r.status != 401 {
		t.Fatalf("the revoked token still works: %d", r.status)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait(30 * time.Second)

	// A configured secret (the environment) works; it reaches neither the
	// log, the registry, the status nor the configuration answer.
	const secret = "a-configured-shared-secret-42"
	d = start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+secret, "LOCI_LOG=debug")
	st = d.do("GET", "/api/status", nil, "Authorization", "Bearer "+secret)
	cfg := d.do("GET", "/api/config", nil, "Authorization", "Bearer "+secret)
	if st.status != 200 || get[bool](cfg.body, "auth", "token_configured") != true {
		t.Fatalf("configured secret: %d %s", st.status, cfg.raw)
	}
	reg, _ = os.ReadFile(filepath.Join(palace, "daemon.json"))
	for what, text := range map[string]string{"log": d.log.String(), "registry": string(reg), "status": st.raw, "config": cfg.raw} {
		if strings.Contains(text, secret) {
			t.Fatalf("the configured secret leaked into the %s", what)
		}
	}
}

// TestWarningBeyondLoopbackWithoutAuth: listening on every interface with
// authentication off is allowed, with a warning at start.
func TestWarningBeyondLoopbackWithoutAuth(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace, "LOCI_BIND=0.0.0.0")
	if !strings.Contains(d.log.String(), "beyond loopback with authentication disabled") {
		t.Fatalf("no warning: %s", d.log.String())
	}
}

// TestAuthThrottleEndToEnd: a start with a short configured secret warns
// (without it); wrong tokens from one address are answered 401 at once,
// then after a growing delay, then 429 loci::auth::throttled with
// Retry-After (REST and /mcp); the valid secret from that address is
// answered at once all along; the refusals are warned about once, without
// the guesses. A long random secret starts without the warning.
func TestAuthThrottleEndToEnd(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const secret = "sixteen-chars-ok"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+secret)
	if !strings.Contains(d.log.String(), "is weak: it is 16 characters long") {
		t.Fatalf("no warning about a 16-character secret:\n%s", d.log.String())
	}
	valid := func(when string) {
		t.Helper()
		began := time.Now()
		if r := d.do("GET", "/api/status", nil, "Authorization", "Bearer "+secret); r.status != 200 || time.Since(began) > 250*time.Millisecond {
			t.Fatalf("the valid secret %s: %d in %v", when, r.status, time.Since(began))
		}
	}
	guess := func(i int) string { return fmt.Sprintf("guess-%03d-%s", i, secret) }
	var took []time.Duration
	for i := 0; i < 10; i++ {
		began := time.Now()
		r := d.do("GET", "/api/wings", nil, "Authorization", "Bearer "+guess(i))
		took = append(took, time.Since(began))
		if r.status != 401 || r.code() != "loci::auth::unauthorized" {
			t.Fatalf("wrong token %d: %d %s", i, r.status, r.raw)
		}
		valid(fmt.Sprintf("after %d wrong tokens", i+1))
	}
	if took[4] > 250*time.Millisecond || took[5] < 50*time.Millisecond || took[9] < time.Second || took[8] >= took[9] {
		t.Fatalf("the refusals' delays do not grow: %v", took)
	}
	for i, path := range []string{"/api/status", "/mcp"} {
		req, _ := http.NewRequest("POST", "http://"+d.addr+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+guess(10+i))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" || !strings.Contains(string(body), "loci::auth::throttled") {
			t.Fatalf("%s throttled: %d Retry-After %q %s", path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	valid("while throttled")
	log := d.log.String()
	if n := strings.Count(log, "refused authentication"); n != 1 || !strings.Contains(log, "level=WARN") {
		t.Fatalf("%d warnings about refused tokens, want 1:\n%s", n, log)
	}
	for i := 0; i < 12; i++ {
		if strings.Contains(log, guess(i)) || strings.Contains(log, secret) {
			t.Fatal("a guess or the secret reached the log")
		}
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait(30 * time.Second)

	d = start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN=k3J9x2Lq8ZrT5vW1mN7bC4hF6dG0sY2pA9eU")
	if strings.Contains(d.log.String(), "is weak") {
		t.Fatalf("a long random secret was called weak:\n%s", d.log.String())
	}
}

package main_test

import (
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
	home, palace := newPalace(t)
	d := start(t, home, palace, "LOCI_BIND=0.0.0.0")
	if !strings.Contains(d.log.String(), "beyond loopback with authentication disabled") {
		t.Fatalf("no warning: %s", d.log.String())
	}
}

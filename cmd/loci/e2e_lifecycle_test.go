package main_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	// The token's value must appear nowhere (the word "secret" may: the
	// configuration has a setting named mining.secrets).
	const token = "0123456789abcdef-secret"
	d := start(t, home, palace, "LOCI_AUTH_TOKEN="+token)

	if r := d.do("GET", "/api/health", nil); r.status != 200 || r.body["status"] != "ok" {
		t.Fatalf("health %d %s", r.status, r.raw)
	}
	st := d.do("GET", "/api/status", nil, "X-Loci-Mode", "read_only")
	for _, k := range []string{"version", "uptime_secs", "pid", "address", "palace", "datastore", "migrations", "counts", "mode", "auth_enabled"} {
		if _, ok := st.body[k]; !ok {
			t.Errorf("status lacks %q: %s", k, st.raw)
		}
	}
	if st.body["mode"] != "read_only" || get[float64](st.body, "migrations", "pending") != 0 || !get[bool](st.body, "datastore", "healthy") {
		t.Errorf("status %s", st.raw)
	}
	cfg := d.do("GET", "/api/config", nil, "X-Loci-Mode", "disabled")
	if cfg.status != 200 || strings.Contains(cfg.raw, "0123456789abcdef") {
		t.Fatalf("config %d leaks or refuses: %s", cfg.status, cfg.raw)
	}
	reg, _ := os.ReadFile(filepath.Join(palace, "daemon.json"))
	if strings.Contains(string(reg), "0123456789abcdef") || strings.Contains(d.log.String(), "0123456789abcdef") {
		t.Fatal("secret in registry file or log")
	}
	if r := d.do("POST", "/api/shutdown", nil, "X-Loci-Mode", "disabled"); r.status != 202 {
		t.Fatalf("shutdown %d %s", r.status, r.raw)
	}
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit after shutdown: %v\n%s", err, d.log.String())
	}
	if _, err := os.Stat(filepath.Join(palace, "daemon.json")); !os.IsNotExist(err) {
		t.Fatal("registry file left after a graceful stop")
	}
}

func TestSIGTERMStopsGracefully(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	d.do("POST", "/api/wings", map[string]string{"name": "kept"})
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !strings.Contains(d.log.String(), "stopping on signal") {
		t.Fatalf("log: %s", d.log.String())
	}
	d2 := start(t, home, palace)
	if r := d2.do("GET", "/api/wings/kept", nil); r.status != 200 {
		t.Fatalf("wing lost over a restart: %s", r.raw)
	}
}

func TestBindFailsFirst(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	home, palace := newPalace(t)
	_, stderr, code := runCLI(home, "", []string{"serve", "--port", port, "--palace", palace}, nil)
	if code != 1 || !strings.Contains(stderr, "loci::server::bind_failed") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat(palace); !os.IsNotExist(err) {
		t.Fatal("palace created although the bind failed")
	}
	// doctor sees the taken port.
	out, _, code := runCLI(home, "", []string{"doctor"}, []string{"LOCI_PORT=" + port, "LOCI_PALACE_PATH=" + palace})
	if code != 1 || !strings.Contains(out, "taken") {
		t.Fatalf("doctor exit %d: %s", code, out)
	}
}

func TestStaleRegistryIsOverwritten(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	os.MkdirAll(palace, 0o700)
	stale, _ := json.Marshal(map[string]any{"pid": 999999999, "address": "127.0.0.1:1"})
	os.WriteFile(filepath.Join(palace, "daemon.json"), stale, 0o600)
	d := start(t, home, palace) // start waits for the registry naming the new pid
	if d.addr == "127.0.0.1:1" {
		t.Fatal("stale address kept")
	}
}

func TestConfigErrorsRefuseToStart(t *testing.T) {
	t.Parallel()
	home, _ := newPalace(t)
	tests := []struct {
		name string
		args []string
		env  []string
		code string
		says string
	}{
		{"relative palace", []string{"serve"}, []string{"LOCI_PALACE_PATH=rel/palace"}, "loci::config::invalid", "palace.path"},
		{"missing named file", []string{"serve", "--config", filepath.Join(home, "nope.toml")}, nil, "loci::io::failed", "nope.toml"},
		{"bad port", []string{"serve"}, []string{"LOCI_PORT=http"}, "loci::config::invalid", "LOCI_PORT"},
		{"bad log level", []string{"serve", "--palace", filepath.Join(home, "p")}, []string{"LOCI_LOG=loud"}, "loci::config::invalid", "LOCI_LOG"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCLI(home, "", tt.args, tt.env)
			if code != 1 || !strings.Contains(stderr, tt.code) || !strings.Contains(stderr, tt.says) {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
		})
	}
}

func TestAuthToken(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	token := "a-long-enough-shared-secret"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+token)
	if r := d.do("GET", "/api/health", nil); r.status != 200 {
		t.Fatalf("health guarded: %d", r.status)
	}
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", token}} {
		r := d.do("GET", "/api/status", nil, h...)
		if r.status != 401 || r.code() != "loci::auth::unauthorized" {
			t.Errorf("headers %v: %d %s", h, r.status, r.raw)
		}
	}
	if r := d.do("GET", "/api/status", nil, "Authorization", "Bearer "+token); r.status != 200 {
		t.Fatalf("valid token refused: %s", r.raw)
	}
	// The CLI reads the token from the environment.
	_, stderr, code := runCLI(home, "", []string{"--addr", d.addr, "status"}, nil)
	if code != 1 || !strings.Contains(stderr, "401") {
		t.Fatalf("status without token: %d %s", code, stderr)
	}
	if _, stderr, code := runCLI(home, "", []string{"--addr", d.addr, "status"}, []string{"LOCI_AUTH_TOKEN=" + token}); code != 0 {
		t.Fatalf("status with token: %d %s", code, stderr)
	}
	// Auth on without a token refuses to start.
	_, stderr, code = runCLI(home, "", []string{"serve", "--port", "0", "--palace", filepath.Join(home, "p2")}, []string{"LOCI_AUTH_ENABLED=true"})
	if code != 1 || !strings.Contains(stderr, "loci::auth::not_configured") {
		t.Fatalf("auth without token: %d %s", code, stderr)
	}
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	out, stderr, code := runCLI(home, "", []string{"--json", "migrate", "--palace", palace}, nil)
	if code != 0 {
		t.Fatalf("migrate: %d %s", code, stderr)
	}
	var rep struct {
		Ran         []int `json:"ran"`
		DataVersion int   `json:"data_version"`
	}
	json.Unmarshal([]byte(out), &rep)
	if len(rep.Ran) != 4 || rep.DataVersion != 4 {
		t.Fatalf("first migrate %s", out)
	}
	out, _, _ = runCLI(home, "", []string{"migrate", "--palace", palace}, nil)
	if !strings.Contains(out, "up to date") {
		t.Fatalf("second migrate: %s", out)
	}
	d := start(t, home, palace)
	_, stderr, code = runCLI(home, "", []string{"migrate", "--palace", palace}, nil)
	if code != 1 || !strings.Contains(stderr, "loci::store::backend_failed") {
		t.Fatalf("migrate with the daemon running: %d %s", code, stderr)
	}
	_ = d
}

// `loci daemon stop --addr` of a daemon serving another palace than the
// configured one waits for its process to end: a restart right after it
// finds the store released.
func TestStopByAddressWaitsForTheProcess(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	for range 3 {
		d := start(t, home, palace)
		out, errOut, code := runCLI(t.TempDir(), "", []string{"--addr", d.addr, "daemon", "stop"}, nil)
		if code != 0 || !strings.Contains(out, "loci stopped") {
			t.Fatalf("stop: %d %s %s", code, out, errOut)
		}
		select {
		case <-d.exited:
		default:
			t.Fatal("loci stopped was printed while the process still ran")
		}
	}
}

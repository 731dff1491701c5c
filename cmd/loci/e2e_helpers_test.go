package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// bin is the loci binary built once for the end-to-end tests.
var bin string

// sharedCache is the daemons' cache directory (XDG_CACHE_HOME), shared by
// every test: compiled guest modules are reused across palaces.
var sharedCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loci-e2e-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "loci")
	sharedCache = filepath.Join(dir, "cache")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic("building loci: " + err.Error())
	}
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for a process writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// daemon is a running `loci serve`.
type daemon struct {
	t      *testing.T
	palace string
	home   string
	addr   string
	cmd    *exec.Cmd
	log    *syncBuffer
	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit, valid once exited is closed
}

// env is a clean environment: a temporary HOME, no LOCI_* from outside.
func env(home string, extra ...string) []string {
	// The daemons share one compiled-code cache (the user's cache
	// directory): each would compile the same guest modules again.
	out := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "XDG_CACHE_HOME=" + sharedCache}
	return append(out, extra...)
}

func newPalace(t *testing.T) (home, palace string) {
	home = t.TempDir()
	return home, filepath.Join(home, "palace")
}

// start runs the daemon on a free port and waits until it is ready.
func start(t *testing.T, home, palace string, extraEnv ...string) *daemon {
	t.Helper()
	return startOn(t, "0", home, palace, extraEnv...)
}

// startOn runs the daemon on the port (0: a free one) and waits until it
// is ready.
func startOn(t *testing.T, port, home, palace string, extraEnv ...string) *daemon {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--port", port, "--palace", palace)
	cmd.Env = env(home, extraEnv...)
	return startCmd(t, cmd, home, palace)
}

// startCmd starts a daemon command serving palace (a `loci serve`, perhaps
// wrapped) and waits until its registry file names it.
func startCmd(t *testing.T, cmd *exec.Cmd, home, palace string) *daemon {
	t.Helper()
	d, err := startCmdErr(t, cmd, home, palace)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// startCmdErr is startCmd answering an error instead of failing the test
// (a start from another goroutine).
func startCmdErr(t *testing.T, cmd *exec.Cmd, home, palace string) (*daemon, error) {
	d := &daemon{t: t, palace: palace, home: home, log: &syncBuffer{}, exited: make(chan struct{}), cmd: cmd}
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.err = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			return nil, fmt.Errorf("daemon exited during start: %v\n%s", d.err, d.log.String())
		default:
		}
		b, err := os.ReadFile(filepath.Join(palace, "daemon.json"))
		if err == nil {
			var reg struct {
				PID     int    `json:"pid"`
				Address string `json:"address"`
			}
			if json.Unmarshal(b, &reg) == nil && reg.PID == d.cmd.Process.Pid {
				d.addr = reg.Address
				return d, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("daemon not ready:\n%s", d.log.String())
}

// wait waits for the process to exit.
func (d *daemon) wait(timeout time.Duration) error {
	select {
	case <-d.exited:
		return d.err
	case <-time.After(timeout):
		d.t.Fatalf("daemon did not exit within %s:\n%s", timeout, d.log.String())
		return nil
	}
}

// response is a decoded HTTP answer.
type response struct {
	status int
	body   map[string]any
	raw    string
}

func (r response) code() string {
	c, _ := r.body["code"].(string)
	return c
}

func (d *daemon) do(method, path string, body any, headers ...string) response {
	d.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, "http://"+d.addr+path, rd)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// cli runs the loci command against this daemon.
func (d *daemon) cli(stdin string, args ...string) (stdout, stderr string, code int) {
	return runCLI(d.home, stdin, append([]string{"--addr", d.addr}, args...), nil)
}

func runCLI(home, stdin string, args []string, extraEnv []string) (string, string, int) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env(home, extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return out.String(), errb.String(), code
}

func get[T any](m map[string]any, path ...string) T {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			var zero T
			return zero
		}
		cur = mm[p]
	}
	v, _ := cur.(T)
	return v
}

func counts(d *daemon) string {
	r := d.do("GET", "/api/status", nil)
	c := r.body["counts"]
	return fmt.Sprint(c)
}

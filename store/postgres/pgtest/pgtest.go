// Package pgtest starts a throwaway PostgreSQL cluster for tests: Debian's
// postgresql server, initialised with initdb in a temporary directory and
// run with pg_ctl on a loopback port and a Unix socket in that directory,
// no system service. The superuser has a password (host connections use
// scram-sha-256), so tests see a real sign-in. Tests skip with an install
// hint where PostgreSQL is absent; with LOCI_REQUIRE_POSTGRES=1 (CI) they
// fail instead.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Password is the test cluster's superuser password.
const Password = "loci-test-secret"

// User is the test cluster's superuser.
const User = "loci"

// Server is a running test cluster.
type Server struct {
	Dir  string // data directory (and socket directory)
	Port int
	bin  string
	cred *syscall.Credential

	mu      sync.Mutex
	stopped bool
}

// Hint says how to get PostgreSQL where it is absent.
const Hint = "install Debian's PostgreSQL server (apt-get install postgresql-15; .ci/run does) or put initdb and pg_ctl on PATH"

// Bin finds the directory of initdb, pg_ctl and postgres: PATH, then
// Debian's /usr/lib/postgresql/<version>/bin (newest first).
func Bin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "initdb")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return a > b
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL's initdb and pg_ctl were not found")
}

// Start initialises and starts a cluster in a new temporary directory. As
// root it runs the server as the postgres user (initdb refuses root).
func Start() (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "loci-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, the cluster runs as the postgres user, which does not exist: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o644); err != nil {
		return nil, err
	}
	if s.cred != nil {
		_ = os.Chown(pw, int(s.cred.Uid), int(s.cred.Gid))
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", User, "--pwfile", pw, "--auth-local=trust", "--auth-host=scram-sha-256",
		"-E", "UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	_ = os.Remove(pw)
	if s.Port, err = freePort(); err != nil {
		return nil, err
	}
	return s, s.start()
}

func (s *Server) data() string { return filepath.Join(s.Dir, "data") }

func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

func (s *Server) start() error {
	opts := fmt.Sprintf("-c port=%d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c max_connections=200 -c shared_buffers=32MB -c fsync=on -c synchronous_commit=on",
		s.Port, s.Dir)
	out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.Dir, "log"), "-w", "-t", "60", "-o", opts, "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
		return fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	s.mu.Lock()
	s.stopped = false
	s.mu.Unlock()
	return nil
}

// Stop stops the cluster (fast shutdown: connections are closed).
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	out, err := s.run("pg_ctl", "-D", s.data(), "-w", "-t", "60", "-m", "fast", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Restart stops the cluster and starts it again on the same port.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start()
}

// Remove stops the cluster and deletes its directory.
func (s *Server) Remove() {
	_ = s.Stop()
	_ = os.RemoveAll(s.Dir)
}

// URL is a URL of a database on the cluster without the password (it
// comes from LOCI_DATASTORE_PASSWORD or datastore.password_file).
func (s *Server) URL(database string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.Port, database)
}

// URLWithPassword is URL with the password in it (the library's own tests).
func (s *Server) URLWithPassword(database string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", User, Password, s.Port, database)
}

var dbSeq atomic.Int64

// NewDatabase creates an empty database and returns its name.
func (s *Server) NewDatabase() (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URLWithPassword("postgres"))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		return "", err
	}
	return name, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Shared is the test binary's cluster, started at the first call; the
// test is skipped (failed with LOCI_REQUIRE_POSTGRES=1) when PostgreSQL is
// absent. Call Main from TestMain to stop it when the tests end.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() { shared.s, shared.err = Start() })
	if shared.err != nil {
		if os.Getenv("LOCI_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("PostgreSQL is required here (LOCI_REQUIRE_POSTGRES=1) and could not start: %v; %s", shared.err, Hint)
		}
		t.Skipf("PostgreSQL could not start: %v; %s", shared.err, Hint)
	}
	return shared.s
}

// Database is a fresh database on the shared cluster: its URL with the
// password in it.
func Database(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	name, err := s.NewDatabase()
	if err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	return s.URLWithPassword(name)
}

// Main runs the tests and stops the shared cluster, if one started.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.s != nil {
		shared.s.Remove()
	}
	return code
}

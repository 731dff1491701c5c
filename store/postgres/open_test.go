package postgres_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// logBuf is a log a test reads back.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func openLogged(location, password string) (*postgres.DB, *logBuf, error) {
	lb := &logBuf{}
	db, err := postgres.Open(context.Background(), store.OpenOptions{Location: location, Password: password,
		Log: slog.New(slog.NewTextHandler(lb, nil))})
	return db, lb, err
}

// fakeServer is a PostgreSQL impostor: it refuses TLS, asks for the
// password in clear text and keeps every byte the client sends.
type fakeServer struct {
	addr string
	mu   sync.Mutex
	got  bytes.Buffer
	asks int
}

func (f *fakeServer) received() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got.String()
}

// teeConn keeps what the client sends.
type teeConn struct {
	net.Conn
	f *fakeServer
}

func (c teeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.f.mu.Lock()
	c.f.got.Write(p[:n])
	c.f.mu.Unlock()
	return n, err
}

func startFake(t *testing.T, bind string, silent bool) *fakeServer {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(bind, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &fakeServer{addr: l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if silent {
					_, _ = c.Read(make([]byte, 1024))
					time.Sleep(10 * time.Second)
					return
				}
				var tc net.Conn = teeConn{c, f}
				be := pgproto3.NewBackend(tc, tc)
				for {
					m, err := be.ReceiveStartupMessage()
					if err != nil {
						return
					}
					if _, ok := m.(*pgproto3.SSLRequest); ok {
						// TLS with a certificate of its own making: what
						// sslmode=require accepts without a question.
						if _, err := c.Write([]byte("S")); err != nil {
							return
						}
						tc = tls.Server(c, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}})
						tc = teeConn{tc, f}
						be = pgproto3.NewBackend(tc, tc)
						continue
					}
					break
				}
				f.mu.Lock()
				f.asks++
				f.mu.Unlock()
				be.Send(&pgproto3.AuthenticationCleartextPassword{})
				if be.Flush() != nil {
					return
				}
				_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := be.Receive(); err != nil {
					return
				}
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: "password authentication failed"})
				_ = be.Flush()
			}()
		}
	}()
	return f
}

// outward is an address of this machine that is not loopback: what
// another machine would be.
func outward(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no address beyond loopback to play a remote server on")
	return ""
}

func backendFailed(t *testing.T, err error) *fault.Error {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code != fault.StoreBackendFailed {
		t.Fatalf("want loci::store::backend_failed, got %v", err)
	}
	return fe
}

// Issue 31, the trial: a server on the path that asks for the password in
// clear text (a fake one, over a connection without verified TLS) gets
// nothing: the open fails naming the host and why, and a warning names the
// hosts and the sslmode (never the password). The same fake reached over
// loopback gets the password (the sending is real; the guard is what stops
// it off this machine).
func TestCleartextPasswordRefusedOffLoopback(t *testing.T) {
	const pw = "fake-server-must-not-see-this-4711"
	host := outward(t)
	for _, mode := range []string{"", "?sslmode=disable", "?sslmode=require", "?sslmode=prefer"} {
		t.Run("sslmode"+mode, func(t *testing.T) {
			f := startFake(t, host, false)
			db, logs, err := openLogged("postgres://loci@"+f.addr+"/palace"+mode, pw)
			if err == nil {
				db.Close()
				t.Fatal("opened a fake server")
			}
			fe := backendFailed(t, err)
			if strings.Contains(f.received(), pw) {
				t.Fatalf("the fake server received the password: %q", f.received())
			}
			f.mu.Lock()
			asks := f.asks
			f.mu.Unlock()
			if asks == 0 {
				t.Fatal("the fake server was never asked: the test proves nothing")
			}
			said := fe.Msg + " " + fe.Help
			if !strings.Contains(said, f.addr+"/palace") || !strings.Contains(fe.Msg, "clear text") || !strings.Contains(fe.Help, "sslmode=verify-full") {
				t.Fatalf("the refusal does not name the host and why: %+v", fe)
			}
			want := strings.TrimPrefix(mode, "?sslmode=")
			if want == "" {
				want = `"prefer (the default)"`
			}
			l := logs.String()
			if !strings.Contains(l, "level=WARN") || !strings.Contains(l, f.addr) || !strings.Contains(l, "sslmode="+want) ||
				!strings.Contains(l, "verify-full") || strings.Count(l, "level=WARN") != 1 {
				t.Fatalf("want one warning naming %s and sslmode %s:\n%s", f.addr, want, l)
			}
			if strings.Contains(l+err.Error()+said, pw) {
				t.Fatal("the password is in the log or the error")
			}
		})
	}
	t.Run("loopback", func(t *testing.T) {
		f := startFake(t, "127.0.0.1", false)
		db, logs, err := openLogged("postgres://loci@"+f.addr+"/palace?sslmode=disable", pw)
		if err == nil {
			db.Close()
			t.Fatal("opened a fake server")
		}
		if !strings.Contains(f.received(), pw) {
			t.Fatalf("over loopback the password is sent (the fake works): got %q", f.received())
		}
		if strings.Contains(logs.String(), "level=WARN") {
			t.Fatalf("a loopback connection warned:\n%s", logs)
		}
		fe := backendFailed(t, err)
		if strings.Contains(fe.Msg+fe.Help+err.Error(), pw) {
			t.Fatal("the password is in the error")
		}
	})
}

// A URL naming several hosts (the driver tries each in turn, each may
// receive the password) shows every one in Where, Location and errors.
func TestWhereNamesEveryHost(t *testing.T) {
	c, err := pgx.ParseConfig("postgres://loci@h1:1,h2:5432,h1:1/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if w := postgres.Where(c); w != "h1:1,h2:5432/db" {
		t.Fatalf("Where %q", w)
	}
	c, _ = pgx.ParseConfig("postgres://loci@[::1]:5433/db?host=/run/postgresql")
	if w := postgres.Where(c); !strings.HasPrefix(w, "socket /run/postgresql:") {
		t.Fatalf("a socket: %q", w)
	}

	s := pgtest.Shared(t)
	name, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	closed := closedPort(t)
	u := fmt.Sprintf("postgres://%s@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable", pgtest.User, closed, s.Port, name)
	db, _, err := openLogged(u, pgtest.Password)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if want := fmt.Sprintf("postgres://127.0.0.1:%d,127.0.0.1:%d/%s", closed, s.Port, name); db.Location() != want {
		t.Fatalf("Location %q, want %q", db.Location(), want)
	}
	closed2 := closedPort(t)
	_, _, err = openLogged(fmt.Sprintf("postgres://loci@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable", closed, closed2, name), pgtest.Password)
	fe := backendFailed(t, err)
	if !strings.Contains(fe.Msg, fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d/%s", closed, closed2, name)) {
		t.Fatalf("the error does not name every host: %+v", fe)
	}
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p
}

// A failed open says its real cause, in its message and help, with the
// driver's words, never the password: no password given, a refused one,
// TLS the server does not offer, a refused connection, an unknown name, a
// server that does not answer.
func TestOpenFailuresNameTheCause(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGPASSFILE", "/nonexistent/pgpass")
	const pw = "not-the-password-4711"
	s := pgtest.Shared(t)
	name, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	silent := startFake(t, "127.0.0.1", true)
	for _, c := range []struct {
		name, url, password string
		msg, help           []string
	}{
		{"no password", s.URL(name), "", []string{"none was given"}, []string{"LOCI_DATASTORE_PASSWORD", "datastore.password_file", "The driver said"}},
		{"wrong password", s.URL(name), pw, []string{"password was refused"}, []string{"LOCI_DATASTORE_PASSWORD", "28P01"}},
		{"TLS refused", strings.Replace(s.URL(name), "sslmode=disable", "sslmode=require", 1), pgtest.Password,
			[]string{"does not offer TLS"}, []string{"ssl = on", "server refused TLS"}},
		{"connection refused", fmt.Sprintf("postgres://loci@127.0.0.1:%d/%s?sslmode=disable", closedPort(t), name), pgtest.Password,
			[]string{"connection refused"}, []string{"listen_addresses", "connect: connection refused"}},
		{"unknown name", "postgres://loci@no-such-host.invalid:5432/db?sslmode=disable", pgtest.Password,
			[]string{"not known (DNS)"}, []string{"host name", "no-such-host.invalid"}},
		{"timeout", "postgres://loci@" + silent.addr + "/db?sslmode=disable&connect_timeout=1", pgtest.Password,
			[]string{"no answer within 1s"}, []string{"firewall", "timeout"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := openLogged(c.url, c.password)
			fe := backendFailed(t, err)
			for _, w := range c.msg {
				if !strings.Contains(fe.Msg, w) {
					t.Errorf("the message does not say %q: %s", w, fe.Msg)
				}
			}
			for _, w := range c.help {
				if !strings.Contains(fe.Help, w) {
					t.Errorf("the help does not say %q: %s", w, fe.Help)
				}
			}
			if strings.Contains(fe.Msg+fe.Help+err.Error(), pw) || strings.Contains(fe.Msg+fe.Help+err.Error(), pgtest.Password) {
				t.Fatalf("the error shows a password: %+v", fe)
			}
		})
	}
}

var cert struct {
	once sync.Once
	c    tls.Certificate
}

// selfSigned is a certificate nobody vouches for, for the fake server.
func selfSigned(t *testing.T) tls.Certificate {
	cert.once.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "impostor"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		cert.c = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	})
	return cert.c
}

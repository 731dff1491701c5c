package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// capServer serves on a loopback listener capped at n connections (the
// main listener's rule): / answers at once, /block waits for release.
// states receives each state the server reports for a connection, once
// the limiter has tracked it.
func capServer(t *testing.T, n int) (addr string, release chan struct{}, states <-chan http.ConnState) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release = make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/block", func(w http.ResponseWriter, _ *http.Request) { <-release; io.WriteString(w, "released") })
	st := make(chan http.ConnState, 256)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute,
		// LimitConns calls this after its own tracking.
		ConnState: func(_ net.Conn, s http.ConnState) {
			select {
			case st <- s:
			default:
			}
		}}
	go hs.Serve(LimitConns(hs, ln, n, true))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String(), release, st
}

// waitState waits for the server to report a connection in state want.
func waitState(t *testing.T, states <-chan http.ConnState, want http.ConnState) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case s := <-states:
			if s == want {
				return
			}
		case <-timeout:
			t.Fatalf("no connection reached %v", want)
		}
	}
}

func dial(t *testing.T, addr, send string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if send != "" {
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// closedBy reports whether the server has closed c (a read ends) within d;
// a byte read means it answered.
func closedBy(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// statusOf sends a request on c and reads its answer's status line.
func statusOf(t *testing.T, c net.Conn, path string) string {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.Status
}

// At the cap, each new connection closes the one idle longest: one that
// sent nothing, one halfway through its headers, one idle between
// requests, in the order they fell idle; the new one is served.
func TestConnCapClosesTheLongestIdle(t *testing.T) {
	addr, _, states := capServer(t, 3)
	// Each connection is dialled once the server holds the one before
	// (the order they fell idle is the order they are tracked in).
	silent := dial(t, addr, "")
	waitState(t, states, http.StateNew)
	half := dial(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n")
	waitState(t, states, http.StateNew)
	kept := dial(t, addr, "")
	waitState(t, states, http.StateNew)
	if s := statusOf(t, kept, "/"); s != "200 OK" {
		t.Fatal(s)
	}
	waitState(t, states, http.StateIdle)

	fresh := dial(t, addr, "")
	if !closedBy(silent, time.Second) {
		t.Fatal("the connection that sent nothing, idle longest, was not closed for a new one")
	}
	// Absence can only be shown by waiting: the server closed silent
	// for fresh (seen above), and a second close would come with it, not
	// later; 100ms each is ample.
	if closedBy(half, 100*time.Millisecond) || closedBy(kept, 100*time.Millisecond) {
		t.Fatal("a connection idle for less time was closed")
	}
	if s := statusOf(t, fresh, "/"); s != "200 OK" {
		t.Fatal(s)
	}
	dial(t, addr, "")
	if !closedBy(half, time.Second) {
		t.Fatal("the half-sent request, idle longest now, was not closed")
	}
	dial(t, addr, "")
	if !closedBy(kept, time.Second) {
		t.Fatal("the keep-alive connection, idle longest now, was not closed")
	}
}

// A connection in a request is never closed to make room: while every
// connection is busy, a new one waits, and it is served once a request
// ends.
func TestConnCapWaitsWhileEveryConnectionIsBusy(t *testing.T) {
	addr, release, states := capServer(t, 2)
	a, b := dial(t, addr, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n"), dial(t, addr, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	waitState(t, states, http.StateActive)
	waitState(t, states, http.StateActive)
	waiting := dial(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	// Absence can only be shown by waiting: both connections are in
	// requests (seen above), and a third served regardless of the cap
	// would be answered at once by "/"; 300ms is ample.
	_ = waiting.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := waiting.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection while two are in requests (cap 2): %v", err)
	}
	close(release)
	for _, c := range []net.Conn{a, b} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("a busy connection was cut: %v", err)
		}
	}
	_ = waiting.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(waiting), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the waiting connection once a request ended: %v", err)
	}
}

// Closing the listener ends an Accept waiting for room.
func TestConnCapCloseEndsAWaitingAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimit(ln, 1, false)
	// Two clients connect and stay connected until the test ends.
	dialed, release, gone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(gone)
		for range 2 {
			if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
				defer c.Close()
			}
		}
		close(dialed)
		<-release
	}()
	defer func() { close(release); <-gone }()
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	<-dialed
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	// Absence can only be shown by waiting: the second connection is
	// already in the kernel's backlog (its dial returned), so an Accept
	// that ignored the cap would return at once; 200ms is ample for that.
	select {
	case err := <-done:
		t.Fatalf("a second Accept at a cap of one returned: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	l.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("the waiting Accept ended with %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("closing the listener did not end the waiting Accept")
	}
}

// The caps follow the open-file limit, keeping FileReserve for the
// daemon's own files.
func TestConnBudget(t *testing.T) {
	for _, c := range []struct {
		nofile                 uint64
		main, webhook, reading int
	}{
		{0, 4096, 1024, 512},
		{1 << 20, 4096, 1024, 512},
		{20000, 4096, 1024, 512},
		{4096, 1920, 960, 480},
		{512, 128, 64, 32},
		{100, 16, 8, 4},
	} {
		t.Run(fmt.Sprint("nofile ", c.nofile), func(t *testing.T) {
			m, w, r := ConnBudget(c.nofile)
			if m != c.main || w != c.webhook || r != c.reading {
				t.Errorf("ConnBudget(%d) = %d, %d, %d; want %d, %d, %d", c.nofile, m, w, r, c.main, c.webhook, c.reading)
			}
			if c.nofile > 1024 && uint64(m+w+FileReserve) > c.nofile {
				t.Errorf("ConnBudget(%d) leaves too few descriptors", c.nofile)
			}
		})
	}
}

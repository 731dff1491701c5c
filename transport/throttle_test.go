package transport

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fromAddr is an HTTP client whose connections start at the loopback
// address ip (any of 127.0.0.0/8 on Linux): another client address.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// refusedFrom is the count of refused tokens the throttle holds for addr.
func (ts *testServer) refusedFrom(addr string) int {
	thr := ts.throttle()
	thr.mu.Lock()
	defer thr.mu.Unlock()
	if rec := thr.byAddr[addr]; rec != nil {
		return rec.count
	}
	return 0
}

type answer struct {
	status     int
	retryAfter string
	body       string
	took       time.Duration
}

func (ts *testServer) send(t *testing.T, c *http.Client, path, authz string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.http.URL+path, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	began := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", path, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b), time.Since(began)}
}

// TestAuthThrottle: wrong tokens from one address are answered 401 at
// once, then 401 after a growing delay, then 429 loci::auth::throttled with
// Retry-After; the valid token from that same address is answered at once,
// also while wrong ones wait; another address is not affected; requests
// without any token are not counted; the address starts afresh once
// Forget passes.
func TestAuthThrottle(t *testing.T) {
	const secret = "configured-secret-0123456789"
	ts := newTestServer(t, true, secret)
	const maxDelay = 400 * time.Millisecond
	ts.AuthThrottle = ThrottleLimits{Free: 3, Delayed: 2, MaxDelay: maxDelay, Forget: 3 * time.Second}
	one := fromAddr("127.0.0.1")

	for i := 0; i < 10; i++ { // no token: guesses nothing, never counted
		if a := ts.send(t, one, "/api/status", ""); a.status != 401 || a.took > maxDelay/4 {
			t.Fatalf("no token %d: %d in %v", i, a.status, a.took)
		}
	}
	wrong := func(i int) string { return fmt.Sprintf("Bearer wrong-guess-%04d-xxxxxxxx", i) }
	for i := 0; i < 3; i++ {
		if a := ts.send(t, one, "/api/status", wrong(i)); a.status != 401 || a.took > maxDelay/4 {
			t.Fatalf("free refusal %d: %d in %v", i, a.status, a.took)
		}
	}
	// Delayed: MaxDelay/2, then MaxDelay.
	for i, want := range []time.Duration{maxDelay / 2, maxDelay} {
		a := ts.send(t, one, "/api/status", wrong(3+i))
		if a.status != 401 || a.took < want || a.retryAfter != "" {
			t.Fatalf("delayed refusal %d: %d in %v (want >= %v) Retry-After %q", i, a.status, a.took, want, a.retryAfter)
		}
	}
	for i := 0; i < 2; i++ {
		a := ts.send(t, one, "/mcp", wrong(5+i))
		if a.status != 429 || a.retryAfter != "3" || !strings.Contains(a.body, "loci::auth::throttled") || a.took < maxDelay {
			t.Fatalf("throttled refusal %d: %d in %v Retry-After %q %s", i, a.status, a.took, a.retryAfter, a.body)
		}
	}

	// The valid token from the throttled address: at once, also while
	// four wrong ones from there wait.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := fromAddr("127.0.0.1")
			if a := ts.send(t, c, "/api/status", wrong(100+i)); a.status != 429 {
				t.Errorf("concurrent wrong token: %d", a.status)
			}
		}()
	}
	// Wait until the throttle has counted the four (each is counted just
	// before its answer starts to wait), not for a guessed while.
	for deadline := time.Now().Add(10 * time.Second); ts.refusedFrom("127.0.0.1") < 7+4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the four concurrent wrong tokens were not counted: %d refusals", ts.refusedFrom("127.0.0.1"))
		}
	}
	for i := 0; i < 5; i++ {
		if a := ts.send(t, one, "/api/status", "Bearer "+secret); a.status != 200 || a.took > maxDelay/4 {
			t.Fatalf("valid token from the throttled address: %d in %v", a.status, a.took)
		}
	}
	wg.Wait()

	// Another address: its own free refusals, then the valid token.
	other := fromAddr("127.0.0.2")
	if a := ts.send(t, other, "/api/status", wrong(200)); a.status != 401 || a.took > maxDelay/4 {
		t.Fatalf("another address: %d in %v", a.status, a.took)
	}
	if a := ts.send(t, other, "/api/status", "Bearer "+secret); a.status != 200 {
		t.Fatalf("another address, valid token: %d", a.status)
	}

	// Forget passes without a refusal: the address starts afresh. The
	// rule is about time passing, so the test lets it pass (Forget is 3 s).
	time.Sleep(3 * time.Second)
	if a := ts.send(t, one, "/api/status", wrong(300)); a.status != 401 || a.took > maxDelay/4 {
		t.Fatalf("after Forget: %d in %v", a.status, a.took)
	}
}

// TestAuthThrottleLog: refused tokens are warned about at most once per
// address every LogEvery, with their count, never the token.
func TestAuthThrottleLog(t *testing.T) {
	const secret = "configured-secret-0123456789"
	ts := newTestServer(t, true, secret)
	ts.AuthThrottle = ThrottleLimits{Free: 1000, LogEvery: 500 * time.Millisecond}
	one := fromAddr("127.0.0.1")
	guess := func(i int) string { return fmt.Sprintf("guessed-token-%06d", i) }
	warnings := func() []string {
		var out []string
		for _, l := range strings.Split(ts.log.String(), "\n") {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "refused authentication") {
				out = append(out, l)
			}
		}
		return out
	}
	for i := 0; i < 20; i++ {
		ts.send(t, one, "/api/status", "Bearer "+guess(i))
	}
	if w := warnings(); len(w) != 1 || !strings.Contains(w[0], "client=127.0.0.1") || !strings.Contains(w[0], "refused=1 ") {
		t.Fatalf("warnings after a burst: %q", w)
	}
	// The rule is about time passing: LogEvery (500ms) must have passed.
	time.Sleep(600 * time.Millisecond)
	ts.send(t, one, "/api/status", "Bearer "+guess(20))
	if w := warnings(); len(w) != 2 || !strings.Contains(w[1], "refused=20 ") {
		t.Fatalf("warnings after LogEvery: %q", w)
	}
	ts.send(t, fromAddr("127.0.0.3"), "/api/status", "Bearer "+guess(21))
	if w := warnings(); len(w) != 3 || !strings.Contains(w[2], "client=127.0.0.3") {
		t.Fatalf("another address's warning: %q", w)
	}
	for i := 0; i <= 21; i++ {
		if strings.Contains(ts.log.String(), guess(i)) {
			t.Fatal("a guessed token reached the log")
		}
	}
}

// TestThrottleBounded: the record keeps at most MaxAddrs addresses, and
// IPv6 addresses count by their /64.
func TestThrottleBounded(t *testing.T) {
	th := newThrottle(ThrottleLimits{MaxAddrs: 100}, slog.New(slog.DiscardHandler))
	for i := 0; i < 1000; i++ {
		th.refused(fmt.Sprintf("10.0.%d.%d", i/256, i%256))
		if n := th.size(); n > 100 {
			t.Fatalf("%d addresses remembered", n)
		}
	}
	for _, c := range []struct{ remote, key string }{
		{"192.0.2.1:5000", "192.0.2.1"},
		{"[::ffff:192.0.2.1]:5000", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[::1]:80", "::/64"},
	} {
		t.Run(c.remote, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			if got := clientKey(r); got != c.key {
				t.Errorf("key %q, want %q", got, c.key)
			}
		})
	}
}

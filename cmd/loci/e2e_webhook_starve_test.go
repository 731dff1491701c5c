package main_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Stalled and unsigned connections never starve signed deliveries (issue
// 38): 16 and then 200 connections that stall (nothing sent, headers with
// a Content-Length and no body, a body trickled a byte at a time, headers
// trickled) are each cut within the listener's short read deadline, and a
// flood of unsigned requests is answered 401, while signed deliveries keep
// arriving and every one is accepted (202). Before, a stalled request took
// one of the max_concurrent slots before its signature was checked and
// held it for a minute, so 16 of them answered every signed delivery 429.
// The flood is 2,000 requests in make test; LOCI_SOAK_WEBHOOK_FLOOD (make
// soak: 20,000) sets it, and then 600 stalled connections, more than may
// be reading at once (512), only delay signed deliveries (they wait in the
// backlog until the first stalled ones are cut).
func TestWebhookStalledAndUnsigned(t *testing.T) {
	// Not parallel: a soak: timed phases under load.
	flood := 2000
	phases := []struct{ n, kinds int }{{16, 2}, {200, 4}}
	if v := os.Getenv("LOCI_SOAK_WEBHOOK_FLOOD"); v != "" {
		phases = append(phases, struct{ n, kinds int }{600, 4})
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("LOCI_SOAK_WEBHOOK_FLOOD=%q: a positive number is required", v)
		}
		flood = n
	}
	const secret = "a shared secret of some length"
	root := mineTree(t)
	port := freePort(t)
	d, _ := withConfig(t, fmt.Sprintf(`
[webhook]
enable = true
port = %d

[miners.docs]
locator = %q
enabled = true

[triggers.gh]
miner = "docs"
type = "webhook"
enabled = true
settings = { delivery_header = "X-GitHub-Delivery" }
credential = { env = "LOCI_TEST_HOOK_SECRET" }
`, port, root), "LOCI_TEST_HOOK_SECRET="+secret)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	eventually(t, 10*time.Second, "the listener open", func() bool {
		return get[bool](d.do("GET", "/api/triggers", nil).body, "webhook", "listening")
	})

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var seq atomic.Int64
	signed := func() error {
		i := seq.Add(1)
		body := fmt.Sprintf(`{"delivery":%d}`, i)
		req, _ := http.NewRequest("POST", "http://"+addr+"/hooks/gh", strings.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", githubSign(secret, body))
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("signed-%d", i))
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("signed delivery %d: %v", i, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("signed delivery %d: %d %s", i, resp.StatusCode, b)
		}
		return nil
	}
	// whileSigned runs work while signed deliveries arrive, one every
	// 20 ms, and fails the test for each that is not accepted.
	whileSigned := func(what string, work func()) {
		t.Helper()
		stop := make(chan struct{})
		var sent, failed atomic.Int64
		var first atomic.Value
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				sent.Add(1)
				if err := signed(); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
			}
		})
		work()
		close(stop)
		wg.Wait()
		if failed.Load() > 0 || sent.Load() == 0 {
			t.Fatalf("%s: %d of %d signed deliveries not accepted; first: %v", what, failed.Load(), sent.Load(), first.Load())
		}
		t.Logf("%s: %d signed deliveries, all accepted", what, sent.Load())
	}

	// stall opens n connections that stall in the first kinds of four
	// ways, in turn (the first two send whole headers), each watched
	// until the daemon closes it.
	stall := func(n, kinds int) []*stalled {
		t.Helper()
		conns := make([]*stalled, 0, n)
		head := fmt.Sprintf("POST /hooks/gh HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\nX-Hub-Signature-256: sha256=00\r\n\r\n", addr)
		for i := range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("stalled connection %d: %v", i, err)
			}
			t.Cleanup(func() { c.Close() })
			conns = append(conns, watchClose(c))
			trickle := func(s string) {
				go func() {
					for j := 0; ; j = (j + 1) % len(s) {
						if _, err := c.Write([]byte{s[j]}); err != nil {
							return
						}
						time.Sleep(250 * time.Millisecond)
					}
				}()
			}
			switch i % kinds {
			case 0: // headers and a Content-Length, then nothing
				io.WriteString(c, head)
			case 1: // headers, then a body a byte at a time
				io.WriteString(c, head)
				trickle("x")
			case 2: // headers a byte at a time, never ending
				io.WriteString(c, "POST /hooks/gh HTTP/1.1\r\n")
				trickle("X-A: a\r\n")
			case 3: // nothing at all
			}
		}
		return conns
	}
	// cut waits until the daemon has closed every connection and checks
	// each closed within the short deadline (5 s) and some slack from when
	// it was opened (a connection over the bound on readers is accepted
	// only once the first are cut: twice the deadline).
	cut := func(what string, conns []*stalled, opened time.Time) {
		t.Helper()
		limit := 10 * time.Second
		if len(conns) > 512 {
			limit = 16 * time.Second
		}
		last := time.Duration(0)
		for i, c := range conns {
			<-c.done
			took := c.at.Sub(opened)
			if c.timedOut || took > limit {
				t.Fatalf("%s: connection %d still open %s after it was opened", what, i, took.Round(time.Millisecond))
			}
			last = max(last, took)
		}
		t.Logf("%s: all cut within %s", what, last.Round(time.Millisecond))
	}

	for _, c := range phases {
		what := fmt.Sprintf("%d stalled connections", c.n)
		opened := time.Now()
		var conns []*stalled
		whileSigned(what, func() {
			conns = stall(c.n, c.kinds)
			time.Sleep(2 * time.Second) // deliveries are signed while the stalls hold: the load, not a wait
		})
		cut(what, conns, opened)
	}

	// The flood: unsigned requests (no signature, a wrong one, an unknown
	// trigger) from 64 senders, beside 100 more stalled connections.
	opened := time.Now()
	var conns []*stalled
	var refused, other atomic.Int64
	var otherStatus atomic.Value
	whileSigned(fmt.Sprintf("a flood of %d unsigned requests", flood), func() {
		conns = stall(100, 4)
		next := atomic.Int64{}
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(flood) {
						return
					}
					body := fmt.Sprintf(`{"flood":%d}`, i)
					path := "/hooks/gh"
					req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(body))
					switch i % 3 {
					case 1:
						req.Header.Set("X-Hub-Signature-256", githubSign("not the secret", body))
					case 2:
						req.URL.Path = "/hooks/nope"
						req.Header.Set("X-Hub-Signature-256", githubSign(secret, body))
					}
					resp, err := client.Do(req)
					if err != nil {
						other.Add(1)
						otherStatus.CompareAndSwap(nil, err.Error())
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusUnauthorized {
						refused.Add(1)
					} else {
						other.Add(1)
						otherStatus.CompareAndSwap(nil, resp.Status)
					}
				}
			})
		}
		wg.Wait()
	})
	t.Logf("the flood took %s", time.Since(opened).Round(time.Millisecond))
	if refused.Load() != int64(flood) {
		t.Fatalf("unsigned requests: %d answered 401, %d otherwise (first: %v), want all %d 401", refused.Load(), other.Load(), otherStatus.Load(), flood)
	}
	cut("100 stalled connections beside the flood", conns, opened)
	if n := get[float64](d.do("GET", "/api/triggers/gh", nil).body, "counters", "deliveries"); n != float64(seq.Load()) {
		t.Fatalf("deliveries counted %v, want the %d signed ones", n, seq.Load())
	}
}

// stalled is a connection watched until its peer closes it.
type stalled struct {
	done     chan struct{} // closed once the peer closed or 30 s passed
	at       time.Time     // when
	timedOut bool          // 30 s passed with the connection open
}

// watchClose reads c (discarding) until its peer closes it, for at most
// 30 s.
func watchClose(c net.Conn) *stalled {
	s := &stalled{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := io.Copy(io.Discard, c)
		s.at = time.Now()
		var ne net.Error
		s.timedOut = errors.As(err, &ne) && ne.Timeout()
	}()
	return s
}

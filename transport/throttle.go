package transport

import (
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ThrottleLimits shape the answer to refused tokens from one client
// address (an IPv6 address counts by its /64). Zero fields take the
// defaults of DefaultThrottle.
type ThrottleLimits struct {
	// Free refused tokens are answered 401 at once.
	Free int
	// Delayed further ones are answered 401 after a delay that doubles
	// up to MaxDelay; every one after those is answered 429
	// loci::auth::throttled, with Retry-After, after MaxDelay.
	Delayed  int
	MaxDelay time.Duration
	// Forget is how long after its last refused token an address starts
	// afresh; Retry-After says it.
	Forget time.Duration
	// MaxAddrs bounds the addresses remembered at once.
	MaxAddrs int
	// LogEvery is the least time between two warnings about one address.
	LogEvery time.Duration
}

// DefaultThrottle: 5 refused tokens free, 5 more each slower (62 ms to
// 1 s), then 429 after 1 s each, until a minute passes without one.
var DefaultThrottle = ThrottleLimits{Free: 5, Delayed: 5, MaxDelay: time.Second, Forget: time.Minute,
	MaxAddrs: 10_000, LogEvery: time.Minute}

func (l ThrottleLimits) withDefaults() ThrottleLimits {
	d := DefaultThrottle
	if l.Free == 0 {
		l.Free = d.Free
	}
	if l.Delayed == 0 {
		l.Delayed = d.Delayed
	}
	if l.MaxDelay == 0 {
		l.MaxDelay = d.MaxDelay
	}
	if l.Forget == 0 {
		l.Forget = d.Forget
	}
	if l.MaxAddrs == 0 {
		l.MaxAddrs = d.MaxAddrs
	}
	if l.LogEvery == 0 {
		l.LogEvery = d.LogEvery
	}
	return l
}

// throttle remembers the refused tokens of each client address. It is
// consulted only after a token was refused: a valid token is never slowed
// or refused, from any address.
type throttle struct {
	lim ThrottleLimits
	log *slog.Logger
	now func() time.Time

	mu     sync.Mutex
	byAddr map[string]*refusals
	swept  time.Time
}

// refusals is one address's record.
type refusals struct {
	count    int       // refused tokens since the address started afresh
	last     time.Time // the latest
	logged   time.Time // the latest warning about it
	unlogged int       // refused tokens since that warning
}

func newThrottle(lim ThrottleLimits, log *slog.Logger) *throttle {
	return &throttle{lim: lim.withDefaults(), log: log, now: time.Now, byAddr: map[string]*refusals{}}
}

// verdict is what a refused token's answer waits for and becomes.
type verdict struct {
	wait       time.Duration
	throttled  bool // 429 instead of 401
	retryAfter int  // seconds, when throttled
}

// refused records a refused token from addr, warns about it (at most once
// per address every LogEvery, with the count, never the token) and says
// how to answer.
func (t *throttle) refused(addr string) verdict {
	now := t.now()
	t.mu.Lock()
	rec := t.byAddr[addr]
	if rec != nil && now.Sub(rec.last) >= t.lim.Forget {
		rec.count = 0
	}
	if rec == nil {
		t.makeRoom(now)
		rec = &refusals{}
		t.byAddr[addr] = rec
	}
	rec.count++
	rec.unlogged++
	rec.last = now
	n := rec.count
	var warn int
	if now.Sub(rec.logged) >= t.lim.LogEvery {
		warn, rec.unlogged, rec.logged = rec.unlogged, 0, now
	}
	t.mu.Unlock()

	v := verdict{}
	switch over := n - t.lim.Free; {
	case over <= 0:
	case over <= t.lim.Delayed:
		v.wait = t.lim.MaxDelay >> (t.lim.Delayed - over)
	default:
		v.wait, v.throttled = t.lim.MaxDelay, true
		v.retryAfter = int((t.lim.Forget + time.Second - 1) / time.Second)
	}
	if warn > 0 {
		t.log.Warn("refused authentication", "client", addr, "refused", warn, "recent_refused", n,
			"throttled", v.throttled, "every", t.lim.LogEvery.String())
	}
	return v
}

// makeRoom keeps the map within MaxAddrs: records past Forget are dropped
// (a sweep at most once a second), then, if it is still full, one record
// at random. The caller holds mu.
func (t *throttle) makeRoom(now time.Time) {
	if len(t.byAddr) < t.lim.MaxAddrs {
		return
	}
	if now.Sub(t.swept) >= time.Second {
		t.swept = now
		for a, rec := range t.byAddr {
			if now.Sub(rec.last) >= t.lim.Forget {
				delete(t.byAddr, a)
			}
		}
	}
	for a := range t.byAddr {
		if len(t.byAddr) < t.lim.MaxAddrs {
			break
		}
		delete(t.byAddr, a)
	}
}

// size is how many addresses are remembered.
func (t *throttle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byAddr)
}

// clientKey is the address a request's refusals count against: its IP,
// an IPv6 address by its /64 (one host commonly holds a whole /64).
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.To4().String()
	default:
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
}

// throttleRefusal makes a refused token's answer wait as v says; false
// when the client went away meanwhile (nothing is to be written).
func throttleRefusal(w http.ResponseWriter, r *http.Request, v verdict) bool {
	if v.wait > 0 {
		tm := time.NewTimer(v.wait)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-r.Context().Done():
			return false
		}
	}
	if v.throttled {
		w.Header().Set("Retry-After", strconv.Itoa(v.retryAfter))
	}
	return true
}

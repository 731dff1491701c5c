package triggers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
)

func TestCheckSettings(t *testing.T) {
	bad := []struct {
		typ string
		raw map[string]string
		key string
	}{
		{"cron", nil, "type"},
		{Schedule, nil, "settings.every"},
		{Schedule, map[string]string{"every": "500ms"}, "settings.every"},
		{Schedule, map[string]string{"every": "0s"}, "settings.every"},
		{Schedule, map[string]string{"every": "10 minutes"}, "settings.every"},
		{Schedule, map[string]string{"every": "12h", "at": "06:00"}, "settings.at"},
		{Schedule, map[string]string{"every": "1d", "at": "6:00"}, "settings.at"},
		{Schedule, map[string]string{"every": "1d", "at": "25:00"}, "settings.at"},
		{Schedule, map[string]string{"every": "1h", "path": "/x"}, "settings.path"},
		{Poll, map[string]string{"every": "1m", "max_backoff": "30s"}, "settings.max_backoff"},
		{Watch, map[string]string{"path": "relative"}, "settings.path"},
		{Watch, map[string]string{"path": "/x", "debounce": "50ms"}, "settings.debounce"},
		{Watch, map[string]string{"path": "/x", "debounce": "2h"}, "settings.debounce"},
		{Watch, map[string]string{"path": "/x", "recursive": "maybe"}, "settings.recursive"},
		{Webhook, map[string]string{"auth": "basic"}, "settings.auth"},
		{Webhook, map[string]string{"encoding": "base32"}, "settings.encoding"},
		{Webhook, map[string]string{"header": "x sig"}, "settings.header"},
		{Webhook, map[string]string{"every": "1m"}, "settings.every"},
		{Webhook, map[string]string{"secret": "x"}, "settings.secret"},
	}
	for _, c := range bad {
		t.Run(fmt.Sprint(c.typ, " ", c.raw), func(t *testing.T) {
			_, err := Check(c.typ, c.raw)
			e := fault.As(err)
			if err == nil || e.Code != fault.TriggerInvalid || !strings.HasPrefix(e.Msg, c.key+":") {
				t.Errorf("%s %v: %v, want loci::trigger::invalid naming %s", c.typ, c.raw, err, c.key)
			}
		})
	}
	s, err := Check(Poll, map[string]string{"every": "1m"})
	if err != nil || s.Every != time.Minute || s.MaxBackoff != 8*time.Minute {
		t.Fatalf("poll defaults: %+v %v", s, err)
	}
	s, err = Check(Watch, map[string]string{"path": "/srv"})
	if err != nil || s.Debounce != 2*time.Second || !s.Recursive {
		t.Fatalf("watch defaults: %+v %v", s, err)
	}
	s, err = Check(Webhook, nil)
	if err != nil || s.Auth != AuthHMAC || s.Header != "x-hub-signature-256" || s.Prefix != "sha256=" || s.Encoding != EncHex {
		t.Fatalf("webhook defaults: %+v %v", s, err)
	}
	s, err = Check(Webhook, map[string]string{"auth": "token"})
	if err != nil || s.Header != "x-loci-token" || s.Prefix != "" {
		t.Fatalf("token webhook defaults: %+v %v", s, err)
	}
	if _, err := Check(Schedule, map[string]string{"every": "2d", "at": "06:30"}); err != nil {
		t.Fatal(err)
	}
	for name, ok := range map[string]bool{"nightly": true, "a-b_c9": true, "": false, "reload": false, "Nightly": false, "a b": false} {
		t.Run(name, func(t *testing.T) {
			if (Name(name) == "") != ok {
				t.Errorf("Name(%q) = %q", name, Name(name))
			}
		})
	}
}

func TestScheduleTimes(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s, _ := Check(Schedule, map[string]string{"every": "15m"})
	if due := s.NextDue(now); !due.Equal(now.Add(15 * time.Minute)) {
		t.Fatalf("first due %v: one interval away", due)
	}
	// Down for 5 hours: fires once, then keeps its grid.
	due := now.Add(15 * time.Minute)
	later := now.Add(5*time.Hour + 7*time.Minute)
	if next := s.After(due, later); !next.Equal(now.Add(5*time.Hour + 15*time.Minute)) {
		t.Fatalf("after downtime next %v", next)
	}
	d, _ := Check(Schedule, map[string]string{"every": "1d", "at": "06:00"})
	if due := d.NextDue(now); !due.Equal(time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)) {
		t.Fatalf("at 06:00 from 10:00: %v", due)
	}
	if due := d.NextDue(time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)); !due.Equal(time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)) {
		t.Fatalf("at 06:00 from 05:00: %v", due)
	}
	p, _ := Check(Poll, map[string]string{"every": "1m", "max_backoff": "5m"})
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := p.Backoff(i); got != w {
			t.Fatalf("backoff after %d failures %v, want %v", i, got, w)
		}
	}
}

// The example of GitHub's documentation on validating webhook deliveries.
func TestVerifyGitHubSignature(t *testing.T) {
	s, _ := Check(Webhook, nil)
	secret, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	sig := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if !s.Verify(secret, body, sig) || s.Sign(secret, body) != sig {
		t.Fatal("GitHub's example signature refused")
	}
	for _, v := range []string{"", "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", sig[:len(sig)-1] + "8", "sha256=zz"} {
		t.Run(v, func(t *testing.T) {
			if s.Verify(secret, body, v) {
				t.Errorf("%q verified", v)
			}
		})
	}
	if s.Verify(nil, body, sig) || s.Verify(secret, []byte("Hello, World?"), sig) {
		t.Fatal("verified without the secret or with another body")
	}
	b64, _ := Check(Webhook, map[string]string{"encoding": "base64", "prefix": ""})
	if v := b64.Sign(secret, body); !b64.Verify(secret, body, v) || strings.HasPrefix(v, "sha256=") {
		t.Fatalf("base64 %q", v)
	}
	tok, _ := Check(Webhook, map[string]string{"auth": "token", "prefix": "Bearer "})
	if !tok.Verify(secret, body, "Bearer "+string(secret)) || tok.Verify(secret, body, string(secret)) {
		t.Fatal("token auth")
	}
}

// max_wait: default 30 s (or the debounce when that is longer), at least
// the debounce, at most a day.
func TestWatchMaxWait(t *testing.T) {
	for _, c := range []struct {
		raw  map[string]string
		want time.Duration
	}{
		{map[string]string{"path": "/x"}, 30 * time.Second},
		{map[string]string{"path": "/x", "debounce": "1m"}, time.Minute},
		{map[string]string{"path": "/x", "max_wait": "3s"}, 3 * time.Second},
		{map[string]string{"path": "/x", "debounce": "100ms", "max_wait": "100ms"}, 100 * time.Millisecond},
		{map[string]string{"path": "/x", "max_wait": "1d"}, 24 * time.Hour},
	} {
		t.Run(fmt.Sprint(c.raw), func(t *testing.T) {
			s, err := Check(Watch, c.raw)
			if err != nil || s.MaxWait != c.want {
				t.Errorf("%v: max_wait %s (%v), want %s", c.raw, s.MaxWait, err, c.want)
			}
		})
	}
	for _, raw := range []map[string]string{
		{"path": "/x", "max_wait": "1s"},
		{"path": "/x", "debounce": "10s", "max_wait": "5s"},
		{"path": "/x", "max_wait": "25h"},
		{"path": "/x", "max_wait": "soon"},
		{"path": "/x", "max_wait": "0s"},
	} {
		t.Run(fmt.Sprint(raw), func(t *testing.T) {
			_, err := Check(Watch, raw)
			if e := fault.As(err); err == nil || e.Code != fault.TriggerInvalid || !strings.HasPrefix(e.Msg, "settings.max_wait:") {
				t.Errorf("%v: %v, want loci::trigger::invalid naming settings.max_wait", raw, err)
			}
		})
	}
}

// A watch path that was given but is wrong says what is wrong with it,
// not that it is missing.
func TestWatchPathMessageSaysWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		raw  map[string]string
		want string
	}{
		{nil, "settings.path: is required"},
		{map[string]string{"path": ""}, "settings.path: is empty"},
		{map[string]string{"path": "relative"}, `settings.path: "relative" is relative`},
		{map[string]string{"path": "./x/y"}, `settings.path: "./x/y" is relative`},
	} {
		t.Run(fmt.Sprint(c.raw), func(t *testing.T) {
			_, err := Check(Watch, c.raw)
			e := fault.As(err)
			if err == nil || e.Code != fault.TriggerInvalid || !strings.HasPrefix(e.Msg, c.want) || !strings.Contains(e.Msg, "absolute") {
				t.Fatalf("%v: %v, want a message starting %q and asking for an absolute path", c.raw, err, c.want)
			}
		})
	}
}

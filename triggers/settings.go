// Package triggers holds the pure rules of triggers: the four types and
// their settings (defaults, validation), the timetable of a schedule, the
// backoff of a poll and the signature check of a webhook delivery. The
// daemon's trigger supervisor (services.Triggers) runs them; the file watch
// is package triggers/watch.
package triggers

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/names"
)

// The trigger types.
const (
	Schedule = "schedule"
	Poll     = "poll"
	Watch    = "watch"
	Webhook  = "webhook"
)

// Types lists the trigger types.
var Types = []string{Schedule, Poll, Watch, Webhook}

// keys are the settings each type takes.
var keys = map[string][]string{
	Schedule: {"every", "at"},
	Poll:     {"every", "max_backoff"},
	Watch:    {"path", "debounce", "recursive", "max_wait"},
	Webhook:  {"auth", "header", "prefix", "encoding", "delivery_header"},
}

// Keys returns the settings a type takes.
func Keys(typ string) []string { return keys[typ] }

// Webhook auth kinds and encodings.
const (
	AuthHMAC  = "hmac-sha256"
	AuthToken = "token"
	EncHex    = "hex"
	EncBase64 = "base64"
)

// Defaults of the settings.
const (
	DefaultDebounce    = 2 * time.Second
	MinDebounce        = 100 * time.Millisecond
	MaxDebounce        = time.Hour
	DefaultMaxWait     = 30 * time.Second
	MaxMaxWait         = 24 * time.Hour
	BackoffIntervals   = 8
	DefaultHMACHeader  = "x-hub-signature-256"
	DefaultTokenHeader = "x-loci-token"
	DefaultHMACPrefix  = "sha256="
)

// Settings are a trigger's parsed settings, defaults applied.
type Settings struct {
	Type string
	// Every is the interval of a schedule or poll.
	Every time.Duration
	// At is a schedule's time of day (minutes after midnight UTC); -1 when
	// unset.
	At int
	// MaxBackoff is a poll's longest wait after failures.
	MaxBackoff time.Duration
	// Path, Debounce, Recursive and MaxWait are a watch's.
	Path      string
	Debounce  time.Duration
	Recursive bool
	// MaxWait is a watch's longest wait after the first change of a burst:
	// changes that never leave the debounce's quiet still ask for a run
	// then.
	MaxWait time.Duration
	// Auth, Header, Prefix, Encoding and DeliveryHeader are a webhook's.
	Auth, Header, Prefix, Encoding, DeliveryHeader string
}

// Name reports what is wrong with a trigger name ("" when nothing): the
// rule of names.Identifier.
func Name(name string) string { return names.Identifier(name) }

var durationRE = regexp.MustCompile(`^([0-9]+)(ms|s|m|h|d)$`)

// ParseDuration reads a whole number and a unit: ms, s, m, h or d.
func ParseDuration(s string) (time.Duration, bool) {
	m := durationRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n > 1<<31 {
		return 0, false
	}
	unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	return time.Duration(n) * unit, true
}

// FormatDuration writes d in the largest unit that divides it.
func FormatDuration(d time.Duration) string {
	for _, u := range []struct {
		s string
		d time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if d >= u.d && d%u.d == 0 {
			return fmt.Sprintf("%d%s", d/u.d, u.s)
		}
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// Check parses a trigger's type and settings: every key the type takes,
// none it does not, values in range. Errors are loci::trigger::invalid
// naming the key. (Whether a setting reads like a secret is the daemon's
// check: the rules live with the sources.)
func Check(typ string, raw map[string]string) (Settings, error) {
	bad := func(key, problem string) error {
		return fault.New(fault.TriggerInvalid, key+": "+problem, "correct "+key+" and send it again")
	}
	allowed, ok := keys[typ]
	if !ok {
		return Settings{}, bad("type", fmt.Sprintf("%q is not one of %s", typ, strings.Join(Types, ", ")))
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !contains(allowed, k) {
			return Settings{}, bad("settings."+k, fmt.Sprintf("a %s trigger does not take it (it takes %s)", typ, strings.Join(allowed, ", ")))
		}
	}
	s := Settings{Type: typ, At: -1}
	switch typ {
	case Schedule, Poll:
		v, ok := raw["every"]
		if !ok {
			return s, bad("settings.every", "is required (a number and a unit: s, m, h or d, at least 1s)")
		}
		d, ok := ParseDuration(v)
		if !ok || d < time.Second || strings.HasSuffix(v, "ms") {
			return s, bad("settings.every", fmt.Sprintf("%q is not an interval of at least 1s (a number and a unit: s, m, h or d)", v))
		}
		s.Every = d
		if typ == Schedule {
			if at, ok := raw["at"]; ok {
				t, err := time.Parse("15:04", at)
				if err != nil || len(at) != 5 {
					return s, bad("settings.at", fmt.Sprintf("%q is not a time of day HH:MM (UTC)", at))
				}
				if d%(24*time.Hour) != 0 {
					return s, bad("settings.at", "goes only with whole-day intervals (every = 1d, 2d, ...)")
				}
				s.At = t.Hour()*60 + t.Minute()
			}
		} else {
			s.MaxBackoff = BackoffIntervals * d
			if v, ok := raw["max_backoff"]; ok {
				mb, ok := ParseDuration(v)
				if !ok || mb < d {
					return s, bad("settings.max_backoff", fmt.Sprintf("%q is not an interval at least as long as every", v))
				}
				s.MaxBackoff = mb
			}
		}
	case Watch:
		p, ok := raw["path"]
		switch {
		case !ok:
			return s, bad("settings.path", "is required: the absolute path of the directory to watch")
		case strings.TrimSpace(p) == "":
			return s, bad("settings.path", "is empty: give the absolute path of the directory to watch")
		case !filepath.IsAbs(p):
			return s, bad("settings.path", fmt.Sprintf("%q is relative: give the absolute path of the directory to watch (the daemon does not run in your directory)", p))
		}
		s.Path = p
		s.Debounce, s.Recursive = DefaultDebounce, true
		if v, ok := raw["debounce"]; ok {
			d, ok := ParseDuration(v)
			if !ok || d < MinDebounce || d > MaxDebounce {
				return s, bad("settings.debounce", fmt.Sprintf("%q is not between 100ms and 1h", v))
			}
			s.Debounce = d
		}
		if v, ok := raw["recursive"]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return s, bad("settings.recursive", fmt.Sprintf("%q is not true or false", v))
			}
			s.Recursive = b
		}
		s.MaxWait = max(DefaultMaxWait, s.Debounce)
		if v, ok := raw["max_wait"]; ok {
			d, ok := ParseDuration(v)
			if !ok || d < s.Debounce || d > MaxMaxWait {
				return s, bad("settings.max_wait", fmt.Sprintf("%q is not between the debounce (%s) and 1d", v, FormatDuration(s.Debounce)))
			}
			s.MaxWait = d
		}
	case Webhook:
		s.Auth = AuthHMAC
		if v, ok := raw["auth"]; ok {
			if v != AuthHMAC && v != AuthToken {
				return s, bad("settings.auth", fmt.Sprintf("%q is not hmac-sha256 or token", v))
			}
			s.Auth = v
		}
		s.Header, s.Prefix, s.Encoding = DefaultHMACHeader, DefaultHMACPrefix, EncHex
		if s.Auth == AuthToken {
			s.Header, s.Prefix = DefaultTokenHeader, ""
		}
		if v, ok := raw["header"]; ok {
			if !headerName(v) {
				return s, bad("settings.header", fmt.Sprintf("%q is not a header name", v))
			}
			s.Header = strings.ToLower(v)
		}
		if v, ok := raw["prefix"]; ok {
			s.Prefix = v
		}
		if v, ok := raw["encoding"]; ok {
			if v != EncHex && v != EncBase64 {
				return s, bad("settings.encoding", fmt.Sprintf("%q is not hex or base64", v))
			}
			s.Encoding = v
		}
		if v, ok := raw["delivery_header"]; ok {
			if !headerName(v) {
				return s, bad("settings.delivery_header", fmt.Sprintf("%q is not a header name", v))
			}
			s.DeliveryHeader = strings.ToLower(v)
		}
	}
	return s, nil
}

func headerName(v string) bool {
	return v != "" && strings.Trim(strings.ToLower(v), "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// NextDue is a schedule's next time strictly after from: one interval
// later, or with At the next such time of day (then every interval days
// after the previous slot).
func (s Settings) NextDue(from time.Time) time.Time {
	from = from.UTC()
	if s.At < 0 {
		return from.Add(s.Every)
	}
	day := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC)
	t := day.Add(time.Duration(s.At) * time.Minute)
	if !t.After(from) {
		t = t.Add(24 * time.Hour)
	}
	return t
}

// After is the slot that follows a due time once it fired at now: the
// next one on the due time's grid strictly after now. A daemon down for
// many slots fires once, then keeps its grid.
func (s Settings) After(due, now time.Time) time.Time {
	if !due.After(now) {
		n := now.Sub(due)/s.Every + 1
		return due.Add(n * s.Every)
	}
	return due
}

// Backoff is a poll's wait after failures consecutive failures: its
// interval doubled per failure, at most MaxBackoff.
func (s Settings) Backoff(failures int) time.Duration {
	d := s.Every
	for range failures {
		if d >= s.MaxBackoff {
			break
		}
		d *= 2
	}
	return min(d, s.MaxBackoff)
}

package credentials

import (
	"fmt"
	"log/slog"
	"time"
)

// Token is a stored sign-in. It never prints, logs or marshals its
// secrets (String shows only whether they are set and the expiry): fmt
// (any verb), slog and encoders that use MarshalText (JSON, TOML) see
// String, and the secrets themselves are held by a function, which fmt
// prints by reflection (a Token in an unexported field, under any verb)
// as an address. They are reached only through Access and Refresh;
// NewToken makes one. Copies share the (unchangeable) secrets.
type Token struct {
	sec    func() tokenSecrets
	Expiry time.Time
	Scopes []string
	// Provider is the Provider.Digest it was signed in under.
	Provider string
}

// tokenSecrets are a token's secrets.
type tokenSecrets struct {
	access, refresh string
}

// NewToken is a token holding access and refresh (either may be "");
// its Expiry, Scopes and Provider are the caller's to set.
func NewToken(access, refresh string) *Token {
	s := tokenSecrets{access: access, refresh: refresh}
	return &Token{sec: func() tokenSecrets { return s }}
}

// Access is the access token: for the source's requests, never to keep,
// show or log.
func (t *Token) Access() string {
	if t == nil || t.sec == nil {
		return ""
	}
	return t.sec().access
}

// Refresh is the refresh token ("" none): for Refresh alone; it never
// reaches a source.
func (t *Token) Refresh() string {
	if t == nil || t.sec == nil {
		return ""
	}
	return t.sec().refresh
}

// SignedInUnder reports t was signed in under p's client, endpoints and
// scopes (Provider.Digest): otherwise the source must sign in again.
func (t *Token) SignedInUnder(p Provider) bool {
	return t != nil && t.Provider == p.Digest()
}

// Expired reports t's access token expires within margin of now (a token
// without an expiry never does).
func (t *Token) Expired(now time.Time, margin time.Duration) bool {
	return t != nil && !t.Expiry.IsZero() && !now.Add(margin).Before(t.Expiry)
}

// String is what a token prints as: whether its secrets are set and its
// expiry, never their values.
func (t Token) String() string {
	set := func(s string) string {
		if s == "" {
			return "none"
		}
		return "set"
	}
	exp := "no expiry"
	if !t.Expiry.IsZero() {
		exp = "expires " + t.Expiry.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("token(access %s, refresh %s, %s)", set(t.Access()), set(t.Refresh()), exp)
}

// GoString is String, for %#v.
func (t Token) GoString() string { return t.String() }

// Format prints String whatever the verb.
func (t Token) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(t.String())) }

// LogValue logs String.
func (t Token) LogValue() slog.Value { return slog.StringValue(t.String()) }

// MarshalText marshals String (JSON, TOML and the like): a token is
// never encoded with its secrets except by the store (tokenFile).
func (t Token) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

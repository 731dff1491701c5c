package credentials

import (
	"fmt"
	"log/slog"
	"time"
)

// Token is a stored sign-in. It never prints, logs or marshals its
// secrets (String shows only whether they are set and the expiry): fmt
// (any verb), slog and encoders that use MarshalText (JSON, TOML) see
// String. Keep it behind a pointer (*Token) in structs: fmt prints a
// pointer in a struct as an address, while a Token value held in an
// unexported field would be printed field by field.
type Token struct {
	Access  string
	Refresh string
	Expiry  time.Time
	Scopes  []string
	// Provider is the Provider.Digest it was signed in under.
	Provider string
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
	return fmt.Sprintf("token(access %s, refresh %s, %s)", set(t.Access), set(t.Refresh), exp)
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

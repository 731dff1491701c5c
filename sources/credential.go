package sources

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
)

// Credential is the secret a run of a source reads with (a token, a
// password), read at run time from the reference its miner or source
// configuration names (config.CredentialRef): never stored in the palace,
// a job's input, an event, a status or a log. Its value is reached only
// through Secret; printed (fmt, %v, %#v, %+v, inside a struct), logged
// (slog) or marshalled (JSON, text) it shows its kind alone. The zero
// Credential is none.
type Credential struct {
	// c is behind a pointer so that even a Credential in an unexported
	// field, which fmt prints by reflection, prints as an address.
	c *credential
}

type credential struct {
	kind string
	// secret is behind a function: fmt prints a function as an address
	// whatever the verb, where a byte slice in a field it reaches by
	// reflection (%s, %q of a struct holding a Credential) would show.
	secret func() []byte
}

// NewCredential is a credential of a reference kind (env, file, oauth)
// holding secret (copied); an empty secret is none.
func NewCredential(kind string, secret []byte) Credential {
	if len(secret) == 0 {
		return Credential{}
	}
	held := bytes.Clone(secret)
	return Credential{c: &credential{kind: kind, secret: func() []byte { return held }}}
}

// IsZero reports no credential.
func (c Credential) IsZero() bool { return c.c == nil }

// Kind is the kind of reference it was read from (env, file, oauth; ""
// for none).
func (c Credential) Kind() string {
	if c.c == nil {
		return ""
	}
	return c.c.kind
}

// Secret is the credential's value (a copy; nil for none): for the adapter
// to use, never to keep, show or log.
func (c Credential) Secret() []byte {
	if c.c == nil {
		return nil
	}
	return bytes.Clone(c.c.secret())
}

// Scrub replaces the credential's value in s ("" credential: s as is): an
// adapter's error or panic may quote what it was given.
func (c Credential) Scrub(s string) string {
	if c.c == nil {
		return s
	}
	return strings.ReplaceAll(s, string(c.c.secret()), "[credential]")
}

// String is what a credential prints as: its kind, never its value.
func (c Credential) String() string {
	if c.c == nil {
		return "no credential"
	}
	return "credential(" + c.c.kind + ")"
}

// GoString is String, for %#v.
func (c Credential) GoString() string { return c.String() }

// Format prints String whatever the verb.
func (c Credential) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue logs String.
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalText marshals String (JSON, TOML and the like).
func (c Credential) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

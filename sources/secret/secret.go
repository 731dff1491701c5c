// Package secret names the secret policies: what mining does with a
// document in which the sources' scanner finds a credential. It is a pure
// enum apart from sources (which finds and redacts the secrets) so that
// the configuration, which the CLI links, validates mining.secrets
// without linking every source adapter.
package secret

// Policy is what mining does with a document holding a credential (the
// configuration's mining.secrets, validated against Policies).
type Policy string

// The secret policies.
const (
	// Redact replaces each secret found by a marker naming its kind.
	Redact Policy = "redact"
	// Skip leaves the document unfiled.
	Skip Policy = "skip"
	// Allow files the document as it is.
	Allow Policy = "allow"
)

// Policies are the secret policies, in the order the configuration's
// messages name them.
var Policies = []Policy{Redact, Skip, Allow}

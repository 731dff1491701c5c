package api

import "time"

// SignInStatus is a source's (or a source configuration's) OAuth sign-in
// status: {signed_in, expires_at?, scopes, provider, flows}. Never a
// token.
type SignInStatus struct {
	SignedIn  bool       `json:"signed_in"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Scopes    []string   `json:"scopes"`
	Provider  string     `json:"provider"`
	// Flows are the flows the source declares: device, browser.
	Flows []string `json:"flows"`
	// Reason says why a source that was signed in is not any more (the
	// provider refused a refresh, the source changed its client,
	// endpoints or scopes): sign in again.
	Reason string `json:"reason,omitempty"`
}

// SignInStarted is POST .../auth's answer: a flow to finish in a browser
// or on another device, then wait for.
type SignInStarted struct {
	Flow string `json:"flow"`
	// Kind is device or browser.
	Kind string `json:"kind"`
	// UserCode and VerificationURI (device): enter the code at the URI.
	UserCode        string `json:"user_code,omitempty"`
	VerificationURI string `json:"verification_uri,omitempty"`
	// URL (browser): open it on the daemon's machine.
	URL       string `json:"url,omitempty"`
	ExpiresIn int    `json:"expires_in"`
}

// SignInWaited is .../wait's answer: status pending, or signed_in with
// the sign-in's details (never the token itself).
type SignInWaited struct {
	Status    string     `json:"status"`
	Source    string     `json:"source,omitempty"`
	SignedIn  bool       `json:"signed_in"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Scopes    []string   `json:"scopes,omitempty"`
	// StoredIn is where the token went: file (with the folder) or
	// keyring.
	StoredIn string `json:"stored_in,omitempty"`
}

// The statuses of a sign-in wait.
const (
	SignInPending = "pending"
	SignInDone    = "signed_in"
)

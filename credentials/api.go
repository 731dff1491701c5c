package credentials

import (
	"context"
	"time"

	"github.com/loci-dev/loci/fault"
)

// The flow kinds a provider may declare.
const (
	FlowDevice  = "device"
	FlowBrowser = "browser"
)

// The backends of credentials.backend.
const (
	BackendAuto = "auto"
	BackendFile = "file"
)

// Provider is a source's OAuth 2.0 declaration, from its manifest's
// [oauth] table: a public client (no secret) and the provider's
// endpoints.
type Provider struct {
	// Name is the provider's name as status shows it.
	Name     string
	ClientID string
	// DeviceAuthURL (device flow), AuthURL (browser flow) and TokenURL.
	DeviceAuthURL string
	AuthURL       string
	TokenURL      string
	Scopes        []string
	// Flows are the flows it supports: FlowDevice, FlowBrowser.
	Flows []string
}

// Digest identifies the client, endpoints and scopes: a token signed in
// under another digest is not signed in (a changed source requires
// sign-in again).
func (p Provider) Digest() string { return "" }

// Token is a stored sign-in. It never prints, logs or marshals its
// secrets (String shows only whether they are set and the expiry).
type Token struct {
	Access  string
	Refresh string
	Expiry  time.Time
	Scopes  []string
	// Provider is the Provider.Digest it was signed in under.
	Provider string
}

// Store keeps tokens by key (a source, or a source configuration),
// outside the palace.
type Store interface {
	// Load is key's token (nil, nil when none).
	Load(key string) (*Token, error)
	// Save keeps t under key, readable by the daemon's user only.
	Save(key string, t *Token) error
	// Delete forgets key's token (none is no error).
	Delete(key string) error
	// Where says where tokens go ("file <dir>" or "keyring").
	Where() string
}

// Open is the store credentials.backend names over dir
// (credentials.dir); loci::credential::store_failed when it cannot be
// used.
func Open(dir, backend string) (Store, error) {
	return nil, fault.New(fault.CredentialStoreFailed, "sign-in is being built", "wait for the next loci")
}

// Started is a flow begun: what the user does to finish it.
type Started struct {
	ID   string
	Kind string
	// UserCode and VerificationURI (device flow).
	UserCode        string
	VerificationURI string
	// URL (browser flow): the authorisation URL to open.
	URL       string
	ExpiresIn time.Duration
}

// Flows runs sign-in flows: at most one waiting per key (a new one
// replaces it), each reported once.
type Flows struct{}

// Start begins a flow of kind ("" the provider's first) for key;
// loci::credential::oauth_unsupported when the provider does not declare
// it, loci::credential::flow_failed when the provider refuses to start.
func (f *Flows) Start(ctx context.Context, key string, p Provider, kind string) (Started, error) {
	return Started{}, fault.New(fault.CredentialOAuthUnsupported, "sign-in is being built", "wait for the next loci")
}

// Wait waits up to timeout for flow id: (nil, nil) while pending; the
// token once signed in (reported once: a second wait is flow_failed);
// loci::credential::flow_failed when declined, expired, refused,
// replaced or unknown.
func (f *Flows) Wait(ctx context.Context, id string, timeout time.Duration) (*Token, error) {
	return nil, fault.New(fault.CredentialFlowFailed, "sign-in is being built", "wait for the next loci")
}

// Refresh is t refreshed at the provider;
// loci::credential::refresh_failed when the provider refuses.
func Refresh(ctx context.Context, p Provider, t *Token) (*Token, error) {
	return nil, fault.New(fault.CredentialRefreshFailed, "sign-in is being built", "wait for the next loci")
}

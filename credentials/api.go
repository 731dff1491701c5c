package credentials

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// The flow kinds a provider may declare.
const (
	FlowDevice  = pack.FlowDevice
	FlowBrowser = pack.FlowBrowser
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

// FromManifest is the provider a manifest's [oauth] table declares
// (checked by pack.Manifest.Check, which fills in its flows); ok false
// when the manifest declares no sign-in.
func FromManifest(m *pack.Manifest) (p Provider, ok bool) {
	if m == nil || m.OAuth == nil {
		return Provider{}, false
	}
	o := m.OAuth
	return Provider{
		Name: o.Provider, ClientID: o.ClientID,
		DeviceAuthURL: o.DeviceAuthorizationURL, AuthURL: o.AuthorizationURL, TokenURL: o.TokenURL,
		Scopes: slices.Clone(o.Scopes), Flows: slices.Clone(o.Flows),
	}, true
}

// Check is nil when p can sign in (the manifest rules: pack.OAuth.Check),
// else loci::credential::oauth_unsupported saying what is missing.
func (p Provider) Check() error {
	_, err := p.normalised()
	return err
}

// normalised is p checked, its flows filled in when none are named
// (those whose endpoint is given).
func (p Provider) normalised() (Provider, error) {
	o := pack.OAuth{Provider: p.Name, ClientID: p.ClientID, DeviceAuthorizationURL: p.DeviceAuthURL,
		AuthorizationURL: p.AuthURL, TokenURL: p.TokenURL, Scopes: slices.Clone(p.Scopes), Flows: slices.Clone(p.Flows)}
	if err := o.Check(); err != nil {
		return p, fault.Wrap(fault.CredentialOAuthUnsupported, err, "the source's sign-in cannot be used: "+fault.As(err).Msg,
			"correct the source's [oauth] table in "+pack.ManifestFile+" and install it again")
	}
	p.Flows = o.Flows
	return p, nil
}

// Digest identifies the client, endpoints and scopes: a token signed in
// under another digest is not signed in (a changed source requires
// sign-in again). SHA-256 in hex over the client id, the three endpoints
// and the scopes sorted without repeats; the provider's name and the
// flows offered are not in it.
func (p Provider) Digest() string {
	scopes := slices.Clone(p.Scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	b, _ := json.Marshal(struct {
		V             int      `json:"v"`
		ClientID      string   `json:"client_id"`
		DeviceAuthURL string   `json:"device_authorization_url"`
		AuthURL       string   `json:"authorization_url"`
		TokenURL      string   `json:"token_url"`
		Scopes        []string `json:"scopes"`
	}{1, p.ClientID, p.DeviceAuthURL, p.AuthURL, p.TokenURL, scopes})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

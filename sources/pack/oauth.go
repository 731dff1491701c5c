package pack

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/loci-dev/loci/fault"
)

// The sign-in flows a manifest's [oauth] table may name.
const (
	FlowDevice  = "device"
	FlowBrowser = "browser"
)

// Bounds on what an [oauth] table holds: it is shown, sent and digested.
const (
	maxOAuthURL    = 2048
	maxOAuthScopes = 64
	maxOAuthField  = 256
)

// OAuth is a manifest's [oauth] table: how the source signs in to its
// service with OAuth 2.0 as a public client (no secret: a package cannot
// keep one), through the device flow (RFC 8628), the browser flow (an
// authorisation code with PKCE, redirected to a loopback listener), or
// both.
type OAuth struct {
	// Provider is the service's name as status shows it ("GitHub").
	Provider string `toml:"provider" json:"provider"`
	// ClientID is the client's registered id at the provider.
	ClientID string `toml:"client_id" json:"client_id"`
	// DeviceAuthorizationURL is the device flow's endpoint.
	DeviceAuthorizationURL string `toml:"device_authorization_url,omitempty" json:"device_authorization_url,omitempty"`
	// AuthorizationURL is the browser flow's endpoint.
	AuthorizationURL string `toml:"authorization_url,omitempty" json:"authorization_url,omitempty"`
	// TokenURL is the token endpoint both flows and refreshes use.
	TokenURL string `toml:"token_url" json:"token_url"`
	// Scopes are the scopes asked for.
	Scopes []string `toml:"scopes,omitempty" json:"scopes,omitempty"`
	// Flows are the flows offered, FlowDevice and FlowBrowser, in order
	// of preference; none: those whose URL is given (device first).
	Flows []string `toml:"flows,omitempty" json:"flows,omitempty"`
}

// Check checks the table, each problem loci::input::invalid naming its
// key, and fills in the flows when none are named. Every URL is https
// (http only to a loopback address, for tests and providers on this
// machine), without a user or fragment.
func (o *OAuth) Check() error {
	bad := func(field, problem string) error { return manifestError(0, "oauth."+field+": "+problem) }
	if o.Provider == "" || len(o.Provider) > 64 || !printable(o.Provider, true) {
		return bad("provider", "the service's name is required (printable, at most 64 bytes)")
	}
	if o.ClientID == "" || len(o.ClientID) > maxOAuthField || !printable(o.ClientID, false) {
		return bad("client_id", fmt.Sprintf("the client id registered at the provider is required (printable, no spaces, at most %d bytes)", maxOAuthField))
	}
	for _, u := range []struct {
		field    string
		v        string
		required bool
	}{{"device_authorization_url", o.DeviceAuthorizationURL, false}, {"authorization_url", o.AuthorizationURL, false}, {"token_url", o.TokenURL, true}} {
		if u.v == "" {
			if u.required {
				return bad(u.field, "the provider's endpoint is required")
			}
			continue
		}
		if problem := CheckOAuthURL(u.v); problem != "" {
			return bad(u.field, problem)
		}
	}
	if len(o.Scopes) > maxOAuthScopes {
		return bad("scopes", fmt.Sprintf("%d scopes; at most %d", len(o.Scopes), maxOAuthScopes))
	}
	for _, s := range o.Scopes {
		if !scopeToken(s) {
			return bad("scopes", fmt.Sprintf("%q is not a scope (printable, no spaces, quotes or backslashes, at most %d bytes)", fault.Clip(s, 64), maxOAuthField))
		}
	}
	if len(o.Flows) == 0 {
		var flows []string
		if o.DeviceAuthorizationURL != "" {
			flows = append(flows, FlowDevice)
		}
		if o.AuthorizationURL != "" {
			flows = append(flows, FlowBrowser)
		}
		if len(flows) == 0 {
			return bad("flows", "no flow can run: give device_authorization_url (device flow), authorization_url (browser flow) or both")
		}
		o.Flows = flows
	}
	var seen []string
	for _, f := range o.Flows {
		switch {
		case f != FlowDevice && f != FlowBrowser:
			return bad("flows", fmt.Sprintf("%q is not a flow (%s, %s)", fault.Clip(f, 64), FlowDevice, FlowBrowser))
		case slices.Contains(seen, f):
			return bad("flows", fmt.Sprintf("%q is named twice", f))
		case f == FlowDevice && o.DeviceAuthorizationURL == "":
			return bad("device_authorization_url", "the device flow is named in flows but has no endpoint")
		case f == FlowBrowser && o.AuthorizationURL == "":
			return bad("authorization_url", "the browser flow is named in flows but has no endpoint")
		}
		seen = append(seen, f)
	}
	return nil
}

// printable reports s is printable ASCII (spaces allowed when spaces).
func printable(s string, spaces bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || (c == ' ' && !spaces) {
			return false
		}
	}
	return true
}

// scopeToken reports s is an RFC 6749 scope-token (%x21 / %x23-5B /
// %x5D-7E), bounded.
func scopeToken(s string) bool {
	if s == "" || len(s) > maxOAuthField {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// CheckOAuthURL is "" when u may be an OAuth endpoint (an absolute https
// URL, or http to a loopback address, with a host, no user and no
// fragment), else why not.
func CheckOAuthURL(u string) string {
	if len(u) > maxOAuthURL {
		return fmt.Sprintf("%d bytes; at most %d", len(u), maxOAuthURL)
	}
	p, err := url.Parse(u)
	switch {
	case err != nil || !p.IsAbs() || p.Host == "" || p.Opaque != "":
		return fmt.Sprintf("%q is not an absolute URL (https://host/path)", fault.Clip(u, 64))
	case p.User != nil:
		return "a URL with a user or password in it is refused"
	case p.Fragment != "" || strings.Contains(u, "#"):
		return "an endpoint has no fragment (#...)"
	case p.Scheme == "https":
		return ""
	case p.Scheme == "http" && Loopback(p.Hostname()):
		return ""
	case p.Scheme == "http":
		return fmt.Sprintf("%q is plain http to another machine; an endpoint is https (http only to a loopback address)", fault.Clip(u, 64))
	}
	return fmt.Sprintf("%q is not https", fault.Clip(u, 64))
}

// Loopback reports host (a name or an address, without port) is this
// machine's loopback: localhost or a loopback address.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

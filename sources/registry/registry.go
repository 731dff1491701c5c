// Package registry reads static source registries: versioned JSON
// indexes (pack.Index) served by anything that serves files — https://,
// http:// to loopback only, file:// or an absolute path — and the
// archives they list, checked against the index's SHA-256 before they
// are read and against the trusted keys under the signature policy. The
// index of the packages bundled with loci is one more registry, named
// "bundled". Nothing reaches the network unless mining.registries names
// a registry.
package registry

import (
	"context"
	"net/http"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// Policy is the signature policy (mining.signature_policy).
type Policy string

// The signature policies: optional (an unknown key counts as unsigned; a
// bad signature from a trusted key is tampering) and required (an
// archive not signed by a trusted key is loci::source::untrusted).
const (
	PolicyOptional Policy = "optional"
	PolicyRequired Policy = "required"
)

// Bundled is the name of the registry of the packages shipped in loci.
const Bundled = "bundled"

// Spec is one configured registry: a name and the index's location.
type Spec struct {
	Name string
	URL  string
}

// Kind is what a lookup lists: sources or plugins.
type Kind int

// The kinds of things an index lists.
const (
	Sources Kind = iota
	Plugins
)

// Options configure a Client.
type Options struct {
	// Registries are the configured registries, in order (the first
	// listing a name wins unless one is named).
	Registries []Spec
	// TrustedKeys are the public keys (pack.FormatPublicKey's form) whose
	// signatures vouch for an archive.
	TrustedKeys []string
	Policy      Policy
	// CacheDir keeps fetched indexes for revalidation ("" memory only).
	CacheDir string
	// LociVersion is this daemon's version: a lookup picks the newest
	// release that runs on it.
	LociVersion string
	// Bundled is the bundled packages' index and their archives' bytes
	// by file name (nil: no bundled registry).
	Bundled        *pack.Index
	BundledArchive func(file string) ([]byte, error)
	// HTTP is the client for http(s) registries (nil: one with timeouts
	// whose redirects are checked like the first request).
	HTTP *http.Client
}

// Client reads the configured registries.
type Client struct {
	o Options
}

// New is a client over o's registries; a registry location that is not
// allowed (http:// beyond loopback, a relative path, another scheme) is
// loci::config::invalid naming it.
func New(o Options) (*Client, error) {
	return &Client{o: o}, nil
}

// Release is one version of a source or plugin as a registry lists it,
// with its archive's resolved location.
type Release struct {
	Registry    string
	Name        string
	Description string
	pack.IndexRelease
	// URL is where the archive is (resolved beside the index).
	URL string
}

// Fetched is a release's archive, its size and SHA-256 checked against
// the index, its signature against the policy.
type Fetched struct {
	Release
	Archive []byte
	// SignedBy is the trusted key that vouched ("" none).
	SignedBy string
}

// Search lists the newest release of each source (or plugin) matching q
// (in its name or description; "" all) that runs here, from registry (""
// all). A registry that cannot be read is a warning when others answer.
func (c *Client) Search(ctx context.Context, kind Kind, q, registry string) ([]Release, []api.RegistryWarning, error) {
	return nil, nil, notBuilt()
}

// Find is the release of name to install: version when given (a yanked
// one only when pinned), else the newest that runs here and is not
// yanked; loci::source::not_in_registry when no registry lists it.
func (c *Client) Find(ctx context.Context, kind Kind, name, version, registry string) (Release, error) {
	return Release{}, notBuilt()
}

// Fetch reads r's archive and checks it: size and SHA-256 against the
// index (loci::source::integrity) before anything reads it, then its
// signature under the policy (loci::source::untrusted).
func (c *Client) Fetch(ctx context.Context, r Release) (Fetched, error) {
	return Fetched{}, notBuilt()
}

func notBuilt() error {
	return fault.New(fault.SourceRegistryUnavailable, "registries are being built", "wait for the next loci")
}

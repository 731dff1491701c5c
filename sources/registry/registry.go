// Package registry reads static source registries: versioned JSON
// indexes (pack.Index) served by anything that serves files — https://,
// http:// to loopback only, file:// or an absolute path — and the
// archives they list, checked against the index's size and SHA-256
// before they are read and against the trusted keys under the signature
// policy. Indexes are kept in memory (and in CacheDir) and revalidated
// at each use (ETag and If-Modified-Since; a file's size and time). The
// index of the packages bundled with loci is one more registry, named
// "bundled", read from the binary. Nothing reaches the network unless
// mining.registries names a registry.
package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

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

// The bounds of what a registry may send.
const (
	// MaxIndexBytes is the largest index read.
	MaxIndexBytes = 16 << 20
	// MaxArchiveBytes is the largest archive read (pack's limit).
	MaxArchiveBytes = pack.MaxArchiveBytes
	// MaxRedirects is the most redirects one fetch follows.
	MaxRedirects = 5
	// IndexTimeout and ArchiveTimeout bound one fetch of each.
	IndexTimeout   = 30 * time.Second
	ArchiveTimeout = 2 * time.Minute
	// DialTimeout bounds connecting to a registry, HeaderTimeout (and
	// the TLS handshake) its answer's start: a registry that never
	// answers costs seconds, not IndexTimeout.
	DialTimeout   = 5 * time.Second
	HeaderTimeout = 10 * time.Second
	// FailureMemory is how long an http(s) registry that could not be
	// read is not asked again: lookups meanwhile answer the remembered
	// failure at once (a warning when others answer).
	FailureMemory = 45 * time.Second
)

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

func (k Kind) String() string {
	if k == Plugins {
		return "plugin"
	}
	return "source"
}

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
	// BundledPackages, when Bundled is nil, are the bundled packages:
	// their index (BundledIndex) is built at the first lookup, not at
	// New (packing them takes a while).
	BundledPackages func() ([]*pack.Package, error)
	// HTTP is the client for http(s) registries (nil: one with timeouts
	// whose redirects are checked like the first request and whose plain
	// http connections reach loopback only).
	HTTP *http.Client
}

// Client reads the configured registries. It is safe for concurrent use.
type Client struct {
	o       Options
	regs    []*reg
	trusted map[string]bool // a trusted key's text form (normalised)
	http    *http.Client

	// now is the clock (nil: time.Now).
	now func() time.Time

	bundledOnce sync.Once
	bundledIx   *pack.Index
	bundledGet  func(string) ([]byte, error)
	bundledErr  error
}

// bundled is the bundled registry's index and archives, built once.
func (c *Client) bundled() (*pack.Index, func(string) ([]byte, error), error) {
	c.bundledOnce.Do(func() {
		if c.o.Bundled != nil {
			c.bundledIx, c.bundledGet = c.o.Bundled, c.o.BundledArchive
			return
		}
		pkgs, err := c.o.BundledPackages()
		if err != nil {
			c.bundledErr = err
			return
		}
		c.bundledIx, c.bundledGet, c.bundledErr = BundledIndex(pkgs)
	})
	return c.bundledIx, c.bundledGet, c.bundledErr
}

// reg is one registry: where its index is and the index as last read.
type reg struct {
	name string
	// loc is where it is, as recorded with what is installed from it:
	// the index's URL without any user and password, the index's path,
	// or "bundled".
	loc   string
	index *url.URL // http(s): the index's URL
	file  string   // a folder registry: the index's path
	mu    sync.Mutex
	cache *cached
	// failed is the last failure to read an http(s) index and when it
	// was (remembered for FailureMemory).
	failed   error
	failedAt time.Time
}

// cached is an index as last read, with what revalidates it.
type cached struct {
	ix           *pack.Index
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	Size         int64     `json:"size,omitempty"`
	ModTime      time.Time `json:"mod_time"`
}

var regName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ParseSpecs reads mining.registries' entries: "URL" or "NAME=URL". A
// name is lowercase letters, digits, ".", "_" and "-" (at most 63); an
// entry without one is named after its host (http(s)) or the folder
// holding its index (file), with "-2", "-3"... when that name is taken.
// "bundled" is reserved. A bad name or a name given twice is
// loci::config::invalid. config.RegistryLocationProblem is the same rule
// for loci doctor (the configuration may not import this package;
// services' TestConfigAndTheRegistryClientAgree keeps the two in step).
func ParseSpecs(entries []string) ([]Spec, error) {
	var out []Spec
	taken := map[string]bool{Bundled: true}
	given := map[string]int{}
	var unnamed []int
	for i, e := range entries {
		e = strings.TrimSpace(e)
		name, loc := "", e
		if n, rest, ok := strings.Cut(e, "="); ok && !strings.ContainsAny(n, ":/") {
			name, loc = strings.TrimSpace(n), strings.TrimSpace(rest)
			if !regName.MatchString(name) {
				return nil, configErr(fmt.Sprintf("mining.registries[%d]: %q is not a registry name (lowercase letters, digits, \".\", \"_\" and \"-\")", i, name))
			}
			if name == Bundled {
				return nil, configErr(fmt.Sprintf("mining.registries[%d]: the name %q is reserved for the packages bundled with loci: name the registry otherwise", i, name))
			}
			if j, dup := given[name]; dup {
				return nil, configErr(fmt.Sprintf("mining.registries[%d]: the name %q is given twice (also mining.registries[%d]): each registry needs its own name", i, name, j))
			}
			taken[name] = true
			given[name] = i
		} else {
			unnamed = append(unnamed, len(out))
		}
		out = append(out, Spec{Name: name, URL: loc})
	}
	for _, i := range unnamed {
		base := defaultName(out[i].URL)
		name := base
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		taken[name] = true
		out[i].Name = name
	}
	return out, nil
}

// defaultName is a registry's name from its location: the host of a URL,
// the folder of a file registry, "registry" when neither reads as a name.
func defaultName(loc string) string {
	clean := func(s string) string {
		s = strings.ToLower(s)
		s = regexp.MustCompile(`[^a-z0-9._-]+`).ReplaceAllString(s, "-")
		s = strings.TrimLeft(s, "._-")
		if len(s) > 63 {
			s = s[:63]
		}
		if !regName.MatchString(s) {
			return "registry"
		}
		return s
	}
	u, err := url.Parse(loc)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return clean(u.Hostname())
	}
	p := loc
	if err == nil && u.Scheme == "file" {
		p = u.Path
	}
	if strings.HasSuffix(p, ".json") {
		p = filepath.Dir(p)
	}
	return clean(filepath.Base(filepath.Clean(p)))
}

// New is a client over o's registries; a registry location that is not
// allowed (http:// beyond loopback, a relative path, another scheme), a
// trusted key that is not one or an unknown policy is
// loci::config::invalid naming it.
func New(o Options) (*Client, error) {
	if o.Policy == "" {
		o.Policy = PolicyOptional
	}
	if o.Policy != PolicyOptional && o.Policy != PolicyRequired {
		return nil, configErr(fmt.Sprintf("mining.signature_policy: %q is not optional or required", o.Policy))
	}
	c := &Client{o: o, trusted: map[string]bool{}}
	for i, k := range o.TrustedKeys {
		pub, err := pack.ParsePublicKey(k)
		if err != nil {
			return nil, configErr(fmt.Sprintf("mining.trusted_keys[%d]: %s", i, fault.As(err).Msg))
		}
		c.trusted[pack.FormatPublicKey(pub)] = true
	}
	names := map[string]bool{Bundled: true}
	for i, s := range o.Registries {
		if !regName.MatchString(s.Name) || names[s.Name] {
			return nil, configErr(fmt.Sprintf("mining.registries[%d]: %q is not a free registry name", i, s.Name))
		}
		names[s.Name] = true
		r, err := location(s)
		if err != nil {
			return nil, configErr(fmt.Sprintf("mining.registries[%d] (%s): %v", i, s.Name, err))
		}
		c.regs = append(c.regs, r)
	}
	c.http = o.HTTP
	if c.http == nil {
		c.http = newHTTPClient()
	}
	return c, nil
}

func configErr(msg string) error {
	return fault.New(fault.ConfigInvalid, msg,
		`a registry is "URL" or "NAME=URL" where URL is https://..., http:// to 127.0.0.1, [::1] or localhost only, file:///abs/path or /abs/path (a folder holding index.json, or the index's .json file)`)
}

// location reads a registry's location: https:// or http:// to loopback
// (the index itself when the path ends in .json, else index.json in that
// folder), file:// or an absolute path (likewise).
func location(s Spec) (*reg, error) {
	r := &reg{name: s.Name}
	if strings.HasPrefix(s.URL, "/") {
		r.file = indexPath(filepath.Clean(s.URL))
		r.loc = r.file
		return r, nil
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("not a URL or an absolute path")
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("a file:// registry is on this machine (file:///path)")
		}
		if !strings.HasPrefix(u.Path, "/") {
			return nil, fmt.Errorf("a file:// registry's path is absolute")
		}
		r.file = indexPath(filepath.Clean(u.Path))
		r.loc = r.file
		return r, nil
	case "https", "http":
		if u.Host == "" {
			return nil, fmt.Errorf("the URL has no host")
		}
		if err := allowedURL(context.Background(), u); err != nil {
			return nil, err
		}
		v := *u
		v.Fragment, v.RawFragment = "", ""
		if !strings.HasSuffix(v.Path, ".json") {
			v.Path = strings.TrimSuffix(v.Path, "/") + "/" + pack.IndexFile
			v.RawPath = ""
		}
		r.index = &v
		bare := v
		bare.User = nil
		r.loc = bare.String()
		return r, nil
	}
	// The rule itself is configErr's help: said once.
	if u.Scheme == "" {
		return nil, fmt.Errorf("%q is a relative path", redact(s.URL))
	}
	return nil, fmt.Errorf("%s:// is not a registry's scheme", u.Scheme)
}

func indexPath(p string) string {
	if strings.HasSuffix(p, ".json") {
		return p
	}
	return filepath.Join(p, pack.IndexFile)
}

// redact is a location without the user and password a URL may carry.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// allowedURL checks a URL a registry is read from, first or redirected
// to: https anywhere; http only to a loopback address (an IP literal, or
// localhost resolving to loopback addresses only).
func allowedURL(ctx context.Context, u *url.URL) error {
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); ip != nil {
			if ip.IsLoopback() {
				return nil
			}
			return fmt.Errorf("http:// is allowed to loopback only, not %s: serve the registry over https://", host)
		}
		if strings.EqualFold(host, "localhost") {
			ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
			if err != nil || len(ips) == 0 {
				return fmt.Errorf("localhost does not resolve")
			}
			for _, ip := range ips {
				if !ip.IP.IsLoopback() {
					return fmt.Errorf("localhost resolves to %s, not loopback", ip.IP)
				}
			}
			return nil
		}
		return fmt.Errorf("http:// is allowed to loopback only, not %s: serve the registry over https://", host)
	}
	return fmt.Errorf("%s:// is not a registry's scheme (https://, or http:// to loopback)", u.Scheme)
}

// newHTTPClient is the registries' HTTP client: no proxy, timeouts on
// connecting and on headers, redirects checked like the first request
// (https, or http to loopback; never https down to http) and at most
// MaxRedirects, and plain http connections that reach loopback
// addresses only whatever a name resolved to.
func newHTTPClient() *http.Client {
	d := &net.Dialer{Timeout: DialTimeout}
	loopOnly := &net.Dialer{Timeout: DialTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("plain http reaches loopback only, not %s", host)
		}
		return nil
	}}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           loopOnly.DialContext,
		DialTLSContext:        tlsDialer(d),
		TLSHandshakeTimeout:   HeaderTimeout,
		ResponseHeaderTimeout: HeaderTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
	}
	return &http.Client{Transport: tr, CheckRedirect: checkRedirect}
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("more than %d redirects", MaxRedirects)
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("a redirect from https:// to %s://%s is refused", req.URL.Scheme, req.URL.Host)
	}
	if err := allowedURL(req.Context(), req.URL); err != nil {
		return fmt.Errorf("a redirect to %s is refused: %v", req.URL.Redacted(), err)
	}
	return nil
}

// registries are the registries a lookup reads: the named one, else the
// bundled one (when there is one) then the configured ones in order.
func (c *Client) registries(name string) ([]*reg, error) {
	all := []*reg{}
	if c.o.Bundled != nil || c.o.BundledPackages != nil {
		all = append(all, &reg{name: Bundled, loc: Bundled})
	}
	all = append(all, c.regs...)
	if name == "" {
		return all, nil
	}
	for _, r := range all {
		if r.name == name {
			return []*reg{r}, nil
		}
	}
	names := []string{}
	for _, r := range all {
		names = append(names, r.name)
	}
	return nil, fault.Newf(fault.SourceNotInRegistry, "the registries are "+strings.Join(names, ", ")+" (mining.registries names them)",
		"no registry is named %q", name)
}

// NameAt is the name of the registry configured at location (a
// Release's Location), false when none is (any more).
func (c *Client) NameAt(location string) (string, bool) {
	rs, _ := c.registries("")
	for _, r := range rs {
		if r.loc == location {
			return r.name, true
		}
	}
	return "", false
}

// Names are the registries' names, the bundled one first.
func (c *Client) Names() []string {
	rs, _ := c.registries("")
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.name)
	}
	return out
}

// Release is one version of a source or plugin as a registry lists it,
// with its archive's resolved location.
type Release struct {
	Registry string
	// Location is where the registry is (its index's URL without any
	// user and password, its path, or "bundled"): what identifies it
	// across a reordering of mining.registries, which may rename it.
	Location    string
	Name        string
	Description string
	pack.IndexRelease
	// URL is where the archive is (resolved beside the index).
	URL string
	// Kind is what the archive holds.
	Kind Kind
}

// Fetched is a release's archive, its size and SHA-256 checked against
// the index, its signature against the policy.
type Fetched struct {
	Release
	Archive []byte
	// SignedBy is the trusted key that vouched ("" none).
	SignedBy string
	// Refused is the signature policy's refusal of an archive fetched
	// for review (Review), which Fetch would have refused (nil: it
	// passes).
	Refused error
	// Package is the source package the archive holds, its manifest the
	// source, version and contract the index names (Sources only).
	Package *pack.Package
}

// entries are the sources (or plugins) of an index as (name,
// description, versions).
func entries(ix *pack.Index, kind Kind) []pack.IndexSource {
	if kind == Sources {
		return ix.Sources
	}
	out := make([]pack.IndexSource, 0, len(ix.Plugins))
	for _, p := range ix.Plugins {
		out = append(out, pack.IndexSource{Name: p.ID, Description: p.Description, Versions: p.Versions})
	}
	return out
}

// newest is the newest release of s that is not yanked and runs here
// (false when none).
func (c *Client) newest(s pack.IndexSource) (pack.IndexRelease, bool) {
	var best pack.IndexRelease
	ok := false
	for _, r := range s.Versions {
		if r.Yanked || r.Compatible(c.o.LociVersion) != "" {
			continue
		}
		if !ok || pack.CompareVersions(r.Version, best.Version) > 0 {
			best, ok = r, true
		}
	}
	return best, ok
}

// Search lists the newest release of each source (or plugin) matching q
// (in its name or description, ignoring case; "" all) that runs here,
// from registry ("" all), by name then registry order. A registry that
// cannot be read is a warning when others answer (an error when it is
// the only one asked).
func (c *Client) Search(ctx context.Context, kind Kind, q, registry string) ([]Release, []api.RegistryWarning, error) {
	rs, err := c.registries(registry)
	if err != nil {
		return nil, nil, err
	}
	q = strings.ToLower(strings.TrimSpace(q))
	out := []Release{}
	warnings := []api.RegistryWarning{}
	for _, r := range rs {
		ix, err := c.index(ctx, r)
		if err != nil {
			if registry != "" {
				return nil, nil, err
			}
			warnings = append(warnings, Warning(r.name, err))
			continue
		}
		for _, s := range entries(ix, kind) {
			if q != "" && !strings.Contains(strings.ToLower(s.Name), q) && !strings.Contains(strings.ToLower(s.Description), q) {
				continue
			}
			rel, ok := c.newest(s)
			if !ok {
				continue
			}
			out = append(out, c.release(r, kind, s, rel))
		}
	}
	slices.SortStableFunc(out, func(a, b Release) int { return strings.Compare(a.Name, b.Name) })
	return out, warnings, nil
}

func (c *Client) release(r *reg, kind Kind, s pack.IndexSource, rel pack.IndexRelease) Release {
	out := Release{Registry: r.name, Location: r.loc, Name: s.Name, Description: s.Description, IndexRelease: rel, Kind: kind}
	switch {
	case r.index != nil:
		out.URL = archiveURL(r.index, rel.Archive)
	case r.file != "":
		out.URL = (&url.URL{Scheme: "file", Path: filepath.Join(filepath.Dir(r.file), filepath.FromSlash(rel.Archive))}).String()
	default:
		out.URL = Bundled + ":" + rel.Archive
	}
	return out
}

// archiveURL is the archive's URL beside the index: the index's folder
// and the archive's path, each segment escaped.
func archiveURL(index *url.URL, archive string) string {
	u := *index
	segs := strings.Split(archive, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	dir := path.Dir(index.Path)
	u.Path = path.Join(dir, archive)
	u.RawPath = strings.TrimSuffix(index.EscapedPath(), path.Base(index.EscapedPath())) + strings.Join(segs, "/")
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// Find is the release of name to install: version when given (a yanked
// one only when pinned; one that cannot run here is
// loci::source::incompatible with why), else the newest that runs here
// and is not yanked; loci::source::not_in_registry when no registry
// read lists it (its message names those that could not be read);
// loci::source::registry_unavailable only when none asked could be read.
func (c *Client) Find(ctx context.Context, kind Kind, name, version, registry string) (Release, error) {
	rs, err := c.registries(registry)
	if err != nil {
		return Release{}, err
	}
	var unreadable error
	var unread []string
	var incompatible error
	for _, r := range rs {
		ix, err := c.index(ctx, r)
		if err != nil {
			if unreadable == nil {
				unreadable = err
			}
			unread = append(unread, r.name)
			continue
		}
		for _, s := range entries(ix, kind) {
			if s.Name != name {
				continue
			}
			if version != "" {
				for _, rel := range s.Versions {
					if rel.Version != version {
						continue
					}
					if why := rel.Compatible(c.o.LociVersion); why != "" {
						return Release{}, fault.Newf(fault.SourceIncompatible, "pick a version built for this loci (loci source search "+name+")",
							"the %s %s %s in the %s registry cannot run on this loci: %s", name, kind, version, r.name, why)
					}
					return c.release(r, kind, s, rel), nil
				}
				continue
			}
			if rel, ok := c.newest(s); ok {
				return c.release(r, kind, s, rel), nil
			}
			if incompatible == nil {
				incompatible = fault.Newf(fault.SourceIncompatible, "ask its publisher for a version built for this loci ("+c.o.LociVersion+")",
					"no version of the %s %s in the %s registry runs on this loci (%s): %s", name, kind, r.name, c.o.LociVersion, whyNone(s, c.o.LociVersion))
			}
		}
	}
	switch {
	case incompatible != nil:
		return Release{}, incompatible
	case unreadable != nil && len(unread) == len(rs):
		// Nothing could be read: whether it is listed is unknown.
		return Release{}, unreadable
	}
	what := name
	if version != "" {
		what += " " + version
	}
	msg := fmt.Sprintf("no registry lists the %s %s", kind, what)
	if registry != "" {
		msg = fmt.Sprintf("the %s registry does not list the %s %s", registry, kind, what)
	}
	help := "search the registries (loci " + kind.String() + " search), or name another in mining.registries"
	if len(unread) > 0 {
		msg += fmt.Sprintf(" (of those that could be read; these could not be read: %s)", strings.Join(unread, ", "))
		help = "try again once " + strings.Join(unread, ", ") + " can be read (loci " + kind.String() + " search shows why not), or " + help
	}
	return Release{}, fault.New(fault.SourceNotInRegistry, msg, help)
}

// Warning is a registry that could not be read, as a search's warning:
// the registry in its own field, the message without repeating it.
func Warning(name string, err error) api.RegistryWarning {
	fe := fault.As(err)
	return api.RegistryWarning{Registry: name, Code: string(fe.Code), Message: strings.TrimPrefix(fe.Msg, "the "+name+" registry ")}
}

// whyNone says why no version of s is offered: each yanked or with why
// it cannot run.
func whyNone(s pack.IndexSource, loci string) string {
	var parts []string
	for _, r := range s.Versions {
		if r.Yanked {
			parts = append(parts, r.Version+" is yanked")
		} else if why := r.Compatible(loci); why != "" {
			parts = append(parts, r.Version+" "+why)
		}
	}
	return strings.Join(parts, "; ")
}

// Fetch reads r's archive and checks it: size and SHA-256 against the
// index (loci::source::integrity) before anything reads it, then its
// signature under the policy (loci::source::untrusted; a bad signature
// by a trusted key is loci::source::integrity: the bytes are not the
// publisher's), then, for a source, the package inside, which must be
// the source, version and contract the index names
// (loci::source::integrity).
func (c *Client) Fetch(ctx context.Context, r Release) (Fetched, error) {
	return c.fetch(ctx, r, false)
}

// Review fetches and checks r as Fetch does, except that an archive the
// signature policy refuses (loci::source::untrusted) is answered for
// review with the refusal in Refused and SignedBy "": it can be shown,
// never installed. Integrity failures are refused as by Fetch.
func (c *Client) Review(ctx context.Context, r Release) (Fetched, error) {
	return c.fetch(ctx, r, true)
}

func (c *Client) fetch(ctx context.Context, r Release, review bool) (Fetched, error) {
	raw, err := c.archive(ctx, r)
	if err != nil {
		return Fetched{}, err
	}
	f := Fetched{Release: r, Archive: raw}
	if int64(len(raw)) != r.Size || digest(raw) != r.SHA256 {
		return Fetched{}, fault.New(fault.SourceIntegrity,
			fmt.Sprintf("the archive of %s %s in the %s registry is not the one its index names (SHA-256 %s, %d bytes; got %s, %d bytes); nothing was read from it",
				r.Name, r.Version, r.Registry, r.SHA256, r.Size, digest(raw), len(raw)),
			"the registry's files changed after its index was written, or were tampered with: do not install it; tell its publisher")
	}
	if f.SignedBy, err = c.vouch(r, raw); err != nil {
		if !review || !fault.Is(err, fault.SourceUntrusted) {
			return Fetched{}, err
		}
		f.SignedBy, f.Refused = "", err
	}
	if r.Kind == Sources {
		// Signature and digest checked above: Open's own checks repeat
		// them harmlessly, then read the package and match its manifest.
		rel := r.IndexRelease
		if r.Registry == Bundled || !c.trusted[normKey(rel.Key)] {
			// A signature from a key not trusted was not relied on
			// (optional policy): do not let it fail the open either.
			rel.Signature, rel.Key = "", ""
		}
		p, err := rel.Open(r.Name, raw)
		if err != nil {
			fe := fault.As(err)
			return Fetched{}, fault.New(fe.Code, fmt.Sprintf("the %s registry's %s %s: %s", r.Registry, r.Name, r.Version, fe.Msg), fe.Help)
		}
		f.Package = p
	}
	return f, nil
}

func normKey(k string) string {
	pub, err := pack.ParsePublicKey(k)
	if err != nil {
		return ""
	}
	return pack.FormatPublicKey(pub)
}

// vouch applies the signature policy to an archive whose digest matched:
// the trusted key that signed it ("" none). A signature by a trusted key
// that does not verify is tampering (loci::source::integrity) under
// either policy; under required, an archive unsigned or signed by a key
// not trusted is loci::source::untrusted (for a source: a plugin's own
// signature, inside its archive, may vouch instead, which the plugins
// service judges). The bundled registry is the
// binary's own: its archives need no signature.
func (c *Client) vouch(r Release, raw []byte) (string, error) {
	if r.Registry == Bundled {
		return "", nil
	}
	key := normKey(r.Key)
	if r.Signed() && c.trusted[key] {
		pub, _ := pack.ParsePublicKey(key)
		if err := pack.Verify(pub, raw, r.Signature); err != nil {
			return "", fault.New(fault.SourceIntegrity,
				fmt.Sprintf("the archive of %s %s in the %s registry carries a signature by the trusted key %s that does not match its bytes: it was changed after signing",
					r.Name, r.Version, r.Registry, key),
				"do not install it; tell the registry's publisher (its index or archive was tampered with)")
		}
		return key, nil
	}
	if c.o.Policy == PolicyRequired && r.Kind != Plugins {
		// A plugin carries its own signature inside its archive: the
		// plugins service applies the policy to it or to the index's.
		why := "it is not signed"
		if r.Signed() {
			why = "it is signed by " + key + ", which is not a trusted key"
		}
		return "", fault.New(fault.SourceUntrusted,
			fmt.Sprintf("the %s %s in the %s registry is not signed by a trusted key (mining.signature_policy = required): %s", r.Name, r.Version, r.Registry, why),
			"trust its publisher's key (mining.trusted_keys) if you trust them, or install another package")
	}
	return "", nil
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// unavailable is loci::source::registry_unavailable naming the registry
// (never a credential a URL carries).
func unavailable(r *reg, what string, err error) error {
	cause := why(what, err)
	msg := fmt.Sprintf("the %s registry cannot be read: %s: %s", r.name, what, cause)
	if cause != err.Error() || (what == "its index" && strings.Contains(cause, "index")) {
		// Said in words already, or the cause names the index itself.
		msg = fmt.Sprintf("the %s registry cannot be read: %s", r.name, cause)
	}
	return fault.Wrap(fault.SourceRegistryUnavailable, err, msg,
		"check the registry's location in mining.registries and that it is being served; the other registries still answer")
}

// why is a registry read's failure in words: a timeout as the bound it
// reached (not Go's error text), an index's own error without its
// leading "index: ".
func why(what string, err error) string {
	var ne net.Error
	if (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded) {
		text := err.Error()
		switch {
		case strings.Contains(text, "awaiting response headers"):
			return fmt.Sprintf("it did not answer within %d s", int(HeaderTimeout/time.Second))
		case strings.Contains(text, "dial"):
			return fmt.Sprintf("it could not be reached within %d s", int(DialTimeout/time.Second))
		case strings.HasPrefix(what, "the archive"):
			return fmt.Sprintf("%s was not read within %d s", what, int(ArchiveTimeout/time.Second))
		}
		return fmt.Sprintf("%s was not read within %d s", what, int(IndexTimeout/time.Second))
	}
	return strings.TrimPrefix(err.Error(), "index: ")
}

// archive reads a release's archive: at most its indexed size and one
// byte more (a longer one fails the size check unread).
func (c *Client) archive(ctx context.Context, rel Release) ([]byte, error) {
	limit := rel.Size + 1
	if limit > MaxArchiveBytes+1 {
		limit = MaxArchiveBytes + 1
	}
	rs, err := c.registries(rel.Registry)
	if err != nil {
		return nil, err
	}
	r := rs[0]
	switch {
	case r.index != nil:
		u, err := url.Parse(rel.URL)
		if err != nil {
			return nil, unavailable(r, "the archive's URL", err)
		}
		if !beside(r.index, u) {
			return nil, fault.Newf(fault.SourceIntegrity, "an index's archives sit in its folder or below; tell the registry's publisher",
				"the %s registry's archive %q resolves outside the index's folder", r.name, rel.Archive)
		}
		ctx, cancel := context.WithTimeout(ctx, ArchiveTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, unavailable(r, "the archive "+rel.Archive, err)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, unavailable(r, "the archive "+rel.Archive, scrub(err))
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, unavailable(r, "the archive "+rel.Archive, fmt.Errorf("HTTP %d", resp.StatusCode))
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
		if err != nil {
			return nil, unavailable(r, "the archive "+rel.Archive, err)
		}
		return b, nil
	case r.file != "":
		p, err := c.inside(r, rel.Archive)
		if err != nil {
			return nil, err
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, unavailable(r, "the archive "+rel.Archive, err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, limit))
		if err != nil {
			return nil, unavailable(r, "the archive "+rel.Archive, err)
		}
		return b, nil
	default:
		_, get, err := c.bundled()
		if err != nil {
			return nil, unavailable(r, "its index", err)
		}
		if get == nil {
			return nil, unavailable(r, "the archive "+rel.Archive, errors.New("this loci ships no bundled archives"))
		}
		b, err := get(rel.Archive)
		if err != nil {
			return nil, unavailable(r, "the archive "+rel.Archive, err)
		}
		return b, nil
	}
}

// beside reports whether u is in the index's folder or below, on its
// host, once its path is decoded and cleaned.
func beside(index, u *url.URL) bool {
	if u.Scheme != index.Scheme || u.Host != index.Host {
		return false
	}
	dir := path.Dir(index.Path)
	p := path.Clean(u.Path) // u.Path is decoded: %2e%2e reads as ..
	return p != dir && strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// inside is a folder registry's archive path: below the index's folder,
// also once symbolic links are followed.
func (c *Client) inside(r *reg, archive string) (string, error) {
	out := func() error {
		return fault.Newf(fault.SourceIntegrity, "an index's archives sit in its folder or below; tell the registry's publisher",
			"the %s registry's archive %q resolves outside the index's folder", r.name, archive)
	}
	if why := pack.ValidArchivePath(archive); why != "" {
		return "", out()
	}
	dir := filepath.Dir(r.file)
	p := filepath.Join(dir, filepath.FromSlash(archive))
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", unavailable(r, "its folder", err)
	}
	realP, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", unavailable(r, "the archive "+archive, err)
	}
	if rel, err := filepath.Rel(realDir, realP); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", out()
	}
	return realP, nil
}

// scrub is an HTTP client error without the URL (which may carry a
// user and password): the operation and the cause.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// index is the registry's index, revalidated: an http(s) index with
// If-None-Match and If-Modified-Since (304 keeps the one held), a file
// index by its size and time.
func (c *Client) index(ctx context.Context, r *reg) (*pack.Index, error) {
	if r.name == Bundled && r.index == nil && r.file == "" {
		ix, _, err := c.bundled()
		if err != nil {
			return nil, unavailable(r, "its index", err)
		}
		return ix, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		r.cache = c.loadCache(r)
	}
	if r.file != "" {
		return c.fileIndex(r)
	}
	now := c.clock()
	if r.failed != nil && now.Sub(r.failedAt) < FailureMemory {
		fe := fault.As(r.failed)
		return nil, fault.New(fe.Code, fmt.Sprintf("%s (remembered: it failed %s ago; it is asked again %s after a failure)",
			fe.Msg, now.Sub(r.failedAt).Round(time.Second), FailureMemory), fe.Help)
	}
	ix, err := c.httpIndex(ctx, r)
	if err != nil && fault.Is(err, fault.SourceRegistryUnavailable) {
		r.failed, r.failedAt = err, now
	} else {
		r.failed = nil
	}
	return ix, err
}

func (c *Client) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// httpIndex reads an http(s) index, revalidating the one held; r.mu is
// held.
func (c *Client) httpIndex(ctx context.Context, r *reg) (*pack.Index, error) {
	ctx, cancel := context.WithTimeout(ctx, IndexTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.index.String(), nil)
	if err != nil {
		return nil, unavailable(r, "its index", err)
	}
	req.Header.Set("Accept", "application/json")
	if r.cache != nil {
		if r.cache.ETag != "" {
			req.Header.Set("If-None-Match", r.cache.ETag)
		}
		if r.cache.LastModified != "" {
			req.Header.Set("If-Modified-Since", r.cache.LastModified)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, unavailable(r, "its index", scrub(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && r.cache != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return r.cache.ix, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, unavailable(r, "its index", fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxIndexBytes+1))
	if err != nil {
		return nil, unavailable(r, "its index", err)
	}
	ix, err := parse(r, b)
	if err != nil {
		return nil, err
	}
	r.cache = &cached{ix: ix, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	c.saveCache(r, b)
	return ix, nil
}

func parse(r *reg, b []byte) (*pack.Index, error) {
	if len(b) > MaxIndexBytes {
		return nil, unavailable(r, "its index", fmt.Errorf("it is larger than %d MiB", MaxIndexBytes>>20))
	}
	ix, err := pack.ParseIndex(b)
	if err != nil {
		return nil, unavailable(r, "its index", errors.New(fault.As(err).Msg))
	}
	return ix, nil
}

func (c *Client) fileIndex(r *reg) (*pack.Index, error) {
	fi, err := os.Stat(r.file)
	if err != nil {
		return nil, unavailable(r, "its index", err)
	}
	if r.cache != nil && r.cache.ix != nil && r.cache.Size == fi.Size() && r.cache.ModTime.Equal(fi.ModTime()) {
		return r.cache.ix, nil
	}
	f, err := os.Open(r.file)
	if err != nil {
		return nil, unavailable(r, "its index", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxIndexBytes+1))
	if err != nil {
		return nil, unavailable(r, "its index", err)
	}
	ix, err := parse(r, b)
	if err != nil {
		return nil, err
	}
	r.cache = &cached{ix: ix, Size: fi.Size(), ModTime: fi.ModTime()}
	return ix, nil
}

// cacheFile is where an http(s) registry's index is kept: named by the
// digest of its URL (so a URL's credentials never name a file).
func (c *Client) cacheFile(r *reg) string {
	if c.o.CacheDir == "" || r.index == nil {
		return ""
	}
	return filepath.Join(c.o.CacheDir, digest([]byte(r.index.String()))[:32])
}

// loadCache reads a kept index (nil: none, or one that does not read).
func (c *Client) loadCache(r *reg) *cached {
	f := c.cacheFile(r)
	if f == "" {
		return nil
	}
	meta, err := os.ReadFile(f + ".meta")
	if err != nil {
		return nil
	}
	b, err := os.ReadFile(f + ".json")
	if err != nil {
		return nil
	}
	var k cached
	if json.Unmarshal(meta, &k) != nil {
		return nil
	}
	ix, err := pack.ParseIndex(b)
	if err != nil {
		return nil
	}
	k.ix = ix
	return &k
}

// saveCache keeps an index read over http(s) with its validators (a
// failure only costs a download at the next start).
func (c *Client) saveCache(r *reg, b []byte) {
	f := c.cacheFile(r)
	if f == "" || (r.cache.ETag == "" && r.cache.LastModified == "") {
		return
	}
	if os.MkdirAll(c.o.CacheDir, 0o700) != nil {
		return
	}
	meta, _ := json.Marshal(r.cache)
	if writeAtomic(f+".json", b) == nil {
		_ = writeAtomic(f+".meta", meta)
	}
}

func writeAtomic(p string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// BundledIndex is the index of the bundled packages and their archives
// by file name ("NAME-VERSION.tar.gz"), built in memory (BuildIndex).
func BundledIndex(pkgs []*pack.Package) (*pack.Index, func(string) ([]byte, error), error) {
	files := map[string][]byte{}
	var archives []pack.IndexArchive
	for _, p := range pkgs {
		var b bytes.Buffer
		if err := p.WriteArchive(&b); err != nil {
			return nil, nil, err
		}
		file := p.Manifest.Name + "-" + p.Manifest.Version + ".tar.gz"
		files[file] = b.Bytes()
		archives = append(archives, pack.IndexArchive{File: file, Bytes: b.Bytes()})
	}
	ix, err := pack.BuildIndex(archives, nil)
	if err != nil {
		return nil, nil, err
	}
	return ix, func(f string) ([]byte, error) {
		b, ok := files[f]
		if !ok {
			return nil, fmt.Errorf("no bundled archive %q", f)
		}
		return b, nil
	}, nil
}

// tlsDialer dials https connections (any address: TLS checks the host).
func tlsDialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		td := &tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}}
		return td.DialContext(ctx, network, addr)
	}
}

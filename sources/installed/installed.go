// Package installed serves a source package as a sources.Adapter: its
// manifest gives the adapter's name, options and capabilities, and every
// stage it runs (resolve, discover, read) is a call into the package's
// module in the sandbox, with the permissions the user consented to
// resolved for the run (the locator, the named variables' values).
//
// What a package answers is hostile until checked: a discovery that
// does not move past its cursor (an empty page with more to come, an id
// listed twice, an item at the cursor it was asked to list past) or
// lists more than MaxRefs items fails; a read answering the wrong count
// or order fails its items; a document with an unusable name, room or
// origin fails; every error names the source, quotes the package's own
// message bounded, without control characters, the granted variables'
// values or secrets the scanner finds.
package installed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/sandbox"
	"github.com/loci-dev/loci/store"
)

// Caller runs one call of a package with the grants of its run: the
// sandbox (Runtime.Call over a compiled module) in the daemon, a Go
// handler in-process in tests (Native). The context it is given carries
// the call's deadline (Options.Timeout); the daemon's Caller passes the
// same time to the sandbox as its Limits.Timeout.
type Caller func(ctx context.Context, g sandbox.Grants, req *contract.Request) (*contract.Answer, error)

// Options are what a source needs besides its package.
type Options struct {
	// Timeout is each call's time limit (mining.source_timeout_secs);
	// 0: none but the caller's context.
	Timeout time.Duration
	// Getenv reads the daemon's environment for the variables the
	// package may read (os.LookupEnv when nil).
	Getenv func(string) (string, bool)
	// Prepare, when set, runs before each call, outside its time limit:
	// the daemon compiles the module there at the first call, which is
	// the daemon's time (seconds for a large module on a busy machine),
	// not the source's. Its error fails the call.
	Prepare func(ctx context.Context) error
}

// Bounds on what one discovery and one read call carry.
const (
	// PageItems is the most items one discover call is asked for: large,
	// because a call costs a module's start (milliseconds for a Go guest)
	// and a simple source walks its whole listing per call; a source whose
	// items carry documents ends a page early to stay under the output cap.
	PageItems = 10_000
	// MaxRefs is the most items one discovery lists: a source answering
	// more to come forever fails instead of running forever.
	MaxRefs = 10_000_000
	// MaxDiscoveryBytes is the most one discovery may hold (its ids,
	// cursors and carried documents): a discovery is held in memory until
	// its documents are filed, so a source listing without end fails here
	// long before the daemon's memory does.
	MaxDiscoveryBytes = 512 << 20
	// BatchItems is the most items one read call is asked for.
	BatchItems = 256
	// BatchBytes bounds one read call's items: their sizes (as discovery
	// gave them) and the request's own bytes, so that the answer stays
	// well under the sandbox's output cap (sandbox.MaxOutputBytes).
	BatchBytes = 4 << 20
	// MaxCursorBytes is the longest cursor a source may answer (it is
	// stored with the source's state in each wing).
	MaxCursorBytes = 16 << 10
	// MaxLocatorBytes is the longest identity locator or account.
	MaxLocatorBytes = 4096
	// maxQuoted is the most of a package's own message an error quotes.
	maxQuoted = 400
)

// adapter is an installed package as a sources.Adapter (and a
// sources.BatchReader). It is immutable, so safe for concurrent use.
type adapter struct {
	m     pack.Manifest
	perms pack.Permissions
	call  Caller
	o     Options
	// reads: the package reads its locator as a directory (its read
	// permission names pack.Locator).
	reads bool
	// page and maxRefs are PageItems and MaxRefs (smaller in tests).
	page, maxRefs int
	maxBytes      int64
}

// New is the adapter of package p, its calls made through call. A
// package built for another contract is loci::source::incompatible; its
// permissions are normalised again (what the user consented to is what
// it gets, however it is spelt).
func New(p *pack.Package, call Caller, o Options) (sources.Adapter, error) {
	if p == nil || p.Manifest == nil || call == nil {
		return nil, errors.New("installed: a package with its manifest and a caller are required")
	}
	m := *p.Manifest
	if m.Contract != contract.Version {
		return nil, fault.Newf(fault.SourceIncompatible, "rebuild the package against this loci",
			"the source %s was built for source contract %d; this loci speaks contract %d", m.Name, m.Contract, contract.Version)
	}
	perms, err := m.Permissions.Normalised()
	if err != nil {
		return nil, err
	}
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
	}
	return &adapter{m: m, perms: perms, call: call, o: o, reads: slices.Contains(perms.Read, pack.Locator),
		page: PageItems, maxRefs: MaxRefs, maxBytes: MaxDiscoveryBytes}, nil
}

// Info is the manifest's: the name, the option keys and the
// capabilities it declares (an installed source needs no credential in
// contract 1: what it reads is in its grants).
func (a *adapter) Info() sources.Info {
	s := a.m.Source
	return sources.Info{Name: a.m.Name, Options: slices.Clone(s.Options), Format: s.Format, DefaultLocator: s.DefaultLocator,
		Capabilities: sources.Capabilities{Incremental: s.Incremental, Triggers: slices.Clone(s.Triggers)}}
}

// Resolve asks the package for the source's identity. An empty locator
// stands for the manifest's default one. A package that reads its
// locator as a directory gets it absolute and clean ("~" is the daemon
// user's home), checked to be a directory, and answers it as its
// identity's locator (an empty one is taken as that); the package
// tells identities of one directory apart, if it must, by the account.
func (a *adapter) Resolve(locator string, opts map[string]string) (store.SourceIdentity, error) {
	if locator == "" {
		locator = a.m.Source.DefaultLocator
	}
	dir := ""
	if a.reads {
		d, err := a.directory(locator)
		if err != nil {
			return store.SourceIdentity{}, err
		}
		locator, dir = d, d
	}
	g := a.grants(dir)
	ans, err := a.do(context.Background(), g, &contract.Request{Call: contract.CallResolve, Locator: locator, Options: opts})
	if err != nil {
		return store.SourceIdentity{}, err
	}
	if ans.Identity == nil {
		return store.SourceIdentity{}, a.failed("answered its resolve call without an identity")
	}
	id := store.SourceIdentity{Adapter: a.m.Name, Account: ans.Identity.Account, Locator: ans.Identity.Locator}
	if id.Locator == "" {
		id.Locator = locator
	}
	switch {
	case a.reads && id.Locator != dir:
		return store.SourceIdentity{}, a.failed(fmt.Sprintf("answered the identity locator %s for the directory %s; a source that reads its locator keeps that directory as its identity's locator",
			a.quote(id.Locator, g), dir))
	case id.Locator == "":
		return store.SourceIdentity{}, fault.Invalid("locator", fmt.Sprintf("is required: the source %s has no default locator", a.m.Name))
	case !usable(id.Locator) || !usable(id.Account) && id.Account != "":
		return store.SourceIdentity{}, a.failed(fmt.Sprintf("answered an identity that is not valid UTF-8 of at most %d bytes without control characters", MaxLocatorBytes))
	}
	return id, nil
}

// usable reports an identity part loci can key and show.
func usable(s string) bool {
	return s != "" && len(s) <= MaxLocatorBytes && strings.ToValidUTF8(s, "\uFFFD") == s &&
		!strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// directory is a locator read as a directory on the daemon's machine:
// "~" forms under the daemon user's home, absolute, clean, a directory.
func (a *adapter) directory(locator string) (string, error) {
	if locator == "" {
		return "", fault.Invalid("locator", fmt.Sprintf("is required: the absolute path of the directory the source %s reads", a.m.Name))
	}
	if locator == "~" || strings.HasPrefix(locator, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fault.Invalid("locator", "the daemon's user has no home directory; give the directory's absolute path")
		}
		locator = filepath.Join(home, locator[1:])
	}
	if !filepath.IsAbs(locator) {
		return "", fault.Invalid("locator", fmt.Sprintf("%q is relative; an absolute path is required (the daemon reads it on its own machine)", locator))
	}
	dir := filepath.Clean(locator)
	info, err := os.Stat(dir)
	if err != nil {
		return "", fault.Invalid("locator", fmt.Sprintf("%q cannot be read on the daemon's machine: %v", dir, errors.Unwrap(err)))
	}
	if !info.IsDir() {
		return "", fault.Invalid("locator", fmt.Sprintf("%q is not a directory", dir))
	}
	return dir, nil
}

// dirOf is the directory a run's calls are granted: its identity's
// locator, for a package that reads it ("" otherwise).
func (a *adapter) dirOf(id store.SourceIdentity) (string, error) {
	if !a.reads {
		return "", nil
	}
	if !filepath.IsAbs(id.Locator) || filepath.Clean(id.Locator) != id.Locator {
		return "", a.failed(fmt.Sprintf("the identity's locator %q is not the absolute directory resolve makes it (resolve the source again)", id.Locator))
	}
	return id.Locator, nil
}

// ParseCursor accepts no cursor or a JSON object (of at most
// MaxCursorBytes); whether the object is one the source wrote, the
// source says when it discovers (loci::source::cursor_invalid).
func (a *adapter) ParseCursor(raw json.RawMessage) error {
	if none(raw) {
		return nil
	}
	if !object(raw) || len(raw) > MaxCursorBytes {
		return fault.New(fault.SourceCursorInvalid, "the source "+a.m.Name+": the stored cursor is not a cursor it wrote (a JSON object)",
			"mine again with full, which reads everything again without duplicating")
	}
	return nil
}

// none reports an absent cursor: from the start.
func none(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// object reports a JSON object.
func object(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}

// grants are what a call of the run reading dir may touch: the
// consented permissions, pack.Locator made dir, the variables the
// package may read that are set, with their values.
// grants are a call's sandbox grants and the token its request carries
// (contract.Request.Token: the run's credential, "" none), removed from
// whatever the package's answers make the daemon show or keep.
type grants struct {
	sandbox.Grants
	token string
}

// grants are the grants of a call reading dir, without a token.
func (a *adapter) grants(dir string) grants {
	g := grants{Grants: sandbox.Grants{Programs: slices.Clone(a.perms.Programs), Network: a.perms.Network, MemoryMiB: a.perms.MemoryMiB}}
	for _, r := range a.perms.Read {
		switch {
		case r != pack.Locator:
			g.Dirs = append(g.Dirs, r)
		case dir != "":
			g.Dirs = append(g.Dirs, dir)
		}
	}
	slices.Sort(g.Dirs)
	g.Dirs = slices.Compact(g.Dirs)
	for _, name := range a.perms.Env {
		if v, ok := a.o.Getenv(name); ok {
			if g.Env == nil {
				g.Env = map[string]string{}
			}
			g.Env[name] = v
		}
	}
	return g
}

// InSandbox is the Caller of the package named name whose module m was
// compiled by rt: each call runs in the sandbox with the run's grants and
// the time limit timeout (mining.source_timeout_secs).
func InSandbox(rt *sandbox.Runtime, m *sandbox.Module, name string, timeout time.Duration) Caller {
	return func(ctx context.Context, g sandbox.Grants, req *contract.Request) (*contract.Answer, error) {
		return rt.Call(ctx, m, name, g, sandbox.Limits{Timeout: timeout}, req)
	}
}

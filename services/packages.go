package services

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/installed"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/sandbox"
	"github.com/loci-dev/loci/store"
)

// packagesKey is the store meta key holding every package's record, a
// JSON object by name: one compare-and-swap changes one package's record
// against all the others as read.
const packagesKey = "source_packages"

// MaxPackageBytes is the most a package archive may be (the spec's 64
// MiB body limit).
const MaxPackageBytes = pack.MaxArchiveBytes

// BundledConsent is the consent a bundled package is recorded with: it
// ships with loci, so installing loci is the consent.
const BundledConsent = "bundled with loci"

// PackageRecord is what the palace keeps of an installed or bundled
// source package. The manifest and module themselves are files
// (<palace>/sources/<name>/) or, for a bundled package, in the binary.
type PackageRecord struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Origin is bundled or local (registry and plugin later).
	Origin string `json:"origin"`
	// ModuleSHA256 and ManifestSHA256 are the files' digests as
	// installed, checked at every load.
	ModuleSHA256   string `json:"module_sha256"`
	ManifestSHA256 string `json:"manifest_sha256"`
	// Consent is the consent digest the user gave ("" when the package
	// asked for nothing; BundledConsent for a bundled one).
	Consent string `json:"consent,omitempty"`
	// Consented are the permissions consented to (normalised): an update
	// within them needs no new consent. They are the installed version's
	// own permissions: a narrower version (a downgrade) narrows them.
	Consented pack.Permissions `json:"consented_permissions"`
	// State is installed, enabled or disabled: the stored states.
	// Unavailable and incompatible are computed at each load.
	State       string    `json:"state"`
	InstalledAt time.Time `json:"installed_at"`
	// Registry names the registry a registry package came from, SignedBy
	// the trusted key that vouched for its archive ("" none), and
	// ArchiveSHA256 the archive's digest as installed.
	Registry      string `json:"registry,omitempty"`
	SignedBy      string `json:"signed_by,omitempty"`
	ArchiveSHA256 string `json:"archive_sha256,omitempty"`
	// RegistryLocation is where that registry was (registry.Release's
	// Location, no user or password): its updates come from the
	// registry at that location, whatever it is named now.
	RegistryLocation string `json:"registry_location,omitempty"`
	// Plugin is the id of the plugin that provides it ("" none).
	Plugin string `json:"plugin,omitempty"`
}

// Packages is the service of source packages: installing one with the
// user's consent, enabling, disabling and removing it, and loading every
// package into the sources registry (at start and at each read), where a
// module changed on disk is unavailable and one this loci cannot run is
// incompatible.
type Packages struct {
	// DB keeps the records (store meta).
	DB store.Meta
	// Registry is the daemon's adapters; built-in ones are already in it.
	Registry *sources.Registry
	// Dir holds the installed packages' files, a folder each.
	Dir string
	// Version is this loci's version (compatibility).
	Version string
	// Timeout is each sandbox call's limit (mining.source_timeout_secs).
	Timeout time.Duration
	// Runtime runs the modules; nil only where NewAdapter is set.
	Runtime *sandbox.Runtime
	// Bundled lists the packages shipped with loci (bundled.Packages).
	Bundled func() ([]*pack.Package, error)
	// NewAdapter makes a package's adapter (nil: installed.New over
	// Runtime).
	NewAdapter func(p *pack.Package) (sources.Adapter, error)
	// Getenv reads the environment for the variables a package may read
	// (nil: os.LookupEnv).
	Getenv func(string) (string, bool)
	Log    *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// MinersUsing names the miners that read with a source (nil: none
	// known): a removal says which it leaves without their source.
	MinersUsing func(source string) []string
	// SignIns answers a package's sign-in status and forgets its tokens
	// when it is removed (nil: no source signs in).
	SignIns SignIns

	mu      sync.Mutex // one change of files, records and registry at a time
	bundled map[string]*pack.Package
	loaded  map[string]loadedPackage
	// manifests are the manifests read at the last load, by name (what
	// the API shows of a package).
	manifests map[string]*pack.Manifest
	// warned are the packages whose unavailability (or
	// incompatibility) the log was told of, with the reason: a warning at
	// each change of state, not at each read.
	warned map[string]string
}

// loadedPackage is the adapter made for a package as last loaded, kept
// while its files and record stay the same.
type loadedPackage struct {
	key   string // record and file digests it was made from
	entry sources.Entry
}

func (p *Packages) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Packages) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Start reads the bundled packages, records the ones not yet recorded
// (enabled, origin bundled) or changed with this loci (keeping their
// state), removes what an interrupted install or removal left in Dir, and
// loads every package into the registry.
func (p *Packages) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bundled = map[string]*pack.Package{}
	if p.Bundled != nil {
		pkgs, err := p.Bundled()
		if err != nil {
			return fmt.Errorf("reading the bundled source packages: %w", err)
		}
		for _, pkg := range pkgs {
			p.bundled[pkg.Manifest.Name] = pkg
		}
	}
	for name, pkg := range p.bundled {
		rec := p.bundledRecord(pkg)
		_, _, err := p.change(ctx, name, packageEvent{kind: evBundle, record: rec})
		if err != nil {
			// A palace read only for now (a full disk): the bundled
			// source still loads, enabled, from the record it would have.
			p.log().Warn("recording a bundled source package failed", "source", name, "err", err)
		}
	}
	p.sweep(ctx)
	_, err := p.refresh(ctx)
	return err
}

func (p *Packages) bundledRecord(pkg *pack.Package) *PackageRecord {
	return &PackageRecord{Name: pkg.Manifest.Name, Version: pkg.Manifest.Version, Origin: sources.OriginBundled,
		ModuleSHA256: pkg.ModuleDigest(), ManifestSHA256: pack.Digest(pkg.ManifestBytes), Consent: BundledConsent,
		Consented: pkg.Manifest.Permissions, State: sources.StateEnabled, InstalledAt: p.now().UTC()}
}

// sweep removes what an interrupted install left (.tmp-* and .old-*
// folders) and the folders of packages with no record (a removal
// interrupted after its record went) or a bundled one's (a package
// installed under a name this loci now bundles: the bundled one took its
// record).
func (p *Packages) sweep(ctx context.Context) {
	if p.Dir == "" {
		return
	}
	ents, err := os.ReadDir(p.Dir)
	if err != nil {
		return
	}
	recs, err := p.records(ctx)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if rec, ok := recs[n]; ok && rec.Origin != sources.OriginBundled && !strings.HasPrefix(n, ".") {
			continue
		}
		if err := os.RemoveAll(filepath.Join(p.Dir, n)); err != nil {
			p.log().Warn("removing a leftover source package folder failed", "path", filepath.Join(p.Dir, n), "err", err)
		}
	}
}

// records reads every package's record.
func (p *Packages) records(ctx context.Context) (map[string]*PackageRecord, error) {
	raw, _, err := p.DB.GetMeta(ctx, packagesKey)
	if err != nil {
		return nil, err
	}
	return decodeRecords(raw)
}

func decodeRecords(raw string) (map[string]*PackageRecord, error) {
	recs := map[string]*PackageRecord{}
	if raw == "" {
		return recs, nil
	}
	if err := json.Unmarshal([]byte(raw), &recs); err != nil {
		return nil, fault.Wrap(fault.StoreBackendFailed, err, "the source package records cannot be read", "run loci doctor")
	}
	return recs, nil
}

// The events of a package's state machine.
const (
	evInstall = "install" // a package (new or an update) installed by the user
	evBundle  = "bundle"  // a bundled package as this loci ships it
	evEnable  = "enable"
	evDisable = "disable"
	evRemove  = "remove"
)

type packageEvent struct {
	kind   string
	record *PackageRecord // install, bundle: the package's record
	enable bool           // install: enable it at once
}

// nextPackage is the one state machine of a package's record: cur is the
// record (nil: none), the answer the record after ev (nil: none). Install
// makes a new package installed (enabled when asked) and keeps an
// updated one's state (enabled when asked); a bundled package is recorded
// enabled and keeps its state across loci versions; enable and disable
// are idempotent; remove removes, except a bundled package.
func nextPackage(cur *PackageRecord, ev packageEvent) (*PackageRecord, error) {
	switch ev.kind {
	case evInstall, evBundle:
		next := *ev.record
		switch {
		case cur == nil && ev.kind == evBundle:
			next.State = sources.StateEnabled
		case cur == nil:
			next.State = sources.StateInstalled
		case cur.Origin == sources.OriginBundled && ev.kind == evInstall:
			return nil, bundledErr(cur.Name, "replaced")
		default:
			next.State = cur.State
			if ev.kind == evBundle && cur.ModuleSHA256 == next.ModuleSHA256 && cur.ManifestSHA256 == next.ManifestSHA256 && cur.Origin == next.Origin {
				next.InstalledAt = cur.InstalledAt
			}
		}
		if ev.enable {
			next.State = sources.StateEnabled
		}
		return &next, nil
	case evEnable, evDisable:
		if cur == nil {
			return nil, packageNotFound("")
		}
		next := *cur
		next.State = sources.StateEnabled
		if ev.kind == evDisable {
			next.State = sources.StateDisabled
		}
		return &next, nil
	case evRemove:
		if cur == nil {
			return nil, packageNotFound("")
		}
		if cur.Origin == sources.OriginBundled {
			return nil, bundledErr(cur.Name, "removed")
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown source package event %q", ev.kind)
}

// change applies ev to the named package's record, compare-and-swapped
// against the records as read, and returns the record before and after.
func (p *Packages) change(ctx context.Context, name string, ev packageEvent) (before, after *PackageRecord, err error) {
	for range 16 {
		raw, _, err := p.DB.GetMeta(ctx, packagesKey)
		if err != nil {
			return nil, nil, err
		}
		recs, err := decodeRecords(raw)
		if err != nil {
			return nil, nil, err
		}
		before = recs[name]
		after, err = nextPackage(before, ev)
		if err != nil {
			if fe := fault.As(err); fe.Code == fault.SourceNotFound {
				return nil, nil, packageNotFound(name)
			}
			return nil, nil, err
		}
		ok, err := swapRecord(ctx, p.DB, packagesKey, raw, recs, name, after)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return before, after, nil
		}
	}
	return nil, nil, fault.New(fault.StoreBackendFailed, "the source package records kept changing", "try again")
}

// swapRecord sets (rec) or deletes (rec nil) recs[id] and writes recs
// as JSON ("" when none is left) to the meta key, compare-and-swapped
// against raw, the value they were read from: false when another write
// came first (read again and retry), true when written or unchanged.
func swapRecord[R any](ctx context.Context, db store.Meta, key, raw string, recs map[string]*R, id string, rec *R) (bool, error) {
	if rec == nil {
		delete(recs, id)
	} else {
		recs[id] = rec
	}
	val := ""
	if len(recs) > 0 {
		b, err := json.Marshal(recs)
		if err != nil {
			return false, err
		}
		val = string(b)
	}
	if val == raw {
		return true, nil
	}
	return db.CompareAndSwapMeta(ctx, key, raw, val)
}

// refresh loads every recorded package (and every bundled one) into the
// registry and drops the installed adapters no longer recorded; it
// returns the records.
func (p *Packages) refresh(ctx context.Context) (map[string]*PackageRecord, error) {
	recs, err := p.records(ctx)
	if err != nil {
		return nil, err
	}
	for name, pkg := range p.bundled {
		if recs[name] == nil {
			recs[name] = p.bundledRecord(pkg)
		}
	}
	if p.loaded == nil {
		p.loaded = map[string]loadedPackage{}
	}
	p.manifests = map[string]*pack.Manifest{}
	for name, rec := range recs {
		e := p.load(rec)
		p.noteState(name, e)
		if _, err := p.Registry.Put(e); err != nil {
			p.log().Warn("a source package cannot be registered", "source", name, "err", err)
		}
	}
	for _, e := range p.Registry.Entries() {
		if e.Origin != sources.OriginBuiltIn && recs[e.Name()] == nil {
			_ = p.Registry.Remove(e.Name())
			delete(p.loaded, e.Name())
		}
	}
	for name := range p.warned {
		if recs[name] == nil {
			delete(p.warned, name)
		}
	}
	return recs, nil
}

// noteState logs a package found unavailable or incompatible, with why,
// once per change (a tampered module at start, or between two reads),
// and its return to use.
func (p *Packages) noteState(name string, e sources.Entry) {
	if p.warned == nil {
		p.warned = map[string]string{}
	}
	prev, was := p.warned[name]
	switch {
	case e.State == sources.StateUnavailable || e.State == sources.StateIncompatible:
		why := e.State + ": " + e.Reason
		if was && prev == why {
			return
		}
		p.warned[name] = why
		p.log().Warn("a source package cannot run", "source", name, "state", e.State, "reason", e.Reason)
	case was:
		delete(p.warned, name)
		p.log().Info("a source package can run again", "source", name, "state", e.State)
	}
}

// load is the registry entry of a recorded package: its adapter with the
// stored state when its files are the ones installed and this loci can
// run it; else unavailable or incompatible with the reason.
func (p *Packages) load(rec *PackageRecord) sources.Entry {
	var pkg *pack.Package
	var err error
	if rec.Origin == sources.OriginBundled {
		if pkg = p.bundled[rec.Name]; pkg == nil {
			return p.unavailable(rec, nil, "it was bundled with another version of loci and this one does not ship it")
		}
	} else if pkg, err = pack.ReadDir(filepath.Join(p.Dir, rec.Name)); err != nil {
		return p.unavailable(rec, nil, "its files cannot be read ("+fault.As(err).Msg+")")
	}
	if pkg.Manifest.Name == rec.Name {
		p.manifests[rec.Name] = pkg.Manifest
	}
	// A bundled package is the binary's own, read from it: nothing on disk
	// to have changed, and loci's consent.
	if rec.Origin != sources.OriginBundled {
		if d := pkg.ModuleDigest(); d != rec.ModuleSHA256 {
			return p.unavailable(rec, pkg, fmt.Sprintf("the module changed on disk since it was installed (sha256 %s, installed %s)", d, rec.ModuleSHA256))
		}
		if d := pack.Digest(pkg.ManifestBytes); d != rec.ManifestSHA256 {
			return p.unavailable(rec, pkg, fmt.Sprintf("the manifest changed on disk since it was installed (sha256 %s, installed %s)", d, rec.ManifestSHA256))
		}
		if !pkg.Manifest.Permissions.Within(rec.Consented) {
			return p.unavailable(rec, pkg, "it asks for permissions beyond those consented to")
		}
	}
	if why := pkg.Manifest.Compatible(p.Version); why != "" {
		e := p.unavailable(rec, pkg, why)
		e.State = sources.StateIncompatible
		return e
	}
	key := rec.ModuleSHA256 + rec.ManifestSHA256 + rec.Origin
	if l, ok := p.loaded[rec.Name]; ok && l.key == key {
		l.entry.State = rec.State
		return l.entry
	}
	a, err := p.adapter(pkg)
	if err != nil {
		return p.unavailable(rec, pkg, "it cannot be loaded: "+err.Error())
	}
	e := sources.Entry{Adapter: a, State: rec.State, Origin: rec.Origin}
	p.loaded[rec.Name] = loadedPackage{key: key, entry: e}
	return e
}

func (p *Packages) unavailable(rec *PackageRecord, pkg *pack.Package, reason string) sources.Entry {
	delete(p.loaded, rec.Name)
	info := sources.Info{Name: rec.Name}
	if pkg != nil && pkg.Manifest.Name == rec.Name {
		info = manifestInfo(pkg.Manifest)
	}
	return sources.Entry{Adapter: unloaded{info: info, reason: reason}, State: sources.StateUnavailable, Origin: rec.Origin, Reason: reason}
}

// adapter makes a package's adapter: installed.New over the sandbox,
// the module compiled (by digest) at its first call.
func (p *Packages) adapter(pkg *pack.Package) (sources.Adapter, error) {
	if p.NewAdapter != nil {
		return p.NewAdapter(pkg)
	}
	if p.Runtime == nil {
		return nil, errors.New("no sandbox runtime")
	}
	getenv := p.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	name, digest := pkg.Manifest.Name, pkg.ModuleDigest()
	limits := sandbox.Limits{Timeout: p.Timeout}
	var mu sync.Mutex
	wasm := pkg.Module
	var mod *sandbox.Module
	// compiled is the module, compiled at the first call: before the
	// call's time limit starts (installed.Options.Prepare), because the
	// compilation is the daemon's time, not the source's (a large module
	// takes seconds on a busy machine, as long as a low
	// mining.source_timeout_secs).
	compiled := func(ctx context.Context) (*sandbox.Module, error) {
		mu.Lock()
		defer mu.Unlock()
		if mod == nil {
			m, err := p.Runtime.Compile(ctx, digest, wasm)
			if err != nil {
				return nil, fault.Wrap(fault.SourceFailed, err, fmt.Sprintf("the %s source's module cannot be compiled: %v", name, err), "reinstall the source")
			}
			mod, wasm = m, nil
		}
		return mod, nil
	}
	prepare := func(ctx context.Context) error {
		_, err := compiled(ctx)
		return err
	}
	call := func(ctx context.Context, g sandbox.Grants, req *contract.Request) (*contract.Answer, error) {
		m, err := compiled(ctx)
		if err != nil {
			return nil, err
		}
		return p.Runtime.Call(ctx, m, name, g, limits, req)
	}
	return installed.New(pkg, call, installed.Options{Timeout: p.Timeout, Getenv: getenv, Prepare: prepare})
}

func manifestInfo(m *pack.Manifest) sources.Info {
	return sources.Info{Name: m.Name, Options: append([]string{}, m.Source.Options...),
		Capabilities:   sources.Capabilities{Incremental: m.Source.Incremental, Triggers: append([]string{}, m.Source.Triggers...)},
		Format:         m.Source.Format,
		DefaultLocator: m.Source.DefaultLocator}
}

// unloaded is the adapter of a package that cannot be loaded: it shows
// what its manifest declares, and every stage fails with why.
type unloaded struct {
	info   sources.Info
	reason string
}

func (u unloaded) Info() sources.Info { return u.info }
func (u unloaded) err() error {
	return fault.Newf(fault.SourceUnavailable, "reinstall the source, or remove it", "the %s source is unavailable: %s", u.info.Name, u.reason)
}
func (u unloaded) Resolve(string, map[string]string) (store.SourceIdentity, error) {
	return store.SourceIdentity{}, u.err()
}
func (u unloaded) ParseCursor(json.RawMessage) error { return u.err() }
func (u unloaded) Discover(context.Context, sources.Run, json.RawMessage) ([]sources.Ref, error) {
	return nil, u.err()
}
func (u unloaded) Read(context.Context, sources.Run, sources.Ref) (*sources.Document, error) {
	return nil, u.err()
}

// Refresh loads every package again (a read: a module changed on disk
// shows now).
func (p *Packages) Refresh(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.refresh(ctx)
	return err
}

// List is every source, built-in, bundled and installed, by name.
func (p *Packages) List(ctx context.Context) ([]api.SourcePackage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	recs, err := p.refresh(ctx)
	if err != nil {
		return nil, err
	}
	entries := p.Registry.Entries()
	out := make([]api.SourcePackage, 0, len(entries))
	for _, e := range entries {
		out = append(out, p.view(e, recs[e.Name()]))
	}
	return out, nil
}

// Show is one source, built-in, bundled or installed.
func (p *Packages) Show(ctx context.Context, name string) (api.SourcePackage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	recs, err := p.refresh(ctx)
	if err != nil {
		return api.SourcePackage{}, err
	}
	e, ok := p.Registry.Entry(name)
	if !ok {
		return api.SourcePackage{}, packageNotFound(name)
	}
	return p.view(e, recs[name]), nil
}

// Manifest is the manifest of the installed or bundled source name as
// last loaded (nil when there is none): what sign-in reads its [oauth]
// table from.
func (p *Packages) Manifest(name string) *pack.Manifest {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.Registry.Entry(name); !ok {
		return nil
	}
	return p.manifests[name]
}

// view is an entry as the API shows it, with its record's package facts.
func (p *Packages) view(e sources.Entry, rec *PackageRecord) api.SourcePackage {
	in := e.Adapter.Info()
	c := in.Capabilities
	v := api.SourcePackage{Name: in.Name, Origin: e.Origin, State: e.State, Reason: e.Reason, Options: append([]string{}, in.Options...),
		Capabilities: api.SourceCapabilities{Incremental: c.Incremental, KeepsRaw: c.KeepsRaw, NeedsCredentials: c.NeedsCredentials,
			Triggers: append([]string{}, c.Triggers...)},
		Format: in.Format, DefaultLocator: in.DefaultLocator}
	if rec == nil {
		return v
	}
	v.Version, v.ModuleSHA256 = rec.Version, rec.ModuleSHA256
	v.Registry, v.SignedBy, v.Plugin = rec.Registry, rec.SignedBy, rec.Plugin
	if rec.Origin != sources.OriginBundled && p.Dir != "" {
		v.Dir = filepath.Join(p.Dir, rec.Name)
	}
	at := rec.InstalledAt
	v.InstalledAt = &at
	perms := rec.Consented
	if m := p.manifests[rec.Name]; m != nil {
		v.Description, v.Contract = m.Description, m.Contract
		if m.Permissions.Within(rec.Consented) {
			perms = m.Permissions
		}
		if p.SignIns != nil {
			v.Auth = p.SignIns.Status(rec.Name, m)
		}
	}
	v.Permissions = apiPermissions(perms)
	v.PermissionWords = perms.Words()
	v.ConsentDigest = pack.ConsentDigest(rec.Name, perms)
	return v
}

func apiPermissions(p pack.Permissions) *api.SourcePermissions {
	nz := func(s []string) []string { return append([]string{}, s...) }
	return &api.SourcePermissions{Read: nz(p.Read), Programs: nz(p.Programs), Env: nz(p.Env), Network: p.Network, MemoryMiB: p.MemoryMiB}
}

// SignIns is what the packages service asks of sign-in (OAuth): a
// package's status, shown with it, and forgetting its stored tokens when
// it is removed.
type SignIns interface {
	// Status is the sign-in status of source as its manifest m declares
	// sign-in (nil when it declares none).
	Status(source string, m *pack.Manifest) *api.SignInStatus
	// Forget removes every token stored for source.
	Forget(source string) error
}

// InstallOptions are an install's query: the consent digest and whether
// to enable the source at once.
type InstallOptions struct {
	Consent string
	Enable  bool
	// Origin is where the package comes from (local when empty).
	Origin string
	// Registry, SignedBy and ArchiveSHA256 are recorded for a registry
	// install: which registry, which trusted key vouched, which bytes.
	Registry, SignedBy, ArchiveSHA256 string
	// RegistryLocation is where the registry is (recorded with it).
	RegistryLocation string
	// Plugin is the plugin installing the package as one of its modules.
	Plugin string
	// Adopt: the package may replace one installed on its own (or by
	// another plugin) under the same name.
	Adopt bool
}

// Install installs the package archive read from body (at most
// pack.MaxArchiveBytes): refused when its name is a built-in or bundled
// source's, when this loci cannot run it (loci::source::incompatible
// with the reason), and when it asks for permissions without the
// consent digest the daemon computes from it
// (loci::source::consent_required, the digest and the permissions in
// words); an update asking for nothing beyond what was consented to
// needs no new consent. A consent digest given that is not this
// package's is refused the same way, whatever the package asks for. The files are written beside the others and
// swapped in at once, then the record; replaced is the version replaced
// ("" when new).
func (p *Packages) Install(ctx context.Context, body io.Reader, o InstallOptions) (api.SourcePackageInstalled, error) {
	raw, err := io.ReadAll(io.LimitReader(body, pack.MaxArchiveBytes+1))
	if err != nil {
		return api.SourcePackageInstalled{}, fault.Wrap(fault.InputInvalid, err, "body: cannot be read", "send the package again")
	}
	if len(raw) > pack.MaxArchiveBytes {
		return api.SourcePackageInstalled{}, tooLarge()
	}
	pkg, err := pack.ReadArchive(bytes.NewReader(raw))
	if err != nil {
		return api.SourcePackageInstalled{}, err
	}
	return p.InstallPackage(ctx, pkg, o)
}

// consentedNow is what rec's consent covers now: the installed version's
// own permissions when they are within those recorded (a record written
// before the consent followed the installed version may hold a wider
// one, from an earlier version), else those recorded. p.mu is held.
func (p *Packages) consentedNow(rec *PackageRecord) pack.Permissions {
	if m := p.manifests[rec.Name]; m != nil && m.Version == rec.Version && m.Permissions.Within(rec.Consented) {
		return m.Permissions
	}
	return rec.Consented
}

// ConsentedNow is consentedNow for the other services.
func (p *Packages) ConsentedNow(rec *PackageRecord) pack.Permissions {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.consentedNow(rec)
}

// InstallPackage installs pkg, already read and checked (from a registry
// or a plugin), as Install does.
func (p *Packages) InstallPackage(ctx context.Context, pkg *pack.Package, o InstallOptions) (api.SourcePackageInstalled, error) {
	origin := o.Origin
	if origin == "" {
		origin = sources.OriginLocal
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	name, m := pkg.Manifest.Name, pkg.Manifest
	if e, ok := p.Registry.Entry(name); ok && e.Origin == sources.OriginBuiltIn {
		return api.SourcePackageInstalled{}, fault.Newf(fault.SourceBuiltin, "built-in sources are part of loci; name the package otherwise",
			"the %s source is built in: it cannot be replaced", name)
	}
	if _, ok := p.bundled[name]; ok {
		return api.SourcePackageInstalled{}, bundledErr(name, "replaced")
	}
	recs, err := p.records(ctx)
	if err != nil {
		return api.SourcePackageInstalled{}, err
	}
	cur := recs[name]
	if cur != nil && cur.Origin == sources.OriginBundled {
		return api.SourcePackageInstalled{}, bundledErr(name, "replaced")
	}
	if err := pluginHold(cur, o); err != nil {
		return api.SourcePackageInstalled{}, err
	}
	if why := m.Compatible(p.Version); why != "" {
		return api.SourcePackageInstalled{}, fault.Newf(fault.SourceIncompatible, "install a version of the source built for this loci ("+p.Version+")",
			"the %s source %s cannot run on this loci: %s", name, m.Version, why)
	}
	perms := m.Permissions
	digest := pack.ConsentDigest(name, perms)
	var consented pack.Permissions
	if cur != nil {
		consented = p.consentedNow(cur)
	}
	rec := &PackageRecord{Name: name, Version: m.Version, Origin: origin, ModuleSHA256: pkg.ModuleDigest(),
		ManifestSHA256: pack.Digest(pkg.ManifestBytes), Consented: perms, InstalledAt: p.now().UTC(),
		Registry: o.Registry, SignedBy: o.SignedBy, ArchiveSHA256: o.ArchiveSHA256, RegistryLocation: o.RegistryLocation, Plugin: o.Plugin}
	switch {
	case o.Consent != "" && o.Consent != digest:
		// A digest names exact permissions of one package: another one's
		// (or another version's) never installs this one, whatever it
		// asks for.
		return api.SourcePackageInstalled{}, consentRequired(pkg, digest, o.Consent, cur, consented, origin)
	case cur != nil && perms.Within(consented):
		// An update asking for nothing new needs no new consent; what is
		// recorded is this version's own permissions (the consent follows
		// what is installed: a version asking for more than this one
		// needs consent again, even what an earlier one had).
		if !perms.None() {
			rec.Consent = digest
		}
	case perms.None():
	case o.Consent == digest:
		rec.Consent = digest
	default:
		return api.SourcePackageInstalled{}, consentRequired(pkg, digest, o.Consent, cur, consented, origin)
	}
	undo, done, err := p.writeFiles(pkg)
	if err != nil {
		return api.SourcePackageInstalled{}, err
	}
	before, after, err := p.change(ctx, name, packageEvent{kind: evInstall, record: rec, enable: o.Enable})
	if err != nil {
		// Not recorded (a full disk, a read-only palace): the package
		// before stays as it was.
		undo()
		return api.SourcePackageInstalled{}, err
	}
	done()
	delete(p.loaded, name)
	recs, err = p.refresh(ctx)
	if err != nil {
		return api.SourcePackageInstalled{}, err
	}
	e, _ := p.Registry.Entry(name)
	out := api.SourcePackageInstalled{Source: p.view(e, recs[name])}
	if before != nil {
		out.Replaced = before.Version
		out.Downgrade = pack.CompareVersions(after.Version, before.Version) < 0
	}
	if out.Replaced == after.Version {
		// The same version again: a reinstall, not a replacement.
		p.log().Info("source package reinstalled", "source", name, "version", after.Version, "origin", origin, "state", after.State,
			"module_sha256", after.ModuleSHA256)
	} else {
		p.log().Info("source package installed", "source", name, "version", after.Version, "origin", origin, "state", after.State,
			"module_sha256", after.ModuleSHA256, "replaced", out.Replaced, "downgrade", out.Downgrade)
	}
	return out, nil
}

func tooLarge() error {
	return fault.Newf(fault.InputTooLarge, "a source package is at most 64 MiB", "the package is larger than %d bytes", pack.MaxArchiveBytes)
}

// consentRequired is the refusal of a package asking for permissions
// without the consent digest computed from it.
func consentRequired(pkg *pack.Package, digest, given string, cur *PackageRecord, consented pack.Permissions, origin string) error {
	m := pkg.Manifest
	var b strings.Builder
	switch {
	case given != "":
		fmt.Fprintf(&b, "the consent %s is not the consent of the %s source %s, which asks to: ", given, m.Name, m.Version)
	case cur != nil:
		fmt.Fprintf(&b, "the %s source %s asks for more than was consented to for %s: it newly asks to: %s. All it asks to: ",
			m.Name, m.Version, cur.Version, strings.Join(m.Permissions.WordsBeyond(consented), "; "))
	default:
		fmt.Fprintf(&b, "installing the %s source %s needs your consent: it asks to: ", m.Name, m.Version)
	}
	b.WriteString(strings.Join(m.Permissions.Words(), "; "))
	fmt.Fprintf(&b, ". Its consent digest is %s", digest)
	// The help names the install as it was asked: by name from a
	// registry (the body's consent), else a file (the query's).
	run, field := "`loci source install FILE`", "the query consent="+digest
	if origin == sources.OriginRegistry {
		run, field = "`loci source install "+m.Name+"@"+m.Version+"`", `the body's "consent": "`+digest+`"`
	}
	return fault.New(fault.SourceConsentRequired, b.String(),
		"review the permissions; then run "+run+" (it shows them and asks), or pass --consent "+digest+" ("+field+")")
}

func bundledErr(name, what string) error {
	return fault.Newf(fault.SourceBundled, "bundled sources ship with loci; disable it instead, or install a package under another name",
		"the %s source is bundled with loci: it cannot be %s", name, what)
}

func packageNotFound(name string) error {
	return fault.Newf(fault.SourceNotFound, "list the sources (loci source list, GET /api/source-packages)", "no source is named %q", name)
}

// writeFiles writes a package's manifest and module into a new folder in
// Dir, synced, then puts it in place of the package's folder at once.
// done removes the old package's files once the record is written; undo
// puts them back when it could not be.
func (p *Packages) writeFiles(pkg *pack.Package) (undo, done func(), err error) {
	failed := func(err error) (func(), func(), error) {
		return nil, nil, fault.Wrap(fault.StoreBackendFailed, err, "writing the source package's files failed: "+err.Error(), "check the disk; nothing was installed")
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return failed(err)
	}
	tmp, err := os.MkdirTemp(p.Dir, ".tmp-"+pkg.Manifest.Name+"-")
	if err != nil {
		return failed(err)
	}
	for _, f := range []struct {
		name string
		body []byte
	}{{pack.ManifestFile, pkg.ManifestBytes}, {pkg.Manifest.Module, pkg.Module}} {
		if err := writeSynced(filepath.Join(tmp, f.name), f.body); err != nil {
			os.RemoveAll(tmp)
			return failed(err)
		}
	}
	if err := syncDir(tmp); err != nil {
		os.RemoveAll(tmp)
		return failed(err)
	}
	dst := filepath.Join(p.Dir, pkg.Manifest.Name)
	old, err := swapDir(tmp, dst)
	if err != nil {
		os.RemoveAll(tmp)
		return failed(err)
	}
	if err := syncDir(p.Dir); err != nil {
		p.log().Warn("syncing the source packages' folder failed", "err", err)
	}
	undo = func() {
		if err := os.RemoveAll(dst); err != nil {
			p.log().Warn("removing an unrecorded source package's files failed; they go at the next start", "path", dst, "err", err)
		}
		if old != "" {
			if err := os.Rename(old, dst); err != nil {
				p.log().Warn("putting a source package's files back failed", "path", dst, "err", err)
			}
		}
	}
	done = func() {
		if old != "" {
			if err := os.RemoveAll(old); err != nil {
				p.log().Warn("removing a replaced source package's files failed; they go at the next start", "path", old, "err", err)
			}
		}
	}
	return undo, done, nil
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// SetEnabled enables or disables a source (idempotent): a built-in
// source stays enabled (loci::source::builtin); a bundled one may be
// disabled.
func (p *Packages) SetEnabled(ctx context.Context, name string, enable bool) (api.SourcePackage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.Registry.Entry(name); ok && e.Origin == sources.OriginBuiltIn {
		if enable {
			return p.view(e, nil), nil
		}
		return api.SourcePackage{}, fault.Newf(fault.SourceBuiltin, "built-in sources are part of loci; disable the miners that use it instead",
			"the %s source is built in: it cannot be disabled", name)
	}
	ev := packageEvent{kind: evDisable}
	if enable {
		ev.kind = evEnable
	}
	if pkg, ok := p.bundled[name]; ok {
		// A bundled package is recorded as it ships before its first
		// change.
		if _, _, err := p.change(ctx, name, packageEvent{kind: evBundle, record: p.bundledRecord(pkg)}); err != nil {
			return api.SourcePackage{}, err
		}
	}
	_, after, err := p.change(ctx, name, ev)
	if err != nil {
		return api.SourcePackage{}, err
	}
	recs, err := p.refresh(ctx)
	if err != nil {
		return api.SourcePackage{}, err
	}
	e, _ := p.Registry.Entry(name)
	p.log().Info("source package "+ev.kind+"d", "source", name, "state", after.State)
	return p.view(e, recs[name]), nil
}

// RemoveSource is Remove answering what DELETE
// /api/source-packages/{name} shows: the name, and the miners that name
// the source (MinersUsing), now unavailable; the log warns of them.
func (p *Packages) RemoveSource(ctx context.Context, name string) (api.SourcePackageRemoved, error) {
	if err := p.Remove(ctx, name); err != nil {
		return api.SourcePackageRemoved{}, err
	}
	out := api.SourcePackageRemoved{Removed: name}
	if p.MinersUsing != nil {
		out.Miners = p.MinersUsing(name)
	}
	if len(out.Miners) > 0 {
		p.log().Warn("a removed source package is named by miners; they are unavailable until it is installed again",
			"source", name, "miners", strings.Join(out.Miners, ", "))
	}
	return out, nil
}

// Remove removes an installed package: its record, its adapter and its
// files. What it mined stays; a running mine keeps the adapter it
// started with. Built-in (loci::source::builtin) and bundled
// (loci::source::bundled) sources stay. The miners naming it are not
// changed (they are the configuration file's): RemoveSource names them.
// A source a plugin provides goes only with the plugin
// (loci::source::plugin_provided).
func (p *Packages) Remove(ctx context.Context, name string) error {
	return p.remove(ctx, name, "")
}

// pluginHold refuses a change o would make to the package recorded as
// cur that the plugin holding it did not ask for
// (loci::source::plugin_provided: remove the plugin instead), and a
// plugin taking over a package installed on its own without adopting it
// (loci::source::adoption_required). The one rule of which package a
// plugin holds: Install, InstallPackage and Remove ask it.
func pluginHold(cur *PackageRecord, o InstallOptions) error {
	switch {
	case cur == nil || cur.Plugin == o.Plugin || o.Adopt:
		return nil
	case cur.Plugin != "":
		return fault.Newf(fault.SourcePluginProvided, "remove the plugin (loci plugin remove "+cur.Plugin+"), or install a version of it without this source",
			"the %s source is provided by the plugin %s: it cannot be changed or removed on its own", cur.Name, cur.Plugin)
	default:
		return fault.Newf(fault.SourceAdoptionRequired, "list it for adoption (X-Loci-Adopt-Sources, loci plugin install --adopt "+cur.Name+")",
			"the %s source was installed on its own (%s); the plugin %s provides it and may take it over only when told to adopt it", cur.Name, cur.Origin, o.Plugin)
	}
}

// remove is Remove for plugin ("" the user's own request): a plugin's
// source goes only with its plugin.
func (p *Packages) remove(ctx context.Context, name, plugin string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.Registry.Entry(name); ok && e.Origin == sources.OriginBuiltIn {
		return fault.Newf(fault.SourceBuiltin, "built-in sources are part of loci; disable the miners that use it instead",
			"the %s source is built in: it cannot be removed", name)
	}
	if _, ok := p.bundled[name]; ok {
		return bundledErr(name, "removed")
	}
	if recs, err := p.records(ctx); err != nil {
		return err
	} else if err := pluginHold(recs[name], InstallOptions{Plugin: plugin}); err != nil {
		return err
	}
	if _, _, err := p.change(ctx, name, packageEvent{kind: evRemove}); err != nil {
		return err
	}
	delete(p.loaded, name)
	if err := p.Registry.Remove(name); err != nil && fault.As(err).Code != fault.SourceNotFound {
		return err
	}
	// The record went first: files left by a failure here are swept at
	// the next start.
	if p.Dir != "" {
		if err := os.RemoveAll(filepath.Join(p.Dir, name)); err != nil {
			p.log().Warn("removing a source package's files failed; they go at the next start", "source", name, "err", err)
		}
	}
	if p.SignIns != nil {
		if err := p.SignIns.Forget(name); err != nil {
			p.log().Warn("forgetting a removed source's stored sign-in failed", "source", name, "err", err)
		}
	}
	p.log().Info("source package removed", "source", name)
	return nil
}

// swapAside moves dst aside (old: where it went, "" when there was none),
// then tmp to dst.
func swapAside(tmp, dst string) (old string, err error) {
	old = filepath.Join(filepath.Dir(tmp), ".old-"+filepath.Base(dst)+"-"+filepath.Base(tmp))
	if err := os.Rename(dst, old); os.IsNotExist(err) {
		old = ""
	} else if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if old != "" {
			_ = os.Rename(old, dst)
		}
		return "", err
	}
	return old, nil
}

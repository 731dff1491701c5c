package services

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/registry"
)

// Registries is the service of source registries: search, show, install
// and update source packages from the registries mining.registries
// names (and the bundled one), through Packages. Every archive is
// fetched and verified (registry.Client.Fetch) before Packages sees it.
type Registries struct {
	// Packages installs what a registry serves.
	Packages *Packages
	// Client reads the registries.
	Client *registry.Client
	Log    *slog.Logger
}

func (s *Registries) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// installed is the version recorded for each package (bundled ones
// included).
func (s *Registries) installed(ctx context.Context) (map[string]*PackageRecord, error) {
	recs, err := s.Packages.records(ctx)
	if err != nil {
		return nil, err
	}
	s.Packages.mu.Lock()
	for name, pkg := range s.Packages.bundled {
		if recs[name] == nil {
			recs[name] = s.Packages.bundledRecord(pkg)
		}
	}
	s.Packages.mu.Unlock()
	return recs, nil
}

// Search is GET /api/source-registry/search: the newest release of each
// source matching q that runs here, with the version installed; a
// registry that cannot be read is a warning while others answer.
func (s *Registries) Search(ctx context.Context, q, reg string) (api.RegistrySearch, error) {
	rels, warns, err := s.Client.Search(ctx, registry.Sources, q, reg)
	if err != nil {
		return api.RegistrySearch{}, err
	}
	recs, err := s.installed(ctx)
	if err != nil {
		return api.RegistrySearch{}, err
	}
	out := api.RegistrySearch{Entries: []api.RegistryEntry{}, Warnings: warns}
	for _, r := range rels {
		e := api.RegistryEntry{Name: r.Name, Version: r.Version, Description: r.Description, Registry: r.Registry, Signed: r.Signed()}
		if rec := recs[r.Name]; rec != nil {
			e.Installed = rec.Version
		}
		out.Entries = append(out.Entries, e)
	}
	for _, w := range warns {
		s.log().Warn("a source registry cannot be read", "registry", w.Registry, "code", w.Code, "err", w.Message)
	}
	return out, nil
}

// fetch finds and fetches a release, verified.
func (s *Registries) fetch(ctx context.Context, name, version, reg string) (registry.Fetched, error) {
	return s.fetchFor(ctx, name, version, reg, false)
}

// fetchFor is fetch, or for review (show) one the signature policy
// refuses answered with the refusal in Refused.
func (s *Registries) fetchFor(ctx context.Context, name, version, reg string, review bool) (registry.Fetched, error) {
	if !pack.ValidName(name) {
		return registry.Fetched{}, fault.Invalid("name", fmt.Sprintf("%q is not a source name", name))
	}
	r, err := s.Client.Find(ctx, registry.Sources, name, version, reg)
	if err != nil {
		return registry.Fetched{}, err
	}
	if review {
		return s.Client.Review(ctx, r)
	}
	return s.Client.Fetch(ctx, r)
}

func registryOrigin(reg string) string {
	if reg == registry.Bundled {
		return sources.OriginBundled
	}
	return sources.OriginRegistry
}

// Show is GET /api/source-registry/sources/{name}: the release an install
// would take (version when given), fetched and verified, with its
// permissions, their consent digest and the archive's digest; nothing is
// installed. A release the signature policy refuses is still shown, so
// it can be reviewed: installable false, with the refusal install gets.
func (s *Registries) Show(ctx context.Context, name, version, reg string) (api.RegistrySource, error) {
	f, err := s.fetchFor(ctx, name, version, reg, true)
	if err != nil {
		return api.RegistrySource{}, err
	}
	m := f.Package.Manifest
	out := api.RegistrySource{Name: m.Name, Version: m.Version, Description: m.Description, Origin: registryOrigin(f.Registry), Registry: f.Registry, RegistryLocation: f.Location,
		SignedBy: f.SignedBy, ArchiveDigest: f.SHA256, Permissions: apiPermissions(m.Permissions), PermissionWords: m.Permissions.Words(),
		ConsentDigest: pack.ConsentDigest(m.Name, m.Permissions), Yanked: f.Yanked, Installable: f.Refused == nil}
	if f.Refused != nil {
		fe := fault.As(f.Refused)
		out.Refusal = &api.RegistryRefusal{Code: string(fe.Code), Message: fe.Msg, Help: fe.Help}
	}
	recs, err := s.installed(ctx)
	if err != nil {
		return api.RegistrySource{}, err
	}
	if rec := recs[name]; rec != nil {
		out.Replaces = rec.Version
	}
	return out, nil
}

// Install is POST /api/source-registry/install: the release fetched and
// verified, refused when archive_digest is given and the archive is no
// longer that one (loci::source::integrity), then installed by Packages
// with origin registry, the registry, the key that vouched and the
// archive's digest recorded; consent as for a local install.
func (s *Registries) Install(ctx context.Context, in api.RegistryInstall) (api.SourcePackageInstalled, error) {
	if in.Name == "" {
		return api.SourcePackageInstalled{}, fault.Invalid("name", "is required")
	}
	f, err := s.fetch(ctx, in.Name, in.Version, in.Registry)
	if err != nil {
		return api.SourcePackageInstalled{}, err
	}
	if in.ArchiveDigest != "" && in.ArchiveDigest != f.SHA256 {
		return api.SourcePackageInstalled{}, fault.New(fault.SourceIntegrity,
			fmt.Sprintf("the archive of %s %s in the %s registry is not the one shown (archive_digest %s; the registry now serves %s): nothing was installed",
				f.Name, f.Version, f.Registry, in.ArchiveDigest, f.SHA256),
			"show it again (loci source show "+f.Name+") and review what it asks before installing")
	}
	out, err := s.Packages.InstallPackage(ctx, f.Package, InstallOptions{Consent: in.Consent, Enable: in.Enable, Origin: registryOrigin(f.Registry),
		Registry: f.Registry, RegistryLocation: f.Location, SignedBy: f.SignedBy, ArchiveSHA256: f.SHA256})
	if err != nil {
		return out, err
	}
	if f.Yanked {
		w := fmt.Sprintf("the %s registry's publisher withdrew (yanked) %s %s: it was installed because it was named; install another version when you can (loci source updates)",
			f.Registry, f.Name, f.Version)
		out.Warnings = append(out.Warnings, w)
		s.log().Warn("a yanked source version was installed (pinned)", "source", f.Name, "version", f.Version, "registry", f.Registry)
	}
	s.log().Info("source package installed from a registry", "source", f.Name, "version", f.Version, "registry", f.Registry,
		"signed_by", f.SignedBy, "archive_sha256", f.SHA256)
	return out, nil
}

// from is the name the registry a source was installed from has now:
// found by its location when one was recorded (a reordering of
// mining.registries may rename it), else by the name recorded. A
// location no longer configured is loci::source::registry_unavailable
// saying so.
func (s *Registries) from(rec *PackageRecord) (string, error) {
	if rec.RegistryLocation == "" {
		return rec.Registry, nil
	}
	if name, ok := s.Client.NameAt(rec.RegistryLocation); ok {
		return name, nil
	}
	return "", fault.Newf(fault.SourceRegistryUnavailable, "name it in mining.registries again (and restart the daemon) to take its updates, or install the source from another registry",
		"the %s registry is no longer configured: the %s source was installed from it (%s)", rec.Registry, rec.Name, rec.RegistryLocation)
}

// offer is the newer release of a registry source that runs here, if
// any (zero Release when current), from the registry it came from.
func (s *Registries) offer(ctx context.Context, rec *PackageRecord) (registry.Release, error) {
	reg, err := s.from(rec)
	if err != nil {
		return registry.Release{}, err
	}
	r, err := s.Client.Find(ctx, registry.Sources, rec.Name, "", reg)
	if err != nil {
		return registry.Release{}, err
	}
	if pack.CompareVersions(r.Version, rec.Version) <= 0 {
		return registry.Release{}, nil
	}
	return r, nil
}

// registryRecords are the installed packages that came from a registry,
// by name.
func (s *Registries) registryRecords(ctx context.Context) ([]*PackageRecord, error) {
	recs, err := s.Packages.records(ctx)
	if err != nil {
		return nil, err
	}
	var out []*PackageRecord
	for _, rec := range recs {
		if rec.Origin == sources.OriginRegistry && rec.Registry != "" {
			out = append(out, rec)
		}
	}
	sortRecords(out)
	return out, nil
}

func sortRecords(recs []*PackageRecord) {
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && recs[j].Name < recs[j-1].Name; j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

// Updates is GET /api/source-registry/updates: each registry source with
// a newer version that runs here, fetched and verified to say whether it
// asks for more than was consented to; a source whose registry cannot be
// read (or whose newer archive fails its checks) is a warning.
func (s *Registries) Updates(ctx context.Context) (api.RegistryUpdates, error) {
	recs, err := s.registryRecords(ctx)
	if err != nil {
		return api.RegistryUpdates{}, err
	}
	out := api.RegistryUpdates{Updates: []api.RegistryUpdateOffer{}, Warnings: []api.RegistryWarning{}}
	warn := func(reg string, err error) {
		out.Warnings = append(out.Warnings, registry.Warning(reg, err))
	}
	for _, rec := range recs {
		r, err := s.offer(ctx, rec)
		if err != nil {
			warn(rec.Registry, err)
			continue
		}
		yanked := s.yanked(ctx, rec)
		if r.Version == "" {
			if yanked {
				out.Warnings = append(out.Warnings, api.RegistryWarning{Registry: rec.Registry, Code: string(fault.SourceNotInRegistry),
					Message: fmt.Sprintf("lists the %s source %s, installed here, as withdrawn (yanked) by its publisher, and no newer version that runs here", rec.Name, rec.Version)})
			}
			continue
		}
		f, err := s.Client.Fetch(ctx, r)
		if err != nil {
			warn(r.Registry, err)
			continue
		}
		out.Updates = append(out.Updates, api.RegistryUpdateOffer{Name: rec.Name, From: rec.Version, To: r.Version, Registry: r.Registry,
			RegistryLocation: r.Location, NeedsConsent: !f.Package.Manifest.Permissions.Within(s.Packages.ConsentedNow(rec)), FromYanked: yanked})
	}
	return out, nil
}

// Update is POST /api/source-registry/update: every registry source (or
// the one named) brought to its newest version that runs here, each
// keeping its state: updated, current, needs_consent (the new version
// asks for more than was consented to and consent is not its digest:
// its permissions and digest) or failed (with the message and code).
// consent applies to the source whose digest it is.
func (s *Registries) Update(ctx context.Context, in api.RegistryUpdate) ([]api.RegistryUpdateResult, error) {
	recs, err := s.registryRecords(ctx)
	if err != nil {
		return nil, err
	}
	if in.Name != "" {
		all, err := s.Packages.records(ctx)
		if err != nil {
			return nil, err
		}
		rec := all[in.Name]
		if rec == nil {
			return nil, packageNotFound(in.Name)
		}
		if rec.Plugin != "" {
			return nil, fault.Newf(fault.InputInvalid, "update the plugin instead (loci plugin install "+rec.Plugin+"; loci plugin search "+rec.Plugin+" shows its newest version)",
				"the %s source is provided by the plugin %s: it is updated with the plugin, not on its own", in.Name, rec.Plugin)
		}
		if rec.Origin != sources.OriginRegistry || rec.Registry == "" {
			return nil, fault.Newf(fault.InputInvalid, "install it from a registry to take its updates (loci source install "+in.Name+")",
				"the %s source was not installed from a registry (its origin is %s)", in.Name, rec.Origin)
		}
		recs = []*PackageRecord{rec}
	}
	out := []api.RegistryUpdateResult{}
	for _, rec := range recs {
		out = append(out, s.updateOne(ctx, rec, in.Consent))
	}
	return out, nil
}

func (s *Registries) updateOne(ctx context.Context, rec *PackageRecord, consent string) api.RegistryUpdateResult {
	res := api.RegistryUpdateResult{Name: rec.Name, From: rec.Version, To: rec.Version}
	failed := func(err error) api.RegistryUpdateResult {
		fe := fault.As(err)
		res.Status, res.Message, res.Code = api.UpdateFailed, fe.Msg, string(fe.Code)
		s.log().Warn("updating a registry source failed", "source", rec.Name, "registry", rec.Registry, "code", fe.Code, "err", fe.Msg)
		return res
	}
	r, err := s.offer(ctx, rec)
	if err != nil {
		return failed(err)
	}
	if r.Version == "" {
		res.Status = api.UpdateCurrent
		return res
	}
	res.To = r.Version
	f, err := s.Client.Fetch(ctx, r)
	if err != nil {
		return failed(err)
	}
	m := f.Package.Manifest
	digest := pack.ConsentDigest(m.Name, m.Permissions)
	o := InstallOptions{Origin: sources.OriginRegistry, Registry: f.Registry, RegistryLocation: f.Location, SignedBy: f.SignedBy, ArchiveSHA256: f.SHA256}
	if consent == digest {
		o.Consent = digest
	}
	_, err = s.Packages.InstallPackage(ctx, f.Package, o)
	switch {
	case err == nil:
		res.Status = api.UpdateUpdated
		s.log().Info("registry source updated", "source", rec.Name, "from", rec.Version, "to", r.Version, "registry", f.Registry, "signed_by", f.SignedBy)
	case fault.Is(err, fault.SourceConsentRequired):
		res.Status = api.UpdateNeedsConsent
		res.Permissions, res.PermissionWords, res.ConsentDigest = apiPermissions(m.Permissions), m.Permissions.Words(), digest
		res.Message = "it newly asks to: " + strings.Join(m.Permissions.WordsBeyond(s.Packages.ConsentedNow(rec)), "; ")
	default:
		return failed(err)
	}
	return res
}

// yanked reports whether the registry a source came from lists its
// installed version as withdrawn (false when it cannot say).
func (s *Registries) yanked(ctx context.Context, rec *PackageRecord) bool {
	reg, err := s.from(rec)
	if err != nil {
		return false
	}
	r, err := s.Client.Find(ctx, registry.Sources, rec.Name, rec.Version, reg)
	return err == nil && r.Yanked
}

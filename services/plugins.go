package services

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/plugin"
	"github.com/loci-dev/loci/sources/registry"
)

// pluginsKey is the store meta key holding every plugin's record, a JSON
// object by id, changed by compare-and-swap like packagesKey.
const pluginsKey = "plugins"

// MaxPluginBytes is the most a plugin archive may be (the spec's 64 MiB
// body limit).
const MaxPluginBytes = plugin.MaxArchiveBytes

// PluginRecord is what the palace keeps of an installed plugin; its
// modules' files and records are the source packages'.
type PluginRecord struct {
	ID          string `json:"id"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Origin is local or registry.
	Origin   string `json:"origin"`
	Registry string `json:"registry,omitempty"`
	SignedBy string `json:"signed_by,omitempty"`
	// ArchiveSHA256 is the archive's digest, Digest the plugin's content
	// digest (what a signature covers).
	ArchiveSHA256 string               `json:"archive_sha256"`
	Digest        string               `json:"digest"`
	Modules       []PluginModuleRecord `json:"modules"`
	InstalledAt   time.Time            `json:"installed_at"`
}

// PluginModuleRecord is one module of an installed plugin.
type PluginModuleRecord struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// PluginRegistry is what the plugins service asks of the registry client
// (registry.Client): plugin releases found, listed and fetched, checked
// against the index.
type PluginRegistry interface {
	Search(ctx context.Context, kind registry.Kind, q, reg string) ([]registry.Release, []api.RegistryWarning, error)
	Find(ctx context.Context, kind registry.Kind, name, version, reg string) (registry.Release, error)
	Fetch(ctx context.Context, r registry.Release) (registry.Fetched, error)
}

// Plugins is the service of plugins: archives carrying several modules
// (sources today), previewed, installed without activating their modules,
// shown and uninstalled, locally or from a plugin registry.
type Plugins struct {
	// Packages installs a plugin's source modules.
	Packages *Packages
	// Registry finds and fetches plugins (nil: no plugin registry).
	Registry PluginRegistry
	// Trust is the trusted keys and the signature policy
	// (mining.trusted_keys, mining.signature_policy) at each use (nil:
	// none trusted, optional).
	Trust func() ([]string, registry.Policy)
	Log   *slog.Logger

	mu sync.Mutex // one install or removal at a time
	// install installs one module (nil: Packages.InstallPackage); a test
	// makes one fail.
	install func(ctx context.Context, pkg *pack.Package, o InstallOptions) (api.SourcePackageInstalled, error)
}

func (p *Plugins) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}

// PluginInstallOptions are an install's consents (source name → consent
// digest) and the sources installed on their own it may adopt.
type PluginInstallOptions struct {
	Consents map[string]string
	Adopt    []string
}

// origin is where a plugin archive came from, and who vouched.
type origin struct {
	kind, registry, signedBy string
}

// candidate is a plugin read and judged against what is installed.
type candidate struct {
	plug     *plugin.Plugin
	archive  string // SHA-256 of the archive
	signedBy string
	// consents are the digests of the sources that need consent; adopt
	// the sources installed on their own the plugin provides.
	consents map[string]string
	adopt    []string
	current  *PluginRecord
	recs     map[string]*PackageRecord
	// dropped are the installed modules an update no longer carries;
	// blocked, when one of them is enabled, is why the install is
	// refused (loci::plugin::in_use).
	dropped []string
	blocked error
}

// records reads every plugin's record.
func (p *Plugins) records(ctx context.Context) (map[string]*PluginRecord, string, error) {
	raw, _, err := p.Packages.DB.GetMeta(ctx, pluginsKey)
	if err != nil {
		return nil, "", err
	}
	recs := map[string]*PluginRecord{}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &recs); err != nil {
			return nil, "", fault.Wrap(fault.StoreBackendFailed, err, "the plugin records cannot be read", "run loci doctor")
		}
	}
	return recs, raw, nil
}

// put writes (rec) or removes (rec nil) the record of id, compare-and-
// swapped against the records as read.
func (p *Plugins) put(ctx context.Context, id string, rec *PluginRecord) error {
	for range 16 {
		recs, raw, err := p.records(ctx)
		if err != nil {
			return err
		}
		ok, err := swapRecord(ctx, p.Packages.DB, pluginsKey, raw, recs, id, rec)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return fault.New(fault.StoreBackendFailed, "the plugin records kept changing", "try again")
}

// readArchive reads a plugin archive of at most plugin.MaxArchiveBytes.
func readArchive(body io.Reader) ([]byte, *plugin.Plugin, error) {
	raw, err := io.ReadAll(io.LimitReader(body, plugin.MaxArchiveBytes+1))
	if err != nil {
		return nil, nil, fault.Wrap(fault.InputInvalid, err, "body: cannot be read", "send the plugin again")
	}
	if len(raw) > plugin.MaxArchiveBytes {
		return nil, nil, fault.Newf(fault.InputTooLarge, "a plugin is at most 64 MiB", "the plugin is larger than %d bytes", plugin.MaxArchiveBytes)
	}
	plug, err := plugin.Read(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	return raw, plug, nil
}

// judge checks a plugin against this daemon and what is installed: it
// runs here, its signature holds (a signature by a trusted key that does
// not verify is refused, whatever its origin), no module is a built-in or
// bundled source's name or another plugin's source; and says which
// sources need consent and which need adoption, and whether an update
// drops an enabled module (blocked). The signature policy governs what
// comes from a registry (fromRegistry; fetchedBy: a key that vouched for
// the archive in its index): a file the user installs is their own
// vouching, as for a source package.
func (p *Plugins) judge(ctx context.Context, raw []byte, plug *plugin.Plugin, fromRegistry bool, fetchedBy string) (*candidate, error) {
	m := plug.Manifest
	if why := plug.Compatible(p.Packages.Version); why != "" {
		return nil, fault.Newf(fault.SourceIncompatible, "install a version of the plugin built for this loci ("+p.Packages.Version+")",
			"the plugin %s %s cannot run on this loci: %s", m.ID, m.Version, why)
	}
	var keys []string
	policy := registry.PolicyOptional
	if p.Trust != nil {
		keys, policy = p.Trust()
	}
	by, err := plug.Verify(keys, false)
	if err != nil {
		return nil, err
	}
	if by == "" {
		by = fetchedBy
	}
	if by == "" && policy == registry.PolicyRequired && fromRegistry {
		if _, err := plug.Verify(keys, true); err != nil {
			return nil, err
		}
	}
	if err := p.Packages.Refresh(ctx); err != nil {
		return nil, err
	}
	precs, err := p.Packages.records(ctx)
	if err != nil {
		return nil, err
	}
	plugins, _, err := p.records(ctx)
	if err != nil {
		return nil, err
	}
	c := &candidate{plug: plug, archive: pack.Digest(raw), signedBy: by, consents: map[string]string{}, adopt: []string{},
		current: plugins[m.ID], recs: precs}
	for _, s := range plug.Sources {
		name, perms := s.Name(), s.Package.Manifest.Permissions
		if e, ok := p.Packages.Registry.Entry(name); ok && e.Origin == sources.OriginBuiltIn {
			return nil, fault.Newf(fault.SourceBuiltin, "built-in sources are part of loci; the plugin must name its source otherwise",
				"the plugin %s carries a source named %s, which is built in: it cannot be replaced", m.ID, name)
		}
		cur := precs[name]
		if e, ok := p.Packages.Registry.Entry(name); (ok && e.Origin == sources.OriginBundled) || (cur != nil && cur.Origin == sources.OriginBundled) {
			return nil, fault.Newf(fault.SourceBundled, "bundled sources ship with loci; the plugin must name its source otherwise",
				"the plugin %s carries a source named %s, which is bundled with loci: it cannot be replaced", m.ID, name)
		}
		if cur != nil && cur.Plugin != "" && cur.Plugin != m.ID {
			return nil, fault.Newf(fault.SourcePluginProvided, "remove the plugin "+cur.Plugin+" first, or install only one of the two",
				"the plugin %s carries the %s source, which the plugin %s provides", m.ID, name, cur.Plugin)
		}
		if cur != nil && cur.Plugin == "" {
			c.adopt = append(c.adopt, name)
		}
		if !perms.None() && (cur == nil || !perms.Within(p.Packages.ConsentedNow(cur))) {
			c.consents[name] = pack.ConsentDigest(name, perms)
		}
	}
	// Modules an update drops: none of them may be enabled.
	if c.current != nil {
		for _, mod := range c.current.Modules {
			if slices.Contains(plug.Names(), mod.Name) {
				continue
			}
			if r := precs[mod.Name]; r != nil && r.Plugin == m.ID && r.State == sources.StateEnabled && c.blocked == nil {
				c.blocked = fault.Newf(fault.PluginInUse, "disable it first (loci source disable "+mod.Name+")",
					"the plugin %s %s no longer carries the %s source, which is enabled: installing it is refused", m.ID, m.Version, mod.Name)
			}
			c.dropped = append(c.dropped, mod.Name)
		}
	}
	return c, nil
}

// view is a plugin as the API shows it: its record (or, before install,
// its manifest) and its modules with their state now.
func (p *Plugins) view(rec *PluginRecord, plug *plugin.Plugin, installed map[string]api.SourcePackage) api.Plugin {
	v := api.Plugin{Modules: []api.PluginModule{}}
	if rec != nil {
		at := rec.InstalledAt
		v = api.Plugin{ID: rec.ID, Version: rec.Version, Description: rec.Description, Origin: rec.Origin, Registry: rec.Registry,
			SignedBy: rec.SignedBy, InstalledAt: &at, Modules: []api.PluginModule{}}
		for _, mod := range rec.Modules {
			pm := api.PluginModule{Kind: mod.Kind, Name: mod.Name, Version: mod.Version, State: sources.StateUnavailable}
			if sp, ok := installed[mod.Name]; ok && sp.Plugin == rec.ID {
				pm.State, pm.Permissions, pm.PermissionWords, pm.ConsentDigest = sp.State, sp.Permissions, sp.PermissionWords, sp.ConsentDigest
			}
			v.Modules = append(v.Modules, pm)
		}
		return v
	}
	m := plug.Manifest
	v.ID, v.Version, v.Description = m.ID, m.Version, m.Description
	for _, s := range plug.Sources {
		perms := s.Package.Manifest.Permissions
		v.Modules = append(v.Modules, api.PluginModule{Kind: plugin.KindSource, Name: s.Name(), Version: s.Package.Manifest.Version,
			Permissions: apiPermissions(perms), PermissionWords: perms.Words(), ConsentDigest: pack.ConsentDigest(s.Name(), perms)})
	}
	return v
}

// preview is a judged plugin as POST /api/plugins/preview answers it.
func (p *Plugins) preview(c *candidate, o origin) api.PluginPreview {
	v := p.view(nil, c.plug, nil)
	v.Origin, v.Registry, v.SignedBy = o.kind, o.registry, c.signedBy
	out := api.PluginPreview{Plugin: v, ArchiveDigest: c.archive, Consents: c.consents, Adopt: c.adopt}
	if c.current != nil {
		out.Replaces = c.current.Version
	}
	if c.blocked != nil {
		fe := fault.As(c.blocked)
		out.Blocked = &api.PluginBlocked{Code: string(fe.Code), Message: fe.Msg, Help: fe.Help}
	}
	return out
}

// Preview reads and checks a plugin archive (at most 64 MiB) and says
// what installing it would ask: each source's consent digest, the
// sources installed on their own it would adopt, the version it would
// replace. Nothing changes.
func (p *Plugins) Preview(ctx context.Context, body io.Reader) (api.PluginPreview, error) {
	raw, plug, err := readArchive(body)
	if err != nil {
		return api.PluginPreview{}, err
	}
	c, err := p.judge(ctx, raw, plug, false, "")
	if err != nil {
		return api.PluginPreview{}, err
	}
	return p.preview(c, origin{kind: sources.OriginLocal}), nil
}

// Install installs a plugin archive (at most 64 MiB): each source module
// through Packages with origin plugin, installed and not enabled (an
// update or an adopted source keeps its state). Refused, with nothing
// installed: a module asking for permissions without its consent digest
// in o.Consents (loci::source::consent_required naming each and its
// digest), a source installed on its own not listed in o.Adopt
// (loci::source::adoption_required), a built-in or bundled name, another
// plugin's source. When one module fails, the ones this install changed
// are put back. An update's modules the new version no longer carries
// are removed, unless enabled (loci::plugin::in_use).
func (p *Plugins) Install(ctx context.Context, body io.Reader, o PluginInstallOptions) (api.PluginInstalled, error) {
	raw, plug, err := readArchive(body)
	if err != nil {
		return api.PluginInstalled{}, err
	}
	return p.installPlugin(ctx, raw, plug, o, origin{kind: sources.OriginLocal})
}

func (p *Plugins) installPlugin(ctx context.Context, raw []byte, plug *plugin.Plugin, o PluginInstallOptions, from origin) (api.PluginInstalled, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.judge(ctx, raw, plug, from.kind == sources.OriginRegistry, from.signedBy)
	if err != nil {
		return api.PluginInstalled{}, err
	}
	m := plug.Manifest
	if err := unknownSources(plug, o, from.kind); err != nil {
		return api.PluginInstalled{}, err
	}
	// The help names the install as it was asked: by id from a registry
	// (the CLI's id form, the REST body's fields), else a file (the
	// headers).
	byID := from.kind == sources.OriginRegistry
	if err := consentsMissing(plug, c.consents, o.Consents, byID); err != nil {
		return api.PluginInstalled{}, err
	}
	var unadopted []string
	for _, name := range c.adopt {
		if !slices.Contains(o.Adopt, name) {
			unadopted = append(unadopted, name)
		}
	}
	if len(unadopted) > 0 {
		help := "review them (loci plugin preview FILE); then list them for adoption: --adopt " + strings.Join(unadopted, " --adopt ") + " (X-Loci-Adopt-Sources: " + adoptJSON(unadopted) + ")"
		if byID {
			ref := m.ID + "@" + m.Version
			help = "review them (loci plugin preview " + ref + "); then list them for adoption: loci plugin install " + ref + " --adopt " + strings.Join(unadopted, " --adopt ") +
				` (REST: "adopt_sources": ` + adoptJSON(unadopted) + " in the body of POST /api/plugin-registry/install)"
		}
		return api.PluginInstalled{}, fault.New(fault.SourceAdoptionRequired,
			fmt.Sprintf("the plugin %s %s provides sources installed on their own: %s; installing it takes them over, and nothing was installed", m.ID, m.Version, strings.Join(unadopted, ", ")),
			help)
	}
	if c.blocked != nil {
		return api.PluginInstalled{}, c.blocked
	}
	dropped := c.dropped
	install := p.install
	if install == nil {
		install = p.Packages.InstallPackage
	}
	type done struct {
		name string
		prev *PackageRecord
		pkg  *pack.Package // prev's files, read before they were replaced
	}
	var changed []done
	rollback := func() {
		for i := len(changed) - 1; i >= 0; i-- {
			d := changed[i]
			var err error
			if d.prev == nil {
				err = p.Packages.remove(ctx, d.name, m.ID)
			} else if d.pkg != nil {
				_, err = p.Packages.InstallPackage(ctx, d.pkg, InstallOptions{Consent: d.prev.Consent, Origin: d.prev.Origin, Registry: d.prev.Registry,
					SignedBy: d.prev.SignedBy, ArchiveSHA256: d.prev.ArchiveSHA256, Plugin: d.prev.Plugin, Adopt: true})
			}
			if err != nil {
				p.log().Warn("putting back a source a failed plugin install changed failed", "plugin", m.ID, "source", d.name, "err", err)
			}
		}
	}
	for _, s := range plug.Sources {
		name := s.Name()
		prev := c.recs[name]
		var prevPkg *pack.Package
		if prev != nil && p.Packages.Dir != "" {
			prevPkg, _ = pack.ReadDir(filepath.Join(p.Packages.Dir, name))
		}
		_, err := install(ctx, s.Package, InstallOptions{Consent: o.Consents[name], Origin: sources.OriginPlugin, Plugin: m.ID,
			Adopt: slices.Contains(c.adopt, name), Registry: from.registry, SignedBy: c.signedBy, ArchiveSHA256: c.archive})
		if err != nil {
			rollback()
			fe := fault.As(err)
			return api.PluginInstalled{}, fault.Wrap(fe.Code, err, fmt.Sprintf("installing the plugin %s %s failed at its %s source, and what it had installed was put back: %s", m.ID, m.Version, name, fe.Msg), fe.Help)
		}
		changed = append(changed, done{name: name, prev: prev, pkg: prevPkg})
	}
	rec := &PluginRecord{ID: m.ID, Version: m.Version, Description: m.Description, Origin: from.kind, Registry: from.registry,
		SignedBy: c.signedBy, ArchiveSHA256: c.archive, Digest: plug.Digest(), InstalledAt: time.Now().UTC()}
	for _, s := range plug.Sources {
		rec.Modules = append(rec.Modules, PluginModuleRecord{Kind: plugin.KindSource, Name: s.Name(), Version: s.Package.Manifest.Version})
	}
	if err := p.put(ctx, m.ID, rec); err != nil {
		rollback()
		return api.PluginInstalled{}, err
	}
	for _, name := range dropped {
		if err := p.Packages.remove(ctx, name, m.ID); err != nil && !fault.Is(err, fault.SourceNotFound) {
			p.log().Warn("removing a source a plugin update dropped failed", "plugin", m.ID, "source", name, "err", err)
		}
	}
	out := api.PluginInstalled{Adopted: c.adopt}
	if c.current != nil {
		out.Replaced = c.current.Version
	}
	installed, err := p.installedByName(ctx)
	if err != nil {
		return api.PluginInstalled{}, err
	}
	out.Plugin = p.view(rec, nil, installed)
	if out.Replaced == m.Version {
		// The same version again: a reinstall, not a replacement.
		p.log().Info("plugin reinstalled", "plugin", m.ID, "version", m.Version, "origin", from.kind, "signed_by", c.signedBy,
			"sources", strings.Join(plug.Names(), ", "), "adopted", strings.Join(c.adopt, ", "))
	} else {
		p.log().Info("plugin installed", "plugin", m.ID, "version", m.Version, "origin", from.kind, "signed_by", c.signedBy,
			"sources", strings.Join(plug.Names(), ", "), "adopted", strings.Join(c.adopt, ", "), "replaced", out.Replaced)
	}
	return out, nil
}

// consentsMissing refuses a plugin whose sources needing consent are not
// all given their exact digest (a digest given that is not the module's
// is refused too), naming each with its digest and permissions.
func consentsMissing(plug *plugin.Plugin, need, given map[string]string, byID bool) error {
	var parts, pairs []string
	for _, s := range plug.Sources {
		name := s.Name()
		d, needed := need[name]
		g, ok := given[name]
		if ok && g != pack.ConsentDigest(name, s.Package.Manifest.Permissions) {
			d, needed = pack.ConsentDigest(name, s.Package.Manifest.Permissions), true
		} else if !needed || g == d {
			continue
		}
		parts = append(parts, fmt.Sprintf("the %s source asks to: %s (consent digest %s)", name, strings.Join(s.Package.Manifest.Permissions.Words(), "; "), d))
		pairs = append(pairs, name+"="+d)
	}
	if len(parts) == 0 {
		return nil
	}
	m := plug.Manifest
	help := "review the permissions; then run `loci plugin install FILE` (it shows them and asks), or pass --consent " + strings.Join(pairs, " --consent ") +
		" (the header X-Loci-Consents)"
	if byID {
		ref := m.ID + "@" + m.Version
		help = "review the permissions (loci plugin preview " + ref + "); then run `loci plugin install " + ref + "` (it shows them and asks), or `loci plugin install " + ref +
			" --consent " + strings.Join(pairs, " --consent ") + "` (REST: \"consents\" in the body of POST /api/plugin-registry/install)"
	}
	return fault.New(fault.SourceConsentRequired,
		fmt.Sprintf("installing the plugin %s %s needs your consent: %s; nothing was installed", m.ID, m.Version, strings.Join(parts, ". ")),
		help)
}

// unknownSources refuses a consent or an adoption naming a source the
// plugin does not carry (loci::input::invalid naming it, and the
// sources it does carry): a typo would otherwise pass silently.
func unknownSources(plug *plugin.Plugin, o PluginInstallOptions, kind string) error {
	consents, adopt := "X-Loci-Consents", "X-Loci-Adopt-Sources"
	if kind == sources.OriginRegistry {
		consents, adopt = "consents", "adopt_sources"
	}
	names := plug.Names()
	var given []string
	for name := range o.Consents {
		given = append(given, name)
	}
	slices.Sort(given)
	check := func(field string, list []string) error {
		for _, name := range list {
			if !slices.Contains(names, name) {
				return fault.Invalid(field, fmt.Sprintf("the plugin %s %s has no source %q (its sources: %s)",
					plug.Manifest.ID, plug.Manifest.Version, fault.Clip(name, 64), strings.Join(names, ", ")))
			}
		}
		return nil
	}
	if err := check(consents, given); err != nil {
		return err
	}
	return check(adopt, o.Adopt)
}

func adoptJSON(names []string) string {
	b, _ := json.Marshal(names)
	return string(b)
}

// installedByName is every source as the packages service shows it, by
// name.
func (p *Plugins) installedByName(ctx context.Context) (map[string]api.SourcePackage, error) {
	list, err := p.Packages.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]api.SourcePackage, len(list))
	for _, sp := range list {
		out[sp.Name] = sp
	}
	return out, nil
}

// List is every installed plugin, by id, with its modules' state.
func (p *Plugins) List(ctx context.Context) ([]api.Plugin, error) {
	recs, _, err := p.records(ctx)
	if err != nil {
		return nil, err
	}
	installed, err := p.installedByName(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]api.Plugin, 0, len(ids))
	for _, id := range ids {
		out = append(out, p.view(recs[id], nil, installed))
	}
	return out, nil
}

// Show is one installed plugin (loci::plugin::not_found when none has
// the id).
func (p *Plugins) Show(ctx context.Context, id string) (api.Plugin, error) {
	recs, _, err := p.records(ctx)
	if err != nil {
		return api.Plugin{}, err
	}
	rec := recs[id]
	if rec == nil {
		return api.Plugin{}, pluginNotFound(id)
	}
	installed, err := p.installedByName(ctx)
	if err != nil {
		return api.Plugin{}, err
	}
	return p.view(rec, nil, installed), nil
}

func pluginNotFound(id string) error {
	return fault.Newf(fault.PluginNotFound, "list the plugins (loci plugin list, GET /api/plugins)", "no plugin is installed with the id %q", id)
}

// Remove uninstalls a plugin: refused while any of its modules is
// enabled (loci::plugin::in_use naming them), else its modules are
// removed (Packages) and then its record. What the modules mined stays.
func (p *Plugins) Remove(ctx context.Context, id string) (api.PluginRemoved, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	recs, _, err := p.records(ctx)
	if err != nil {
		return api.PluginRemoved{}, err
	}
	precs, err := p.Packages.records(ctx)
	if err != nil {
		return api.PluginRemoved{}, err
	}
	rec := recs[id]
	if rec == nil {
		// An install killed between its modules and its own record
		// leaves sources held by a plugin with no record: removing the
		// plugin by its id removes them (else only reinstalling it
		// would free them).
		rec = &PluginRecord{ID: id}
		for name, r := range precs {
			if r.Plugin == id {
				rec.Modules = append(rec.Modules, PluginModuleRecord{Kind: "source", Name: name, Version: r.Version})
			}
		}
		if len(rec.Modules) == 0 {
			return api.PluginRemoved{}, pluginNotFound(id)
		}
	}
	var enabled []string
	for _, mod := range rec.Modules {
		if r := precs[mod.Name]; r != nil && r.Plugin == id && r.State == sources.StateEnabled {
			enabled = append(enabled, mod.Name)
		}
	}
	if len(enabled) > 0 {
		return api.PluginRemoved{}, fault.Newf(fault.PluginInUse, "disable them first (loci source disable "+strings.Join(enabled, ", loci source disable ")+"), then remove the plugin",
			"the plugin %s cannot be removed while its sources are enabled: %s", id, strings.Join(enabled, ", "))
	}
	for _, mod := range rec.Modules {
		if r := precs[mod.Name]; r == nil || r.Plugin != id {
			continue
		}
		if err := p.Packages.remove(ctx, mod.Name, id); err != nil && !fault.Is(err, fault.SourceNotFound) {
			return api.PluginRemoved{}, err
		}
	}
	if err := p.put(ctx, id, nil); err != nil {
		return api.PluginRemoved{}, err
	}
	p.log().Info("plugin removed", "plugin", id, "version", rec.Version)
	return api.PluginRemoved{Removed: id}, nil
}

// registryOr is the plugin registry, or why there is none.
func (p *Plugins) registryOr() (PluginRegistry, error) {
	if p.Registry == nil {
		return nil, fault.New(fault.SourceRegistryUnavailable, "no plugin registry is available on this daemon",
			"name a registry in mining.registries and restart the daemon")
	}
	return p.Registry, nil
}

// Search lists the newest release of each plugin matching q in the
// registries (registry "" all), with the version installed here.
func (p *Plugins) Search(ctx context.Context, q, reg string) (api.RegistrySearch, error) {
	r, err := p.registryOr()
	if err != nil {
		return api.RegistrySearch{}, err
	}
	rels, warns, err := r.Search(ctx, registry.Plugins, q, reg)
	if err != nil {
		return api.RegistrySearch{}, err
	}
	recs, _, err := p.records(ctx)
	if err != nil {
		return api.RegistrySearch{}, err
	}
	out := api.RegistrySearch{Entries: []api.RegistryEntry{}, Warnings: warns}
	if out.Warnings == nil {
		out.Warnings = []api.RegistryWarning{}
	}
	for _, rel := range rels {
		e := api.RegistryEntry{Name: rel.Name, Version: rel.Version, Description: rel.Description, Registry: rel.Registry, Signed: rel.Signature != ""}
		if rec := recs[rel.Name]; rec != nil {
			e.Installed = rec.Version
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// fetch finds and fetches a plugin release and reads it: the plugin
// inside must be the one the index named (id and version).
func (p *Plugins) fetch(ctx context.Context, id, version, reg string) (registry.Fetched, *plugin.Plugin, error) {
	r, err := p.registryOr()
	if err != nil {
		return registry.Fetched{}, nil, err
	}
	rel, err := r.Find(ctx, registry.Plugins, id, version, reg)
	if err != nil {
		return registry.Fetched{}, nil, err
	}
	f, err := r.Fetch(ctx, rel)
	if err != nil {
		return registry.Fetched{}, nil, err
	}
	plug, err := plugin.Read(bytes.NewReader(f.Archive))
	if err != nil {
		return registry.Fetched{}, nil, err
	}
	if plug.Manifest.ID != rel.Name || plug.Manifest.Version != rel.Version {
		return registry.Fetched{}, nil, fault.Newf(fault.SourceIntegrity, "the registry's index does not match its archive: tell the registry's keeper",
			"the registry %s lists the plugin %s %s, but its archive is the plugin %s %s", rel.Registry, rel.Name, rel.Version, plug.Manifest.ID, plug.Manifest.Version)
	}
	return f, plug, nil
}

// ShowRegistry fetches and verifies a plugin from the registries and
// answers its preview (permission digests, adoption, archive digest);
// nothing is installed.
func (p *Plugins) ShowRegistry(ctx context.Context, id, version, reg string) (api.PluginPreview, error) {
	f, plug, err := p.fetch(ctx, id, version, reg)
	if err != nil {
		return api.PluginPreview{}, err
	}
	c, err := p.judge(ctx, f.Archive, plug, true, f.SignedBy)
	if err != nil {
		return api.PluginPreview{}, err
	}
	return p.preview(c, origin{kind: sources.OriginRegistry, registry: f.Registry}), nil
}

// InstallRegistry installs a plugin from the registries as Install does,
// origin registry; an archive digest given that is not the archive's now
// (it changed since it was shown) is loci::source::integrity and nothing
// is installed.
func (p *Plugins) InstallRegistry(ctx context.Context, in api.PluginRegistryInstall) (api.PluginInstalled, error) {
	if !pack.ValidName(in.ID) {
		return api.PluginInstalled{}, fault.Invalid("id", fmt.Sprintf("%q is not a plugin id (%s)", in.ID, pack.NameRule))
	}
	f, plug, err := p.fetch(ctx, in.ID, in.Version, in.Registry)
	if err != nil {
		return api.PluginInstalled{}, err
	}
	if d := pack.Digest(f.Archive); in.ArchiveDigest != "" && in.ArchiveDigest != d {
		return api.PluginInstalled{}, fault.Newf(fault.SourceIntegrity, "preview it again (loci plugin preview "+in.ID+", GET /api/plugin-registry/plugins/"+in.ID+") and review what changed",
			"the plugin %s %s's archive is %s now, not %s as shown: it changed since it was shown, and nothing was installed", in.ID, plug.Manifest.Version, d, in.ArchiveDigest)
	}
	return p.installPlugin(ctx, f.Archive, plug, PluginInstallOptions{Consents: in.Consents, Adopt: in.AdoptSources},
		origin{kind: sources.OriginRegistry, registry: f.Registry, signedBy: f.SignedBy})
}

package services

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/plugin"
	"github.com/loci-dev/loci/sources/registry"
)

// testPlugin is a plugin of the given packages, each in its own folder.
func testPlugin(t *testing.T, id, version string, pkgs ...*pack.Package) *plugin.Plugin {
	t.Helper()
	mb := "id = \"" + id + "\"\nversion = \"" + version + "\"\ndescription = \"a test plugin\"\n"
	files := map[string]*pack.Package{}
	for _, p := range pkgs {
		mb += "[[modules]]\nkind = \"source\"\npath = \"src/" + p.Manifest.Name + "\"\n"
		files["src/"+p.Manifest.Name] = p
	}
	m, err := plugin.ParseManifest([]byte(mb))
	if err != nil {
		t.Fatal(err)
	}
	plug := &plugin.Plugin{Manifest: m, ManifestBytes: []byte(mb)}
	for _, p := range pkgs {
		plug.Sources = append(plug.Sources, plugin.Source{Path: "src/" + p.Manifest.Name, Package: p})
	}
	return plug
}

func pluginBytes(t *testing.T, p *plugin.Plugin) []byte {
	t.Helper()
	b, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newPlugins(t *testing.T, bundled ...*pack.Package) *Plugins {
	t.Helper()
	pk, _ := newPackages(t, bundled...)
	return &Plugins{Packages: pk}
}

// TestPluginPreviewInstallAdoptRemove: the preview names each source's
// consent digest and the source installed on its own; an install
// without consent or adoption is refused with nothing changed; with both
// the modules are installed, not enabled, origin plugin; a module cannot
// be removed on its own; removal is refused while one is enabled, then
// removes the modules and the record.
func TestPluginPreviewInstallAdoptRemove(t *testing.T) {
	ctx := context.Background()
	pl := newPlugins(t)
	pk := pl.Packages
	alpha := testPackage(t, "alpha", "1.0.0", readPerms, testModule)
	beta := testPackage(t, "beta", "1.0.0", "", testModule)
	legacy := testPackage(t, "beta", "0.9.0", "", testModule)
	if _, err := pk.InstallPackage(ctx, legacy, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pk.SetEnabled(ctx, "beta", true); err != nil {
		t.Fatal(err)
	}
	plug := testPlugin(t, "suite", "1.0.0", alpha, beta)
	raw := pluginBytes(t, plug)
	digest := pack.ConsentDigest("alpha", alpha.Manifest.Permissions)

	pv, err := pl.Preview(ctx, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if pv.Consents["alpha"] != digest || len(pv.Consents) != 1 || strings.Join(pv.Adopt, ",") != "beta" ||
		pv.ArchiveDigest != pack.Digest(raw) || pv.Plugin.ID != "suite" || len(pv.Plugin.Modules) != 2 || pv.Plugin.Modules[0].ConsentDigest != digest {
		t.Fatalf("preview: %+v", pv)
	}

	recordsBefore, _, _ := pk.DB.GetMeta(ctx, packagesKey)
	_, err = pl.Install(ctx, bytes.NewReader(raw), PluginInstallOptions{Adopt: []string{"beta"}})
	wantCode(t, err, fault.SourceConsentRequired, "alpha", digest, "--consent alpha="+digest)
	_, err = pl.Install(ctx, bytes.NewReader(raw), PluginInstallOptions{Consents: map[string]string{"alpha": digest}})
	wantCode(t, err, fault.SourceAdoptionRequired, "beta", "--adopt beta")
	_, err = pl.Install(ctx, bytes.NewReader(raw), PluginInstallOptions{Consents: map[string]string{"alpha": digest, "beta": digest}, Adopt: []string{"beta"}})
	wantCode(t, err, fault.SourceConsentRequired, "beta")
	if after, _, _ := pk.DB.GetMeta(ctx, packagesKey); after != recordsBefore {
		t.Fatal("a refused plugin install changed the source records")
	}
	if v, _, _ := pk.DB.GetMeta(ctx, pluginsKey); v != "" {
		t.Fatalf("a refused plugin install left a record: %s", v)
	}

	out, err := pl.Install(ctx, bytes.NewReader(raw), PluginInstallOptions{Consents: map[string]string{"alpha": digest}, Adopt: []string{"beta"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.Adopted, ",") != "beta" || out.Plugin.Modules[0].State != sources.StateInstalled || out.Plugin.Modules[1].State != sources.StateEnabled ||
		out.Plugin.Modules[1].Version != "1.0.0" {
		t.Fatalf("installed: %+v", out)
	}
	for _, name := range []string{"alpha", "beta"} {
		sp, err := pk.Show(ctx, name)
		if err != nil || sp.Origin != sources.OriginPlugin || sp.Plugin != "suite" {
			t.Fatalf("%s: %+v %v", name, sp, err)
		}
	}
	// A plugin's source is not removed or replaced on its own.
	wantCode(t, pk.Remove(ctx, "alpha"), fault.SourcePluginProvided, "suite", "remove the plugin")
	_, err = pk.Install(ctx, bytes.NewReader(archive(t, alpha)), InstallOptions{Consent: digest})
	wantCode(t, err, fault.SourcePluginProvided, "suite")

	list, err := pl.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "suite" || list[0].Origin != sources.OriginLocal {
		t.Fatalf("list: %+v %v", list, err)
	}
	_, err = pl.Remove(ctx, "suite")
	wantCode(t, err, fault.PluginInUse, "beta", "loci source disable beta")
	if _, err := pk.SetEnabled(ctx, "beta", false); err != nil {
		t.Fatal(err)
	}
	if out, err := pl.Remove(ctx, "suite"); err != nil || out.Removed != "suite" {
		t.Fatalf("remove: %+v %v", out, err)
	}
	for _, name := range []string{"alpha", "beta"} {
		if _, err := pk.Show(ctx, name); !fault.Is(err, fault.SourceNotFound) {
			t.Fatalf("%s after removal: %v", name, err)
		}
	}
	_, err = pl.Show(ctx, "suite")
	wantCode(t, err, fault.PluginNotFound, "suite")
}

// TestAFailedModuleInstallPutsBackWhatTheInstallChanged: when the second
// module fails, the first (new) is removed and the adopted one is put
// back as it was, its own again.
func TestAFailedModuleInstallPutsBackWhatTheInstallChanged(t *testing.T) {
	ctx := context.Background()
	pl := newPlugins(t)
	pk := pl.Packages
	legacy := testPackage(t, "alpha", "0.9.0", "", testModule)
	if _, err := pk.InstallPackage(ctx, legacy, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	plug := testPlugin(t, "suite", "1.0.0", testPackage(t, "alpha", "1.0.0", "", testModule), testPackage(t, "gamma", "1.0.0", "", testModule),
		testPackage(t, "delta", "1.0.0", "", testModule))
	calls := 0
	pl.install = func(ctx context.Context, pkg *pack.Package, o InstallOptions) (api.SourcePackageInstalled, error) {
		if calls++; calls == 3 {
			return api.SourcePackageInstalled{}, fault.Wrap(fault.StoreBackendFailed, errors.New("disk full"), "disk full", "free space")
		}
		return pk.InstallPackage(ctx, pkg, o)
	}
	_, err := pl.Install(ctx, bytes.NewReader(pluginBytes(t, plug)), PluginInstallOptions{Adopt: []string{"alpha"}})
	wantCode(t, err, fault.StoreBackendFailed, "delta", "put back")
	sp, err := pk.Show(ctx, "alpha")
	if err != nil || sp.Version != "0.9.0" || sp.Plugin != "" || sp.Origin != sources.OriginLocal {
		t.Fatalf("alpha after the failed install: %+v %v", sp, err)
	}
	if _, err := pk.Show(ctx, "gamma"); !fault.Is(err, fault.SourceNotFound) {
		t.Fatalf("gamma after the failed install: %v", err)
	}
	if _, err := os.Stat(filepath.Join(pk.Dir, "gamma")); !os.IsNotExist(err) {
		t.Fatalf("gamma's files stayed: %v", err)
	}
	if v, _, _ := pk.DB.GetMeta(ctx, pluginsKey); v != "" {
		t.Fatalf("a failed install left a record: %s", v)
	}
}

// TestPluginRefusals: built-in and bundled names, another plugin's
// source, an incompatible plugin, and an untrusted one under the
// required policy are refused; a signed one records its key.
func TestPluginRefusals(t *testing.T) {
	ctx := context.Background()
	bundled := testPackage(t, "shipped", "1.0.0", "", testModule)
	pl := newPlugins(t, bundled)
	_, err := pl.Preview(ctx, bytes.NewReader(pluginBytes(t, testPlugin(t, "p", "1.0.0", testPackage(t, "directory", "1.0.0", "", testModule)))))
	wantCode(t, err, fault.SourceBuiltin, "directory")
	_, err = pl.Install(ctx, bytes.NewReader(pluginBytes(t, testPlugin(t, "p", "1.0.0", testPackage(t, "shipped", "2.0.0", "", testModule)))), PluginInstallOptions{})
	wantCode(t, err, fault.SourceBundled, "shipped")

	if _, err := pl.Install(ctx, bytes.NewReader(pluginBytes(t, testPlugin(t, "one", "1.0.0", testPackage(t, "x", "1.0.0", "", testModule)))), PluginInstallOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = pl.Install(ctx, bytes.NewReader(pluginBytes(t, testPlugin(t, "two", "1.0.0", testPackage(t, "x", "1.0.0", "", testModule)))), PluginInstallOptions{Adopt: []string{"x"}})
	wantCode(t, err, fault.SourcePluginProvided, "one")

	inc := testPlugin(t, "inc", "1.0.0", testPackage(t, "y", "1.0.0", "", testModule))
	mb := []byte("id = \"inc\"\nversion = \"1.0.0\"\nloci = \">= 9.0.0\"\n[[modules]]\nkind = \"source\"\npath = \"src/y\"\n")
	m, _ := plugin.ParseManifest(mb)
	inc.Manifest, inc.ManifestBytes = m, mb
	_, err = pl.Preview(ctx, bytes.NewReader(pluginBytes(t, inc)))
	wantCode(t, err, fault.SourceIncompatible, "needs loci >= 9.0.0")

	pub, key, _ := pack.GenerateKey()
	signed := testPlugin(t, "signed", "1.0.0", testPackage(t, "z", "1.0.0", "", testModule))
	pl.Trust = func() ([]string, registry.Policy) {
		return []string{pack.FormatPublicKey(pub)}, registry.PolicyRequired
	}
	// Trial 30: the policy governs what comes from registries; a local
	// file is the user's own vouching (as for a source package).
	if pv, err := pl.Preview(ctx, bytes.NewReader(pluginBytes(t, signed))); err != nil || pv.Plugin.SignedBy != "" {
		t.Fatalf("an unsigned local plugin under required: %+v %v", pv, err)
	}
	pl.Registry = &fakeRegistry{archive: pluginBytes(t, signed), id: "signed", ver: "1.0.0"}
	_, err = pl.ShowRegistry(ctx, "signed", "", "")
	wantCode(t, err, fault.SourceUntrusted, "not signed")
	_, err = pl.InstallRegistry(ctx, api.PluginRegistryInstall{ID: "signed"})
	wantCode(t, err, fault.SourceUntrusted, "not signed")
	// A signature by a trusted key that does not hold is refused, local
	// or not.
	_, other, _ := pack.GenerateKey()
	forged := testPlugin(t, "signed", "1.0.0", testPackage(t, "z", "1.0.0", "", testModule))
	forged.Sign(other)
	forged.Signature.Key = pack.FormatPublicKey(pub)
	_, err = pl.Preview(ctx, bytes.NewReader(pluginBytes(t, forged)))
	wantCode(t, err, fault.SourceIntegrity)
	signed.Sign(key)
	out, err := pl.Install(ctx, bytes.NewReader(pluginBytes(t, signed)), PluginInstallOptions{})
	if err != nil || out.Plugin.SignedBy != pack.FormatPublicKey(pub) {
		t.Fatalf("signed: %+v %v", out, err)
	}
}

// TestAPluginUpdateDropsModulesUnlessEnabled: an update keeps its
// modules' state and consent; a module it no longer carries is removed,
// unless enabled.
func TestAPluginUpdateDropsModulesUnlessEnabled(t *testing.T) {
	ctx := context.Background()
	pl := newPlugins(t)
	pk := pl.Packages
	a := testPackage(t, "a", "1.0.0", readPerms, testModule)
	d := pack.ConsentDigest("a", a.Manifest.Permissions)
	v1 := testPlugin(t, "suite", "1.0.0", a, testPackage(t, "b", "1.0.0", "", testModule))
	if _, err := pl.Install(ctx, bytes.NewReader(pluginBytes(t, v1)), PluginInstallOptions{Consents: map[string]string{"a": d}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pk.SetEnabled(ctx, "a", true); err != nil {
		t.Fatal(err)
	}
	if _, err := pk.SetEnabled(ctx, "b", true); err != nil {
		t.Fatal(err)
	}
	v2 := testPlugin(t, "suite", "2.0.0", testPackage(t, "a", "2.0.0", readPerms, testModule))
	pv, err := pl.Preview(ctx, bytes.NewReader(pluginBytes(t, v2)))
	if err != nil || len(pv.Consents) != 0 || pv.Replaces != "1.0.0" || len(pv.Adopt) != 0 {
		t.Fatalf("update preview: %+v %v", pv, err)
	}
	// Trial 30: the preview says the install would be refused, and why.
	if pv.Blocked == nil || pv.Blocked.Code != string(fault.PluginInUse) || !strings.Contains(pv.Blocked.Message, "b source") {
		t.Fatalf("the preview of an update dropping an enabled module does not say it is blocked: %+v", pv.Blocked)
	}
	_, err = pl.Install(ctx, bytes.NewReader(pluginBytes(t, v2)), PluginInstallOptions{})
	wantCode(t, err, fault.PluginInUse, "b")
	if _, err := pk.SetEnabled(ctx, "b", false); err != nil {
		t.Fatal(err)
	}
	if pv, err := pl.Preview(ctx, bytes.NewReader(pluginBytes(t, v2))); err != nil || pv.Blocked != nil {
		t.Fatalf("the preview once b is disabled: %+v %v", pv, err)
	}
	out, err := pl.Install(ctx, bytes.NewReader(pluginBytes(t, v2)), PluginInstallOptions{})
	if err != nil || out.Replaced != "1.0.0" || len(out.Plugin.Modules) != 1 || out.Plugin.Modules[0].State != sources.StateEnabled || out.Plugin.Modules[0].Version != "2.0.0" {
		t.Fatalf("update: %+v %v", out, err)
	}
	if _, err := pk.Show(ctx, "b"); !fault.Is(err, fault.SourceNotFound) {
		t.Fatalf("the dropped module stayed: %v", err)
	}
}

// fakeRegistry serves one plugin release from memory, as the registry
// client would after checking the index.
type fakeRegistry struct {
	archive []byte
	id, ver string
}

func (f *fakeRegistry) rel() registry.Release {
	return registry.Release{Registry: "test", Name: f.id, IndexRelease: pack.IndexRelease{Version: f.ver, SHA256: pack.Digest(f.archive)}}
}
func (f *fakeRegistry) Search(context.Context, registry.Kind, string, string) ([]registry.Release, []api.RegistryWarning, error) {
	return []registry.Release{f.rel()}, nil, nil
}
func (f *fakeRegistry) Find(_ context.Context, kind registry.Kind, name, _, _ string) (registry.Release, error) {
	if kind != registry.Plugins || name != f.id {
		return registry.Release{}, fault.New(fault.SourceNotInRegistry, "no", "no")
	}
	return f.rel(), nil
}
func (f *fakeRegistry) Fetch(_ context.Context, r registry.Release) (registry.Fetched, error) {
	return registry.Fetched{Release: r, Archive: f.archive}, nil
}

// TestPluginRegistryShowAndInstall (over a fake registry client): show
// answers the preview and installs nothing; install with a changed
// archive digest is refused; an archive that is not the plugin the
// index named is refused; install records origin registry.
func TestPluginRegistryShowAndInstall(t *testing.T) {
	ctx := context.Background()
	pl := newPlugins(t)
	_, err := pl.Search(ctx, "", "")
	wantCode(t, err, fault.SourceRegistryUnavailable, "mining.registries")
	raw := pluginBytes(t, testPlugin(t, "suite", "1.0.0", testPackage(t, "a", "1.0.0", "", testModule)))
	fr := &fakeRegistry{archive: raw, id: "suite", ver: "1.0.0"}
	pl.Registry = fr
	s, err := pl.Search(ctx, "", "")
	if err != nil || len(s.Entries) != 1 || s.Entries[0].Name != "suite" || s.Entries[0].Installed != "" {
		t.Fatalf("search: %+v %v", s, err)
	}
	pv, err := pl.ShowRegistry(ctx, "suite", "", "")
	if err != nil || pv.ArchiveDigest != pack.Digest(raw) || pv.Plugin.Origin != sources.OriginRegistry || pv.Plugin.Registry != "test" {
		t.Fatalf("show: %+v %v", pv, err)
	}
	if l, _ := pl.List(ctx); len(l) != 0 {
		t.Fatal("show installed something")
	}
	_, err = pl.InstallRegistry(ctx, api.PluginRegistryInstall{ID: "suite", ArchiveDigest: strings.Repeat("0", 64)})
	wantCode(t, err, fault.SourceIntegrity, "changed since it was shown")
	out, err := pl.InstallRegistry(ctx, api.PluginRegistryInstall{ID: "suite", ArchiveDigest: pv.ArchiveDigest})
	if err != nil || out.Plugin.Origin != sources.OriginRegistry || out.Plugin.Registry != "test" {
		t.Fatalf("install: %+v %v", out, err)
	}
	fr.ver = "1.0.1"
	_, err = pl.ShowRegistry(ctx, "suite", "", "")
	wantCode(t, err, fault.SourceIntegrity, "suite 1.0.1", "suite 1.0.0")
}

// TestRemovingAPluginAnInterruptedInstallLeft: an install killed after
// its modules were recorded and before the plugin's own record leaves
// sources held by a plugin nobody can list; removing the plugin by its
// id removes them (they could not be removed on their own), and an id
// holding nothing is still not found.
func TestRemovingAPluginAnInterruptedInstallLeft(t *testing.T) {
	ctx := context.Background()
	pl := newPlugins(t)
	pk := pl.Packages
	alpha := testPackage(t, "alpha", "1.0.0", "", testModule)
	if _, err := pk.InstallPackage(ctx, alpha, InstallOptions{Origin: sources.OriginPlugin, Plugin: "suite"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, pk.Remove(ctx, "alpha"), fault.SourcePluginProvided, "suite")
	_, err := pl.Show(ctx, "suite")
	wantCode(t, err, fault.PluginNotFound, "suite")
	if out, err := pl.Remove(ctx, "suite"); err != nil || out.Removed != "suite" {
		t.Fatalf("remove: %+v %v", out, err)
	}
	if _, err := pk.Show(ctx, "alpha"); !fault.Is(err, fault.SourceNotFound) {
		t.Fatalf("alpha after removal: %v", err)
	}
	_, err = pl.Remove(ctx, "suite")
	wantCode(t, err, fault.PluginNotFound, "suite")
}

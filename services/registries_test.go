package services

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/sources/registry"
)

// TestConfigAndTheRegistryClientAgree: loci doctor (config.Validate) and
// loci serve (registry.ParseSpecs and registry.New) take and refuse the
// same mining.registries entries (trial 30: doctor said "configuration
// valid" for entries serve refused).
func TestConfigAndTheRegistryClientAgree(t *testing.T) {
	entries := []string{"https://reg.example.com/loci", "mine=http://127.0.0.1:8080/index.json", "http://[::1]/r/", "http://localhost:9/",
		"file:///srv/loci-registry", "/srv/other/index.json", "file://localhost/srv/x", "two=https://user:pw@reg.example.com/two",
		"http://10.1.2.3/reg", "relative/reg", "ftp://x/y", "", "  ", "file://host/srv/x", "file:rel", "bundled=/srv/x", "Bad=/srv/x",
		"https:///nohost", "http://user:pw@reg.example.com/", "http://127.0.0.1.nip.io/", "x=", "=/srv/x", "a.b-c_d=/srv/y"}
	for _, e := range entries {
		c := config.Default(func(string) (string, bool) { return "", false })
		c.Palace.Path = "/tmp/palace"
		c.Mining.Registries = []string{e}
		cfgErr := c.Validate()
		specs, err := registry.ParseSpecs([]string{e})
		if err == nil {
			_, err = registry.New(registry.Options{Registries: specs})
		}
		if (cfgErr == nil) != (err == nil) {
			t.Errorf("%q: the configuration says %v, the registry client %v", e, cfgErr, err)
		}
	}
	c := config.Default(func(string) (string, bool) { return "", false })
	c.Palace.Path = "/tmp/palace"
	c.Mining.Registries = []string{"a=/srv/x", "a=/srv/y"}
	specs, err := registry.ParseSpecs(c.Mining.Registries)
	if c.Validate() == nil || err == nil || specs != nil {
		t.Fatal("a name given twice passes")
	}
}

// regFolder writes archives of pkgs and their index into dir (created),
// each package's versions listed in yanked marked yanked.
func regFolder(t *testing.T, dir string, yanked []string, pkgs ...*pack.Package) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var as []pack.IndexArchive
	for _, p := range pkgs {
		b := archive(t, p)
		f := p.Manifest.Name + "-" + p.Manifest.Version + ".tar.gz"
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
		as = append(as, pack.IndexArchive{File: f, Bytes: b})
	}
	ix, err := pack.BuildIndex(as, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ix.Sources {
		for j, r := range ix.Sources[i].Versions {
			if slices.Contains(yanked, ix.Sources[i].Name+"@"+r.Version) {
				ix.Sources[i].Versions[j].Yanked = true
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, pack.IndexFile), ix.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newRegistriesOver is the registries service over pk and the folder
// registries entries (mining.registries' form).
func newRegistriesOver(t *testing.T, pk *Packages, entries ...string) *Registries {
	t.Helper()
	specs, err := registry.ParseSpecs(entries)
	if err != nil {
		t.Fatal(err)
	}
	c, err := registry.New(registry.Options{Registries: specs, LociVersion: pk.Version})
	if err != nil {
		t.Fatal(err)
	}
	return &Registries{Packages: pk, Client: c}
}

// Trial 30: after a downgrade to a narrower version, updates say the
// newer, wider version needs consent, and update does not take it
// without.
func TestAfterADowngradeUpdatesNeedConsentForWhatTheNewerAsks(t *testing.T) {
	ctx := context.Background()
	pk, _ := newPackages(t)
	net := readPerms + "network = true\n"
	v2, v3, v4 := testPackage(t, "notes", "0.2.0", readPerms, []byte("\x00asm\x01\x00\x00\x002")),
		testPackage(t, "notes", "0.3.0", net, []byte("\x00asm\x01\x00\x00\x003")),
		testPackage(t, "notes", "0.4.0", net, []byte("\x00asm\x01\x00\x00\x004"))
	dir := regFolder(t, filepath.Join(t.TempDir(), "tc"), nil, v2, v3, v4)
	s := newRegistriesOver(t, pk, "tc="+dir)
	if _, err := s.Install(ctx, api.RegistryInstall{Name: "notes", Version: "0.3.0", Consent: pack.ConsentDigest("notes", v3.Manifest.Permissions)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, api.RegistryInstall{Name: "notes", Version: "0.2.0", Consent: pack.ConsentDigest("notes", v2.Manifest.Permissions)}); err != nil {
		t.Fatal(err)
	}
	u, err := s.Updates(ctx)
	if err != nil || len(u.Updates) != 1 || u.Updates[0].To != "0.4.0" || !u.Updates[0].NeedsConsent {
		t.Fatalf("updates after the downgrade: %+v %v", u, err)
	}
	res, err := s.Update(ctx, api.RegistryUpdate{Name: "notes"})
	if err != nil || len(res) != 1 || res[0].Status != api.UpdateNeedsConsent {
		t.Fatalf("update after the downgrade: %+v %v", res, err)
	}
	if v, _ := pk.Show(ctx, "notes"); v.Version != "0.2.0" || v.Permissions.Network {
		t.Fatalf("the update went through without consent: %+v", v)
	}
}

// Trial 30: a registry is identified by its location: swapping two
// registries whose names come from their folders (common, common-2)
// does not redirect updates; a registry no longer configured is a
// warning (updates) and failed (update) saying so; show and updates
// answer the location.
func TestUpdatesComeFromTheRegistryAtTheLocationInstalledFrom(t *testing.T) {
	ctx := context.Background()
	pk, _ := newPackages(t)
	root := t.TempDir()
	a := regFolder(t, filepath.Join(root, "a", "common"), nil,
		testPackage(t, "notes", "1.0.0", "", []byte("\x00asm\x01\x00\x00\x00a1")), testPackage(t, "notes", "1.1.0", "", []byte("\x00asm\x01\x00\x00\x00a2")))
	b := regFolder(t, filepath.Join(root, "b", "common"), nil, testPackage(t, "notes", "9.0.0", "", []byte("\x00asm\x01\x00\x00\x00b9")))
	s := newRegistriesOver(t, pk, a, b)
	sh, err := s.Show(ctx, "notes", "1.0.0", "common")
	if err != nil || sh.RegistryLocation != filepath.Join(a, pack.IndexFile) {
		t.Fatalf("show: %+v %v", sh, err)
	}
	if _, err := s.Install(ctx, api.RegistryInstall{Name: "notes", Version: "1.0.0", Registry: "common"}); err != nil {
		t.Fatal(err)
	}
	swapped := newRegistriesOver(t, pk, b, a)
	u, err := swapped.Updates(ctx)
	if err != nil || len(u.Updates) != 1 || u.Updates[0].To != "1.1.0" || u.Updates[0].Registry != "common-2" || u.Updates[0].RegistryLocation != filepath.Join(a, pack.IndexFile) {
		t.Fatalf("updates after swapping the registries: %+v %v", u, err)
	}
	res, err := swapped.Update(ctx, api.RegistryUpdate{})
	if err != nil || len(res) != 1 || res[0].Status != api.UpdateUpdated || res[0].To != "1.1.0" {
		t.Fatalf("update after swapping: %+v %v", res, err)
	}
	gone := newRegistriesOver(t, pk, b)
	u, err = gone.Updates(ctx)
	if err != nil || len(u.Updates) != 0 || len(u.Warnings) != 1 || !strings.Contains(u.Warnings[0].Message, "no longer configured") {
		t.Fatalf("updates once its registry is gone: %+v %v", u, err)
	}
	// Re-trial 30: the CLI prints "the NAME registry: MESSAGE": the
	// message does not name the registry again.
	if w := u.Warnings[0]; strings.Contains(w.Message, "named "+w.Registry) || strings.Contains(w.Message, "the registry") {
		t.Fatalf("the warning repeats its registry: %+v", w)
	}
	res, err = gone.Update(ctx, api.RegistryUpdate{Name: "notes"})
	if err != nil || len(res) != 1 || res[0].Status != api.UpdateFailed || !strings.Contains(res[0].Message, "no longer configured") {
		t.Fatalf("update once its registry is gone: %+v %v", res, err)
	}
}

// Trial 30: a pinned yanked version installs with a warning; show
// answers yanked; updates mark the installed version yanked.
func TestAPinnedYankedVersionIsMarked(t *testing.T) {
	ctx := context.Background()
	pk, _ := newPackages(t)
	dir := regFolder(t, filepath.Join(t.TempDir(), "tc"), []string{"notes@1.0.0"},
		testPackage(t, "notes", "1.0.0", "", []byte("\x00asm\x01\x00\x00\x001")), testPackage(t, "notes", "1.1.0", "", []byte("\x00asm\x01\x00\x00\x002")))
	s := newRegistriesOver(t, pk, "tc="+dir)
	sh, err := s.Show(ctx, "notes", "1.0.0", "")
	if err != nil || !sh.Yanked {
		t.Fatalf("show of a yanked version: %+v %v", sh, err)
	}
	out, err := s.Install(ctx, api.RegistryInstall{Name: "notes", Version: "1.0.0"})
	if err != nil || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "yanked") {
		t.Fatalf("install of a pinned yanked version: %+v %v", out, err)
	}
	u, err := s.Updates(ctx)
	if err != nil || len(u.Updates) != 1 || !u.Updates[0].FromYanked {
		t.Fatalf("updates from a yanked version: %+v %v", u, err)
	}
}

// Trial 30: the consent refusal of an install by name says to install it
// by name (not FILE); updating a plugin's source on its own says to
// update the plugin.
func TestRegistryMessagesFitWhatWasAsked(t *testing.T) {
	ctx := context.Background()
	pk, _ := newPackages(t)
	v1 := testPackage(t, "notes", "1.0.0", readPerms, testModule)
	dir := regFolder(t, filepath.Join(t.TempDir(), "tc"), nil, v1)
	s := newRegistriesOver(t, pk, "tc="+dir)
	_, err := s.Install(ctx, api.RegistryInstall{Name: "notes"})
	wantCode(t, err, fault.SourceConsentRequired, "loci source install notes@1.0.0", `"consent"`)
	if strings.Contains(fault.As(err).Help, "FILE") {
		t.Fatalf("the help of an install by name speaks of a FILE: %s", fault.As(err).Help)
	}
	pl := &Plugins{Packages: pk}
	if _, err := pl.Install(ctx, bytes.NewReader(pluginBytes(t, testPlugin(t, "suite", "1.0.0", testPackage(t, "beta", "1.0.0", "", testModule)))), PluginInstallOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Update(ctx, api.RegistryUpdate{Name: "beta"})
	wantCode(t, err, fault.InputInvalid, "provided by the plugin suite", "loci plugin install suite")
	if strings.Contains(fault.As(err).Help, "loci source install") {
		t.Fatalf("the help says to install the plugin's source on its own: %s", fault.As(err).Help)
	}
	// A local install still says FILE.
	_, err = pk.Install(ctx, bytes.NewReader(archive(t, v1)), InstallOptions{})
	wantCode(t, err, fault.SourceConsentRequired, "loci source install FILE")
}

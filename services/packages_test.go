package services

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/store"
)

// testModule is the smallest WebAssembly module: the header.
var testModule = []byte("\x00asm\x01\x00\x00\x00")

func testPackage(t *testing.T, name, version, perms string, module []byte) *pack.Package {
	t.Helper()
	mb := []byte("contract = 1\nname = \"" + name + "\"\nversion = \"" + version + "\"\nmodule = \"" + name + ".wasm\"\n" +
		"[source]\noptions = [\"since\"]\nincremental = true\n[permissions]\n" + perms)
	m, err := pack.ParseManifest(mb)
	if err != nil {
		t.Fatal(err)
	}
	return &pack.Package{Manifest: m, ManifestBytes: mb, Module: module}
}

func archive(t *testing.T, p *pack.Package) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fakeAdapter stands for installed.New's adapter: the manifest's info.
type fakeAdapter struct{ unloaded }

func newPackages(t *testing.T, bundled ...*pack.Package) (*Packages, store.DB) {
	t.Helper()
	_, db := newSystem(t)
	p := &Packages{DB: db, Registry: sources.NewRegistry(sources.Directory{}), Dir: filepath.Join(t.TempDir(), "sources"), Version: "0.1.0-dev",
		Bundled: func() ([]*pack.Package, error) { return bundled, nil },
		NewAdapter: func(p *pack.Package) (sources.Adapter, error) {
			return fakeAdapter{unloaded{info: manifestInfo(p.Manifest)}}, nil
		}}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p, db
}

func wantCode(t *testing.T, err error, code fault.Code, mentions ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %s", code)
	}
	fe := fault.As(err)
	if fe.Code != code {
		t.Fatalf("error %v; want %s", err, code)
	}
	for _, m := range mentions {
		if !strings.Contains(fe.Msg+" "+fe.Help, m) {
			t.Fatalf("error %q (help %q) does not mention %q", fe.Msg, fe.Help, m)
		}
	}
}

const readPerms = "read = [\"locator\"]\nenv = [\"NOTES_TOKEN\"]\n"

func TestInstallNeedsTheConsentDigestOfThisPackage(t *testing.T) {
	ctx := context.Background()
	p, db := newPackages(t)
	pkg := testPackage(t, "notes", "1.0.0", readPerms, testModule)
	digest := pack.ConsentDigest("notes", pkg.Manifest.Permissions)

	_, err := p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{})
	wantCode(t, err, fault.SourceConsentRequired, digest, "read the environment variable NOTES_TOKEN", "--consent "+digest)
	other := pack.ConsentDigest("other", pkg.Manifest.Permissions)
	_, err = p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{Consent: other})
	wantCode(t, err, fault.SourceConsentRequired, digest, other)
	if v, ok, _ := db.GetMeta(ctx, packagesKey); ok || v != "" {
		t.Fatalf("a refused install left a record: %s", v)
	}
	if ents, _ := os.ReadDir(p.Dir); len(ents) != 0 {
		t.Fatalf("a refused install left files: %v", ents)
	}
	if _, ok := p.Registry.Entry("notes"); ok {
		t.Fatal("a refused install reached the registry")
	}

	out, err := p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{Consent: digest})
	if err != nil {
		t.Fatal(err)
	}
	if out.Replaced != "" || out.Source.State != sources.StateInstalled || out.Source.Origin != sources.OriginLocal ||
		out.Source.ConsentDigest != digest || out.Source.ModuleSHA256 != pkg.ModuleDigest() || out.Source.Version != "1.0.0" {
		t.Fatalf("install: %+v", out)
	}
	got, err := pack.ReadDir(filepath.Join(p.Dir, "notes"))
	if err != nil || !bytes.Equal(got.Module, testModule) || !bytes.Equal(got.ManifestBytes, pkg.ManifestBytes) {
		t.Fatalf("the files as written: %v", err)
	}
	if _, err := p.Registry.Adapter("notes"); fault.As(err).Code != fault.SourceNotEnabled {
		t.Fatalf("an installed, not enabled source runs: %v", err)
	}
	if v, err := p.SetEnabled(ctx, "notes", true); err != nil || v.State != sources.StateEnabled {
		t.Fatalf("enable: %+v %v", v, err)
	}
	if _, err := p.Registry.Adapter("notes"); err != nil {
		t.Fatalf("an enabled source does not run: %v", err)
	}
}

func TestAPackageAskingForNothingNeedsNoConsent(t *testing.T) {
	p, _ := newPackages(t)
	pkg := testPackage(t, "quiet", "1.0.0", "memory_mib = 32\n", testModule)
	// A digest given that is not this package's is refused all the same.
	_, err := p.Install(context.Background(), bytes.NewReader(archive(t, pkg)), InstallOptions{Consent: pack.ConsentDigest("other", pkg.Manifest.Permissions)})
	wantCode(t, err, fault.SourceConsentRequired)
	out, err := p.Install(context.Background(), bytes.NewReader(archive(t, pkg)), InstallOptions{Enable: true})
	if err != nil || out.Source.State != sources.StateEnabled {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestAnUpdateNeedsNewConsentOnlyWhenItAsksForMore(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	v1 := testPackage(t, "notes", "1.0.0", readPerms, testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, v1)), InstallOptions{Consent: pack.ConsentDigest("notes", v1.Manifest.Permissions), Enable: true}); err != nil {
		t.Fatal(err)
	}
	less := testPackage(t, "notes", "1.1.0", "read = [\"locator\"]\n", append(append([]byte{}, testModule...), 1))
	out, err := p.Install(ctx, bytes.NewReader(archive(t, less)), InstallOptions{})
	if err != nil || out.Replaced != "1.0.0" || out.Source.Version != "1.1.0" || out.Source.State != sources.StateEnabled {
		t.Fatalf("an update asking for less: %+v %v", out, err)
	}
	more := testPackage(t, "notes", "2.0.0", readPerms+"network = true\n", testModule)
	_, err = p.Install(ctx, bytes.NewReader(archive(t, more)), InstallOptions{})
	wantCode(t, err, fault.SourceConsentRequired, "use the network", "asks for more than was consented to for 1.1.0")
	if v, _ := p.Show(ctx, "notes"); v.Version != "1.1.0" {
		t.Fatalf("a refused update changed the package: %+v", v)
	}
	out, err = p.Install(ctx, bytes.NewReader(archive(t, more)), InstallOptions{Consent: pack.ConsentDigest("notes", more.Manifest.Permissions)})
	if err != nil || out.Replaced != "1.1.0" {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestATamperedModuleIsUnavailableAtTheNextRead(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	pkg := testPackage(t, "notes", "1.0.0", "", testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{Enable: true}); err != nil {
		t.Fatal(err)
	}
	bad := append(append([]byte{}, testModule...), 0, 1, 2)
	if err := os.WriteFile(filepath.Join(p.Dir, "notes", "notes.wasm"), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := p.Show(ctx, "notes")
	if err != nil || v.State != sources.StateUnavailable || !strings.Contains(v.Reason, "the module changed on disk since it was installed (sha256 "+pack.Digest(bad)) {
		t.Fatalf("%+v %v", v, err)
	}
	_, err = p.Registry.Adapter("notes")
	wantCode(t, err, fault.SourceUnavailable, "changed on disk")
	// Put back, it loads again; a missing module is unavailable too.
	_ = os.WriteFile(filepath.Join(p.Dir, "notes", "notes.wasm"), testModule, 0o600)
	if v, _ := p.Show(ctx, "notes"); v.State != sources.StateEnabled {
		t.Fatalf("%+v", v)
	}
	_ = os.Remove(filepath.Join(p.Dir, "notes", "notes.wasm"))
	if v, _ := p.Show(ctx, "notes"); v.State != sources.StateUnavailable || !strings.Contains(v.Reason, "cannot be read") {
		t.Fatalf("%+v", v)
	}
}

func TestAnEditedManifestIsUnavailable(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	pkg := testPackage(t, "notes", "1.0.0", "", testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{Enable: true}); err != nil {
		t.Fatal(err)
	}
	edited := append(append([]byte{}, pkg.ManifestBytes...), []byte("network = true\n")...)
	_ = os.WriteFile(filepath.Join(p.Dir, "notes", pack.ManifestFile), edited, 0o600)
	if v, _ := p.Show(ctx, "notes"); v.State != sources.StateUnavailable || !strings.Contains(v.Reason, "manifest changed on disk") {
		t.Fatalf("%+v", v)
	}
}

func TestIncompatiblePackages(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	pkg := testPackage(t, "notes", "1.0.0", "", testModule)
	pkg.Manifest.Loci = ">= 9.0.0"
	pkg.ManifestBytes = append([]byte("loci = \">= 9.0.0\"\n"), pkg.ManifestBytes...)
	_, err := p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{})
	wantCode(t, err, fault.SourceIncompatible, "needs loci >= 9.0.0")
	if _, ok := p.Registry.Entry("notes"); ok {
		t.Fatal("an incompatible package was installed")
	}
	// Installed on a loci it ran on, it is incompatible after a change of
	// loci, with the reason, never loaded.
	p.Version = "9.1.0"
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{Enable: true}); err != nil {
		t.Fatal(err)
	}
	p.Version = "8.0.0"
	v, _ := p.Show(ctx, "notes")
	if v.State != sources.StateIncompatible || !strings.Contains(v.Reason, "needs loci >= 9.0.0") {
		t.Fatalf("%+v", v)
	}
	_, err = p.Registry.Adapter("notes")
	wantCode(t, err, fault.SourceIncompatible)
}

func TestBuiltInAndBundledSources(t *testing.T) {
	ctx := context.Background()
	bundled := testPackage(t, "git-history", "1.0.0", "programs = [\"git\"]\nread = [\"locator\"]\n", testModule)
	p, db := newPackages(t, bundled)
	v, err := p.Show(ctx, "git-history")
	if err != nil || v.Origin != sources.OriginBundled || v.State != sources.StateEnabled || len(v.PermissionWords) == 0 {
		t.Fatalf("bundled at start: %+v %v", v, err)
	}
	raw, _, _ := db.GetMeta(ctx, packagesKey)
	var recs map[string]PackageRecord
	_ = json.Unmarshal([]byte(raw), &recs)
	if recs["git-history"].Consent != BundledConsent {
		t.Fatalf("the bundled record: %s", raw)
	}
	wantCode(t, p.Remove(ctx, "git-history"), fault.SourceBundled)
	_, err = p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "git-history", "2.0.0", "", testModule))), InstallOptions{})
	wantCode(t, err, fault.SourceBundled)
	if v, err := p.SetEnabled(ctx, "git-history", false); err != nil || v.State != sources.StateDisabled {
		t.Fatalf("disable bundled: %+v %v", v, err)
	}
	// A restart keeps it disabled.
	p2 := &Packages{DB: db, Registry: sources.NewRegistry(sources.Directory{}), Dir: p.Dir, Version: p.Version, Bundled: p.Bundled, NewAdapter: p.NewAdapter}
	if err := p2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if e, _ := p2.Registry.Entry("git-history"); e.State != sources.StateDisabled {
		t.Fatalf("after a restart: %+v", e)
	}

	wantCode(t, p.Remove(ctx, "directory"), fault.SourceBuiltin)
	_, err = p.SetEnabled(ctx, "directory", false)
	wantCode(t, err, fault.SourceBuiltin)
	if v, err := p.SetEnabled(ctx, "directory", true); err != nil || v.Origin != sources.OriginBuiltIn {
		t.Fatalf("enable a built-in: %+v %v", v, err)
	}
	_, err = p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "directory", "1.0.0", "", testModule))), InstallOptions{})
	wantCode(t, err, fault.SourceBuiltin)
	if v, err := p.Show(ctx, "directory"); err != nil || v.Origin != sources.OriginBuiltIn || v.Permissions != nil {
		t.Fatalf("show a built-in: %+v %v", v, err)
	}
	_, err = p.Show(ctx, "nothing")
	wantCode(t, err, fault.SourceNotFound)
}

func TestEnableDisableRemove(t *testing.T) {
	ctx := context.Background()
	p, db := newPackages(t)
	pkg := testPackage(t, "notes", "1.0.0", "", testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, enable := range []bool{true, true, false, false, true} {
		v, err := p.SetEnabled(ctx, "notes", enable)
		want := sources.StateDisabled
		if enable {
			want = sources.StateEnabled
		}
		if err != nil || v.State != want {
			t.Fatalf("enable %v: %+v %v", enable, v, err)
		}
	}
	if err := p.Remove(ctx, "notes"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "notes")); !os.IsNotExist(err) {
		t.Fatalf("the files stay: %v", err)
	}
	if v, ok, _ := db.GetMeta(ctx, packagesKey); ok {
		t.Fatalf("the record stays: %s", v)
	}
	if _, ok := p.Registry.Entry("notes"); ok {
		t.Fatal("the adapter stays")
	}
	wantCode(t, p.Remove(ctx, "notes"), fault.SourceNotFound)
	_, err := p.SetEnabled(ctx, "notes", true)
	wantCode(t, err, fault.SourceNotFound)
}

func TestStartSweepsWhatAnInterruptedInstallLeft(t *testing.T) {
	ctx := context.Background()
	p, db := newPackages(t)
	pkg := testPackage(t, "notes", "1.0.0", "", testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, pkg)), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".tmp-notes-123", ".old-notes-1", "orphan"} {
		_ = os.MkdirAll(filepath.Join(p.Dir, d), 0o700)
	}
	p2 := &Packages{DB: db, Registry: sources.NewRegistry(), Dir: p.Dir, Version: p.Version, NewAdapter: p.NewAdapter}
	if err := p2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(p.Dir)
	if len(ents) != 1 || ents[0].Name() != "notes" {
		t.Fatalf("left: %v", ents)
	}
	if e, ok := p2.Registry.Entry("notes"); !ok || e.State != sources.StateInstalled {
		t.Fatalf("%+v", e)
	}
}

func TestAnArchiveOverTheLimitIsRefused(t *testing.T) {
	p, _ := newPackages(t)
	_, err := p.Install(context.Background(), bytes.NewReader(make([]byte, pack.MaxArchiveBytes+1)), InstallOptions{})
	wantCode(t, err, fault.InputTooLarge)
	_, err = p.Install(context.Background(), strings.NewReader("not a package"), InstallOptions{})
	wantCode(t, err, fault.InputInvalid)
}

// failingMeta refuses writes while fail is set (a full disk).
type failingMeta struct {
	store.Meta
	fail bool
}

func (f *failingMeta) CompareAndSwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	if f.fail {
		return false, fault.New(fault.StoreDiskFull, "the disk is full", "free space")
	}
	return f.Meta.CompareAndSwapMeta(ctx, key, old, value)
}

func TestAnUpdateThatCannotBeRecordedLeavesThePackageBefore(t *testing.T) {
	ctx := context.Background()
	p, db := newPackages(t)
	meta := &failingMeta{Meta: db}
	p.DB = meta
	v1 := testPackage(t, "notes", "1.0.0", "", testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, v1)), InstallOptions{Enable: true}); err != nil {
		t.Fatal(err)
	}
	meta.fail = true
	v2 := testPackage(t, "notes", "2.0.0", "", append(append([]byte{}, testModule...), 9))
	_, err := p.Install(ctx, bytes.NewReader(archive(t, v2)), InstallOptions{})
	wantCode(t, err, fault.StoreDiskFull)
	meta.fail = false
	v, err := p.Show(ctx, "notes")
	if err != nil || v.Version != "1.0.0" || v.State != sources.StateEnabled {
		t.Fatalf("the package after a failed update: %+v %v", v, err)
	}
	if ents, _ := os.ReadDir(p.Dir); len(ents) != 1 {
		t.Fatalf("left: %v", ents)
	}
	// A new package that cannot be recorded leaves no files.
	meta.fail = true
	_, err = p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "other", "1.0.0", "", testModule))), InstallOptions{})
	wantCode(t, err, fault.StoreDiskFull)
	if _, err := os.Stat(filepath.Join(p.Dir, "other")); !os.IsNotExist(err) {
		t.Fatalf("an unrecorded package left files: %v", err)
	}
}

// swapAside is the swap where the folders cannot be exchanged.
func TestSwapAside(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, content string) string {
		d := filepath.Join(dir, name)
		_ = os.MkdirAll(d, 0o700)
		_ = os.WriteFile(filepath.Join(d, "f"), []byte(content), 0o600)
		return d
	}
	dst := filepath.Join(dir, "pkg")
	old, err := swapAside(mk(".tmp-1", "one"), dst)
	if err != nil || old != "" {
		t.Fatalf("%q %v", old, err)
	}
	old, err = swapAside(mk(".tmp-2", "two"), dst)
	if err != nil || old == "" {
		t.Fatalf("%q %v", old, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "two" {
		t.Fatalf("in place: %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(old, "f")); string(b) != "one" {
		t.Fatalf("aside: %s", b)
	}
}

// A package installed under a name a later loci bundles gives way to the
// bundled one, its files swept.
func TestABundledPackageTakesTheNameOfAnInstalledOne(t *testing.T) {
	ctx := context.Background()
	p, db := newPackages(t)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "git-history", "0.1.0", "", testModule))), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	bundled := testPackage(t, "git-history", "1.0.0", "programs = [\"git\"]\n", append(append([]byte{}, testModule...), 7))
	p2 := &Packages{DB: db, Registry: sources.NewRegistry(), Dir: p.Dir, Version: p.Version, NewAdapter: p.NewAdapter,
		Bundled: func() ([]*pack.Package, error) { return []*pack.Package{bundled}, nil }}
	if err := p2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := p2.Show(ctx, "git-history")
	if err != nil || v.Origin != sources.OriginBundled || v.Version != "1.0.0" || v.State != sources.StateInstalled {
		t.Fatalf("%+v %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "git-history")); !os.IsNotExist(err) {
		t.Fatalf("the installed package's files stay: %v", err)
	}
}

// Trial 30: the consent recorded follows what is installed. A narrower
// version (a downgrade, or an update asking for less) records its own
// permissions, so a later version asking for what the earlier, wider one
// had needs fresh consent.
func TestTheConsentRecordedFollowsWhatIsInstalled(t *testing.T) {
	ctx := context.Background()
	p, db := newPackages(t)
	wide := testPackage(t, "notes", "0.3.0", readPerms+"network = true\n", testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, wide)), InstallOptions{Consent: pack.ConsentDigest("notes", wide.Manifest.Permissions)}); err != nil {
		t.Fatal(err)
	}
	narrow := testPackage(t, "notes", "0.2.0", readPerms, append(append([]byte{}, testModule...), 2))
	for _, o := range []InstallOptions{{Consent: pack.ConsentDigest("notes", narrow.Manifest.Permissions)}, {}} {
		out, err := p.Install(ctx, bytes.NewReader(archive(t, narrow)), o)
		if err != nil || out.Source.Version != "0.2.0" || out.Source.Permissions.Network {
			t.Fatalf("the narrower version: %+v %v", out, err)
		}
		recs, err := p.records(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rec := recs["notes"]; rec.Consented.Network || rec.Consent != pack.ConsentDigest("notes", narrow.Manifest.Permissions) {
			t.Fatalf("the record keeps the wider consent after installing the narrower version: %+v", rec)
		}
	}
	_ = db
	again := testPackage(t, "notes", "0.4.0", readPerms+"network = true\n", append(append([]byte{}, testModule...), 4))
	_, err := p.Install(ctx, bytes.NewReader(archive(t, again)), InstallOptions{})
	wantCode(t, err, fault.SourceConsentRequired, "use the network", "asks for more than was consented to for 0.2.0")
}

// A record written before the consent followed the installed version
// (a downgrade that kept the wider consent) is read as what the version
// installed asks: a wider update still needs consent.
func TestAnOldRecordsWiderConsentIsNarrowedToWhatIsInstalled(t *testing.T) {
	ctx := context.Background()
	p, db := newPackages(t)
	narrow := testPackage(t, "notes", "0.2.0", readPerms, testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, narrow)), InstallOptions{Consent: pack.ConsentDigest("notes", narrow.Manifest.Permissions)}); err != nil {
		t.Fatal(err)
	}
	raw, _, err := db.GetMeta(ctx, packagesKey)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := decodeRecords(raw)
	recs["notes"].Consented.Network = true
	b, _ := json.Marshal(recs)
	if ok, err := db.CompareAndSwapMeta(ctx, packagesKey, raw, string(b)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	wide := testPackage(t, "notes", "0.4.0", readPerms+"network = true\n", append(append([]byte{}, testModule...), 4))
	_, err = p.Install(ctx, bytes.NewReader(archive(t, wide)), InstallOptions{})
	wantCode(t, err, fault.SourceConsentRequired, "it newly asks to: use the network")
}

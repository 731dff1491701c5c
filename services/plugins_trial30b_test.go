package services

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// Re-trial 30: a plugin installed by id from a registry is helped as it
// was asked (the CLI's id form, the REST body's fields, no HTTP header
// names); one installed from a file keeps the FILE form and the headers.
// A consent or adoption naming a source the plugin does not carry is
// refused (loci::input::invalid naming it) and nothing is installed.
func TestPluginHelpFitsHowItWasAsked(t *testing.T) {
	ctx := context.Background()
	pl := newPlugins(t)
	pk := pl.Packages
	jot := testPackage(t, "jot", "1.0.0", readPerms, testModule)
	jotter := testPackage(t, "jotter", "1.0.0", "", testModule)
	if _, err := pk.InstallPackage(ctx, testPackage(t, "jotter", "0.9.0", "", testModule), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	raw := pluginBytes(t, testPlugin(t, "duo", "1.0.0", jot, jotter))
	pl.Registry = &fakeRegistry{archive: raw, id: "duo", ver: "1.0.0"}
	digest := pack.ConsentDigest("jot", jot.Manifest.Permissions)

	_, err := pl.InstallRegistry(ctx, api.PluginRegistryInstall{ID: "duo"})
	wantCode(t, err, fault.SourceConsentRequired, "loci plugin install duo@1.0.0 --consent jot="+digest, "loci plugin preview duo@1.0.0",
		`"consents"`, "POST /api/plugin-registry/install")
	if h := fault.As(err).Help; strings.Contains(h, "FILE") || strings.Contains(h, "X-Loci") {
		t.Fatalf("the by-id help speaks of a file or a header: %q", h)
	}
	_, err = pl.InstallRegistry(ctx, api.PluginRegistryInstall{ID: "duo", Consents: map[string]string{"jot": digest}})
	wantCode(t, err, fault.SourceAdoptionRequired, "loci plugin preview duo@1.0.0", "--adopt jotter", `"adopt_sources"`)
	if h := fault.As(err).Help; strings.Contains(h, "FILE") || strings.Contains(h, "X-Loci") {
		t.Fatalf("the by-id help speaks of a file or a header: %q", h)
	}

	_, err = pl.Install(ctx, bytes.NewReader(raw), PluginInstallOptions{})
	wantCode(t, err, fault.SourceConsentRequired, "loci plugin install FILE", "X-Loci-Consents")
	_, err = pl.Install(ctx, bytes.NewReader(raw), PluginInstallOptions{Consents: map[string]string{"jot": digest}})
	wantCode(t, err, fault.SourceAdoptionRequired, "loci plugin preview FILE", "X-Loci-Adopt-Sources")

	for _, o := range []PluginInstallOptions{
		{Consents: map[string]string{"jot": digest, "bogus": "abc"}, Adopt: []string{"jotter"}},
		{Consents: map[string]string{"jot": digest}, Adopt: []string{"jotter", "nosuch"}},
	} {
		_, err = pl.Install(ctx, bytes.NewReader(raw), o)
		bad := "bogus"
		if len(o.Adopt) > 1 {
			bad = "nosuch"
		}
		wantCode(t, err, fault.InputInvalid, bad, "jot")
		_, err = pl.InstallRegistry(ctx, api.PluginRegistryInstall{ID: "duo", Consents: o.Consents, AdoptSources: o.Adopt})
		wantCode(t, err, fault.InputInvalid, bad, "jot")
	}
	if l, _ := pl.List(ctx); len(l) != 0 {
		t.Fatalf("a refused install installed %+v", l)
	}
	if _, err := pl.InstallRegistry(ctx, api.PluginRegistryInstall{ID: "duo", Consents: map[string]string{"jot": digest}, AdoptSources: []string{"jotter"}}); err != nil {
		t.Fatal(err)
	}
}

// Re-trial 30: installing the version already installed is logged as a
// reinstall, not as replacing that version (the answer keeps replaced,
// as the spec shapes it).
func TestReinstallingTheSameVersionIsLoggedSo(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	pl := newPlugins(t)
	pl.Log = slog.New(slog.NewTextHandler(&buf, nil))
	pl.Packages.Log = pl.Log
	a := testPackage(t, "a", "1.0.0", "", testModule)
	raw := pluginBytes(t, testPlugin(t, "suite", "1.0.0", a))
	for i := 0; i < 2; i++ {
		if _, err := pl.Install(ctx, bytes.NewReader(raw), PluginInstallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := pl.Packages.InstallPackage(ctx, testPackage(t, "solo", "1.0.0", "", testModule), InstallOptions{})
	if err == nil {
		out, err = pl.Packages.InstallPackage(ctx, testPackage(t, "solo", "1.0.0", "", testModule), InstallOptions{})
	}
	if err != nil || out.Replaced != "1.0.0" {
		t.Fatalf("the second install's answer: %+v %v", out, err)
	}
	log := buf.String()
	if !strings.Contains(log, `msg="plugin reinstalled"`) || !strings.Contains(log, `msg="source package reinstalled"`) || strings.Contains(log, "replaced=1.0.0") {
		t.Fatalf("the log of a reinstall:\n%s", log)
	}
}

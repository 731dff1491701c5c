package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
)

// The re-trial of issue 30's CLI findings, against the fake daemon of
// trial30_test.go.

// loci source show of a source installed from a registry says the
// registry and the key that vouched (or that none did), and the plugin
// that provides it; --json had them, the text said only "registry".
func TestTrial30CShowSaysRegistrySignatureAndPlugin(t *testing.T) {
	for _, c := range []struct {
		pkg  api.SourcePackage
		want []string
	}{
		{api.SourcePackage{Name: "notes", Version: "1.0.0", Origin: "registry", State: "enabled", Registry: "team", SignedBy: "loci-ed25519 AAAA"},
			[]string{"registry: team", "signed by loci-ed25519 AAAA"}},
		{api.SourcePackage{Name: "notes", Version: "1.0.0", Origin: "registry", State: "enabled", Registry: "team"},
			[]string{"registry: team", "not vouched for by a trusted key"}},
		{api.SourcePackage{Name: "duo-a", Version: "1.0.0", Origin: "plugin", State: "installed", Plugin: "duo"},
			[]string{"plugin:   duo", "loci plugin show duo"}},
	} {
		f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
			"GET /api/source-packages/" + c.pkg.Name: func(*http.Request) (int, any) { return http.StatusOK, c.pkg },
		})
		out, errOut, err := f.run(false, sourceCmdOf, "show", c.pkg.Name)
		if err != nil {
			t.Fatalf("show %s: %v\n%s", c.pkg.Name, err, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Fatalf("show %s lacks %q:\n%s", c.pkg.Name, w, out)
			}
		}
	}
}

// loci source search's text has the signed column the README promises.
func TestTrial30CSearchSaysSigned(t *testing.T) {
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/source-registry/search": func(*http.Request) (int, any) {
			return http.StatusOK, api.RegistrySearch{Entries: []api.RegistryEntry{
				{Name: "notes", Version: "1.0.0", Registry: "team", Signed: true, Installed: "0.9.0"},
				{Name: "mail", Version: "2.0.0", Registry: "team"},
			}}
		},
	})
	out, errOut, err := f.run(false, sourceCmdOf, "search")
	if err != nil {
		t.Fatalf("search: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], " signed ") || strings.Contains(lines[0], "unsigned") ||
		!strings.Contains(lines[0], "(installed 0.9.0)") || !strings.HasSuffix(lines[1], " unsigned") {
		t.Fatalf("search lines:\n%s", out)
	}
	// loci plugin search lays its entries out the same way.
	f = newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/plugin-registry/search": func(*http.Request) (int, any) {
			return http.StatusOK, api.RegistrySearch{Entries: []api.RegistryEntry{{Name: "duo", Version: "1.0.0", Registry: "main", Signed: true}}}
		},
	})
	out, errOut, err = f.run(false, pluginCmdOf, "search")
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), " signed") || strings.Contains(out, "%!") {
		t.Fatalf("plugin search: %v\n%s\n%s", err, out, errOut)
	}
}

func updatesDaemon(t *testing.T, up api.RegistryUpdates, installed ...api.SourcePackage) *fakeDaemon {
	return newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/source-registry/updates": func(*http.Request) (int, any) { return http.StatusOK, up },
		"GET /api/source-packages": func(*http.Request) (int, any) {
			return http.StatusOK, api.SourcePackageList{Sources: installed}
		},
	})
}

// loci source updates does not call everything current when a registry
// could not be read, and fails when no registry a source came from
// could be read.
func TestTrial30CUpdatesWithUnreadRegistries(t *testing.T) {
	broken := api.RegistryWarning{Registry: "team", Code: string(fault.SourceRegistryUnavailable), Message: "cannot be read"}
	fromTeam := api.SourcePackage{Name: "notes", Origin: "registry", Registry: "team"}
	fromHome := api.SourcePackage{Name: "mail", Origin: "registry", Registry: "home"}
	for _, jsonOut := range []bool{false, true} {
		out, errOut, err := updatesDaemon(t, api.RegistryUpdates{Warnings: []api.RegistryWarning{broken}}, fromTeam).run(jsonOut, sourceCmdOf, "updates")
		if fault.As(err) == nil || fault.As(err).Code != fault.SourceRegistryUnavailable || strings.Contains(out, "current") {
			t.Fatalf("every registry unread (json %v): %v\n%s\n%s", jsonOut, err, out, errOut)
		}
	}
	// Another registry was read: exit 0, but no claim that all is current.
	out, errOut, err := updatesDaemon(t, api.RegistryUpdates{Warnings: []api.RegistryWarning{broken}}, fromTeam, fromHome).run(false, sourceCmdOf, "updates")
	if err != nil || strings.Contains(out, "current") || !strings.Contains(out, "no update found; 1 registry could not be read") ||
		!strings.Contains(errOut, "warning:") {
		t.Fatalf("one registry unread of two: %v\n%s\n%s", err, out, errOut)
	}
	// A release failing its checks: its registry was read; no claim, exit 0.
	bad := api.RegistryWarning{Registry: "team", Code: string(fault.SourceIntegrity), Message: "the team registry's notes 1.1.0: its archive is not the one indexed"}
	if out, _, err := updatesDaemon(t, api.RegistryUpdates{Warnings: []api.RegistryWarning{bad}}, fromTeam).run(false, sourceCmdOf, "updates"); err != nil ||
		strings.Contains(out, "current") || !strings.Contains(out, "no update found") {
		t.Fatalf("an integrity warning: %v\n%s", err, out)
	}
	// No warning: current, and the installed sources are not asked for.
	f := updatesDaemon(t, api.RegistryUpdates{}, fromTeam)
	if out, _, err := f.run(false, sourceCmdOf, "updates"); err != nil || !strings.Contains(out, "every source installed from a registry is current") {
		t.Fatalf("no warning: %v\n%s", err, out)
	}
	if got := f.requests(); len(got) != 1 {
		t.Fatalf("requests without a warning: %v", got)
	}
}

// loci source update --yes without NAME is refused (it would consent to
// permissions no one was shown), and nothing is sent.
func TestTrial30CBatchUpdateRefusesYes(t *testing.T) {
	f := updateDaemon(t)
	_, _, err := f.run(false, sourceCmdOf, "update", "--yes")
	fe := fault.As(err)
	if fe == nil || fe.Code != fault.InputInvalid || !strings.Contains(fe.Help, "loci source update NAME --yes") {
		t.Fatalf("update --yes: %v", err)
	}
	if got := f.requests(); len(got) != 0 {
		t.Fatalf("requests: %v", got)
	}
}

// loci source show notes@ (an empty version) is refused by the CLI, in
// the CLI's words (not the REST "send the request again"), asking
// nothing; so is install.
func TestTrial30CShowOfAnEmptyVersion(t *testing.T) {
	for _, args := range [][]string{{"show", "notes@"}, {"show", "Notes@1.0.0"}, {"install", "notes@"}} {
		f := newFakeDaemon(t, nil)
		_, _, err := f.run(false, sourceCmdOf, args...)
		fe := fault.As(err)
		if fe == nil || fe.Code != fault.InputInvalid || strings.Contains(fe.Help, "request") || !strings.Contains(fe.Msg, "NAME@VERSION") ||
			!strings.Contains(fe.Help, "notes@1.2.0") {
			t.Fatalf("%v: %v (help %q)", args, err, fe.Help)
		}
		if got := f.requests(); len(got) != 0 {
			t.Fatalf("%v requests: %v", args, got)
		}
	}
}

// loci source show duo, duo a plugin's id and no source: the refusal
// says to show the plugin; a name that is no plugin keeps its help.
func TestTrial30CShowOfAPluginID(t *testing.T) {
	routes := func(name string, plugin bool) map[string]func(*http.Request) (int, any) {
		return map[string]func(*http.Request) (int, any){
			"GET /api/source-packages/" + name: func(*http.Request) (int, any) {
				return http.StatusNotFound, refusal(fault.SourceNotFound, "no source "+name)
			},
			"GET /api/source-registry/sources/" + name: func(*http.Request) (int, any) {
				return http.StatusNotFound, refusal(fault.SourceNotInRegistry, "no registry serves "+name)
			},
			"GET /api/plugins/" + name: func(*http.Request) (int, any) {
				if plugin {
					return http.StatusOK, api.Plugin{ID: name, Version: "1.0.0", Origin: "local"}
				}
				return http.StatusNotFound, refusal(fault.PluginNotFound, "no plugin "+name)
			},
		}
	}
	_, _, err := newFakeDaemon(t, routes("duo", true)).run(false, sourceCmdOf, "show", "duo")
	fe := fault.As(err)
	if fe == nil || fe.Remote != fault.SourceNotFound || !strings.Contains(fe.Help, "loci plugin show duo") {
		t.Fatalf("show duo: %v (help %q)", err, fe.Help)
	}
	_, _, err = newFakeDaemon(t, routes("nothing", false)).run(false, sourceCmdOf, "show", "nothing")
	fe = fault.As(err)
	if fe == nil || fe.Remote != fault.SourceNotFound || strings.Contains(fe.Help, "plugin") {
		t.Fatalf("show nothing: %v (help %q)", err, fe.Help)
	}
}

// loci source auth notes --source-config cfgnotes, notes declaring no
// sign-in: the refusal says so, instead of suggesting the very command
// that was run; --status says so too; nothing is started.
func TestTrial30CAuthOfAConfigurationOfASourceWithoutSignIn(t *testing.T) {
	routes := map[string]func(*http.Request) (int, any){
		"GET /api/source-configs/cfgnotes": func(*http.Request) (int, any) {
			return http.StatusOK, api.SourceConfig{ID: "cfgnotes", Source: "notes", Credential: &api.MinerCredential{Kind: "oauth"}}
		},
		"GET /api/source-packages/notes": func(*http.Request) (int, any) {
			return http.StatusOK, api.SourcePackage{Name: "notes", Version: "1.0.0", Origin: "local", State: "enabled"}
		},
	}
	f := newFakeDaemon(t, routes)
	out, errOut, err := f.run(false, sourceCmdOf, "auth", "notes", "--source-config", "cfgnotes")
	fe := fault.As(err)
	if fe == nil || fe.Code != fault.CredentialOAuthUnsupported || !strings.Contains(fe.Msg, "declares no sign-in") ||
		strings.Contains(fe.Help, "--source-config") || strings.Contains(out, "To sign") {
		t.Fatalf("auth: %v\n%s\n%s", err, out, errOut)
	}
	out, _, err = newFakeDaemon(t, routes).run(false, sourceCmdOf, "auth", "notes", "--source-config", "cfgnotes", "--status")
	if err != nil || !strings.Contains(out, "declares no sign-in") || strings.Contains(out, "loci source auth") {
		t.Fatalf("auth --status: %v\n%s", err, out)
	}
	// A configuration reading without an oauth sign-in: its status says
	// so, the source not asked about.
	routes["GET /api/source-configs/cfgnotes"] = func(*http.Request) (int, any) {
		return http.StatusOK, api.SourceConfig{ID: "cfgnotes", Source: "notes"}
	}
	f = newFakeDaemon(t, routes)
	out, _, err = f.run(false, sourceCmdOf, "auth", "notes", "--source-config", "cfgnotes", "--status")
	if err != nil || !strings.Contains(out, "cfgnotes: the configuration reads without an oauth sign-in") {
		t.Fatalf("auth --status of a configuration without oauth: %v\n%s", err, out)
	}
	if got := f.requests(); len(got) != 2 || got[1] != "GET /api/source-configs/cfgnotes" {
		t.Fatalf("requests: %v", got)
	}
}

// loci source show of a release the signature policy would refuse says
// so (the daemon answers it for review, installable false with the
// refusal); an install of the version already installed says it
// reinstalled it, not that it replaced it.
func TestTrial30CShowSaysNotInstallableAndReinstallSaysSo(t *testing.T) {
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/source-registry/sources/notes": func(*http.Request) (int, any) {
			return http.StatusOK, api.RegistrySource{Name: "notes", Version: "1.0.0", Registry: "una", Installable: false,
				Refusal: &api.RegistryRefusal{Code: "loci::source::untrusted", Message: "it is not signed", Help: "trust its key"}}
		},
	})
	out, errOut, err := f.run(false, sourceCmdOf, "show", "notes@1.0.0")
	if err != nil {
		t.Fatalf("show: %v\n%s", err, errOut)
	}
	for _, w := range []string{"installable:    no: it is not signed (loci::source::untrusted)", "trust its key"} {
		if !strings.Contains(out, w) {
			t.Fatalf("show lacks %q:\n%s", w, out)
		}
	}
	if got := replacedLine("1.0.0", "1.0.0"); got != "it reinstalled version 1.0.0" {
		t.Fatalf("replacedLine(same) = %q", got)
	}
	if got := replacedLine("0.9.0", "1.0.0"); got != "it replaced version 0.9.0" {
		t.Fatalf("replacedLine(older) = %q", got)
	}
}

package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
)

// loci source show NAME@VERSION says where the registry serving it is,
// and that its publisher withdrew a yanked version.
func TestTrial30bSourceShowSaysLocationAndYanked(t *testing.T) {
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/source-registry/sources/notes": func(*http.Request) (int, any) {
			return http.StatusOK, api.RegistrySource{Name: "notes", Version: "1.0.0", Registry: "local",
				RegistryLocation: "https://reg.example/index.json", Yanked: true, ConsentDigest: "cd"}
		},
	})
	out, errOut, err := f.run(false, sourceCmdOf, "show", "notes@1.0.0")
	if err != nil || !strings.Contains(out, "registry:       local at https://reg.example/index.json") ||
		!strings.Contains(out, "yanked: its publisher withdrew this version") {
		t.Fatalf("show: %v\n%s\n%s", err, out, errOut)
	}
}

// loci source install NAME@VERSION of a yanked version: the consent
// question says it was withdrawn and where the registry is; the install
// answer's warnings are printed.
func TestTrial30bSourceInstallSaysYankedAndWarnings(t *testing.T) {
	installs := 0
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/source-registry/sources/notes": func(*http.Request) (int, any) {
			return http.StatusOK, api.RegistrySource{Name: "notes", Version: "1.0.0", Registry: "local", RegistryLocation: "/srv/reg",
				Yanked: true, ConsentDigest: "cd", PermissionWords: []string{"use the network (any address)"}}
		},
		"POST /api/source-registry/install": func(*http.Request) (int, any) {
			installs++
			if installs == 1 {
				return http.StatusConflict, refusal(fault.SourceConsentRequired, "needs consent")
			}
			return http.StatusCreated, api.SourcePackageInstalled{Source: api.SourcePackage{Name: "notes", Version: "1.0.0", Origin: "registry", State: "installed"},
				Replaced: "1.1.0", Downgrade: true, Warnings: []string{"the notes source 1.0.0 was withdrawn (yanked) by its publisher; it was installed because it was pinned"}}
		},
	})
	out, errOut, err := f.run(false, sourceCmdOf, "install", "notes@1.0.0", "--yes")
	if err != nil || installs != 2 {
		t.Fatalf("install: %v (%d installs)\n%s\n%s", err, installs, out, errOut)
	}
	if !strings.Contains(errOut, "from the local registry at /srv/reg") || !strings.Contains(errOut, "its publisher withdrew (yanked) this version") {
		t.Fatalf("the consent question: %s", errOut)
	}
	if !strings.Contains(errOut, "warning: the notes source 1.0.0 was withdrawn (yanked) by its publisher; it was installed because it was pinned\n") ||
		!strings.Contains(out, "installed the notes source 1.0.0 from the local registry") ||
		!strings.Contains(out, "it replaced version 1.1.0, a newer one: this is a downgrade\n") {
		t.Fatalf("the install's warnings:\n%s\n%s", out, errOut)
	}
}

// loci source updates says each offer's registry location, and when the
// version installed was withdrawn by its publisher.
func TestTrial30bSourceUpdatesSaysLocationAndYanked(t *testing.T) {
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/source-registry/updates": func(*http.Request) (int, any) {
			return http.StatusOK, api.RegistryUpdates{Updates: []api.RegistryUpdateOffer{
				{Name: "notes", From: "1.0.0", To: "1.1.0", Registry: "local", RegistryLocation: "/srv/reg", FromYanked: true},
				{Name: "mail", From: "2.0.0", To: "2.1.0", Registry: "main", RegistryLocation: "https://reg.example/index.json", NeedsConsent: true},
			}, Warnings: []api.RegistryWarning{}}
		},
	})
	out, errOut, err := f.run(false, sourceCmdOf, "updates")
	if err != nil ||
		!strings.Contains(out, "notes 1.0.0 -> 1.1.0 from local at /srv/reg (1.0.0 was withdrawn (yanked) by its publisher: update it)\n") ||
		!strings.Contains(out, "mail 2.0.0 -> 2.1.0 from main at https://reg.example/index.json (asks for more: needs your consent)\n") {
		t.Fatalf("updates: %v\n%s\n%s", err, out, errOut)
	}
}

// loci plugin search prints the warnings as loci source search does: the
// registry named once, the daemon's message (which says it cannot be
// read) once, the code; on stderr, the results on stdout.
func TestTrial30bPluginSearchWarnings(t *testing.T) {
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/plugin-registry/search": func(*http.Request) (int, any) {
			return http.StatusOK, api.RegistrySearch{Entries: []api.RegistryEntry{{Name: "duo", Version: "1.0.0", Registry: "main"}},
				Warnings: []api.RegistryWarning{{Registry: "local", Code: string(fault.SourceRegistryUnavailable), Message: "cannot be read: its index: 404 Not Found"}}}
		},
	})
	out, errOut, err := f.run(false, pluginCmdOf, "search", "duo")
	want := "warning: the local registry: cannot be read: its index: 404 Not Found (loci::source::registry_unavailable)\n"
	if err != nil || errOut != want || strings.Contains(out, "warning") || !strings.Contains(out, "duo") {
		t.Fatalf("search: %v\n%s\n%s", err, out, errOut)
	}
}

// A warning whose message names its registry already (a release that
// failed its checks) says it once.
func TestTrial30bRegistryWarningNamingItsRegistry(t *testing.T) {
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/source-registry/updates": func(*http.Request) (int, any) {
			return http.StatusOK, api.RegistryUpdates{Updates: []api.RegistryUpdateOffer{}, Warnings: []api.RegistryWarning{
				{Registry: "local", Code: string(fault.SourceIntegrity), Message: "the local registry's notes 1.1.0: its archive is not the one indexed"}}}
		},
	})
	_, errOut, err := f.run(false, sourceCmdOf, "updates")
	if err != nil || errOut != "warning: the local registry's notes 1.1.0: its archive is not the one indexed (loci::source::integrity)\n" {
		t.Fatalf("updates: %v\n%s", err, errOut)
	}
}

func blockedPreview() api.PluginPreview {
	return api.PluginPreview{Plugin: api.Plugin{ID: "duo", Version: "2.0.0",
		Modules: []api.PluginModule{{Kind: "source", Name: "alpha", Version: "2.0.0", PermissionWords: []string{"use the network (any address)"}}}},
		ArchiveDigest: "abc", Consents: map[string]string{"alpha": "d1"}, Replaces: "1.0.0",
		Blocked: &api.PluginBlocked{Code: string(fault.PluginInUse), Message: "the plugin duo 2.0.0 drops the beta source, which is enabled",
			Help: "disable it first (loci source disable beta)"}}
}

// loci plugin preview of a plugin whose install would be refused says
// so: the refusal's message, code and help.
func TestTrial30bPluginPreviewSaysBlocked(t *testing.T) {
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/plugin-registry/plugins/duo": func(*http.Request) (int, any) { return http.StatusOK, blockedPreview() },
	})
	out, errOut, err := f.run(false, pluginCmdOf, "preview", "duo@2.0.0")
	if err != nil || !strings.Contains(out, "  installing it would be refused: the plugin duo 2.0.0 drops the beta source, which is enabled (loci::plugin::in_use)\n") ||
		!strings.Contains(out, "    help: disable it first (loci source disable beta)\n") {
		t.Fatalf("preview: %v\n%s\n%s", err, out, errOut)
	}
}

// loci plugin install of a plugin whose install would be refused, its
// consent asked: it says why, asks nothing (even with --yes), sends no
// second install, and fails with the block's code.
func TestTrial30bPluginInstallBlockedAsksNothing(t *testing.T) {
	for _, yes := range []bool{true, false} {
		f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
			"POST /api/plugin-registry/install": func(*http.Request) (int, any) {
				return http.StatusConflict, refusal(fault.SourceConsentRequired, "needs consent")
			},
			"GET /api/plugin-registry/plugins/duo": func(*http.Request) (int, any) { return http.StatusOK, blockedPreview() },
		})
		args := []string{"install", "duo@2.0.0"}
		if yes {
			args = append(args, "--yes")
		}
		out, errOut, err := f.run(false, pluginCmdOf, args...)
		fe := fault.As(err)
		if fe == nil || fe.Code != fault.PluginInUse || !strings.Contains(fe.Msg, "drops the beta source") || fe.Help != "disable it first (loci source disable beta)" {
			t.Fatalf("install (yes %v): %v\n%s\n%s", yes, err, out, errOut)
		}
		if strings.Contains(errOut, "Agreeing") || strings.Contains(errOut, "asks to") || strings.Contains(errOut, "Install?") {
			t.Fatalf("asked for consent (yes %v):\n%s", yes, errOut)
		}
		if !strings.Contains(errOut, "The plugin duo 2.0.0 cannot be installed") {
			t.Fatalf("not said (yes %v):\n%s", yes, errOut)
		}
		if got := strings.Join(f.requests(), ","); got != "POST /api/plugin-registry/install,GET /api/plugin-registry/plugins/duo" {
			t.Fatalf("requests (yes %v): %s", yes, got)
		}
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
)

// loci plugin install ID@VERSION asks the plugin registry routes: refused
// for consent, it shows the daemon's preview, and with --yes installs
// with the preview's consents, adoptions and archive digest (so a
// plugin that changed since is refused by the daemon); without --yes and
// without a terminal the refusal stands and nothing more is sent.
func TestPluginInstallFromARegistry(t *testing.T) {
	for _, yes := range []bool{true, false} {
		var mu sync.Mutex
		var installs []api.PluginRegistryInstall
		var previews []string
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/api/plugin-registry/install":
				var in api.PluginRegistryInstall
				b, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(b, &in); err != nil {
					t.Errorf("install body %s: %v", b, err)
				}
				installs = append(installs, in)
				if in.Consents["scribe"] != "d1" {
					w.WriteHeader(http.StatusBadRequest)
					json.NewEncoder(w).Encode(map[string]string{"error": "needs consent", "code": string(fault.SourceConsentRequired), "help": "h"})
					return
				}
				w.WriteHeader(http.StatusCreated)
				json.NewEncoder(w).Encode(api.PluginInstalled{Plugin: api.Plugin{ID: "suite", Version: "1.2.0", Origin: "registry",
					Modules: []api.PluginModule{{Kind: "source", Name: "scribe", Version: "1.0.0", State: "installed"}}}, Adopted: []string{"jotter"}})
			case r.Method == http.MethodGet && r.URL.Path == "/api/plugin-registry/plugins/suite":
				previews = append(previews, r.URL.RawQuery)
				json.NewEncoder(w).Encode(api.PluginPreview{Plugin: api.Plugin{ID: "suite", Version: "1.2.0",
					Modules: []api.PluginModule{{Kind: "source", Name: "scribe", Version: "1.0.0", PermissionWords: []string{"use the network (any address)"}}}},
					ArchiveDigest: "abc", Consents: map[string]string{"scribe": "d1"}, Adopt: []string{"jotter"}})
			default:
				t.Errorf("unexpected %s %s", r.Method, r.URL)
				w.WriteHeader(http.StatusNotFound)
			}
		}))
		var stdout, stderr bytes.Buffer
		a := &app{stdout: &stdout, stderr: &stderr, addr: strings.TrimPrefix(hs.URL, "http://"), env: func(string) (string, bool) { return "", false }}
		cmd := a.pluginCmd()
		args := []string{"install", "suite@1.2.0", "--registry", "main"}
		if yes {
			args = append(args, "--yes")
		}
		cmd.SetArgs(args)
		cmd.SetIn(strings.NewReader(""))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		hs.Close()
		if !yes {
			if fault.As(err).Remote != fault.SourceConsentRequired || len(installs) != 1 {
				t.Fatalf("without --yes: %v, %d installs", err, len(installs))
			}
			continue
		}
		if err != nil {
			t.Fatalf("install --yes: %v\n%s", err, stderr.String())
		}
		if len(installs) != 2 || len(previews) != 1 || previews[0] != "registry=main&version=1.2.0" {
			t.Fatalf("requests: %+v %v", installs, previews)
		}
		first, second := installs[0], installs[1]
		if first.ID != "suite" || first.Version != "1.2.0" || first.Registry != "main" || len(first.Consents) != 0 {
			t.Fatalf("first install: %+v", first)
		}
		if second.Consents["scribe"] != "d1" || strings.Join(second.AdoptSources, ",") != "jotter" || second.ArchiveDigest != "abc" {
			t.Fatalf("second install: %+v", second)
		}
		if !strings.Contains(stderr.String(), "use the network (any address)") || !strings.Contains(stderr.String(), "takes over sources installed on their own: jotter") {
			t.Fatalf("what was shown: %s", stderr.String())
		}
		if !strings.Contains(stdout.String(), "installed the plugin suite 1.2.0 (registry)") || !strings.Contains(stdout.String(), "it took over: jotter") {
			t.Fatalf("what was said: %s", stdout.String())
		}
	}
}

// A --consent that is not SOURCE=DIGEST, and an argument that is neither
// a file nor a plugin id, are refused before any daemon is asked.
func TestPluginInstallRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{"install", "suite", "--consent", "scribe"}, {"install", "Not An Id"}} {
		a := &app{stdout: io.Discard, stderr: io.Discard, addr: "127.0.0.1:1", env: func(string) (string, bool) { return "", false }}
		cmd := a.pluginCmd()
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); fault.As(err).Code != fault.InputInvalid {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

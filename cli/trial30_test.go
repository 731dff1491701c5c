package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
)

// fakeDaemon answers "METHOD /path" with routes' JSON (status, body); any
// other request fails the test. It records the requests it saw.
type fakeDaemon struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []string
	routes map[string]func(r *http.Request) (int, any)
}

func newFakeDaemon(t *testing.T, routes map[string]func(r *http.Request) (int, any)) *fakeDaemon {
	f := &fakeDaemon{t: t, routes: routes}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		h, ok := routes[r.Method+" "+r.URL.Path]
		if !ok {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		status, body := h(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeDaemon) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func refusal(code fault.Code, msg string) any {
	return map[string]string{"error": msg, "code": string(code), "help": "h"}
}

// run runs the command cmd of an app asking f, with args, no terminal.
func (f *fakeDaemon) run(jsonOut bool, cmd func(a *app) *cobra.Command, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut, addr: strings.TrimPrefix(f.srv.URL, "http://"), jsonOut: jsonOut, env: func(string) (string, bool) { return "", false }}
	c := cmd(a)
	c.SetArgs(args)
	c.SetIn(strings.NewReader(""))
	c.SilenceUsage, c.SilenceErrors = true, true
	err = c.Execute()
	return out.String(), errOut.String(), err
}

func pluginCmdOf(a *app) *cobra.Command { return a.pluginCmd() }
func sourceCmdOf(a *app) *cobra.Command { return a.sourceCmd() }

// An install whose --consent and --adopt are all the daemon needs
// succeeds at once: the installed plugin is said, exit 0 (it panicked
// on the first answer's missing fault).
func TestTrial30PluginInstallWithEveryConsentGiven(t *testing.T) {
	var got api.PluginRegistryInstall
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"POST /api/plugin-registry/install": func(r *http.Request) (int, any) {
			json.NewDecoder(r.Body).Decode(&got)
			return http.StatusCreated, api.PluginInstalled{Plugin: api.Plugin{ID: "duo", Version: "1.0.0", Origin: "registry",
				Modules: []api.PluginModule{{Kind: "source", Name: "alpha", Version: "1.0.0", State: "installed"}}}}
		},
	})
	out, errOut, err := f.run(false, pluginCmdOf, "install", "duo", "--consent", "alpha=d1", "--consent", "beta=d2", "--adopt", "alpha")
	if err != nil || !strings.Contains(out, "installed the plugin duo 1.0.0 (registry)") {
		t.Fatalf("install with every consent: %v\n%s\n%s", err, out, errOut)
	}
	if got.Consents["alpha"] != "d1" || got.Consents["beta"] != "d2" || strings.Join(got.AdoptSources, ",") != "alpha" {
		t.Fatalf("what was sent: %+v", got)
	}
}

// loci source show NAME of a source not installed shows the release a
// registry serves and succeeds, with and without --json (it panicked).
func TestTrial30SourceShowOfARegistrySourceNotInstalled(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
			"GET /api/source-packages/notes": func(*http.Request) (int, any) {
				return http.StatusNotFound, refusal(fault.SourceNotFound, "no source notes")
			},
			"GET /api/source-registry/sources/notes": func(*http.Request) (int, any) {
				return http.StatusOK, api.RegistrySource{Name: "notes", Version: "1.2.0", Registry: "local", ConsentDigest: "cd"}
			},
		})
		out, errOut, err := f.run(jsonOut, sourceCmdOf, "show", "notes")
		if err != nil || !strings.Contains(out, "1.2.0") {
			t.Fatalf("show (json %v): %v\n%s\n%s", jsonOut, err, out, errOut)
		}
	}
	// Neither installed nor in a registry: the not-installed refusal.
	f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"GET /api/source-packages/nothing": func(*http.Request) (int, any) {
			return http.StatusNotFound, refusal(fault.SourceNotFound, "no source nothing")
		},
		"GET /api/source-registry/sources/nothing": func(*http.Request) (int, any) {
			return http.StatusNotFound, refusal(fault.SourceNotInRegistry, "no registry serves nothing")
		},
		"GET /api/plugins/nothing": func(*http.Request) (int, any) {
			return http.StatusNotFound, refusal(fault.PluginNotFound, "no plugin nothing")
		},
	})
	if _, _, err := f.run(false, sourceCmdOf, "show", "nothing"); fault.As(err).Remote != fault.SourceNotFound {
		t.Fatalf("show of nothing: %v", err)
	}
}

func updateDaemon(t *testing.T, results ...api.RegistryUpdateResult) *fakeDaemon {
	return newFakeDaemon(t, map[string]func(*http.Request) (int, any){
		"POST /api/source-registry/update": func(*http.Request) (int, any) { return http.StatusOK, results },
	})
}

// A named update that did not happen (needs consent, without a terminal
// or with a wrong digest; failed) fails the command; a batch fails when
// an update failed, and one needing consent alone leaves it at 0 with
// the command to run printed.
func TestTrial30UpdateFailsWhenANamedUpdateDidNotHappen(t *testing.T) {
	needs := api.RegistryUpdateResult{Name: "notes", From: "1.0.0", To: "1.1.0", Status: api.UpdateNeedsConsent, ConsentDigest: "cd", Message: "it newly asks to: x"}
	failed := api.RegistryUpdateResult{Name: "notes", From: "1.0.0", Status: api.UpdateFailed, Code: string(fault.SourceRegistryUnavailable), Message: "the registry local cannot be read"}
	for _, c := range []struct {
		what string
		args []string
		res  api.RegistryUpdateResult
		code fault.Code
	}{
		{"needs consent, no terminal", []string{"update", "notes"}, needs, fault.SourceConsentRequired},
		{"needs consent, a wrong digest", []string{"update", "notes", "--consent", "wrong"}, needs, fault.SourceConsentRequired},
		{"failed", []string{"update", "notes"}, failed, fault.SourceRegistryUnavailable},
	} {
		for _, jsonOut := range []bool{false, true} {
			out, errOut, err := updateDaemon(t, c.res).run(jsonOut, sourceCmdOf, c.args...)
			if err == nil || fault.As(err).Code != c.code {
				t.Fatalf("%s (json %v): %v\n%s\n%s", c.what, jsonOut, err, out, errOut)
			}
		}
	}
	current := api.RegistryUpdateResult{Name: "mail", From: "2.0.0", Status: api.UpdateCurrent}
	out, errOut, err := updateDaemon(t, current, needs).run(false, sourceCmdOf, "update")
	if err != nil || !strings.Contains(out, "loci source update notes --consent cd") {
		t.Fatalf("a batch with an update needing consent: %v\n%s\n%s", err, out, errOut)
	}
	if _, _, err := updateDaemon(t, current, failed).run(false, sourceCmdOf, "update"); fault.As(err).Code != fault.SourceRegistryUnavailable {
		t.Fatalf("a batch with a failed update: %v", err)
	}
	if _, _, err := updateDaemon(t, current).run(false, sourceCmdOf, "update", "mail"); err != nil {
		t.Fatalf("a named update that is current: %v", err)
	}
}

// A failed update's message is shown whole, its control characters
// escaped, in the lines and in the command's error.
func TestTrial30UpdateMessagesAreWhole(t *testing.T) {
	long := "the registry local cannot be read: " + strings.Repeat("the index file is not JSON at line 7; ", 4) + "\x1b[31mred"
	failed := api.RegistryUpdateResult{Name: "notes", From: "1.0.0", Status: api.UpdateFailed, Code: string(fault.SourceRegistryUnavailable), Message: long}
	out, _, err := updateDaemon(t, failed).run(false, sourceCmdOf, "update")
	want := safeText(long)
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "bytes)") || strings.Contains(err.Error(), "\x1b") ||
		!strings.Contains(out, want) {
		t.Fatalf("the failure's message: %v\n%s", err, out)
	}
}

// loci source auth NAME --source-config ID refuses a configuration of
// another source, naming the source it reads, and starts nothing.
func TestTrial30AuthRefusesAConfigurationOfAnotherSource(t *testing.T) {
	for _, status := range []bool{false, true} {
		f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
			"GET /api/source-configs/work-oa": func(*http.Request) (int, any) {
				return http.StatusOK, api.SourceConfig{ID: "work-oa", Source: "oa", Credential: &api.MinerCredential{Kind: "oauth"}}
			},
		})
		args := []string{"auth", "notes", "--source-config", "work-oa"}
		if status {
			args = append(args, "--status")
		}
		out, errOut, err := f.run(false, sourceCmdOf, args...)
		fe := fault.As(err)
		if fe == nil || fe.Code != fault.InputInvalid || !strings.Contains(fe.Msg, "oa") || !strings.Contains(fe.Help, "loci source auth oa --source-config work-oa") ||
			strings.Contains(out, "To sign") {
			t.Fatalf("auth notes --source-config work-oa (status %v): %v\n%s\n%s", status, err, out, errOut)
		}
		if got := f.requests(); len(got) != 1 {
			t.Fatalf("requests: %v", got)
		}
	}
}

// loci plugin show says what the daemon knows of the signature: the key
// that vouched, or that no trusted key did.
func TestTrial30PluginShowSaysTheSignature(t *testing.T) {
	for _, signedBy := range []string{"", "loci-ed25519 AAAA"} {
		f := newFakeDaemon(t, map[string]func(*http.Request) (int, any){
			"GET /api/plugins/duo": func(*http.Request) (int, any) {
				return http.StatusOK, api.Plugin{ID: "duo", Version: "1.0.0", Origin: "local", SignedBy: signedBy}
			},
		})
		out, _, err := f.run(false, pluginCmdOf, "show", "duo")
		want := "not vouched for by a trusted key"
		if signedBy != "" {
			want = "signed by " + signedBy
		}
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("show (signed by %q): %v\n%s", signedBy, err, out)
		}
	}
}

// loci plugin test DIR with a relative DIR hands each module's test an
// absolute locator, and leaves no temporary folder behind.
func TestTrial30PluginTestOfARelativeFolder(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	work := t.TempDir()
	src := filepath.Join(work, "plug", "p1")
	manifest := "id = \"duo\"\nversion = \"1.0.0\"\ndescription = \"two\"\n" +
		"[[modules]]\nkind = \"source\"\npath = \"alpha\"\n[[modules]]\nkind = \"source\"\npath = \"beta\"\n"
	mustWrite(t, filepath.Join(src, "loci-plugin.toml"), manifest)
	for _, n := range []string{"alpha", "beta"} {
		mustWrite(t, filepath.Join(src, n, "loci-source.toml"), "contract = 1\nname = \""+n+"\"\nversion = \"1.0.0\"\ndescription = \"d\"\nmodule = \""+n+".wasm\"\n[source]\n[permissions]\n")
		mustWrite(t, filepath.Join(src, n, n+".wasm"), "\x00asm\x01\x00\x00\x00")
		mustWrite(t, filepath.Join(src, n, "testdata", "locator", "a.txt"), "a")
	}
	t.Chdir(work)
	var locators, dirs []string
	var out bytes.Buffer
	a := &app{stdout: &out, stderr: &out, env: func(string) (string, bool) { return "", false }}
	a.local.SourceTest = func(_ context.Context, dir, locator string, _ io.Writer) error {
		locators, dirs = append(locators, locator), append(dirs, dir)
		if _, err := os.Stat(filepath.Join(dir, "loci-source.toml")); err != nil {
			t.Errorf("the module's folder: %v", err)
		}
		return nil
	}
	c := a.pluginCmd()
	c.SetArgs([]string{"test", filepath.Join("plug", "p1")})
	c.SilenceUsage, c.SilenceErrors = true, true
	if err := c.Execute(); err != nil {
		t.Fatalf("plugin test: %v\n%s", err, out.String())
	}
	if len(locators) != 2 {
		t.Fatalf("tested: %v", locators)
	}
	for _, l := range locators {
		if !filepath.IsAbs(l) {
			t.Fatalf("a relative locator: %v", locators)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("temporary folders left: %v", ents)
	}
	// A module failing, and a module whose locator is missing, leave
	// nothing either.
	a.local.SourceTest = func(context.Context, string, string, io.Writer) error {
		return fault.New(fault.SourceFailed, "failed", "h")
	}
	os.RemoveAll(filepath.Join(src, "beta", "testdata"))
	c = a.pluginCmd()
	c.SetArgs([]string{"test", filepath.Join("plug", "p1")})
	c.SilenceUsage, c.SilenceErrors = true, true
	if err := c.Execute(); err == nil {
		t.Fatalf("plugin test passed with a module failing")
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("temporary folders left: %v", ents)
	}
}

func mustWrite(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

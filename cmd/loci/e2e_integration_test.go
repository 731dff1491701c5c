package main_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The integrations are tested against the agents' own command-line tools,
// pinned in .ci/npm/package.json, each run with a temporary HOME and every
// way to the network closed (OpenCode installs its plugin package from the
// npm registry on start: npm is told to stay offline).

// agentsBin is the directory of the agents' commands, or a skip.
func agentsBin(t *testing.T, names ...string) string {
	t.Helper()
	dir, err := filepath.Abs("../../.ci/npm/node_modules/.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Skipf("the agent %s is not installed for the tests (run: npm install --prefix .ci/npm)", n)
		}
	}
	return dir
}

// agentEnv is the environment of an agent or of `loci integration` in
// the agent's temporary home: the agents' commands first on PATH, no
// network (a proxy that refuses, npm offline, no update checks).
func agentEnv(t *testing.T, home string, extra ...string) []string {
	bin := agentsBin(t)
	e := env(home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
		"npm_config_offline=true", "npm_config_fetch_retries=0", "npm_config_registry=http://127.0.0.1:9/",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	return append(e, extra...)
}

// runAgent runs an agent's command in dir with the agent environment.
func runAgent(t *testing.T, home, dir string, extraEnv []string, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(agentsBin(t, name), name), args...)
	cmd.Env = agentEnv(t, home, extraEnv...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out), code
}

// integ runs `loci integration ...` in dir with the agent environment.
func integ(t *testing.T, home, dir string, extraEnv []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"integration"}, args...)...)
	cmd.Env = agentEnv(t, home, extraEnv...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// treeHash lists every entry under dir: path, kind, mode and a digest of
// the content.
func treeHash(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case d.IsDir():
			out[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = fmt.Sprintf("file %o %s", fi.Mode().Perm(), hex.EncodeToString(sum[:8]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails with the entries that differ.
func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	var diff []string
	for k, v := range before {
		if after[k] != v {
			diff = append(diff, fmt.Sprintf("%s: %q -> %q", k, v, after[k]))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: new %q", k, v))
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Fatalf("%s: the tree changed:\n%s", what, strings.Join(diff, "\n"))
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// userFiles are an agent's configuration as a person keeps it: entries
// of their own, comments, odd spacing.
var userFiles = map[string]map[string]string{
	"claude-code": {
		".claude.json":          "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"other\": {\"type\": \"stdio\", \"command\": \"other-mcp\", \"args\": []}\n  },\n  \"projects\": {}\n}\n",
		".claude/settings.json": "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"SessionStart\": [\n            {\"matcher\": \"startup\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\"}]}\n        ]\n    }\n}",
		".claude/CLAUDE.md":     "# My rules\n\nBe brief.\n",
	},
	"codex": {
		".codex/config.toml": "# my Codex settings\nmodel = \"o3\"   # the fast one\n\n[mcp_servers.other]\ncommand = \"other-mcp\" # mine\n\n# profiles below\n[profiles.deep]\nmodel = \"o3-pro\"\n",
		".codex/AGENTS.md":   "Always run the tests.",
	},
	"opencode": {
		".config/opencode/opencode.jsonc": "{\n  // my settings\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"mcp\": {\n    \"other\": {\"type\": \"local\", \"command\": [\"other-mcp\"], \"enabled\": false}, // off for now\n  },\n}\n",
	},
}

// agentNames are the integrations and their commands.
var agentNames = map[string]string{"claude-code": "claude", "codex": "codex", "opencode": "opencode"}

func TestIntegrationInstallTwiceRemoveRestoresEveryByte(t *testing.T) {
	t.Parallel()
	agentsBin(t, "claude", "codex", "opencode")
	for _, agent := range []string{"claude-code", "codex", "opencode"} {
		for _, existing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/existing=%v", agent, existing), func(t *testing.T) {
				home := t.TempDir()
				work := filepath.Join(home, "work")
				if err := os.MkdirAll(work, 0o755); err != nil {
					t.Fatal(err)
				}
				if existing {
					writeFiles(t, home, userFiles[agent])
				}
				before := treeHash(t, home)
				addr := []string{"--addr", "127.0.0.1:8499"}
				// A dry run writes nothing and shows the entry.
				out, errOut, code := integ(t, home, work, nil, append([]string{"install", agent, "--dry-run"}, addr...)...)
				if code != 0 || !strings.Contains(out, "+++ b") || !strings.Contains(out, "http://127.0.0.1:8499/mcp") {
					t.Fatalf("dry run: %d\n%s\n%s", code, out, errOut)
				}
				sameTree(t, "dry run", before, treeHash(t, home))
				if out, errOut, code := integ(t, home, work, nil, append([]string{"install", agent}, addr...)...); code != 0 {
					t.Fatalf("install: %d\n%s\n%s", code, out, errOut)
				}
				installed := treeHash(t, home)
				out, errOut, code = integ(t, home, work, nil, "list", "--json")
				var list []struct {
					Agent, Version string
					Found          bool
					Installed      []struct{ Scope, URL string }
				}
				if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
					t.Fatalf("list: %d\n%s\n%s", code, out, errOut)
				}
				for _, s := range list {
					if !s.Found || s.Version == "" || (s.Agent == agent) != (len(s.Installed) == 1) {
						t.Fatalf("list after installing %s:\n%s", agent, out)
					}
					if s.Agent == agent && (s.Installed[0].Scope != "user" || s.Installed[0].URL != "http://127.0.0.1:8499/mcp") {
						t.Fatalf("list after installing %s:\n%s", agent, out)
					}
				}
				sameTree(t, "list", installed, treeHash(t, home))
				out, errOut, code = integ(t, home, work, nil, append([]string{"install", agent}, addr...)...)
				if code != 0 || !strings.Contains(out, "nothing to change") {
					t.Fatalf("second install: %d\n%s\n%s", code, out, errOut)
				}
				sameTree(t, "second install", installed, treeHash(t, home))
				if out, errOut, code := integ(t, home, work, nil, "remove", agent, "--dry-run"); code != 0 || !strings.Contains(out, "--- a") {
					t.Fatalf("remove --dry-run: %d\n%s\n%s", code, out, errOut)
				}
				sameTree(t, "remove --dry-run", installed, treeHash(t, home))
				if out, errOut, code := integ(t, home, work, nil, "remove", agent); code != 0 {
					t.Fatalf("remove: %d\n%s\n%s", code, out, errOut)
				}
				sameTree(t, "remove", before, treeHash(t, home))
				if _, errOut, code := integ(t, home, work, nil, "remove", agent, "--json"); code == 0 || !strings.Contains(errOut, "loci::input::invalid") {
					t.Fatalf("second remove: %d %s", code, errOut)
				}
			})
		}
	}
}

// listsLoci runs the agent's own listing of MCP servers in dir and says
// whether loci is there and connected. Codex's `mcp list` does not
// connect: `codex debug prompt-input` does (it renders the model's input,
// which carries each connected server's instructions, offline).
func listsLoci(t *testing.T, agent, home, dir string, extraEnv []string) (listed, connected bool, out string) {
	t.Helper()
	switch agent {
	case "claude-code":
		out, _ = runAgent(t, home, dir, extraEnv, "claude", "mcp", "list")
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "loci:") {
				return true, strings.Contains(line, "Connected"), out
			}
		}
	case "codex":
		out, _ = runAgent(t, home, dir, extraEnv, "codex", "mcp", "list", "--json")
		start := strings.Index(out, "[")
		var servers []struct {
			Name      string
			Enabled   bool
			Transport struct {
				Type              string
				URL               string `json:"url"`
				Command           string
				Args              []string
				BearerTokenEnvVar string `json:"bearer_token_env_var"`
			}
		}
		if start < 0 || json.Unmarshal([]byte(out[start:]), &servers) != nil {
			t.Fatalf("codex mcp list --json:\n%s", out)
		}
		for _, s := range servers {
			if s.Name == "loci" && s.Enabled {
				prompt, _ := runAgent(t, home, dir, extraEnv, "codex", "debug", "prompt-input")
				return true, strings.Contains(prompt, "mcp__loci: loci is a local memory"), out + prompt
			}
		}
	case "opencode":
		out, _ = runAgent(t, home, dir, extraEnv, "opencode", "mcp", "list")
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, " loci") {
				return true, strings.Contains(line, "connected") && !strings.Contains(line, "disconnected"), out
			}
		}
	}
	return false, false, out
}

// TestIntegrationAgentsConnect installs loci into each real agent, with
// authentication on: the agent's own list shows loci connected to the
// running daemon (the bearer token read from LOCI_AUTH_TOKEN in the
// agent's own syntax, never written), and after remove lists no loci.
func TestIntegrationAgentsConnect(t *testing.T) {
	t.Parallel()
	agentsBin(t, "claude", "codex", "opencode")
	token := "integration-test-token-0123456789"
	dhome, palace := newPalace(t)
	d := start(t, dhome, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+token)
	auth := []string{"LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN=" + token}
	transports := []string{"http"}
	// `loci mcp` (the stdio bridge) may not be in this build yet: an
	// unknown command's --help prints the root's help.
	if out, err := exec.Command(bin, "mcp", "--help").Output(); err == nil && strings.Contains(string(out), "loci mcp") {
		transports = append(transports, "stdio")
	} else {
		t.Log("`loci mcp` is not in this build: the stdio transport is not tested")
	}
	for _, transport := range transports {
		for _, agent := range []string{"claude-code", "codex", "opencode"} {
			t.Run(agent+"/"+transport, func(t *testing.T) {
				home := t.TempDir()
				work := filepath.Join(home, "work")
				os.MkdirAll(work, 0o755)
				if out, errOut, code := integ(t, home, work, auth, "--addr", d.addr, "install", agent, "--transport", transport); code != 0 {
					t.Fatalf("install: %d\n%s\n%s", code, out, errOut)
				}
				// The token itself is in no file.
				for p := range treeHash(t, home) {
					if b, err := os.ReadFile(filepath.Join(home, p)); err == nil && bytes.Contains(b, []byte(token)) {
						t.Fatalf("%s holds the token", p)
					}
				}
				listed, connected, out := listsLoci(t, agent, home, work, auth)
				if !listed || !connected {
					t.Fatalf("%s does not list loci connected:\n%s", agent, out)
				}
				if want := "http://" + d.addr + "/mcp"; agent == "codex" && transport == "http" && (!strings.Contains(out, want) || !strings.Contains(out, "LOCI_AUTH_TOKEN")) {
					t.Fatalf("codex lists loci without %s and LOCI_AUTH_TOKEN:\n%s", want, out)
				}
				if out, errOut, code := integ(t, home, work, auth, "remove", agent); code != 0 {
					t.Fatalf("remove: %d\n%s\n%s", code, out, errOut)
				}
				if listed, _, out := listsLoci(t, agent, home, work, auth); listed {
					t.Fatalf("%s still lists loci after remove:\n%s", agent, out)
				}
			})
		}
	}
}

// TestIntegrationConflictAndCorrupt: an entry named loci that loci did
// not write is a conflict (refused, nothing written; --force replaces it
// and remove puts it back byte for byte); a corrupt agent file is
// validation_failed and left untouched.
func TestIntegrationConflictAndCorrupt(t *testing.T) {
	t.Parallel()
	agentsBin(t, "claude", "codex", "opencode")
	theirs := map[string]map[string]string{
		"claude-code": {".claude.json": "{\n  \"mcpServers\": {\n    \"loci\": {\"type\": \"http\", \"url\": \"http://example.invalid/mcp\"}\n  }\n}\n"},
		"codex":       {".codex/config.toml": "[mcp_servers.loci] # my own\nurl = \"http://example.invalid/mcp\"\n"},
		"opencode":    {".config/opencode/opencode.json": "{\"mcp\": {\"loci\": {\"type\": \"remote\", \"url\": \"http://example.invalid/mcp\"}}}"},
	}
	corrupt := map[string]map[string]string{
		"claude-code": {".claude/settings.json": "{\"hooks\": {\"SessionStart\": [ }"},
		"codex":       {".codex/config.toml": "[mcp_servers.other\ncommand = \"x\"\n"},
		"opencode":    {".config/opencode/opencode.json": "{\"mcp\": {\"other\": }"},
	}
	for _, agent := range []string{"claude-code", "codex", "opencode"} {
		t.Run(agent, func(t *testing.T) {
			addr := []string{"--addr", "127.0.0.1:8499"}
			home := t.TempDir()
			writeFiles(t, home, theirs[agent])
			before := treeHash(t, home)
			_, errOut, code := integ(t, home, home, nil, append([]string{"install", agent, "--json"}, addr...)...)
			if code == 0 || !strings.Contains(errOut, "loci::integration::conflict") {
				t.Fatalf("install over their loci: %d %s", code, errOut)
			}
			sameTree(t, "refused install", before, treeHash(t, home))
			if out, errOut, code := integ(t, home, home, nil, append([]string{"install", agent, "--force"}, addr...)...); code != 0 {
				t.Fatalf("install --force: %d\n%s\n%s", code, out, errOut)
			}
			if out, errOut, code := integ(t, home, home, nil, "remove", agent); code != 0 {
				t.Fatalf("remove: %d\n%s\n%s", code, out, errOut)
			}
			sameTree(t, "remove after --force", before, treeHash(t, home))

			home = t.TempDir()
			writeFiles(t, home, corrupt[agent])
			before = treeHash(t, home)
			_, errOut, code = integ(t, home, home, nil, append([]string{"install", agent, "--json"}, addr...)...)
			if code == 0 || !strings.Contains(errOut, "loci::integration::validation_failed") {
				t.Fatalf("install over a corrupt file: %d %s", code, errOut)
			}
			sameTree(t, "refused corrupt", before, treeHash(t, home))
		})
	}
}

// TestIntegrationProject: --project writes into the project (the
// directory of its .loci.toml), names the project's wing in the
// instructions, leaves the user's own agent files alone, and remove
// leaves the project as it was.
func TestIntegrationProject(t *testing.T) {
	t.Parallel()
	agentsBin(t, "claude", "codex", "opencode")
	want := map[string][]string{
		"claude-code": {".mcp.json", ".claude/settings.local.json", "CLAUDE.md"},
		"codex":       {".codex/config.toml", ".codex/hooks.json", "AGENTS.md"},
		"opencode":    {"opencode.json", ".opencode/plugin/loci.js", "AGENTS.md"},
	}
	for _, agent := range []string{"claude-code", "codex", "opencode"} {
		t.Run(agent, func(t *testing.T) {
			home := t.TempDir()
			proj := filepath.Join(home, "src", "proj")
			writeFiles(t, proj, map[string]string{".loci.toml": "wing = \"acme_api\"\nroom = \"backend\"\n", "README.md": "# proj\n"})
			sub := filepath.Join(proj, "internal")
			os.MkdirAll(sub, 0o755)
			before := treeHash(t, proj)
			out, errOut, code := integ(t, home, sub, nil, "--addr", "127.0.0.1:8499", "install", agent, "--project")
			if code != 0 {
				t.Fatalf("install --project: %d\n%s\n%s", code, out, errOut)
			}
			for _, f := range want[agent] {
				b, err := os.ReadFile(filepath.Join(proj, f))
				if err != nil {
					t.Fatalf("%s not written: %v\n%s", f, err, out)
				}
				if strings.HasSuffix(f, ".md") && !strings.Contains(string(b), "`acme_api`") {
					t.Fatalf("%s does not name the wing:\n%s", f, b)
				}
			}
			// The user's own agent files are not touched.
			for _, p := range []string{".claude.json", ".claude", ".codex", ".config/opencode"} {
				if _, err := os.Stat(filepath.Join(home, p)); err == nil {
					t.Fatalf("--project wrote %s in the home", p)
				}
			}
			if out, errOut, code := integ(t, home, sub, nil, "remove", agent, "--project"); code != 0 {
				t.Fatalf("remove --project: %d\n%s\n%s", code, out, errOut)
			}
			sameTree(t, "remove --project", before, treeHash(t, proj))

			// Again, with the agent looking at the project in between (it
			// writes files of its own there, and edits its config file).
			if out, errOut, code := integ(t, home, sub, nil, "--addr", "127.0.0.1:8499", "install", agent, "--project"); code != 0 {
				t.Fatalf("install --project: %d\n%s\n%s", code, out, errOut)
			}
			if agent == "claude-code" {
				out, _ := runAgent(t, home, proj, nil, "claude", "mcp", "get", "loci")
				if !strings.Contains(out, "127.0.0.1:8499/mcp") || !strings.Contains(out, "Project config") {
					t.Fatalf("claude does not see the project's loci:\n%s", out)
				}
			}
			if agent == "opencode" {
				out, _ := runAgent(t, home, proj, nil, "opencode", "debug", "config")
				if !strings.Contains(out, filepath.Join(proj, ".opencode", "plugin", "loci.js")) || !strings.Contains(out, "127.0.0.1:8499/mcp") {
					t.Fatalf("opencode does not load the project's loci:\n%s", out)
				}
			}
			if out, errOut, code := integ(t, home, sub, nil, "remove", agent, "--project"); code != 0 {
				t.Fatalf("remove --project: %d\n%s\n%s", code, out, errOut)
			}
			for _, f := range want[agent] {
				if _, err := os.Stat(filepath.Join(proj, f)); err == nil {
					t.Fatalf("%s is still there after remove", f)
				}
			}
		})
	}
}

// TestIntegrationRefusals: an agent not installed, a version outside the
// supported range, an asset missing from an override directory, a missing
// override directory (which also stops the daemon from starting).
func TestIntegrationRefusals(t *testing.T) {
	t.Parallel()
	agentsBin(t, "claude")
	home := t.TempDir()
	cmd := exec.Command(bin, "integration", "install", "claude-code", "--json")
	cmd.Env = env(home, "PATH=/nonexistent")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err == nil || !strings.Contains(errb.String(), "loci::integration::agent_not_found") {
		t.Fatalf("no agent on PATH: %v %s", err, errb.String())
	}
	if out, _, code := integ(t, home, home, []string{"PATH=/nonexistent"}, "list", "--json"); code != 0 || !strings.Contains(out, `"found": false`) {
		t.Fatalf("list without agents: %d %s", code, out)
	}

	assetsDir := t.TempDir()
	writeFiles(t, assetsDir, map[string]string{"claude-code/versions.json": `{"min": "99.0.0"}`})
	before := treeHash(t, home)
	_, errOut, code := integ(t, home, home, []string{"LOCI_ASSETS_DIR=" + assetsDir}, "install", "claude-code", "--json")
	if code == 0 || !strings.Contains(errOut, "loci::integration::incompatible") {
		t.Fatalf("old agent: %d %s", code, errOut)
	}
	writeFiles(t, assetsDir, map[string]string{"claude-code/versions.json": `{"min": "1.0.0", "below": "9.0.0"}`})
	_, errOut, code = integ(t, home, home, []string{"LOCI_ASSETS_DIR=" + assetsDir}, "install", "claude-code", "--json")
	if code == 0 || !strings.Contains(errOut, "loci::integration::assets_missing") || !strings.Contains(errOut, "instructions.md") {
		t.Fatalf("asset missing: %d %s", code, errOut)
	}
	writeFiles(t, assetsDir, map[string]string{"claude-code/instructions.md": "Use loci{{if .Wing}} (wing {{.Wing}}){{end}}.\n"})
	if out, errOut, code := integ(t, home, home, []string{"LOCI_ASSETS_DIR=" + assetsDir}, "install", "claude-code", "--dry-run"); code != 0 || !strings.Contains(out, "+Use loci.") {
		t.Fatalf("override assets: %d\n%s\n%s", code, out, errOut)
	}
	sameTree(t, "refusals", before, treeHash(t, home))

	bad := filepath.Join(home, "badproj")
	writeFiles(t, bad, map[string]string{".loci.toml": "wing = 3\n"})
	before = treeHash(t, home)
	if _, errOut, code := integ(t, home, bad, nil, "install", "claude-code", "--project", "--json"); code == 0 || !strings.Contains(errOut, "loci::project::invalid") {
		t.Fatalf("invalid project file: %d %s", code, errOut)
	}
	sameTree(t, "invalid project file", before, treeHash(t, home))

	missing := filepath.Join(assetsDir, "nope")
	_, errOut, code = integ(t, home, home, []string{"LOCI_ASSETS_DIR=" + missing}, "list", "--json")
	if code == 0 || !strings.Contains(errOut, "loci::assets::not_found") {
		t.Fatalf("missing assets dir: %d %s", code, errOut)
	}
	out, errOut, code := runCLI(home, "", []string{"serve", "--port", "0", "--palace", filepath.Join(home, "palace")}, []string{"LOCI_ASSETS_DIR=" + missing})
	if code == 0 || !strings.Contains(out+errOut, "loci::assets::not_found") {
		t.Fatalf("serve with a missing assets dir: %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "palace")); err == nil {
		t.Fatal("serve created the palace before refusing")
	}
}

// TestIntegrationOpenCodePlugin runs the installed OpenCode plugin in
// Node the way OpenCode calls it: each event reaches `loci hook opencode
// <event>` with the session's JSON on stdin, the session-start answer is
// added to the system prompt and the pre-compact answer to the
// compaction's context; a loci that cannot run breaks nothing.
func TestIntegrationOpenCodePlugin(t *testing.T) {
	t.Parallel()
	agentsBin(t, "opencode")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (it comes with the agents: run: npm install --prefix .ci/npm)")
	}
	home := t.TempDir()
	if out, errOut, code := integ(t, home, home, nil, "--addr", "127.0.0.1:8499", "install", "opencode"); code != 0 {
		t.Fatalf("install: %d\n%s\n%s", code, out, errOut)
	}
	installed, err := os.ReadFile(filepath.Join(home, ".config", "opencode", "plugin", "loci.js"))
	if err != nil {
		t.Fatal(err)
	}
	q, _ := json.Marshal(bin)
	if !bytes.Contains(installed, []byte("const LOCI = "+string(q)+";")) {
		t.Fatalf("the plugin does not run this loci (%s):\n%s", bin, installed)
	}
	// A stand-in for `loci hook` that logs what it gets and answers as
	// the hook does.
	dir := t.TempDir()
	logFile := filepath.Join(dir, "calls")
	fake := filepath.Join(dir, "fake-loci")
	writeFiles(t, dir, map[string]string{"fake-loci": "#!/bin/sh\n{ echo \"$*\"; cat; echo; } >> " + logFile + "\n" +
		`printf '{"hookSpecificOutput":{"hookEventName":"x","additionalContext":"CTX %s"}}' "$3"` + "\n"})
	os.Chmod(fake, 0o755)
	driver := `const m = await import(process.argv[2]);
const p = await m.LociPlugin({ directory: process.argv[3] || "/work/proj" });
const ev = (type) => p.event({ event: { type, properties: { sessionID: "s1", info: { id: "s1" } } } });
await ev("session.created");
const sys = { system: ["base"] };
await p["experimental.chat.system.transform"]({ sessionID: "s1", model: {} }, sys);
const other = { system: [] };
await p["experimental.chat.system.transform"]({ sessionID: "s2", model: {} }, other);
const comp = { context: [], prompt: undefined };
await p["experimental.session.compacting"]({ sessionID: "s1" }, comp);
await ev("session.deleted");
console.log(JSON.stringify({ system: sys.system, other: other.system, context: comp.context }));
`
	for _, c := range []struct {
		name, loci, want string
	}{
		{"hook answers", fake, `{"system":["base","CTX session-start"],"other":[],"context":["CTX pre-compact"]}`},
		{"loci missing", filepath.Join(dir, "no-such-loci"), `{"system":["base"],"other":[],"context":[]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			lq, _ := json.Marshal(c.loci)
			plugin := bytes.Replace(installed, []byte("const LOCI = "+string(q)+";"), []byte("const LOCI = "+string(lq)+";"), 1)
			writeFiles(t, dir, map[string]string{"plugin.mjs": string(plugin), "driver.mjs": driver})
			os.Remove(logFile)
			out, err := exec.Command(node, filepath.Join(dir, "driver.mjs"), filepath.Join(dir, "plugin.mjs")).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != c.want {
				t.Fatalf("plugin: %v\n%s\nwant %s", err, out, c.want)
			}
			if c.loci != fake {
				return
			}
			calls, _ := os.ReadFile(logFile)
			for _, want := range []string{
				`hook opencode session-start` + "\n" + `{"session_id":"s1","cwd":"/work/proj","hook_event_name":"SessionStart","source":"startup"}`,
				`hook opencode pre-compact` + "\n" + `{"session_id":"s1","cwd":"/work/proj","hook_event_name":"PreCompact","trigger":"auto"}`,
				`hook opencode session-end` + "\n" + `{"session_id":"s1","cwd":"/work/proj","hook_event_name":"SessionEnd","reason":"deleted"}`,
			} {
				if !strings.Contains(string(calls), want) {
					t.Fatalf("the hook did not get %s:\n%s", want, calls)
				}
			}
		})
	}
	// The plugin with the real `loci hook opencode` against a running
	// daemon: the project's wake-up reaches the session's system prompt.
	t.Run("real hook", func(t *testing.T) {
		dhome, palace := newPalace(t)
		d := start(t, dhome, palace)
		r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{
			map[string]any{"destination": "project", "wing": "billing", "content": "opencode in billing: the ledger is append-only.", "tags": []string{},
				"source": map[string]any{"kind": "manual", "agent": "opencode"}}}}})
		if r.status != 202 {
			t.Fatalf("checkpoint: %s", r.raw)
		}
		if j := waitJob(t, d, r.body["id"].(string), 20*time.Second, finished); j["status"] != "completed" {
			t.Fatalf("checkpoint job: %v", j)
		}
		proj := t.TempDir()
		writeFiles(t, proj, map[string]string{".loci.toml": "wing = \"billing\"\n"})
		writeFiles(t, dir, map[string]string{"plugin.mjs": string(installed), "driver.mjs": driver})
		cmd := exec.Command(node, filepath.Join(dir, "driver.mjs"), filepath.Join(dir, "plugin.mjs"), proj)
		cmd.Env = env(dhome, "LOCI_PALACE_PATH="+palace)
		out, err := cmd.CombinedOutput()
		var got struct{ System []string }
		if err != nil || json.Unmarshal(out, &got) != nil || len(got.System) != 2 || !strings.Contains(got.System[1], "the ledger is append-only") {
			t.Fatalf("the real hook's wake-up did not reach the system prompt: %v\n%s", err, out)
		}
	})
}

// TestIntegrationHelpNamesTransportValues: the --transport flag's value
// shows as http|stdio in the help (cobra takes a backticked word of the
// usage as the value's name).
func TestIntegrationHelpNamesTransportValues(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, sub := range []string{"install", "update"} {
		out, errOut, code := integ(t, home, home, nil, sub, "--help")
		if code != 0 || !strings.Contains(out, "--transport http|stdio") {
			t.Fatalf("%s --help: %d\n%s\n%s", sub, code, out, errOut)
		}
	}
}

// TestIntegrationProjectLinksOut: in a project whose CLAUDE.md is a link
// to a file outside it, install --project is refused with
// loci::integration::conflict and writes nothing, there or in the
// project; remove without --project after a project install says to add
// --project.
func TestIntegrationProjectLinksOut(t *testing.T) {
	t.Parallel()
	agentsBin(t, "claude")
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	writeFiles(t, proj, map[string]string{".loci.toml": "wing = \"acme\"\n", ".git/HEAD": "ref: refs/heads/main\n"})
	victim := filepath.Join(home, "victim.txt")
	writeFiles(t, home, map[string]string{"victim.txt": "precious\n"})
	if err := os.Symlink(victim, filepath.Join(proj, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, home)
	_, errOut, code := integ(t, home, proj, nil, "--addr", "127.0.0.1:8499", "install", "claude-code", "--project", "--json")
	var e struct{ Error, Code, Help string }
	if code == 0 || json.Unmarshal([]byte(errOut), &e) != nil || e.Code != "loci::integration::conflict" ||
		!strings.Contains(e.Error, "outside the project") || !strings.Contains(e.Help, "nothing was written") {
		t.Fatalf("install through a link: %d\n%s", code, errOut)
	}
	sameTree(t, "refused install", before, treeHash(t, home))
	os.Remove(filepath.Join(proj, "CLAUDE.md"))
	if out, errOut, code := integ(t, home, proj, nil, "--addr", "127.0.0.1:8499", "install", "claude-code", "--project"); code != 0 {
		t.Fatalf("install: %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = integ(t, home, proj, nil, "remove", "claude-code", "--json")
	if code == 0 || json.Unmarshal([]byte(errOut), &e) != nil || e.Code != "loci::input::invalid" || !strings.Contains(e.Help, "--project") {
		t.Fatalf("remove without --project: %d\n%s", code, errOut)
	}
	if out, errOut, code := integ(t, home, proj, nil, "remove", "claude-code", "--project"); code != 0 {
		t.Fatalf("remove: %d\n%s\n%s", code, out, errOut)
	}
}

// Installing an integration while no daemon answers offers the login
// service (issue 39): the agent would find no memory. With a daemon
// running, or a service installed, there is nothing to offer.
func TestIntegrationOffersTheServiceWhenNoDaemonRuns(t *testing.T) {
	t.Parallel()
	agentsBin(t, "codex")
	home := t.TempDir()
	down := "127.0.0.1:" + strconv.Itoa(freePort(t))
	_, errOut, code := integ(t, home, home, nil, "--addr", down, "install", "codex")
	if code != 0 || !strings.Contains(errOut, "no loci daemon answers at "+down) || !strings.Contains(errOut, "loci service install") {
		t.Fatalf("install with no daemon: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, _ := integ(t, home, home, nil, "--addr", down, "remove", "codex"); strings.Contains(errOut, "service install") {
		t.Errorf("remove offered the service: %q", errOut)
	}
	dhome, palace := newPalace(t)
	d := start(t, dhome, palace)
	if _, errOut, code := integ(t, home, home, nil, "--addr", d.addr, "install", "codex"); code != 0 || strings.Contains(errOut, "service install") {
		t.Errorf("install with a daemon running: exit %d, offered the service: %q", code, errOut)
	}
}

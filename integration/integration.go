// Package integration plugs loci into the agents people use with it
// (Claude Code, Codex, OpenCode): in each agent's own configuration files,
// at its own documented places, it writes the MCP server entry for loci,
// the hooks that call `loci hook <agent> <event>`, and an instructions
// block, and takes them out again.
//
// Every edit is a splice into the file as it is (JSON and TOML edited
// structurally, comments kept): idempotent, made after a backup of the
// file, validated before anything is written, and recorded in a manifest
// under the loci configuration directory, so that update rewrites only
// loci's parts and remove restores each file (byte for byte when nobody
// touched it since; otherwise by taking out only loci's parts). One file
// per agent describes its layout (claude.go, codex.go, opencode.go); the
// engine (engine.go, manifest.go) is shared.
package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/assets"
	"github.com/loci-dev/loci/fault"
)

// TokenEnv is the environment variable the agents read loci's bearer
// token from (the one the CLI reads): the token itself is never written.
const TokenEnv = "LOCI_AUTH_TOKEN"

// Transports of the MCP entry.
const (
	TransportHTTP  = "http"
	TransportStdio = "stdio"
)

// versionTimeout bounds `<agent> --version`.
const versionTimeout = 10 * time.Second

// Env is what the integrations depend on, given by the caller.
type Env struct {
	// Getenv reads HOME, XDG_CONFIG_HOME, CODEX_HOME, CLAUDE_CONFIG_DIR.
	Getenv func(string) string
	// LookPath finds an agent's command (exec.LookPath).
	LookPath func(string) (string, error)
	// StateDir holds the manifests and backups (<config dir>/integrations).
	StateDir string
	// Assets are the instruction snippets, scripts and version ranges.
	Assets *assets.Set
	// Loci is the absolute path of the loci binary the hooks and the
	// stdio entry run.
	Loci string
	// URL is the daemon's MCP endpoint (http://host:port/mcp).
	URL string
	// Auth says the daemon requires a bearer token: the HTTP entry sends
	// one from TokenEnv.
	Auth bool
	// Wing and Room are the project's scope, named in the instructions.
	Wing, Room string
}

// Options are an install's, update's or remove's flags.
type Options struct {
	// Project is the project directory for a per-project integration; ""
	// is the user's own configuration.
	Project string
	// Transport is http or stdio ("" keeps the installed one, else http).
	Transport string
	// Force replaces an entry named loci that loci did not write.
	Force bool
	// DryRun computes the changes and writes nothing.
	DryRun bool
}

// Agent is one supported agent: its name, its command, and the files its
// integration writes.
type Agent struct {
	// Name is the integration's name: claude-code, codex, opencode.
	Name string
	// Command is the agent's executable.
	Command string
	// files returns what loci wants in each file for this scope.
	files func(p *plan) ([]File, error)
}

// Agents are the supported agents, in the order list shows them.
func Agents() []Agent { return []Agent{claudeCode(), codex(), opencode()} }

// agentNamed finds an agent; an unknown name is loci::input::invalid.
func agentNamed(name string) (Agent, error) {
	var names []string
	for _, a := range Agents() {
		if a.Name == name {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return Agent{}, fault.Newf(fault.InputInvalid, "supported agents: "+strings.Join(names, ", "),
		"%q is not a supported agent", name)
}

// Found is an agent as found on this machine.
type Found struct {
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
}

var versionRe = regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)`)

// find locates the agent's command and its version.
func (e *Env) find(ctx context.Context, a Agent) (Found, error) {
	path, err := e.LookPath(a.Command)
	if err != nil {
		return Found{}, fault.Newf(fault.IntegrationAgentNotFound,
			"install "+a.Name+" (its command `"+a.Command+"` must be on PATH), then run this again",
			"%s is not installed here: no `%s` on PATH", a.Name, a.Command)
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	// The agent runs in a throwaway home: asking its version must not
	// touch the user's files (OpenCode creates its directories on any
	// start).
	tmp, err := os.MkdirTemp("", "loci-agent-version-")
	if err != nil {
		return Found{Path: path}, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = append(os.Environ(), "HOME="+tmp, "XDG_CONFIG_HOME="+filepath.Join(tmp, ".config"),
		"XDG_DATA_HOME="+filepath.Join(tmp, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(tmp, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(tmp, ".local", "state"), "CODEX_HOME="+filepath.Join(tmp, ".codex"),
		"CLAUDE_CONFIG_DIR="+filepath.Join(tmp, ".claude"))
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	v := versionRe.FindString(string(out))
	if err != nil || v == "" {
		return Found{Path: path}, fault.Newf(fault.IntegrationIncompatible,
			"check that `"+a.Command+" --version` works",
			"cannot tell the version of %s (`%s --version`: %s)", a.Name, path, strings.TrimSpace(firstLine(string(out), err)))
	}
	return Found{Path: path, Version: v}, nil
}

func firstLine(out string, err error) string {
	if err != nil {
		return err.Error()
	}
	if i := strings.IndexByte(out, '\n'); i >= 0 {
		return out[:i]
	}
	return out
}

// compareVersions orders two X.Y.Z versions.
func compareVersions(a, b string) int {
	pa, pb := versionRe.FindStringSubmatch(a), versionRe.FindStringSubmatch(b)
	for i := 1; i <= 3; i++ {
		var x, y int
		if pa != nil {
			x, _ = strconv.Atoi(pa[i])
		}
		if pb != nil {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// supported checks version against the agent's range.
func supported(a Agent, version string, r assets.Versions) error {
	if compareVersions(version, r.Min) >= 0 && (r.Below == "" || compareVersions(version, r.Below) < 0) {
		return nil
	}
	return fault.Newf(fault.IntegrationIncompatible,
		"install a version of "+a.Name+" in the supported range "+rangeText(r),
		"%s %s is outside the versions this loci supports (%s)", a.Name, version, rangeText(r))
}

func rangeText(r assets.Versions) string {
	if r.Below == "" {
		return ">= " + r.Min
	}
	return ">= " + r.Min + ", < " + r.Below
}

// home is the user's home directory.
func (e *Env) home() string { return e.Getenv("HOME") }

// envDir is the directory an environment variable names when it is set
// to an absolute path, else fallback.
func (e *Env) envDir(name, fallback string) string {
	if v := e.Getenv(name); v != "" && filepath.IsAbs(v) {
		return v
	}
	return fallback
}

// errConflict is loci::integration::conflict for an entry loci did not
// write.
func errConflict(path, what string) error {
	return fault.Newf(fault.IntegrationConflict,
		"rename or remove that entry, or run again with --force to replace it (remove puts it back)",
		"%s already has %s that loci did not write", path, what)
}

// errInvalid is loci::integration::validation_failed for a file the agent
// would not accept.
func errInvalid(path string, err error) error {
	return fault.Newf(fault.IntegrationValidationFailed,
		"fix or move away the file, then run this again; nothing was written",
		"%s: %v", path, err)
}

var errNotInstalled = errors.New("not installed")

// notInstalled is the error of update and remove (op) without an install
// in the scope asked for; when loci is installed in the other scope, the
// help says how to reach it.
func (e *Env) notInstalled(agent, op, project string) error {
	help := "run `loci integration install " + agent + "` first (see `loci integration list`)"
	var projects []string
	user := false
	for _, m := range e.manifests(agent) {
		if m.Scope == "user" {
			user = true
		} else {
			projects = append(projects, m.Scope)
		}
	}
	switch {
	case project == "" && len(projects) > 0:
		help = "loci is installed for " + agent + " in the project " + strings.Join(projects, ", ") +
			": run `loci integration " + op + " " + agent + " --project` there"
	case project != "" && user:
		help = "loci is installed in your own configuration, not in this project: run `loci integration " + op + " " + agent + "` without --project"
	case project != "":
		help = "run `loci integration install " + agent + " --project` first (see `loci integration list`)"
	}
	return fault.Newf(fault.InputInvalid, help, "loci is not installed for %s (%s)", agent, scopeName(project))
}

// scopeName is "user" or the project directory.
func scopeName(project string) string {
	if project == "" {
		return "user"
	}
	return project
}

// checkTransport validates a --transport value.
func checkTransport(t string) error {
	switch t {
	case "", TransportHTTP, TransportStdio:
		return nil
	}
	return fault.Newf(fault.InputInvalid, "use --transport http or --transport stdio", "--transport: %q is not a transport", t)
}

// errorf is fmt.Errorf, for the agents' validators.
var errorf = fmt.Errorf

// SessionsDir is where an agent keeps its session history, which loci's
// transcript source of the agent's name mines: Claude Code's projects
// (under CLAUDE_CONFIG_DIR, else ~/.claude), Codex's sessions (CODEX_HOME,
// else ~/.codex), OpenCode's data (XDG_DATA_HOME, else ~/.local/share,
// then opencode).
func (e *Env) SessionsDir(agent string) (string, error) {
	a, err := agentNamed(agent)
	if err != nil {
		return "", err
	}
	home := e.home()
	if home == "" || !filepath.IsAbs(home) {
		return "", fault.Invalid("HOME", "is not set to an absolute path, so the agent's session history cannot be found")
	}
	switch a.Name {
	case "claude-code":
		return filepath.Join(e.envDir("CLAUDE_CONFIG_DIR", filepath.Join(home, ".claude")), "projects"), nil
	case "codex":
		return filepath.Join(e.envDir("CODEX_HOME", filepath.Join(home, ".codex")), "sessions"), nil
	}
	return filepath.Join(e.envDir("XDG_DATA_HOME", filepath.Join(home, ".local", "share")), "opencode"), nil
}

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/assets"
	"github.com/loci-dev/loci/fault"
)

// fakeAgents writes commands that print the agents' versions, and returns
// an Env whose home is a temporary directory.
func fakeEnv(t *testing.T) (*Env, string) {
	t.Helper()
	home := t.TempDir()
	bin := t.TempDir()
	for name, v := range map[string]string{"claude": "2.1.328 (Claude Code)", "codex": "codex-cli 0.169.0", "opencode": "1.18.33"} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho '"+v+"'\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		})
	}
	set, err := assets.Open("")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{
		Getenv:   func(k string) string { return map[string]string{"HOME": home}[k] },
		LookPath: func(n string) (string, error) { return filepath.Join(bin, n), nil },
		StateDir: filepath.Join(home, ".config", "loci", "integrations"),
		Assets:   set,
		Loci:     "/opt/loci/bin/loci",
		URL:      "http://127.0.0.1:8420/mcp",
	}
	return env, home
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A file the user edited after the install loses only loci's parts on
// remove; their edit stays.
func TestRemoveKeepsLaterEdits(t *testing.T) {
	ctx := context.Background()
	env, home := fakeEnv(t)
	cfg := filepath.Join(home, ".codex", "config.toml")
	orig := "# mine\nmodel = \"o3\"\n"
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(orig), 0o600)
	if _, err := env.Install(ctx, "codex", Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode changed to %o", fi.Mode().Perm())
	}
	edited := read(t, cfg) + "\n[tui]\nnotifications = true # added later\n"
	os.WriteFile(cfg, []byte(edited), 0o600)
	if _, err := env.Remove(ctx, "codex", Options{}); err != nil {
		t.Fatal(err)
	}
	want := orig + "\n\n[tui]\nnotifications = true # added later\n"
	if got := read(t, cfg); got != want {
		t.Fatalf("after remove:\n%q\nwant\n%q", got, want)
	}
}

// Update rewrites loci's parts in place: a new binary path replaces the
// hook commands (never a second copy), a new URL the entry.
func TestUpdateReplacesLociParts(t *testing.T) {
	ctx := context.Background()
	env, home := fakeEnv(t)
	if _, err := env.Update(ctx, "claude-code", Options{}); !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("update before install: %v", err)
	}
	if _, err := env.Install(ctx, "claude-code", Options{}); err != nil {
		t.Fatal(err)
	}
	env.Loci, env.URL, env.Auth = "/usr/local/bin/loci", "http://127.0.0.1:9000/mcp", true
	res, err := env.Update(ctx, "claude-code", Options{})
	if err != nil || !res.Changed {
		t.Fatalf("update: %v %+v", err, res)
	}
	settings := read(t, filepath.Join(home, ".claude", "settings.json"))
	if strings.Count(settings, "hook claude-code session-start") != 1 || strings.Contains(settings, "/opt/loci") {
		t.Fatalf("hooks after update:\n%s", settings)
	}
	mcp := read(t, filepath.Join(home, ".claude.json"))
	if !strings.Contains(mcp, "127.0.0.1:9000") || !strings.Contains(mcp, "Bearer ${LOCI_AUTH_TOKEN}") {
		t.Fatalf("entry after update:\n%s", mcp)
	}
	if _, err := env.Remove(ctx, "claude-code", Options{}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// --force over a user's entry keeps it in the manifest; a structural
// remove (the file changed meanwhile) puts it back.
func TestForcePutsTheirEntryBack(t *testing.T) {
	ctx := context.Background()
	env, home := fakeEnv(t)
	p := filepath.Join(home, ".config", "opencode", "opencode.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"mcp": {"loci": {"type": "remote", "url": "http://theirs/mcp"}}}`), 0o644)
	if _, err := env.Install(ctx, "opencode", Options{}); !fault.Is(err, fault.IntegrationConflict) {
		t.Fatalf("install over theirs: %v", err)
	}
	if _, err := env.Install(ctx, "opencode", Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte(strings.Replace(read(t, p), `{"mcp"`, `{"theme": "dark", "mcp"`, 1)), 0o644)
	if _, err := env.Remove(ctx, "opencode", Options{}); err != nil {
		t.Fatal(err)
	}
	got := read(t, p)
	if !strings.Contains(got, `"url":"http://theirs/mcp"`) || !strings.Contains(got, `"theme": "dark"`) || strings.Contains(got, "8420") {
		t.Fatalf("after remove:\n%s", got)
	}
}

func TestVersionRange(t *testing.T) {
	a := Agent{Name: "x"}
	r := assets.Versions{Min: "1.18.0", Below: "2.0.0"}
	for v, ok := range map[string]bool{"1.18.0": true, "1.18.33": true, "1.17.9": false, "2.0.0": false, "1.100.0": true} {
		t.Run(v, func(t *testing.T) {
			if err := supported(a, v, r); (err == nil) != ok {
				t.Errorf("%v", err)
			}
		})
	}
}

func TestMarkdownBlock(t *testing.T) {
	// in, and what remove gives back: the same bytes, but for a file
	// without a final newline (the block's blank line needs one).
	for in, back := range map[string]string{"": "", "# Mine\n": "# Mine\n", "# Mine\n\n": "# Mine\n\n", "# Mine\n\n\n": "# Mine\n\n\n", "# Mine": "# Mine\n"} {
		t.Run(in, func(t *testing.T) {
			out := mdSet(in, "codex", "Use loci.\n")
			if mdSet(out, "codex", "Use loci.\n") != out {
				t.Fatalf("%q: not idempotent", in)
			}
			both := mdSet(out, "opencode", "Also.\n")
			if got := mdRemove(mdRemove(both, "opencode"), "codex"); got != back {
				t.Fatalf("%q: remove gave %q", in, got)
			}
		})
	}
}

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// A --project install, update or remove refuses a file (or a directory on
// its way) that is a symbolic link leading out of the project: nothing is
// written, neither in the project nor where the link points.
func TestProjectRefusesLinksOutOfTheProject(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, proj, outside string)
	}{
		{"CLAUDE.md", func(t *testing.T, proj, outside string) {
			os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("precious\n"), 0o644)
			os.Symlink(filepath.Join(outside, "victim.txt"), filepath.Join(proj, "CLAUDE.md"))
		}},
		{".mcp.json", func(t *testing.T, proj, outside string) {
			os.WriteFile(filepath.Join(outside, "other.json"), []byte("{\"a\": 1}\n"), 0o644)
			os.Symlink(filepath.Join(outside, "other.json"), filepath.Join(proj, ".mcp.json"))
		}},
		{".claude dir", func(t *testing.T, proj, outside string) {
			os.Symlink(outside, filepath.Join(proj, ".claude"))
		}},
		{"relative", func(t *testing.T, proj, outside string) {
			os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("precious\n"), 0o644)
			rel, _ := filepath.Rel(proj, filepath.Join(outside, "victim.txt"))
			os.Symlink(rel, filepath.Join(proj, "CLAUDE.md"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, home := fakeEnv(t)
			proj := filepath.Join(home, "proj")
			outside := filepath.Join(home, "elsewhere")
			os.MkdirAll(proj, 0o755)
			os.MkdirAll(outside, 0o755)
			tc.setup(t, proj, outside)
			before := snapshot(t, home)
			_, err := env.Install(ctx, "claude-code", Options{Project: proj})
			if !fault.Is(err, fault.IntegrationConflict) || !strings.Contains(fault.As(err).Msg, "outside the project") {
				t.Fatalf("install: %v", err)
			}
			if after := snapshot(t, home); after != before {
				t.Fatalf("install wrote:\n%s\nwas\n%s", after, before)
			}
		})
	}
	// Remove: a link put in after the install is refused too.
	env, home := fakeEnv(t)
	proj := filepath.Join(home, "proj")
	os.MkdirAll(proj, 0o755)
	if _, err := env.Install(ctx, "claude-code", Options{Project: proj}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(home, "other.json")
	os.WriteFile(other, []byte(read(t, filepath.Join(proj, ".mcp.json"))), 0o644)
	os.Remove(filepath.Join(proj, ".mcp.json"))
	os.Symlink(other, filepath.Join(proj, ".mcp.json"))
	before := snapshot(t, home)
	if _, err := env.Remove(ctx, "claude-code", Options{Project: proj}); !fault.Is(err, fault.IntegrationConflict) {
		t.Fatalf("remove: %v", err)
	}
	if after := snapshot(t, home); after != before {
		t.Fatalf("remove wrote:\n%s\nwas\n%s", after, before)
	}
	if _, err := env.Update(ctx, "claude-code", Options{Project: proj}); !fault.Is(err, fault.IntegrationConflict) {
		t.Fatalf("update: %v", err)
	}
}

// A link that stays in the project is followed.
func TestProjectFollowsLinksInside(t *testing.T) {
	ctx := context.Background()
	env, home := fakeEnv(t)
	proj := filepath.Join(home, "proj")
	os.MkdirAll(filepath.Join(proj, "docs"), 0o755)
	os.WriteFile(filepath.Join(proj, "docs", "agents.md"), []byte("# Agents\n"), 0o644)
	os.Symlink(filepath.Join("docs", "agents.md"), filepath.Join(proj, "CLAUDE.md"))
	if _, err := env.Install(ctx, "claude-code", Options{Project: proj}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read(t, filepath.Join(proj, "docs", "agents.md")), "loci") {
		t.Fatal("the linked file has no block")
	}
	if _, err := env.Remove(ctx, "claude-code", Options{Project: proj}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(proj, "docs", "agents.md")); got != "# Agents\n" {
		t.Fatalf("after remove: %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(proj, "CLAUDE.md")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("CLAUDE.md is no longer a link: %v", err)
	}
}

// A user install edits a dotfile that is a link (a dotfile manager's) in
// place: the link stays a link, and remove gives the target its bytes
// back.
func TestUserDotfileLinks(t *testing.T) {
	ctx := context.Background()
	env, home := fakeEnv(t)
	dots := t.TempDir()
	orig := "{\n  \"theme\": \"dark\"\n}\n"
	os.WriteFile(filepath.Join(dots, "claude.json"), []byte(orig), 0o600)
	os.Symlink(filepath.Join(dots, "claude.json"), filepath.Join(home, ".claude.json"))
	os.MkdirAll(filepath.Join(dots, "claude"), 0o755)
	settings := "{\"model\": \"opus\"}\n"
	os.WriteFile(filepath.Join(dots, "claude", "settings.json"), []byte(settings), 0o644)
	os.Symlink(filepath.Join(dots, "claude"), filepath.Join(home, ".claude"))
	if _, err := env.Install(ctx, "claude-code", Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read(t, filepath.Join(dots, "claude.json")), "8420") || !strings.Contains(read(t, filepath.Join(dots, "claude", "settings.json")), "hook claude-code") {
		t.Fatal("the targets were not edited")
	}
	for _, cycle := range []string{"restore", "edited"} {
		if cycle == "edited" {
			if _, err := env.Install(ctx, "claude-code", Options{}); err != nil {
				t.Fatal(err)
			}
			// Edited since: remove takes out loci's parts only.
			p := filepath.Join(dots, "claude.json")
			os.WriteFile(p, []byte(strings.Replace(read(t, p), "\"theme\"", "\"x\": 1, \"theme\"", 1)), 0o600)
		}
		if _, err := env.Remove(ctx, "claude-code", Options{}); err != nil {
			t.Fatal(err)
		}
		for _, l := range []string{".claude.json", ".claude"} {
			if fi, err := os.Lstat(filepath.Join(home, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("%s: %s is no longer a link (%v)", cycle, l, err)
			}
		}
		want := orig
		if cycle == "edited" {
			want = strings.Replace(orig, "\"theme\"", "\"x\": 1, \"theme\"", 1)
		}
		if got := read(t, filepath.Join(dots, "claude.json")); got != want {
			t.Fatalf("%s: target after remove %q", cycle, got)
		}
		if got := read(t, filepath.Join(dots, "claude", "settings.json")); got != settings {
			t.Fatalf("%s: settings after remove %q", cycle, got)
		}
	}
}

// New files are 0600 and the directories loci creates in the home 0700; a
// file that existed keeps its mode through install and remove.
func TestModes(t *testing.T) {
	ctx := context.Background()
	env, home := fakeEnv(t)
	old := filepath.Join(home, ".codex", "AGENTS.md")
	os.MkdirAll(filepath.Dir(old), 0o755)
	os.WriteFile(old, []byte("# mine\n"), 0o644)
	os.Chmod(old, 0o644)
	for _, a := range []string{"claude-code", "codex", "opencode"} {
		if _, err := env.Install(ctx, a, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]os.FileMode{
		".claude.json": 0o600, ".claude": 0o700, ".claude/settings.json": 0o600, ".claude/CLAUDE.md": 0o600,
		".codex": 0o755, ".codex/config.toml": 0o600, ".codex/hooks.json": 0o600, ".codex/AGENTS.md": 0o644,
		".config": 0o700, ".config/opencode": 0o700, ".config/opencode/opencode.json": 0o600, ".config/opencode/plugin": 0o700,
		".config/opencode/plugin/loci.js": 0o600, ".config/loci/integrations": 0o700,
		".config/loci/integrations/claude-code-user.json": 0o600, ".config/loci/integrations/backups": 0o700,
	}
	backups, _ := filepath.Glob(filepath.Join(home, ".config/loci/integrations/backups/*/*"))
	if len(backups) == 0 {
		t.Fatal("no backup")
	}
	for _, b := range backups {
		rel, _ := filepath.Rel(home, b)
		want[rel] = 0o600
	}
	for p, m := range want {
		fi, err := os.Stat(filepath.Join(home, p))
		if err != nil || fi.Mode().Perm() != m {
			t.Errorf("%s: %v, want %o", p, fi.Mode().Perm(), m)
		}
	}
	if _, err := env.Remove(ctx, "codex", Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(old); fi.Mode().Perm() != 0o644 || read(t, old) != "# mine\n" {
		t.Fatalf("after remove: %o %q", fi.Mode().Perm(), read(t, old))
	}
}

// Remove or update for the user after a project-only install says to add
// --project, naming the project.
func TestNotInstalledPointsAtTheProject(t *testing.T) {
	ctx := context.Background()
	env, home := fakeEnv(t)
	proj := filepath.Join(home, "proj")
	os.MkdirAll(proj, 0o755)
	if _, err := env.Install(ctx, "claude-code", Options{Project: proj}); err != nil {
		t.Fatal(err)
	}
	for _, op := range []func(context.Context, string, Options) (*Result, error){env.Remove, env.Update} {
		_, err := op(ctx, "claude-code", Options{})
		f := fault.As(err)
		if !fault.Is(err, fault.InputInvalid) || !strings.Contains(f.Help, "--project") || !strings.Contains(f.Help, proj) {
			t.Fatalf("%v (help %q)", err, f.Help)
		}
	}
	// Nothing anywhere: install first.
	if _, err := env.Remove(ctx, "codex", Options{}); err == nil || !strings.Contains(fault.As(err).Help, "loci integration install codex`") {
		t.Fatalf("%v", err)
	}
}

// Claude Code's PostCompact carries the compaction's summary: it runs the
// pre-compact hook too, and update adds it to an older install.
func TestClaudePostCompact(t *testing.T) {
	ctx := context.Background()
	env, home := fakeEnv(t)
	if _, err := env.Install(ctx, "claude-code", Options{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := jsonUnmarshal(read(t, filepath.Join(home, ".claude", "settings.json")), &doc); err != nil {
		t.Fatal(err)
	}
	pc := doc.Hooks["PostCompact"]
	if len(pc) != 1 || pc[0].Hooks[0].Command != "/opt/loci/bin/loci hook claude-code pre-compact" {
		t.Fatalf("PostCompact: %+v", doc.Hooks)
	}
	// Codex's PostCompact has no summary: not registered.
	if _, err := env.Install(ctx, "codex", Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(read(t, filepath.Join(home, ".codex", "hooks.json")), "PostCompact") {
		t.Fatal("codex got PostCompact")
	}
	for _, a := range []string{"codex", "claude-code"} {
		if _, err := env.Remove(ctx, a, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// snapshot lists every path under dir with its kind and content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			b.WriteString(" -> " + l)
		} else if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.WriteString(" " + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

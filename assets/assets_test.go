package assets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/fault"
)

func TestBuiltInAssets(t *testing.T) {
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"claude-code", "codex", "opencode"} {
		if v, err := s.Versions(agent); err != nil || v.Min == "" {
			t.Errorf("%s versions: %+v %v", agent, v, err)
		}
		if _, err := s.Read(agent + "/instructions.md"); err != nil {
			t.Errorf("%s instructions: %v", agent, err)
		}
	}
	if _, err := s.Read("opencode/plugin/loci.js"); err != nil {
		t.Error(err)
	}
	if s.Origin() != "built-in" {
		t.Errorf("origin %q", s.Origin())
	}
}

func TestOverride(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); !fault.Is(err, fault.AssetsNotFound) {
		t.Fatalf("missing dir: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := Open(file); !fault.Is(err, fault.AssetsNotFound) {
		t.Fatalf("a file: %v", err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "codex"), 0o755)
	os.WriteFile(filepath.Join(dir, "codex", "versions.json"), []byte(`{"min": "0.1.0"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "opencode.json"), []byte(`not json`), 0o644)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Versions("codex"); err != nil || v.Min != "0.1.0" {
		t.Fatalf("override versions: %+v %v", v, err)
	}
	for _, name := range []string{"codex/instructions.md", "codex", "../x"} {
		if _, err := s.Read(name); !fault.Is(err, fault.IntegrationAssetsMissing) {
			t.Errorf("%s: %v", name, err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "claude-code"), 0o755)
	os.WriteFile(filepath.Join(dir, "claude-code", "versions.json"), []byte(`{"max": 3}`), 0o644)
	if _, err := s.Versions("claude-code"); !fault.Is(err, fault.IntegrationAssetsMissing) {
		t.Errorf("bad versions: %v", err)
	}
}

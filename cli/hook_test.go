package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hook input over the 1 MiB bound is ignored, but not silently: one line
// on stderr says so, nothing is filed and nothing reaches stdout.
func TestHookSaysWhenItsInputIsTooLarge(t *testing.T) {
	dir := t.TempDir()
	scope := filepath.Join(dir, ".loci.toml")
	if err := os.WriteFile(scope, []byte("mode = \"full\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LOCI_PROJECT": scope, "LOCI_ADDR": "127.0.0.1:1", "HOME": dir, "XDG_CONFIG_HOME": dir}
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	big := `{"summary": "` + strings.Repeat("x", hookMaxInput+100<<10) + `"}`
	a.hook(context.Background(), strings.NewReader(big), []string{"claude-code", "pre-compact"})
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if stdout.Len() != 0 || len(lines) != 1 || !strings.Contains(lines[0], "over 1 MiB") || !strings.Contains(lines[0], "ignored") {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	// Input within the bound says nothing of the kind.
	stderr.Reset()
	a.hook(context.Background(), strings.NewReader(`{"cwd": "`+dir+`"}`), []string{"claude-code", "pre-compact"})
	if strings.Contains(stderr.String(), "MiB") {
		t.Fatalf("a small input: %q", stderr.String())
	}
}

package sources

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionFilesLongLineKeepsItsStart: a line longer than the reader's
// buffer (Claude Code writes 100 KB attachment records) is read whole, and
// the lines after it once each.
func TestSessionFilesLongLineKeepsItsStart(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".agent/sessions/p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	long := `{"role":"user","text":"start ` + strings.Repeat("x", 100<<10) + ` end","cwd":"/w"}`
	body := long + "\n" + `{"role":"assistant","text":"second"}` + "\n" + `{"role":"user","text":"third"}` + "\n"
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(body), 0o600)
	src := SessionFiles{Format: lineFormat, Home: home}
	id, _ := src.Resolve("", map[string]string{})
	doc, err := src.Read(context.Background(), id, Ref{ID: "p/s.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Units) != 3 || doc.Skipped != 0 || !strings.Contains(doc.Units[0], "start x") || !strings.Contains(doc.Units[0], "x end") ||
		doc.Bytes != int64(len(body)) {
		t.Fatalf("%d units, %d skipped, %d bytes of %d", len(doc.Units), doc.Skipped, doc.Bytes, len(body))
	}
}

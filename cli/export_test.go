package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

// exportBytes is a complete export of an empty palace.
func exportBytes(t *testing.T) []byte {
	t.Helper()
	h, err := json.Marshal(export.Header{Type: export.TypeHeader, Format: export.Format, Version: export.Version, CreatedAt: time.Now().UTC(),
		PalaceID: "0196a4c2-0000-7000-8000-000000000001", Selection: export.Selection{Wings: []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	body := append(h, '\n')
	sum := sha256.Sum256(body)
	end, _ := json.Marshal(export.End{Type: export.TypeEnd, Records: 1, Digest: "sha256:" + hex.EncodeToString(sum[:]), Counts: map[string]int{"header": 1}})
	return append(append(body, end...), '\n')
}

// TestExportFileWholeOrAbsent: loci export --out writes the file only
// when the daemon's stream is complete; a stream cut short (the daemon
// stopped, the connection broke) leaves neither the file nor a part of
// it, and an older file at the path (which --force allows to replace) is
// kept as it was.
func TestExportFileWholeOrAbsent(t *testing.T) {
	full := exportBytes(t)
	for _, c := range []struct {
		name string
		send []byte
		ok   bool
	}{
		{"complete", full, true},
		{"no end record", full[:bytes.IndexByte(full, '\n')+1], false},
		{"cut inside the end record", full[:len(full)-10], false},
		{"nothing", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/export" || r.URL.Query()["wing"][0] != "a,b" || r.URL.Query()["wing"][1] != "c" {
					http.Error(w, "bad request "+r.URL.String(), 400)
					return
				}
				w.Header().Set("Content-Type", "application/x-ndjson")
				_, _ = w.Write(c.send)
			}))
			defer hs.Close()
			dir := t.TempDir()
			out := filepath.Join(dir, "palace.jsonl")
			if err := os.WriteFile(out, []byte("an older export\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr, addr: strings.TrimPrefix(hs.URL, "http://"),
				env: func(k string) (string, bool) {
					return map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir}[k], k == "HOME" || k == "XDG_CONFIG_HOME"
				}}
			cmd := a.exportCmd()
			cmd.SetArgs([]string{"--wing", "a,b", "--wing", "c", "--out", out, "--force"})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			got, _ := os.ReadFile(out)
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("files left: %v", entries)
			}
			if c.ok {
				if err != nil || !bytes.Equal(got, full) {
					t.Fatalf("complete export: %v, file %q", err, got)
				}
				return
			}
			if fe := fault.As(err); fe == nil || fe.Code != fault.ExportTruncated {
				t.Fatalf("got %v, want %s", err, fault.ExportTruncated)
			}
			if string(got) != "an older export\n" {
				t.Fatalf("the older file was replaced by %q", got)
			}
		})
	}
}

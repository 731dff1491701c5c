package main_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/export"
)

// readExport reads an export (decrypting it with the identity file or
// passphrase when given) and answers its records by type.
func readExport(t *testing.T, r io.Reader, identity, passphrase string) map[string][]export.Record {
	t.Helper()
	var pass func() (string, error)
	if passphrase != "" {
		pass = func() (string, error) { return passphrase, nil }
	}
	plain, err := export.Decrypt(r, identity, pass)
	if err != nil {
		t.Fatalf("decrypt: %v", err)
	}
	rd := export.NewReader(plain, export.ReaderOptions{})
	out := map[string][]export.Record{}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("the export does not read back: %v", err)
		}
		out[rec.Type] = append(out[rec.Type], rec)
	}
}

func wingNames(recs map[string][]export.Record) []string {
	var out []string
	for _, r := range recs[export.TypeWing] {
		out = append(out, r.Wing.Name)
	}
	slices.Sort(out)
	return out
}

func drawerContents(recs map[string][]export.Record) []string {
	var out []string
	for _, r := range recs[export.TypeDrawer] {
		out = append(out, r.Drawer.Content)
	}
	slices.Sort(out)
	return out
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestExportEndToEnd exports a running daemon's palace with
// authentication on: GET /api/export needs the token (and no MCP tool
// reaches it), takes several wings, since and vectors and refuses bad
// ones before sending anything; `loci export` writes a whole file (or
// none) with --wing, --since, --encrypt-to and --passphrase, and every
// file reads back through the validating Reader.
func TestExportEndToEnd(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const token = "export-test-token-0123456789"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+token)
	auth := []string{"Authorization", "Bearer " + token}
	cliEnv := []string{"LOCI_AUTH_TOKEN=" + token}
	run := func(extra []string, args ...string) (string, string, int) {
		return runCLI(home, "", append([]string{"--addr", d.addr}, args...), append(append([]string{}, cliEnv...), extra...))
	}
	file := func(wing, room, content string) string {
		t.Helper()
		r := d.do("POST", "/api/wings/"+wing+"/rooms/"+room+"/drawers", map[string]any{"content": content}, auth...)
		if r.status != 201 {
			t.Fatalf("file: %d %s", r.status, r.raw)
		}
		return get[string](r.body, "drawer", "id")
	}
	first := file("alpha", "notes", "we deploy on fridays")
	if r := d.do("POST", "/api/drawers/"+first+"/supersede", map[string]any{"content": "we deploy on mondays now"}, auth...); r.status != 200 {
		t.Fatalf("supersede: %d %s", r.status, r.raw)
	}
	file("beta", "misc", "the beta wing's only drawer")
	file("gamma", "misc", "the gamma wing's only drawer")

	// REST: the token is needed; bad parameters are refused as JSON.
	if r := d.do("GET", "/api/export", nil); r.status != 401 || r.code() != "loci::auth::unauthorized" {
		t.Fatalf("export without a token: %d %s", r.status, r.raw)
	}
	for _, c := range []struct {
		query, code string
		status      int
	}{
		{"?wing=nowhere", "loci::palace::wing_not_found", 404},
		{"?wing=alpha&wing=nowhere", "loci::palace::wing_not_found", 404},
		{"?since=yesterday", "loci::input::invalid", 400},
		{"?vectors=maybe", "loci::input::invalid", 400},
		{"?since=2026-01-01&since=2026-01-02", "loci::input::invalid", 400},
		{"?format=csv", "loci::input::invalid", 400},
	} {
		if r := d.do("GET", "/api/export"+c.query, nil, auth...); r.status != c.status || r.code() != c.code || get[string](r.body, "help") == "" {
			t.Errorf("GET /api/export%s: %d %s", c.query, r.status, r.raw)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+d.addr+"/api/export?wing=alpha&wing=gamma&vectors=true", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	recs := readExport(t, resp.Body, "", "")
	resp.Body.Close()
	if got := wingNames(recs); !slices.Equal(got, []string{"alpha", "gamma"}) || len(recs[export.TypeDrawer]) != 3 {
		t.Fatalf("export of alpha and gamma: wings %v, %d drawers", got, len(recs[export.TypeDrawer]))
	}
	// An empty value is absent, as on every route: every wing.
	req, _ = http.NewRequest("GET", "http://"+d.addr+"/api/export?wing=&since=", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	if got := wingNames(readExport(t, resp.Body, "", "")); !slices.Equal(got, []string{"alpha", "beta", "gamma"}) {
		t.Fatalf("export with empty values: %v", got)
	}
	resp.Body.Close()
	if h := recs[export.TypeHeader][0].Header; !h.Selection.Vectors || !strings.HasPrefix(h.Generator, "loci ") {
		t.Errorf("header %+v", h)
	}

	// MCP offers no export.
	s, err := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + d.addr + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatalf("mcp: %v", err)
	}
	tools, err := s.ListTools(context.Background(), nil)
	s.Close()
	if err != nil || len(tools.Tools) < 10 {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range tools.Tools {
		if strings.Contains(tool.Name, "export") || strings.Contains(tool.Name, "backup") {
			t.Errorf("MCP tool %s", tool.Name)
		}
	}

	// The CLI: one wing to a file, whole and in place.
	dir := t.TempDir()
	out := filepath.Join(dir, "alpha.jsonl")
	if o, e, code := run(nil, "export", "--wing", "alpha", "--out", out); code != 0 {
		t.Fatalf("loci export --wing alpha: %d %s %s", code, o, e)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	recs = readExport(t, f, "", "")
	f.Close()
	if got := wingNames(recs); !slices.Equal(got, []string{"alpha"}) || !slices.Equal(drawerContents(recs), []string{"we deploy on fridays", "we deploy on mondays now"}) {
		t.Fatalf("alpha export: %v %v", got, drawerContents(recs))
	}
	// An unknown wing: refused, and no file (nor part of one) is left.
	bad := filepath.Join(dir, "bad.jsonl")
	if o, e, code := run(nil, "export", "--wing", "nowhere", "--out", bad); code == 0 || !strings.Contains(o+e, "loci::palace::wing_not_found") {
		t.Fatalf("export of an unknown wing: %d %s %s", code, o, e)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files left: %v", entries)
	}
	// --json reports the file.
	if o, e, code := run(nil, "--json", "export", "--out", filepath.Join(dir, "all.jsonl")); code != 0 || !strings.Contains(o, `"records"`) || !strings.Contains(o, `"digest": "sha256:`) {
		t.Fatalf("export --json: %d %s %s", code, o, e)
	}

	// --since: what was filed after the instant, with its wing and room.
	time.Sleep(10 * time.Millisecond)
	at := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	file("beta", "later", "filed after the instant")
	o, e, code := run(nil, "export", "--since", at.Format(time.RFC3339Nano))
	if code != 0 {
		t.Fatalf("export --since to stdout: %d %s", code, e)
	}
	recs = readExport(t, strings.NewReader(o), "", "")
	if got := drawerContents(recs); !slices.Equal(got, []string{"filed after the instant"}) || !slices.Equal(wingNames(recs), []string{"beta"}) {
		t.Fatalf("since export: %v %v", got, wingNames(recs))
	}

	// --encrypt-to: only the identity opens it.
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	idFile := filepath.Join(t.TempDir(), "key.txt")
	if err := os.WriteFile(idFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	enc := filepath.Join(dir, "alpha.jsonl.age")
	if o, e, code := run(nil, "export", "--wing", "alpha", "--encrypt-to", id.Recipient().String(), "--out", enc); code != 0 {
		t.Fatalf("export --encrypt-to: %d %s %s", code, o, e)
	}
	raw, _ := os.ReadFile(enc)
	if !bytes.HasPrefix(raw, []byte("age-encryption.org/v1")) || bytes.Contains(raw, []byte("deploy")) {
		t.Fatal("the encrypted export is not an age file, or shows its content")
	}
	recs = readExport(t, bytes.NewReader(raw), idFile, "")
	if !slices.Equal(wingNames(recs), []string{"alpha"}) {
		t.Fatalf("decrypted export: %v", wingNames(recs))
	}
	if o, e, code := run(nil, "export", "--encrypt-to", "age1nonsense", "--out", filepath.Join(dir, "x.age")); code == 0 || !strings.Contains(o+e, "loci::input::invalid") {
		t.Fatalf("a bad recipient: %d %s %s", code, o, e)
	}

	// --passphrase: from the environment, never a flag's value; without
	// it and no terminal, refused.
	pass := filepath.Join(dir, "all.jsonl.age")
	if o, e, code := run([]string{"LOCI_EXPORT_PASSPHRASE=correct horse battery"}, "export", "--passphrase", "--out", pass); code != 0 {
		t.Fatalf("export --passphrase: %d %s %s", code, o, e)
	}
	f, _ = os.Open(pass)
	recs = readExport(t, f, "", "correct horse battery")
	f.Close()
	if !slices.Equal(wingNames(recs), []string{"alpha", "beta", "gamma"}) {
		t.Fatalf("passphrase export: %v", wingNames(recs))
	}
	if o, e, code := run(nil, "export", "--passphrase", "--out", filepath.Join(dir, "y.age")); code == 0 || !strings.Contains(o+e, "loci::cli::prompt_failed") {
		t.Fatalf("--passphrase without one: %d %s %s", code, o, e)
	}
	if strings.Contains(d.log.String(), "correct horse") || strings.Contains(d.log.String(), token) {
		t.Fatal("a secret reached the daemon's log")
	}
}

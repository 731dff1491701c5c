package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// planted is one format of the scanner's planted-secret corpus
// (sources/testdata/secrets/corpus.jsonl).
type planted struct {
	Format  string   `json:"format"`
	File    string   `json:"file"`
	Text    string   `json:"text"`
	Secrets []string `json:"secrets"`
}

func readCorpus(t *testing.T) []planted {
	t.Helper()
	f, err := os.Open("../../sources/testdata/secrets/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []planted
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			var p planted
			if err := json.Unmarshal([]byte(line), &p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

// fake spells n synthetic characters of alphabet from a fixed seed.
func fake(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// Mining a directory through the real daemon keeps every planted secret
// out of the palace: a .env holding the seven formats issue 25 found
// passing (npm, PyPI, SendGrid, Twilio, Hugging Face, DigitalOcean, an
// Azure storage connection string) under names that do not say "secret",
// and a password told in a comment, plus one file for each format of the
// scanner's planted corpus. Neither a drawer, its listing, a search (REST
// and CLI) nor the daemon's log shows a secret value.
func TestMinedSecretsNeverReachThePalace(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	root := filepath.Join(t.TempDir(), "keys")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	const (
		lower  = "abcdefghijklmnopqrstuvwxyz0123456789"
		alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		hex    = "0123456789abcdef"
		b64    = alnum + "+/"
		b64url = alnum + "-_"
	)
	rng := rand.New(rand.NewPCG(25, 7))
	env := []struct{ name, value, kind string }{
		{"NPM", "npm_" + fake(rng, lower, 36), "npm_access_token"},
		{"PYPI", "pypi-AgEIcHlwaS5vcmc" + fake(rng, b64url, 70), "pypi_upload_token"},
		{"SENDGRID", "SG." + fake(rng, b64url, 22) + "." + fake(rng, b64url, 43), "sendgrid_api_token"},
		{"TWILIO", "SK" + fake(rng, hex, 32), "twilio_api_key"},
		{"HF", "hf_" + fake(rng, alnum[:52], 34), "huggingface_access_token"},
		{"DO", "dop_v1_" + fake(rng, hex, 64), "digitalocean_pat"},
		{"AZURE_STORAGE", fake(rng, b64, 86) + "==", "azure_key"},
	}
	password := "hunter2-" + fake(rng, alnum, 8)
	var dotenv strings.Builder
	dotenv.WriteString("# staging; the admin password is: " + password + "\n")
	for _, e := range env {
		v := e.value
		if e.name == "AZURE_STORAGE" {
			v = "DefaultEndpointsProtocol=https;AccountName=lociacct;AccountKey=" + v + ";EndpointSuffix=core.windows.net"
		}
		dotenv.WriteString(e.name + "=" + v + "\n")
	}
	dotenv.WriteString("PORT=8080\n")
	files := map[string][]string{".env": {password}}
	for _, e := range env {
		files[".env"] = append(files[".env"], e.value)
	}
	if err := os.WriteFile(filepath.Join(root, ".env"), []byte(dotenv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// The corpus: each format in a file of its name, in a directory of
	// its own (the directory source enters no hidden directory).
	corpus := readCorpus(t)
	if len(corpus) < 50 {
		t.Fatalf("the corpus has %d formats", len(corpus))
	}
	for i, p := range corpus {
		rel := fmt.Sprintf("c%02d/%s", i, path.Base(p.File))
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("c%02d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), []byte(p.Text), 0o600); err != nil {
			t.Fatal(err)
		}
		files[rel] = p.Secrets
	}

	out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "mine", root}, nil)
	want := fmt.Sprintf("mined %d of %d documents found: %d changed the palace", len(files), len(files), len(files))
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("loci mine: %d\n%s\n%s", code, out, errOut)
	}
	var all []string
	for rel, secrets := range files {
		all = append(all, secrets...)
		r := d.do("GET", "/api/wings/keys/rooms/files/drawers/"+rel, nil)
		if r.status != 200 || !strings.Contains(r.raw, "[REDACTED:") {
			t.Errorf("%s: %d %s", rel, r.status, r.raw)
			continue
		}
		for _, s := range secrets {
			if strings.Contains(r.raw, s) || strings.Contains(r.raw, jsonString(s)) {
				t.Errorf("%s: the drawer shows %q: %s", rel, s, r.raw)
			}
		}
	}
	envDrawer := d.do("GET", "/api/wings/keys/rooms/files/drawers/.env", nil)
	for _, kind := range []string{"npm_access_token", "pypi_upload_token", "sendgrid_api_token", "twilio_api_key", "huggingface_access_token",
		"digitalocean_pat", "azure_key", "prose_password"} {
		if !strings.Contains(envDrawer.raw, "[REDACTED:"+kind+"]") {
			t.Errorf("the .env drawer lacks [REDACTED:%s]: %s", kind, envDrawer.raw)
		}
	}
	if !strings.Contains(envDrawer.raw, "PORT=8080") {
		t.Errorf("the .env drawer lost its ordinary lines: %s", envDrawer.raw)
	}
	list := d.do("GET", "/api/wings/keys/rooms/files/drawers?limit=200", nil)
	if list.status != 200 || strings.Count(list.raw, `"id"`) < len(files) {
		t.Fatalf("listing: %d %s", list.status, list.raw)
	}
	for _, s := range all {
		if strings.Contains(list.raw, s) || strings.Contains(list.raw, jsonString(s)) {
			t.Errorf("the listing shows %q", s)
		}
		if strings.Contains(d.log.String(), s) {
			t.Errorf("the daemon's log shows %q", s)
		}
	}
	// Searching for a secret finds no text holding it.
	for _, s := range append([]string{password}, files[".env"]...) {
		// (The answer repeats the query; the hits must not hold it.)
		r := d.do("POST", "/api/search", map[string]any{"text": s})
		hits, _ := json.Marshal(r.body["hits"])
		if r.status != 200 || strings.Contains(string(hits), s) || strings.Contains(string(hits), jsonString(s)) {
			t.Errorf("search %q: %d %s", s, r.status, r.raw)
		}
		out, _, code := runCLI(home, "", []string{"--addr", d.addr, "search", s}, nil)
		if code != 0 || strings.Contains(out, s) {
			t.Errorf("loci search %q: %d %s", s, code, out)
		}
	}
	// What the palace does keep is searchable: the redacted file's
	// ordinary words.
	if r := d.do("POST", "/api/search", map[string]any{"text": "staging admin password"}); r.status != 200 || !strings.Contains(r.raw, "[REDACTED:prose_password]") {
		t.Errorf("search of the .env's words: %s", r.raw)
	}
}

// jsonString is s as JSON writes it inside a string (escapes for / and
// the like would otherwise hide a secret from strings.Contains).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

// A secret in a file's name is redacted where the palace shows the file
// (its drawer's name, source.uri, the origin's path) and in the job's
// progress (found trying loci as an attacker: a Hugging Face token named
// a file and reached the drawer name, the store and the job list).
func TestSecretsInFileNamesNeverReachThePalace(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	root := t.TempDir()
	token := "hf_" + strings.Repeat("AbCdEfGhIjKlMnOpQ", 2)
	if err := os.WriteFile(filepath.Join(root, token+".txt"), []byte("The meeting notes of Tuesday."), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "mine", root, "--wing", "named"}, nil)
	if code != 0 || strings.Contains(out+errOut, token) {
		t.Fatalf("loci mine: %d\n%s\n%s", code, out, errOut)
	}
	list := d.do("GET", "/api/wings/named/rooms/files/drawers", nil)
	if list.status != 200 || !strings.Contains(list.raw, "[REDACTED:huggingface_access_token]") || strings.Contains(list.raw, token) {
		t.Fatalf("listing: %d %s", list.status, list.raw)
	}
	id := get[string](get[[]any](list.body, "drawers")[0].(map[string]any), "id")
	for _, path := range []string{"/api/wings/named/rooms/files/drawers/" + id, "/api/search?q=meeting+notes"} {
		if r := d.do("GET", path, nil); r.status != 200 || strings.Contains(r.raw, token) {
			t.Fatalf("%s shows the token: %d %s", path, r.status, r.raw)
		}
	}
	// The job's progress names the last file redacted. (Its checkpoint's
	// cursor is the source's own position and still holds the path: the
	// mining state is keyed by it.)
	jobs := d.do("GET", "/api/jobs?kind=mine", nil)
	for _, j := range get[[]any](jobs.body, "jobs") {
		if msg := get[string](j.(map[string]any), "progress", "message"); strings.Contains(msg, token) || !strings.Contains(msg, "[REDACTED:") {
			t.Fatalf("the job's progress: %s", msg)
		}
	}
	// Mining again changes nothing: the redacted name is the same each time.
	if out, _, code := runCLI(home, "", []string{"--addr", d.addr, "mine", root, "--wing", "named", "--full"}, nil); code != 0 || !strings.Contains(out, "0 changed the palace") {
		t.Fatalf("mine again: %d %s", code, out)
	}
	if strings.Contains(d.log.String(), token) {
		t.Fatal("the daemon's log shows the token")
	}
}

package sources

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// plantedSecret is one format of the planted-secret corpus: a file as it
// would be mined, and the secrets in it.
type plantedSecret struct {
	Format  string   `json:"format"`
	File    string   `json:"file"`
	Text    string   `json:"text"`
	Secrets []string `json:"secrets"`
}

// corpusPath is the planted-secret corpus, read by this package's tests
// and by the end-to-end test of mining (cmd/loci).
const corpusPath = "testdata/secrets/corpus.jsonl"

func loadCorpus(t *testing.T) []plantedSecret {
	t.Helper()
	f, err := os.Open(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []plantedSecret
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var p plantedSecret
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		for _, s := range p.Secrets {
			if !strings.Contains(p.Text, s) {
				t.Fatalf("%s: secret %q is not in its text", p.Format, s)
			}
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// corpusDetected scans every planted file and says which formats lost
// all their secrets to redaction, and which kept one (missed).
func corpusDetected(t *testing.T, corpus []plantedSecret) (detected int, missed []string) {
	t.Helper()
	for _, p := range corpus {
		red, rs := Redact(p.Text, ScanFile(p.File, p.Text))
		ok := len(rs) > 0
		for _, s := range p.Secrets {
			if strings.Contains(red, s) {
				ok = false
			}
		}
		if ok {
			detected++
		} else {
			missed = append(missed, p.Format+": "+red)
		}
	}
	return detected, missed
}

// Every planted format is found and redacted: at least fifty formats,
// among them those issue 25 found passing (npm, PyPI, SendGrid, Twilio,
// Hugging Face, DigitalOcean, Azure storage, a password told in prose).
func TestPlantedSecretsAreRedacted(t *testing.T) {
	corpus := loadCorpus(t)
	formats := map[string]bool{}
	for _, p := range corpus {
		if formats[p.Format] {
			t.Errorf("format %s twice", p.Format)
		}
		formats[p.Format] = true
	}
	if len(formats) < 50 {
		t.Fatalf("the corpus has %d formats, want 50 at least", len(formats))
	}
	for _, f := range []string{"npm_access_token", "pypi_upload_token", "sendgrid_api_token", "twilio_api_key", "huggingface_access_token",
		"digitalocean_pat", "azure_storage_key", "prose_password"} {
		t.Run(f, func(t *testing.T) {
			if !formats[f] {
				t.Errorf("the corpus lacks %s", f)
			}
		})
	}
	detected, missed := corpusDetected(t, corpus)
	for _, m := range missed {
		t.Errorf("missed %s", m)
	}
	t.Logf("planted formats detected %d/%d", detected, len(corpus))
}

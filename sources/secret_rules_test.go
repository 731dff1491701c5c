package sources

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A password told in prose is found in any file; ordinary sentences and
// code about passwords are not.
func TestScanFindsProsePasswords(t *testing.T) {
	for _, c := range []struct{ text, secret string }{
		{"the admin password is: hunter2-Qx7", "hunter2-Qx7"},
		{"The admin password is hunter2-Qx7.", "hunter2-Qx7"},
		{"Our wifi passphrase was `Tr0ub4dor&3`, don't share it.", "Tr0ub4dor&3"},
		{"- root password: S3cure!pass", "S3cure!pass"},
		{"The door code / password is 20481632", "20481632"},
		{"The secret is \"Zx9-Kw2-Pq7\" (rotated monthly)", "Zx9-Kw2-Pq7"},
		{`cs := "Server=db;User Id=sa;Password=Hq7!xw2Lp;"`, "Hq7!xw2Lp"},
		// A password ending in a symbol keeps it: no character of it
		// stays beside the marker.
		{"the admin password is: hunter2-Xq9!", "hunter2-Xq9!"},
		{"The admin password is hunter2-Xq9!.", "hunter2-Xq9!"},
		{"root password: S3cure#pass$ (do not share)", "S3cure#pass$"},
	} {
		t.Run(c.text, func(t *testing.T) {
			for _, name := range []string{"notes.md", "main.go", "chat.txt"} {
				f := ScanFile(name, c.text)
				if len(f) != 1 || f[0].Kind != "prose_password" || c.text[f[0].Start:f[0].End] != c.secret {
					t.Errorf("%s %q: %+v, want prose_password %q", name, c.text, f, c.secret)
				}
			}
		})
	}
	for _, text := range []string{
		"The password is required.",
		"the password is hashed with bcrypt, then stored",
		"the secret is that nobody reads manuals",
		"return fmt.Errorf(\"password is %q\", p)",
		"The secret is /etc/loci/token on the daemon's machine.",
		"the password is stored in $HOME/.pw",
		"password = os.Getenv(\"PW\")",
		"the passphrase is v1.2.3 compatible",
		"secret: sha256",
		"passwords are 12 characters long",
		"Password string `json:\"password\" toml:\"password\"`",
		"// arn:aws:secretsmanager:us-east-1:1:secret:SecretName-6RandomCharacters",
		"the password is your_password_here",
		"password: <set me>",
		"\"secret\": \"\\u3299\\ufe0f\",",
		"the secret is correct-horse-battery-staple",
		"- **No secret is written**: the token stays in the environment",
		"the password is __never__ logged",
	} {
		t.Run(text, func(t *testing.T) {
			if f := ScanFile("notes.md", text); len(f) > 0 {
				t.Errorf("%q flagged %+v (%q)", text, f, text[f[0].Start:f[0].End])
			}
		})
	}
}

// Azure connection strings: the account key and the shared access key.
func TestScanFindsAzureKeys(t *testing.T) {
	key := "Kq3m9Xw2Lp7Zt4Rb8Nc1Vd6Hf5Js0Gy3Ue9Ia2Oo7Pk4Ql1Mx8Wn5Rz2Ty6Bv3Cs0Dh9Ej4Fg7Ak1Ls5Mu8Nq2Ow6P=="
	for _, text := range []string{
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net",
		"Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=" + key,
	} {
		t.Run(text, func(t *testing.T) {
			f := ScanFile("app.cs", text)
			if len(f) != 1 || f[0].Kind != "azure_key" || text[f[0].Start:f[0].End] != key {
				t.Errorf("%q: %+v", text, f)
			}
		})
	}
	if f := ScanFile("app.cs", "AccountKey=<your-account-key>;AccountKey=${KEY}"); len(f) > 0 {
		t.Errorf("a placeholder key flagged: %+v", f)
	}
}

// Overlapping findings merge: a secret two rules find in part is
// redacted whole, named by the one that starts first.
func TestOverlappingFindingsMerge(t *testing.T) {
	got := ordered([]Finding{{"b", 15, 40}, {"a", 10, 20}, {"c", 50, 60}, {"d", 52, 55}})
	want := []Finding{{"a", 10, 40}, {"c", 50, 60}}
	if !slices.Equal(got, want) {
		t.Fatalf("ordered: %+v, want %+v", got, want)
	}
}

// gitleaks' generic rule: lock files and checksums (gitleaks' global path
// allowlist) and names in code are not secrets; a token of a known format
// is one in any file; gitleaks' value allowlists apply; a gitleaks:allow
// comment does not hide a secret.
func TestGitleaksRulesInLociTerms(t *testing.T) {
	const sum = "github.com/blevesearch/bleve_index_api v1.4.1 h1:CYIyecFlI+/RYjzUm+NmDjYbSvk870Bb7f+Vl4b12q8=\n"
	if f := ScanFile("go.sum", sum); len(f) > 0 {
		t.Errorf("go.sum flagged: %+v", f)
	}
	if f := ScanFile("notes.txt", sum); len(f) != 1 || f[0].Kind != "generic_api_key" {
		t.Errorf("the same line elsewhere: %+v", f)
	}
	token := "ghp_" + strings.Repeat("aB3d", 9)
	for _, name := range []string{"go.sum", "node_modules/@octokit/auth-token/README.md", "package-lock.json"} {
		t.Run(name, func(t *testing.T) {
			if f := ScanFile(name, "token "+token+"\n"); len(f) != 1 || f[0].Kind != "github_token" {
				t.Errorf("a GitHub token %+v", f)
			}
		})
	}
	if f := ScanFile("main.go", "token := \""+token+"\" // gitleaks:allow\n"); len(f) != 1 {
		t.Errorf("gitleaks:allow hid a token: %+v", f)
	}
	for _, text := range []string{
		"\tdk.encryptionKey1024 = ek.encryptionKey1024\n",
		"start(t, secret, \"LOCI_TEST_DELIVERY_DELAY=300ms\")\n",
		"OriginTrialTokenStatus = \"InvalidSignature\"\n",
		"api_key = \"${API_KEY}\"\n",
		"access_token: {{ .Values.token }}\n",
	} {
		t.Run(text, func(t *testing.T) {
			if f := ScanFile("main.go", text); len(f) > 0 {
				t.Errorf("%q flagged %+v", text, f)
			}
		})
	}
	// npm's format, in a file name gitleaks' global allowlist names.
	npm := "npm_" + strings.Repeat("k2x9", 9)
	if f := ScanFile("yarn.lock", "//registry.npmjs.org/:_authToken="+npm+"\n"); len(f) != 1 || f[0].Kind != "npm_access_token" {
		t.Errorf("an npm token in yarn.lock: %+v", f)
	}
}

// The keyword gates are only a speed-up: with them or without, the scanner
// finds the same secrets in the corpus, in every rule's samples, in the
// project's own tree and in the benchmark's text.
func TestKeywordGatesChangeNothing(t *testing.T) {
	s := rules()
	plain := *s
	plain.rules = slices.Clone(s.rules)
	gated := 0
	for i := range plain.rules {
		if plain.rules[i].gate != nil {
			gated++
		}
		plain.rules[i].gate = nil
	}
	if gated < 150 {
		t.Fatalf("%d rules have a gate", gated)
	}
	type doc struct{ name, text string }
	var docs []doc
	for _, p := range loadCorpus(t) {
		docs = append(docs, doc{p.File, p.Text})
	}
	for i := range s.rules {
		if s.rules[i].id != "" {
			if name, text, _, ok := gitleaksSample(s, &s.rules[i], uint64(i)); ok {
				docs = append(docs, doc{name, text})
			}
		}
	}
	for _, f := range ownTree(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc{f, string(b)})
	}
	docs = append(docs, doc{"main.go", benchDocument(1<<18, codeLines)}, doc{"settings.yaml", benchDocument(1<<18, codeLines)})
	for _, d := range docs {
		if a, b := s.scan(d.name, d.text), plain.scan(d.name, d.text); !slices.Equal(a, b) {
			t.Errorf("%s: gated %+v, plain %+v", d.name, a, b)
		}
	}
	t.Logf("%d of %d rules gated; %d documents compared", gated, len(s.rules), len(docs))
}

// ownTree lists the project's own files: its code, documentation,
// configuration and web pages, without tests and test data (which plant
// secrets on purpose), gitleaks' rule file, and files mining would not
// read (binary, or over 2 MiB).
func ownTree(t *testing.T) []string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("the project's root is not above sources/")
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") || filepath.ToSlash(rel) == "sources/rules/gitleaks.toml" {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > 2<<20 {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || slices.Contains(b, 0) {
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// ownTreeFindings scans the project's own files; every finding is a false
// positive.
func ownTreeFindings(t *testing.T) (files int, found []string) {
	t.Helper()
	for _, p := range ownTree(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, f := range ScanFile(p, text) {
			found = append(found, p+": "+f.Kind+" "+text[f.Start:f.End])
		}
		files++
	}
	return files, found
}

// No false positive on the project's own source tree.
func TestOwnTreeHasNoFalsePositives(t *testing.T) {
	files, found := ownTreeFindings(t)
	if files < 100 {
		t.Fatalf("only %d files of the project found", files)
	}
	for _, f := range found {
		t.Error(f)
	}
	t.Logf("%d files of the project scanned, %d findings", files, len(found))
}

// The detection figure of docs/BENCHMARKS.md, printed with -v: planted
// formats and gitleaks' formats detected, false positives on the project's
// own tree. The targets: every format detected, no false positive.
func TestSecretDetectionFigure(t *testing.T) {
	corpus := loadCorpus(t)
	planted, missed := corpusDetected(t, corpus)
	gl, total, glMissed := gitleaksDetected(t, rules())
	files, found := ownTreeFindings(t)
	t.Logf("formats detected %d/%d (planted corpus), %d/%d (gitleaks %s rule set); false positives on own tree %d (%d files)",
		planted, len(corpus), gl, total, GitleaksVersion, len(found), files)
	if len(missed) > 0 || len(glMissed) > 0 || len(found) > 0 {
		t.Fatalf("targets missed: %v %v %v", missed, glMissed, found)
	}
}

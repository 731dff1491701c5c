package sources

import (
	"strings"
	"testing"
)

// Every rule finds its secret, and only the secret is redacted.
func TestScanFindsEachKind(t *testing.T) {
	for _, c := range []struct {
		file, text, kind, secret string
	}{
		{"id_rsa", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----\n", "private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"},
		{"key.pem", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----", "private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"},
		{"main.go", `id := "AKIAIOSFODNN7EXAMPLF"`, "aws_access_key_id", "AKIAIOSFODNN7EXAMPLF"},
		{"deploy.sh", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"ci.yml", "token: ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "github_token", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"},
		{"notes.md", "use github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz now", "github_token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"},
		{"notes.md", "glpat-Abcdefghij0123456789xyz", "gitlab_token", "glpat-Abcdefghij0123456789xyz"},
		{"bot.py", `SLACK = "xoxb-123456789012-abcdefghijkl"`, "slack_token", "xoxb-123456789012-abcdefghijkl"},
		{"hook.txt", "https://hooks.slack.com/services/T0000/B0000/XXXXabcdefghij1234", "slack_webhook", "https://hooks.slack.com/services/T0000/B0000/XXXXabcdefghij1234"},
		{"pay.js", `const k = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";`, "stripe_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"},
		{"maps.js", `key=AIzaSyA-1234567890abcdefghijklmnopqrstu`, "google_api_key", "AIzaSyA-1234567890abcdefghijklmnopqrstu"},
		{"ai.py", `client = OpenAI(api_key_value="sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")`, "openai_key", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"},
		{"ai.py", `k = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"`, "anthropic_key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"},
		{"run.sh", "LOCI_AUTH_TOKEN=loci_" + strings.Repeat("ab12", 16), "loci_token", "loci_" + strings.Repeat("ab12", 16)},
		{"req.http", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
		{"db.go", `dsn := "postgres://app:Xk9#mQ2vL7@db.internal:5432/app"`, "url_password", "Xk9#mQ2vL7"},
		{".env", "DB_PASSWORD=hunter2goes\n", "assignment", "hunter2goes"},
		{"config.yaml", "smtp:\n  password: 'Tr0ub4dor&3'\n", "assignment", "Tr0ub4dor&3"},
		{"settings.json", `{"client_secret": "9f8e7d6c5b4a"}`, "assignment", "9f8e7d6c5b4a"},
		{"app.py", `API_KEY = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFi"`, "high_entropy", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFi"},
	} {
		t.Run(c.file, func(t *testing.T) {
			f := ScanFile(c.file, c.text)
			if len(f) != 1 || f[0].Kind != c.kind || c.text[f[0].Start:f[0].End] != c.secret {
				t.Errorf("%q: found %+v, want one %s", c.text, f, c.kind)
				return
			}
			red, rs := Redact(c.text, f)
			if strings.Contains(red, c.secret) || !strings.Contains(red, "[REDACTED:"+c.kind+"]") || len(rs) != 1 || rs[0].Kind != c.kind {
				t.Errorf("redacted as %q %+v", red, rs)
			}
		})
	}
}

// Ordinary code and configuration are not secrets.
func TestScanLeavesOrdinaryTextAlone(t *testing.T) {
	for _, c := range []struct{ file, text string }{
		{"lexer.go", "token = lexer.Next()\nif token == nil { return }\npassword := r.FormValue(\"password\")\n"},
		{"auth.go", "func checkPassword(password string) bool { return len(password) > 8 }\n"},
		{"config.go", `const tokenHeader = "Authorization"` + "\n" + `secretName := "db-password"`},
		{".env.example", "API_KEY=your_api_key_here\nDB_PASSWORD=changeme\nSECRET=${SECRET}\n"},
		{"config.yaml", "password: <set me>\ntoken: {{ .Token }}\nsecret_ref: none\n"},
		{"README.md", "Set `password=` in your config; the token is read from LOCI_AUTH_TOKEN.\n"},
		{"main.rs", "let sk = skip_whitespace(input);\nlet key = AKIA_PREFIX.len();\n"},
		{"hash.txt", "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"},
		{"uuid.go", `id := "01a20500-88ef-7153-939a-56085edc1fd3"`},
		{"url.md", "see https://user@example.com/path and https://example.com:8080/x\n"},
		{"env.go", `const DatastorePasswordEnv = "LOCI_DATASTORE_PASSWORD"` + "\n" + `apiKeyVar := "OPENAI_API_KEY_2"`},
	} {
		t.Run(c.file, func(t *testing.T) {
			if f := ScanFile(c.file, c.text); len(f) > 0 {
				t.Errorf("%q flagged %+v (%q)", c.text, f, c.text[f[0].Start:f[0].End])
			}
		})
	}
}

// Option values are scanned with the fixed formats.
func TestLooksSecret(t *testing.T) {
	if !LooksSecret("api_token", "x") || !LooksSecret("label", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789") {
		t.Error("a secret option passed")
	}
	if LooksSecret("dir", "src/*") || LooksSecret("since", "2026-01-01") {
		t.Error("an ordinary option refused")
	}
}

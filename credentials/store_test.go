package credentials

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
)

func wantStoreFailed(t *testing.T, err error, want string) {
	t.Helper()
	if !fault.Is(err, fault.CredentialStoreFailed) || !strings.Contains(fault.As(err).Msg, want) || fault.As(err).Help == "" {
		t.Fatalf("want store_failed saying %q with help, got %v", want, err)
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestFileStoreKeepsTokensPrivately(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	s, err := Open(dir, BackendFile)
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, TokenDir)
	if mode(t, dir) != 0o700 || mode(t, tokens) != 0o700 {
		t.Fatalf("directories %o %o; want 0700", mode(t, dir), mode(t, tokens))
	}
	if s.Where() != "file "+tokens {
		t.Fatalf("where: %q", s.Where())
	}
	if tok, err := s.Load("notes"); tok != nil || err != nil {
		t.Fatalf("nothing saved yet: %v %v", tok, err)
	}
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	in := NewToken("at-"+randomString(16), "rt-"+randomString(16))
	in.Expiry, in.Scopes, in.Provider = exp, []string{"a", "b"}, "digest"
	if err := s.Save("notes", in); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(tokens)
	if len(entries) != 1 || entries[0].Name() != "notes.json" {
		t.Fatalf("files: %v (a temporary file left behind?)", entries)
	}
	if m := mode(t, filepath.Join(tokens, "notes.json")); m != 0o600 {
		t.Fatalf("token file mode %o; want 0600", m)
	}
	out, err := s.Load("notes")
	if err != nil || out.Access() != in.Access() || out.Refresh() != in.Refresh() || !out.Expiry.Equal(exp) ||
		strings.Join(out.Scopes, ",") != "a,b" || out.Provider != "digest" {
		t.Fatalf("read back %+v (%v); saved %+v", out, err, in)
	}
	// Saved again, replaced whole.
	if err := s.Save("notes", NewToken("at-second", "")); err != nil {
		t.Fatal(err)
	}
	if out, _ := s.Load("notes"); out.Access() != "at-second" {
		t.Fatalf("after a second save: %v", out)
	}
	if err := s.Delete("notes"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("notes"); err != nil {
		t.Fatalf("deleting nothing: %v", err)
	}
	if tok, err := s.Load("notes"); tok != nil || err != nil {
		t.Fatalf("after delete: %v %v", tok, err)
	}
	// Open again over the same directory: the token comes back.
	if err := s.Save("k", in); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, BackendAuto)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := s2.Load("k"); err != nil || tok.Access() != in.Access() {
		t.Fatalf("after reopening: %v %v", tok, err)
	}
	if !strings.HasPrefix(s2.Where(), "file "+tokens+" ") || !strings.Contains(s2.Where(), "no desktop keyring") {
		t.Fatalf("auto's where says which backend and why: %q", s2.Where())
	}
}

func TestFileNamesAreSafeAndDistinct(t *testing.T) {
	keys := []string{"notes", "cfg:mail", "cfg_3amail", "../../etc/passwd", "a/b", "A", "_41", ".hidden", "", strings.Repeat("x", 300), strings.Repeat("x", 301), "ü"}
	seen := map[string]string{}
	for _, k := range keys {
		n := fileName(k)
		if strings.ContainsAny(strings.TrimSuffix(n, ".json"), "/\\.:") || len(n) > 255 || strings.HasPrefix(n, ".") {
			t.Errorf("key %q names file %q", k, n)
		}
		if other, ok := seen[n]; ok {
			t.Errorf("keys %q and %q share the file %q", k, other, n)
		}
		seen[n] = k
	}
	dir := t.TempDir()
	s, err := Open(dir, BackendFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[1:8] {
		if err := s.Save(k, NewToken("at-"+k, "")); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys[1:8] {
		if tok, err := s.Load(k); err != nil || tok.Access() != "at-"+k {
			t.Fatalf("key %q read back %v %v", k, tok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "etc")); err == nil {
		t.Fatal("a key climbed out of the token directory")
	}
	if err := s.Save("", NewToken("x", "")); !fault.Is(err, fault.CredentialStoreFailed) {
		t.Fatalf("an empty key: %v", err)
	}
}

func TestStoreRefusesWhatOthersMayTouch(t *testing.T) {
	t.Run("group-writable directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o770); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, BackendFile)
		wantStoreFailed(t, err, "may be written by other users")
	})
	t.Run("world-writable token directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, TokenDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, TokenDir), 0o703); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, BackendFile)
		wantStoreFailed(t, err, "may be written by other users")
	})
	t.Run("a link for a directory", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(dir, TokenDir)); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, BackendFile)
		wantStoreFailed(t, err, "not a directory")
	})
	t.Run("another user's directory", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("giving a directory to another user needs root")
		}
		dir := t.TempDir()
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, BackendFile)
		wantStoreFailed(t, err, "belongs to another user")
	})
	t.Run("a readable token file", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, BackendFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Save("k", NewToken("at-x", "")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, TokenDir, "k.json"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = s.Load("k")
		wantStoreFailed(t, err, "may be read by other users")
		if !strings.Contains(fault.As(err).Help, "chmod 600") {
			t.Fatalf("help: %q", fault.As(err).Help)
		}
	})
	t.Run("a token file that is a link", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, BackendFile)
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(t.TempDir(), "stolen.json")
		if err := os.WriteFile(target, []byte(`{"format":1,"key":"k","access_token":"at-planted"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, TokenDir, "k.json")); err != nil {
			t.Fatal(err)
		}
		_, err = s.Load("k")
		wantStoreFailed(t, err, "not a plain file")
	})
	t.Run("a file loci did not write", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, BackendFile)
		if err != nil {
			t.Fatal(err)
		}
		secret := "at-" + randomString(12)
		if err := os.WriteFile(filepath.Join(dir, TokenDir, "k.json"), []byte(`{"format":1,"key":"other","access_token":"`+secret+`"} trailing`), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = s.Load("k")
		wantStoreFailed(t, err, "not one loci wrote")
		secretsIn(t, "the error", err.Error(), secret)
	})
	t.Run("bad settings", func(t *testing.T) {
		_, err := Open("relative/dir", BackendFile)
		wantStoreFailed(t, err, "not an absolute directory")
		_, err = Open(t.TempDir(), "vault")
		wantStoreFailed(t, err, `"vault" is not a backend`)
		_, err = Open("", BackendAuto)
		wantStoreFailed(t, err, "not an absolute directory")
	})
	t.Run("a file where the directory goes", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, TokenDir), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, BackendFile)
		wantStoreFailed(t, err, TokenDir)
	})
}

func TestTokenNeverShowsItsSecrets(t *testing.T) {
	ptr := NewToken("at-"+randomString(16), "rt-"+randomString(16))
	ptr.Expiry, ptr.Scopes, ptr.Provider = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), []string{"repo"}, "d"
	tok := *ptr
	type holder struct {
		Exported *Token
		Value    Token
		hidden   *Token
		hiddenV  Token
	}
	h := holder{Exported: ptr, Value: tok, hidden: ptr, hiddenV: tok}
	var shown []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%T %p"} {
		shown = append(shown, fmt.Sprintf(verb, tok), fmt.Sprintf(verb, ptr), fmt.Sprintf(verb, h), fmt.Sprintf(verb, []*Token{ptr}))
	}
	shown = append(shown, fmt.Sprint(tok), fmt.Sprintln(ptr))
	for _, v := range []any{tok, ptr, h, map[string]*Token{"k": ptr}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		shown = append(shown, string(b))
	}
	var logs logBuffer
	for _, hd := range []slog.Handler{slog.NewTextHandler(&logs, nil), slog.NewJSONHandler(&logs, nil)} {
		l := slog.New(hd)
		l.Info("token", "tok", tok, "ptr", ptr, "holder", h)
		l.Info("group", slog.Group("g", "tok", ptr))
	}
	shown = append(shown, logs.String())
	for _, s := range shown {
		secretsIn(t, "a printed token", s, tok.Access(), tok.Refresh())
	}
	if got := tok.String(); got != "token(access set, refresh set, expires 2030-01-02T03:04:05Z)" {
		t.Fatalf("String: %q", got)
	}
	if !strings.Contains(fmt.Sprintf("%v", ptr), "access set") {
		t.Fatalf("a printed token says what it holds: %v", ptr)
	}
	if (Token{}).String() != "token(access none, refresh none, no expiry)" {
		t.Fatalf("the empty token: %v", Token{})
	}
}

func TestProviderDigestFollowsClientEndpointsAndScopes(t *testing.T) {
	p := Provider{Name: "GitHub", ClientID: "c", DeviceAuthURL: "https://h/device", AuthURL: "https://h/auth", TokenURL: "https://h/token",
		Scopes: []string{"repo", "read:user"}, Flows: []string{FlowDevice, FlowBrowser}}
	same := p
	same.Name, same.Flows, same.Scopes = "GitHub.com", []string{FlowBrowser}, []string{"read:user", "repo", "repo"}
	if p.Digest() != same.Digest() || len(p.Digest()) != 64 {
		t.Fatalf("name, flows and scope order change nothing: %s %s", p.Digest(), same.Digest())
	}
	for name, edit := range map[string]func(*Provider){
		"client id":   func(q *Provider) { q.ClientID = "d" },
		"device url":  func(q *Provider) { q.DeviceAuthURL = "https://h/device2" },
		"auth url":    func(q *Provider) { q.AuthURL = "https://h/auth2" },
		"token url":   func(q *Provider) { q.TokenURL = "https://h/token2" },
		"more scopes": func(q *Provider) { q.Scopes = append(q.Scopes, "admin") },
		"no scopes":   func(q *Provider) { q.Scopes = nil },
	} {
		q := p
		q.Scopes = append([]string(nil), p.Scopes...)
		edit(&q)
		if q.Digest() == p.Digest() {
			t.Errorf("%s: the digest did not change", name)
		}
	}
	tok := &Token{Provider: p.Digest()}
	if !tok.SignedInUnder(same) || tok.SignedInUnder(Provider{ClientID: "c"}) || (*Token)(nil).SignedInUnder(p) {
		t.Fatal("SignedInUnder follows the digest")
	}
}

// unname inverts fileName for names that are not hashed: that it can is
// what makes two keys never share a file.
func unname(n string) (string, bool) {
	n, ok := strings.CutSuffix(n, ".json")
	if !ok {
		return "", false
	}
	if n == "_" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(n); i++ {
		if n[i] != '_' {
			b.WriteByte(n[i])
			continue
		}
		if i+2 >= len(n) {
			return "", false
		}
		var c byte
		if _, err := fmt.Sscanf(n[i+1:i+3], "%02x", &c); err != nil {
			return "", false
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), true
}

func FuzzFileName(f *testing.F) {
	for _, k := range []string{"notes", "cfg:mail", "../x", "_41", "", "ü", strings.Repeat("é", 80)} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		n := fileName(key)
		if len(n) > 255 || strings.HasPrefix(n, ".") || strings.ContainsAny(strings.TrimSuffix(n, ".json"), "/\\.:\x00") {
			t.Fatalf("key %q names file %q", key, n)
		}
		if strings.HasPrefix(n, "_h") {
			if len(n) != len("_h")+64+len(".json") {
				t.Fatalf("hashed name %q", n)
			}
			return
		}
		if back, ok := unname(n); !ok || back != key {
			t.Fatalf("key %q names %q, which reads back as %q", key, n, back)
		}
	})
}

package services

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/credentials"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

func oauthManifest(t *testing.T, scopes string) *pack.Manifest {
	t.Helper()
	m, err := pack.ParseManifest([]byte("contract = 1\nname = \"notes\"\nversion = \"1.0.0\"\nmodule = \"notes.wasm\"\n[oauth]\n" +
		"provider = \"Test\"\nclient_id = \"loci-test\"\ndevice_authorization_url = \"https://example.com/device\"\n" +
		"token_url = \"https://example.com/token\"\nscopes = [" + scopes + "]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A token signed in under the source's client, endpoints and scopes is
// signed in; once the source changes them (an update asking for another
// scope), it is not ("sign in again"), and a run is refused
// (loci::credential::required) without asking the provider. A source
// without [oauth] has no status and refuses a flow (oauth_unsupported).
func TestSignInStatusFollowsTheProvider(t *testing.T) {
	st, err := credentials.Open(t.TempDir(), credentials.BackendFile)
	if err != nil {
		t.Fatal(err)
	}
	m := oauthManifest(t, `"read"`)
	s := &SignIn{Store: st, Flows: &credentials.Flows{}, Manifest: func(name string) *pack.Manifest {
		if name == "notes" {
			return m
		}
		return nil
	}}
	defer s.Close()
	p, _ := credentials.FromManifest(m)
	if err := st.Save(SourceKey("notes"), func() *credentials.Token {
		tok := credentials.NewToken("at-1234567890", "rt-1234567890")
		tok.Expiry, tok.Scopes, tok.Provider = time.Now().Add(time.Hour), []string{"read"}, p.Digest()
		return tok
	}()); err != nil {
		t.Fatal(err)
	}
	if got := s.Status("notes", m); got == nil || !got.SignedIn || got.Provider != "Test" || got.ExpiresAt == nil || got.Reason != "" {
		t.Fatalf("signed in: %+v", got)
	}
	tok, err := s.AccessToken(context.Background(), SourceKey("notes"), "notes")
	if err != nil || string(tok) != "at-1234567890" {
		t.Fatalf("the access token: %v", err)
	}
	if ok, _ := s.SignedIn(ConfigKey("work"), "notes"); ok {
		t.Fatal("a configuration is signed in by its source's sign-in")
	}

	m = oauthManifest(t, `"read", "write"`)
	got := s.Status("notes", m)
	if got == nil || got.SignedIn || !strings.Contains(got.Reason, "changed its sign-in client, endpoints or scopes") || !strings.Contains(got.Reason, "sign in again") {
		t.Fatalf("after the source changed its scopes: %+v", got)
	}
	if _, err := s.AccessToken(context.Background(), SourceKey("notes"), "notes"); !fault.Is(err, fault.CredentialRequired) ||
		strings.Contains(err.Error(), "at-1234567890") {
		t.Fatalf("a run after the change: %v", err)
	}

	if s.Status("plain", oauthManifestless(t)) != nil {
		t.Fatal("a source without [oauth] has a sign-in status")
	}
	if _, err := s.Start(context.Background(), SourceKey("plain"), "plain", ""); !fault.Is(err, fault.CredentialOAuthUnsupported) {
		t.Fatalf("a flow for a source without [oauth]: %v", err)
	}
	if err := s.Forget("notes"); err != nil {
		t.Fatal(err)
	}
	if tok, _ := st.Load(SourceKey("notes")); tok != nil {
		t.Fatal("forget kept the token")
	}
}

func oauthManifestless(t *testing.T) *pack.Manifest {
	m, err := pack.ParseManifest([]byte("contract = 1\nname = \"plain\"\nversion = \"1.0.0\"\nmodule = \"notes.wasm\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

package actors

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/loci-dev/loci/store/fault"
)

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

// A random source that fails makes no token and stores nothing.
func TestGenerateWithoutEntropy(t *testing.T) {
	sys, db := newSystem(t)
	a, err := NewAuth(context.Background(), db, sys, "")
	if err != nil {
		t.Fatal(err)
	}
	a.Sys, a.Rand = sys, failingReader{}
	if _, err := a.Generate(context.Background()); fault.As(err).Code != fault.AuthEntropyUnavailable {
		t.Fatalf("generate without entropy: %v", err)
	}
	if a.Configured() {
		t.Fatal("a credential exists after a failed generation")
	}
	again, _ := NewAuth(context.Background(), db, sys, "")
	if again.Configured() {
		t.Fatal("a digest was stored after a failed generation")
	}
}

// A generated token is stored as its digest only, survives a restart (a
// new Auth on the same store), and rotation replaces it at once.
func TestGeneratedTokenDigestAndRotation(t *testing.T) {
	sys, db := newSystem(t)
	a, _ := NewAuth(context.Background(), db, sys, "a-configured-secret-1234")
	first, err := a.Generate(context.Background())
	if err != nil || !strings.HasPrefix(first.Token, TokenPrefix) || len(first.Token) != len(TokenPrefix)+64 || first.Algorithm != "sha256" {
		t.Fatalf("generate: %+v %v", first, err)
	}
	restarted, _ := NewAuth(context.Background(), db, sys, "")
	if !restarted.Check(first.Token) || restarted.Check("a-configured-secret-1234") {
		t.Fatal("the stored digest does not check like the token it was made from")
	}
	second, _ := a.Generate(context.Background())
	if a.Check(first.Token) || !a.Check(second.Token) || !a.Check("a-configured-secret-1234") || a.Check("") {
		t.Fatal("rotation")
	}
	if err := a.Revoke(context.Background()); err != nil || a.Check(second.Token) || !a.Check("a-configured-secret-1234") {
		t.Fatalf("revoke: %v", err)
	}
}

package services

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
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

// A configured secret shorter than 32 characters or of fewer than 3 bits
// per character is named weak (a warning at start; the spec allows 16).
func TestSecretWeakness(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret string
		weak   bool
	}{
		{"16 characters", "correct-horse-16", true},
		{"32, 2.75 bits each", "passwordpasswordpasswordpassword", true},
		{"40, 1 bit each", strings.Repeat("ab", 20), true},
		{"32 distinct", "xK9#mQ2$vL7@pR4!nT8&wY3*zB6^cF1%", false},
		{"a generated token", "loci_" + strings.Repeat("0123456789abcdef", 4), false},
		{"a long passphrase", "Tr0ub4dor&3-correct-horse-battery-staple", false},
		{"one character, repeated", strings.Repeat("é", 40), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			why := SecretWeakness(c.secret)
			if (why != "") != c.weak {
				t.Errorf("%q: weakness %q, want weak %v", c.secret, why, c.weak)
			}
			if strings.Contains(why, c.secret) {
				t.Errorf("the reason quotes the secret: %q", why)
			}
		})
	}
}

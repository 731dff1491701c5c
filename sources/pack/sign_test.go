package pack

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// TestSignVerify: a signature verifies over the bytes signed, and over
// nothing else: one flipped bit, another key, a damaged signature are
// each loci::source::untrusted.
func TestSignVerify(t *testing.T) {
	pub, key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := GenerateKey()
	archive := bytes.Repeat([]byte("an archive's bytes "), 1000)
	sig := Sign(key, archive)
	if err := Verify(pub, archive, sig); err != nil {
		t.Fatalf("the signature of the signed bytes: %v", err)
	}
	tampered := bytes.Clone(archive)
	tampered[len(tampered)/2] ^= 1
	damaged := []byte(sig)
	damaged[3] ^= 1
	for _, c := range []struct {
		name    string
		pub     ed25519.PublicKey
		archive []byte
		sig     string
	}{
		{"tampered bytes", pub, tampered, sig},
		{"one byte more", pub, append(bytes.Clone(archive), 0), sig},
		{"another key", other, archive, sig},
		{"a damaged signature", pub, archive, string(damaged)},
		{"not base64", pub, archive, "not a signature!"},
		{"empty", pub, archive, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.pub, c.archive, c.sig)
			if !fault.Is(err, fault.SourceUntrusted) {
				t.Fatalf("Verify = %v, want %s", err, fault.SourceUntrusted)
			}
		})
	}
}

// TestKeyForms: the public key's one-line text form and the private key
// file read back as the same keys; other text is refused.
func TestKeyForms(t *testing.T) {
	pub, key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	text := FormatPublicKey(pub)
	if !strings.HasPrefix(text, "loci-ed25519 ") || strings.ContainsAny(text, "\n") {
		t.Fatalf("public key text %q", text)
	}
	for _, s := range []string{text, text + "\n", "  " + text + " release key 2026\n"} {
		got, err := ParsePublicKey(s)
		if err != nil || !got.Equal(pub) {
			t.Fatalf("ParsePublicKey(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "loci-ed25519", "ssh-ed25519 " + strings.Fields(text)[1], "loci-ed25519 AAAA", "loci-ed25519 !!!"} {
		if _, err := ParsePublicKey(s); !fault.Is(err, fault.InputInvalid) {
			t.Errorf("ParsePublicKey(%q) = %v, want invalid", s, err)
		}
	}
	file, err := MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParsePrivateKey(file)
	if err != nil || !back.Equal(key) {
		t.Fatalf("ParsePrivateKey: %v", err)
	}
	for _, b := range [][]byte{nil, []byte(text), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")} {
		if _, err := ParsePrivateKey(b); !fault.Is(err, fault.InputInvalid) {
			t.Errorf("ParsePrivateKey(%q) = %v, want invalid", b, err)
		}
	}
}

// TestPrivateKeyOpenSSL: the private key file is standard PKCS #8, which
// OpenSSL reads, and OpenSSL's own ed25519 key reads here.
func TestPrivateKeyOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	dir := t.TempDir()
	_, key, _ := GenerateKey()
	file, _ := MarshalPrivateKey(key)
	ours := filepath.Join(dir, "ours.key")
	if err := os.WriteFile(ours, file, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("openssl", "pkey", "-in", ours, "-noout").CombinedOutput(); err != nil {
		t.Fatalf("openssl pkey: %v\n%s", err, out)
	}
	theirs := filepath.Join(dir, "theirs.key")
	if out, err := exec.Command("openssl", "genpkey", "-algorithm", "ed25519", "-out", theirs).CombinedOutput(); err != nil {
		t.Fatalf("openssl genpkey: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(theirs)
	k, err := ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	sig := Sign(k, []byte("x"))
	if err := Verify(k.Public().(ed25519.PublicKey), []byte("x"), sig); err != nil {
		t.Fatal(err)
	}
	if err := Verify(k.Public().(ed25519.PublicKey), []byte("y"), sig); !fault.Is(err, fault.SourceUntrusted) {
		t.Fatalf("another message verified: %v", err)
	}
}
